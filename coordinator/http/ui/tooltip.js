// The card shown while the pointer rests on a token anywhere in the viewer: what the step
// decided, the token's probability, the step's eight metrics and the alternatives the model
// weighed with their probabilities.

import {displayText} from './tree_model.js';
import {el, fmt, strategyColor} from './tree_view.js';

const METRICS = [
  ['entropy', 'entropy (bits)'], ['varentropy', 'varentropy'], ['attn_entropy', 'attn entropy'],
  ['attn_varentropy', 'attn varentropy'], ['attn_head_varentropy', 'attn head varentropy'],
  ['agreement', 'agreement'], ['interaction_strength', 'interaction'], ['logsumexp', 'logsumexp'],
];

export class Tooltip {
  // `lookup`: node id → node, or undefined; `alternatives`: node id → promise of its
  // alternatives (cached here for the shown job; `forget` drops them when the job changes).
  constructor(box, lookup, alternatives) {
    this.box = box;
    this.lookup = lookup;
    this.alternatives = alternatives;
    this.cache = new Map();
    this.shown = null;
    document.addEventListener('mouseover', (e) => {
      const target = e.target.closest('.tok[data-node]');
      if (target) this.show(Number(target.dataset.node), e.clientX, e.clientY);
    });
    document.addEventListener('mouseout', (e) => {
      if (e.target.closest('.tok[data-node]')) this.hide();
    });
  }

  forget() {
    this.cache.clear();
  }

  show(id, x, y) {
    const node = this.lookup(id);
    if (!node) return;
    this.shown = id;
    const parts = [];
    const title = el('div', 'tip-title');
    title.append(el('span', 'tip-token', `“${displayText(node.text, false)}”`),
        el('span', 'tip-id', ` node ${node.id} · position ${node.position}`));
    parts.push(title);
    const strategy = el('div', 'tip-strategy');
    const swatch = el('span', 'swatch');
    swatch.style.background = strategyColor(node.strategy);
    strategy.append(swatch, el('span', '', `${node.strategy} · ${node.status}`));
    parts.push(strategy);
    if (node.logprob !== null) {
      parts.push(el('div', '', `p ${fmt(Math.exp(node.logprob), 4)} · logprob ${fmt(node.logprob, 4)}`));
    }
    if (node.branch_score) parts.push(el('div', '', `rollout score ${fmt(node.branch_score, 4)}`));
    if (node.branch_note) parts.push(el('div', '', node.branch_note));
    if (node.allowed_tokens === 1) {
      parts.push(el('div', '', 'forced by the output grammar'));
    } else if (node.allowed_tokens > 1) {
      parts.push(el('div', '', `output grammar allowed ${node.allowed_tokens} tokens`));
    }
    const metrics = el('table', 'tip-metrics');
    for (const [key, label] of METRICS) {
      const tr = el('tr');
      tr.append(el('td', '', label), el('td', 'num', fmt(node.metrics[key], 3)));
      metrics.append(tr);
    }
    parts.push(metrics);
    const slot = el('div', 'tip-alternatives-slot', 'alternatives…');
    parts.push(slot);
    this.box.replaceChildren(...parts);
    this.box.hidden = false;
    this.place_(x, y);
    if (!this.cache.has(id)) this.cache.set(id, this.alternatives(id).catch(() => null));
    this.cache.get(id).then((top) => {
      if (this.shown !== id || this.box.hidden) return;
      slot.replaceChildren(top === null ? el('span', 'tip-note', 'alternatives unavailable') :
          alternatives(node, top));
      this.place_(x, y);
    });
  }

  place_(x, y) {
    const width = this.box.offsetWidth;
    const height = this.box.offsetHeight;
    this.box.style.left = `${Math.min(x + 14, window.innerWidth - width - 8)}px`;
    this.box.style.top = `${y + 18 + height > window.innerHeight ? Math.max(4, y - height - 10) : y + 18}px`;
  }

  hide() {
    this.box.hidden = true;
    this.shown = null;
  }
}

function alternatives(node, top) {
  if (!top.length) {
    return el('div', 'tip-note', 'no alternatives recorded (submit the job with top_logprobs > 0)');
  }
  const table = el('table', 'tip-alternatives');
  for (const alt of top) {
    const tr = el('tr', alt.token_id === node.token_id ? 'chosen' : '');
    const p = Math.exp(alt.logprob ?? -Infinity);
    const bar = el('span', 'bar');
    bar.style.width = `${Math.round(p * 80)}px`;
    const barCell = el('td');
    barCell.append(bar);
    tr.append(el('td', 'alt-token', `“${displayText(alt.text, false)}”`), el('td', 'num', fmt(p, 4)), barCell);
    table.append(tr);
  }
  return table;
}
