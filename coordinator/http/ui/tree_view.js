// The search tree drawn compactly (tree_model.js lays it out): one row per run of tokens, the
// committed path down the left, alternatives indented under the node they left from. A run
// shows the start of its text and its length and expands on click into its tokens; a branch
// point (◆) opens its candidates beside the tree with their rollouts, scores and the winner.

import {displayText, gutters, ON_PATH} from './tree_model.js';

const SNIPPET_CHARS = 48;

export class TreeView {
  constructor(container, panel, {onBranch}) {
    this.container = container;
    this.panel = panel;
    this.onBranch = onBranch;
    this.expanded = new Set();  // Start node ids of expanded runs; kept across live updates.
    this.model = null;
    this.selectedBranch = null;
    container.addEventListener('click', (e) => this.click_(e));
  }

  render(model) {
    this.model = model;
    const runs = model.layout();
    const cells = gutters(runs);
    const rows = document.createDocumentFragment();
    runs.forEach((run, i) => rows.append(this.row_(run, cells[i])));
    this.container.replaceChildren(rows);
    if (this.selectedBranch !== null && model.node(this.selectedBranch)) {
      this.showBranch(this.selectedBranch);
    }
  }

  row_(run, gutter) {
    const row = el('div', 'run-row');
    row.append(el('span', 'gutter', gutter));
    const start = run.nodes[0];
    const first = this.model.node(start);
    const box = el('span', `run status-${run.status.toLowerCase()}`);
    box.dataset.run = String(start);
    box.dataset.nodes = String(run.nodes.length);
    if (first.status === 'PROMPT') {
      box.append(el('span', 'run-text', `prompt · ${this.model.tree.prompt_token_ids.length} tokens`));
    } else if (run.nodes.length > 1 && !this.expanded.has(start)) {
      box.classList.add('collapsed');
      const text = run.nodes.map((id) => this.model.node(id).text).join('');
      const shown = displayText(text, false);
      box.append(el('span', 'run-text', shown.length > SNIPPET_CHARS ?
          `${[...shown].slice(0, SNIPPET_CHARS).join('')}…` : shown));
      box.style.borderLeftColor = strategyColor(first.strategy);
    } else {
      if (run.status === 'BACKSPACED') box.style.borderColor = strategyColor('BACKSPACE');
      if (run.nodes.length > 1) box.classList.add('expanded');
      for (const id of run.nodes) box.append(tokenSpan(this.model.node(id), false));
    }
    box.append(el('span', 'run-meta', runMeta(run, first)));
    row.append(box);
    if (run.branchPoint !== null) {
      const marker = el('button', 'branch-marker',
          `◆ branch [${this.model.branchNumber.get(run.branchPoint) ?? '·'}]`);
      marker.dataset.branch = String(run.branchPoint);
      marker.title = 'show the candidates of this branch point';
      marker.style.color = marker.style.borderColor = strategyColor('BRANCH');
      row.append(marker);
    }
    return row;
  }

  click_(e) {
    const marker = e.target.closest('[data-branch]');
    if (marker) {
      this.showBranch(Number(marker.dataset.branch));
      return;
    }
    const box = e.target.closest('.run[data-run]');
    if (!box || Number(box.dataset.nodes) < 2) return;
    const start = Number(box.dataset.run);
    this.expanded.has(start) ? this.expanded.delete(start) : this.expanded.add(start);
    this.render(this.model);
  }

  // The candidates of branch point `id`: each with its token, score, logprob, rollout length
  // and fate; the committed one is the winner.
  showBranch(id) {
    const model = this.model;
    this.selectedBranch = id;
    const point = model.node(id);
    const metrics = model.decisionMetrics(id) || {};
    this.panel.hidden = false;
    const head = el('div', 'branch-head');
    head.append(el('strong', '', `Branch [${model.branchNumber.get(id) ?? '·'}] at node ${id}`),
        el('span', 'branch-where', ` position ${point.position + 1} · H ${fmt(metrics.entropy, 2)} · V ${fmt(metrics.varentropy, 2)}`));
    const close = el('button', 'close', '×');
    close.title = 'close';
    close.addEventListener('click', () => {
      this.panel.hidden = true;
      this.selectedBranch = null;
    });
    head.append(close);
    const table = el('table', 'candidates');
    const header = el('tr');
    for (const h of ['', 'node', 'token', 'score', 'logprob', 'tokens', 'status', 'judged']) header.append(el('th', '', h));
    table.append(header);
    const ranked = model.candidates(id).map((c) => model.node(c))
        .sort((a, b) => (b.branch_score ?? -Infinity) - (a.branch_score ?? -Infinity));
    for (const c of ranked) {
      const won = ON_PATH.has(c.status);
      const tr = el('tr', `candidate${won ? ' winner' : ''}`);
      tr.dataset.node = String(c.id);
      tr.dataset.score = String(c.branch_score);
      const token = el('td', 'token');
      token.append(tokenSpan(c, false));
      tr.append(el('td', '', won ? '★' : ''), el('td', 'num', String(c.id)), token,
          el('td', 'num', fmt(c.branch_score, 3)), el('td', 'num', fmt(c.logprob, 3)),
          el('td', 'num', String(model.rolloutSize(c.id))), el('td', '', c.status),
          el('td', 'note', c.branch_note ?? ''));
      table.append(tr);
    }
    this.panel.replaceChildren(head, table);
    this.onBranch(id);
  }
}

function runMeta(run, first) {
  const parts = [];
  if (run.nodes.length > 1) parts.push(`${run.nodes.length} tokens`);
  if (first.branch_score !== 0 && first.branch_score !== null) parts.push(`score ${fmt(first.branch_score, 3)}`);
  if (run.status !== 'COMMITTED' && run.status !== 'PROMPT') parts.push(run.status.toLowerCase());
  return parts.length ? ` ${parts.join(' · ')}` : '';
}

export function fmt(value, digits) {
  return value === null || value === undefined || Number.isNaN(value) ? '–' : Number(value).toFixed(digits);
}

export function el(tag, className = '', text = '') {
  const e = document.createElement(tag);
  if (className) e.className = className;
  if (text) e.textContent = text;
  return e;
}

const palette = new Map();

export function setPalette(strategies) {
  for (const s of strategies) palette.set(s.name, s.color);
}

export function strategyColor(name) {
  return palette.get(name) || '#000000';
}

// One token: its text (escaped), coloured by the strategy that produced it, hoverable. No node
// carries BRANCH or BACKSPACE (candidates are FORCED, a re-draw is RESAMPLE): those decisions
// show as structure, in their colours — the branch markers, and the line through a retracted
// token.
export function tokenSpan(node, keepNewlines) {
  const span = el('span', `tok s-${node.strategy.toLowerCase()} st-${node.status.toLowerCase()}`);
  // The token that ended the sequence is no text of the answer.
  span.textContent = node.stop_token ? '⟨end⟩' : displayText(node.text, keepNewlines);
  if (!node.text) span.classList.add('empty');
  span.dataset.node = String(node.id);
  span.style.color = strategyColor(node.strategy);
  if (node.status === 'BACKSPACED') span.style.textDecorationColor = strategyColor('BACKSPACE');
  return span;
}
