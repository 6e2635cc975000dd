// The viewer's entry point: the job list, and for the job named in the address
// (#/jobs/{id}) its summary, legend, text, chart and tree, followed live while it runs.
//
// A running job is polled: its job record and tree are fetched again once the last answer has
// been drawn, after a pause of at least POLL_MS and at least three times what fetching and
// drawing took, so a huge tree slows its own refresh rather than the page.

import {ApiError, getAlternatives, getJob, getTree, palette, setToken, token} from './api.js';
import {Chart} from './chart.js';
import {JobList, stateName} from './job_list.js';
import {ReplayControl} from './replay.js';
import {StartForm} from './start_form.js';
import {TextView} from './text_view.js';
import {Tooltip} from './tooltip.js';
import {TreeModel} from './tree_model.js';
import {el, setPalette, TreeView} from './tree_view.js';

const POLL_MS = 500;
const LIVE = new Set(['queued', 'running']);
const STATUSES = [
  ['committed', 'committed'], ['inserted', 'inserted (thinking token)'],
  ['explored', 'explored (live rollout)'], ['pruned', 'pruned'], ['backspaced', 'backspaced'],
];

const $ = (id) => document.getElementById(id);

// Timings of the last draw, read by the browser tests and the render benchmark, which also
// calls redraw() to time a live update's drawing apart from its fetch.
const stats = {renders: 0, lastRenderMs: 0, lastFetchMs: 0, jobId: null, state: null, nodes: 0,
  drawParts: {}, redraw: () => {}};
window.arborViewer = stats;

class App {
  constructor(strategies) {
    setPalette(strategies);
    this.strategies = strategies;
    this.model = null;
    this.job = null;
    this.jobId = null;
    this.poll = null;
    this.generation = 0;  // Bumped when the shown job changes; stale answers are dropped.
    this.tooltip = new Tooltip($('tooltip'), (id) => this.model && this.model.node(id),
        (id) => getAlternatives(this.jobId, id));
    this.text = new TextView($('text-view'), {onBranch: (id) => this.tree.showBranch(id)});
    this.tree = new TreeView($('tree-view'), $('branch-panel'), {onBranch: () => {}});
    this.chart = new Chart($('chart'), {
      onHover: (id, x, y) => this.tooltip.show(id, x, y),
      onLeave: () => this.tooltip.hide(),
      onPick: (id) => this.text.reveal(id),
    });
    this.replay = new ReplayControl({
      button: $('replay-button'), box: $('replay-box'),
      onReveal: (id) => this.text.reveal(id),
      onError: (error) => this.apiError(error),
    });
    this.jobs = new JobList({
      list: $('job-list'), stateFilter: $('state-filter'), tagFilter: $('tag-filter'),
      onError: (error) => this.apiError(error),
    });
    this.startForm = new StartForm({
      form: $('start-form'), prompt: $('start-prompt'), policy: $('start-policy'),
      maxTokens: $('start-max-tokens'), error: $('start-error'),
      onStarted: (id) => {
        location.hash = `#/jobs/${encodeURIComponent(id)}`;
      },
    });
    $('token-form').addEventListener('submit', (e) => {
      e.preventDefault();
      setToken($('token-input').value.trim());
      this.reload();
    });
    $('token-forget').addEventListener('click', () => {
      setToken('');
      $('token-input').value = '';
      this.reload();
    });
    $('token-form').hidden = !token();
    $('show-retracted').addEventListener('change', (e) => {
      this.text.showRetracted = e.target.checked;
      if (this.model) this.text.render(this.model);
    });
    stats.redraw = () => this.model && this.draw(this.job, this.model.tree);
    window.addEventListener('hashchange', () => this.route());
    window.addEventListener('resize', () => this.model && this.drawChart());
    this.legend();
  }

  start() {
    this.jobs.refresh();
    this.route();
  }

  status(message) {
    $('status-line').textContent = message || '';
    $('status-line').classList.toggle('bad', Boolean(message));
  }

  // A refused token opens the token form; other errors show in the status line.
  apiError(error) {
    if (error instanceof ApiError && (error.status === 401 || error.status === 403)) {
      $('token-form').hidden = false;
      this.status(token() ? `the token was refused: ${error.message}` :
          'this coordinator needs an API token');
      return;
    }
    this.status(error ? error.message : null);
  }

  reload() {
    this.jobs.refresh();
    this.route();
  }

  route() {
    const match = location.hash.match(/^#\/jobs\/(.+)$/);
    const id = match ? decodeURIComponent(match[1]) : null;
    clearTimeout(this.poll);
    ++this.generation;
    this.jobId = id;
    this.jobs.select(id);
    $('job-view').hidden = !id;
    $('empty-state').hidden = Boolean(id);
    $('branch-panel').hidden = true;
    this.tree.selectedBranch = null;
    this.tree.expanded.clear();
    this.tooltip.forget();
    this.model = null;
    if (id) this.load(this.generation);
  }

  async load(generation) {
    const started = performance.now();
    let job;
    let tree;
    try {
      [job, tree] = await Promise.all([getJob(this.jobId), getTree(this.jobId)]);
    } catch (e) {
      if (generation !== this.generation) return;
      if (e instanceof ApiError && (e.status === 401 || e.status === 403)) this.apiError(e);
      this.showError(e instanceof ApiError && e.status === 404 ?
          `job ${this.jobId} is not known to this coordinator (finished jobs are kept for a while, then evicted)` :
          e.message);
      // Retried unless the answer will not change by itself (unknown job, refused token).
      if (!(e instanceof ApiError) || ![401, 403, 404].includes(e.status)) {
        this.schedule(generation, POLL_MS * 4);
      }
      return;
    }
    if (generation !== this.generation) return;
    const fetched = performance.now();
    this.showError(null);
    this.draw(job, tree);
    const drawn = performance.now();
    Object.assign(stats, {
      renders: stats.renders + 1, lastFetchMs: fetched - started, lastRenderMs: drawn - fetched,
      jobId: job.job_id, state: stateName(job.state), nodes: tree.nodes.length,
    });
    if (LIVE.has(stateName(job.state))) this.schedule(generation, Math.max(POLL_MS, 3 * (drawn - started)));
  }

  schedule(generation, delay) {
    clearTimeout(this.poll);
    this.poll = setTimeout(() => generation === this.generation && this.load(generation), delay);
  }

  showError(message) {
    $('error-box').hidden = !message;
    $('error-box').textContent = message || '';
  }

  draw(job, tree) {
    const t0 = performance.now();
    this.job = job;
    this.model = new TreeModel(tree);
    this.summary();
    const t1 = performance.now();
    this.text.render(this.model);
    const t2 = performance.now();
    this.drawChart();
    const t3 = performance.now();
    this.tree.render(this.model);
    stats.drawParts = {model: t1 - t0, text: t2 - t1, chart: t3 - t2, tree: performance.now() - t3};
  }

  drawChart() {
    const steps = this.model.path.slice(1).map((id) => this.model.node(id));
    this.chart.render(steps, this.job.policy && this.job.policy.thresholds);
  }

  summary() {
    const job = this.job;
    const state = stateName(job.state);
    $('job-title').textContent = `job ${job.job_id}`;
    $('prompt-view').textContent = job.prompt || '(no tokenizer: the prompt is token ids only)';
    $('job-state').textContent = state;
    $('job-state').className = `state state-${state}`;
    this.replay.show(job, !LIVE.has(state));
    const usage = job.usage || {};
    const counts = Object.entries(job.strategies || {}).filter(([, n]) => n > 0)
        .map(([name, n]) => `${name} ${n}`).join(', ');
    const reason = job.finish_reason && job.finish_reason !== 'FINISH_REASON_UNSPECIFIED' ?
        ` · ${job.finish_reason.replace(/^FINISH_REASON_/, '').toLowerCase()}` : '';
    $('job-summary').textContent =
        `${usage.prompt_tokens ?? 0} prompt · ${usage.generated_tokens ?? 0} generated · ` +
        `${usage.explored_tokens ?? 0} explored · ${this.model.branchPoints.length} branch points` +
        `${reason}${counts ? ` · ${counts}` : ''}${job.error ? ` · error: ${job.error}` : ''}`;
  }

  legend() {
    const box = $('legend');
    const strategies = el('div', 'legend-group');
    strategies.append(el('span', 'legend-title', 'strategy'));
    for (const {name, color} of this.strategies) {
      const item = el('span', 'legend-item');
      item.dataset.strategy = name;
      const swatch = el('span', 'swatch');
      swatch.style.background = color;
      item.append(swatch, el('span', '', name.toLowerCase().replace('_', ' ')));
      strategies.append(item);
    }
    const statuses = el('div', 'legend-group');
    statuses.append(el('span', 'legend-title', 'token'));
    for (const [status, label] of STATUSES) {
      const item = el('span', `legend-item run status-${status}`);
      item.dataset.status = status.toUpperCase();
      item.append(el('span', '', label));
      statuses.append(item);
    }
    const marks = el('div', 'legend-group');
    marks.append(el('span', 'legend-title', 'marks'), el('span', 'legend-item', '◆ branch point'),
        el('span', 'legend-item', '[n] branch point in the text'));
    box.replaceChildren(strategies, statuses, marks);
  }
}

palette().then(({strategies}) => new App(strategies).start()).catch((e) => {
  document.getElementById('status-line').textContent = `cannot load the viewer: ${e.message}`;
});
