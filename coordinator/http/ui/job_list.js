// The jobs the coordinator knows (live and recently finished), newest first, filtered by state
// and client tag, refreshed every few seconds; a click opens the job.

import {listJobs} from './api.js';
import {el} from './tree_view.js';

const REFRESH_MS = 2000;

export function stateName(state) {
  return String(state || '').replace(/^JOB_STATE_/, '').toLowerCase();
}

// How long ago `unixMs` was, as a list shows it: "12 s ago", "5 min ago", "3 h ago", "2 d ago".
export function age(unixMs, nowMs = Date.now()) {
  const s = Math.max(0, Math.floor((nowMs - unixMs) / 1000));
  if (s < 60) return `${s} s ago`;
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ago`;
  return `${Math.floor(s / 86400)} d ago`;
}

export class JobList {
  constructor({list, stateFilter, tagFilter, onError}) {
    this.list = list;
    this.stateFilter = stateFilter;
    this.tagFilter = tagFilter;
    this.onError = onError;
    this.selected = null;
    this.timer = null;
    this.fetches = 0;  // Fetches started; the latest is the one that draws.
    stateFilter.addEventListener('change', () => this.refresh());
    tagFilter.addEventListener('input', () => this.refresh());
  }

  select(id) {
    this.selected = id;
    for (const item of this.list.children) item.classList.toggle('selected', item.dataset.job === id);
  }

  async refresh() {
    clearTimeout(this.timer);
    // A filter changed while an earlier fetch was on its way: only the latest fetch may draw,
    // or the earlier one's answer, arriving last, would show jobs the filters exclude.
    const ticket = ++this.fetches;
    try {
      const {jobs = []} = await listJobs({state: this.stateFilter.value, tag: this.tagFilter.value.trim()});
      if (ticket !== this.fetches) return;
      this.list.replaceChildren(...jobs.map((job) => this.item_(job)));
      if (!jobs.length) this.list.append(el('li', 'placeholder', 'no jobs match'));
      this.onError(null);
    } catch (e) {
      if (ticket !== this.fetches) return;
      this.onError(e);
    }
    this.timer = setTimeout(() => this.refresh(), REFRESH_MS);
  }

  item_(job) {
    const li = el('li', `job-item${job.job_id === this.selected ? ' selected' : ''}`);
    li.dataset.job = job.job_id;
    const link = el('a', 'job-link');
    link.href = `#/jobs/${encodeURIComponent(job.job_id)}`;
    const state = stateName(job.state);
    link.append(el('span', 'job-id', job.job_id), el('span', `state state-${state}`, state));
    const generated = job.usage ? job.usage.generated_tokens : 0;
    const explored = job.usage ? job.usage.explored_tokens : 0;
    const created = Number(job.created_unix_ms);
    const when = created ? ` · ${age(created)}` : '';
    const detail = el('div', 'job-detail', `${generated} tokens · ${explored} explored${when}`);
    if (job.client_tag) detail.append(el('span', 'tag', job.client_tag));
    if (created) detail.title = new Date(created).toLocaleString();
    if (job.prompt_snippet) link.append(el('div', 'job-prompt', job.prompt_snippet));
    link.append(detail);
    li.append(link);
    return li;
  }
}
