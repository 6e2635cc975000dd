// The coordinator's JSON API as the viewer uses it (docs/HTTP.md): jobs, one job, its tree, its
// replay, and the strategy palette. Errors carry the server's message, which names what went wrong. A
// coordinator with tokens (docs/SECURITY.md) gets the one the user entered, kept in this
// browser's storage for this origin.

const TOKEN_KEY = 'arbor.token';

export function token() {
  return localStorage.getItem(TOKEN_KEY) || '';
}

export function setToken(value) {
  if (value) localStorage.setItem(TOKEN_KEY, value);
  else localStorage.removeItem(TOKEN_KEY);
}

export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

// GET `path` (or POST an empty JSON object with `post`) and parse the answer.
async function requestJson(path, {post = false} = {}) {
  let response;
  try {
    const headers = {Accept: 'application/json'};
    if (token()) headers.Authorization = `Bearer ${token()}`;
    const init = post ? {method: 'POST', headers: {...headers, 'Content-Type': 'application/json'},
      body: '{}'} : {headers, cache: 'no-store'};
    response = await fetch(path, init);
  } catch (e) {
    throw new ApiError(0, `the coordinator cannot be reached (${e.message})`);
  }
  const body = await response.json().catch(() => null);
  if (!response.ok) {
    const message = body && body.error && body.error.message;
    throw new ApiError(response.status, message || `HTTP ${response.status} for ${path}`);
  }
  return body;
}

const enc = encodeURIComponent;

export function palette() {
  return requestJson('/ui/palette.json');
}

// `state`: comma-separated JobState names ("" = all); `tag`: exact client tag ("" = any).
export function listJobs({state = '', tag = '', limit = 200} = {}) {
  const query = new URLSearchParams({limit: String(limit)});
  if (state) query.set('state', state);
  if (tag) query.set('tag', tag);
  return requestJson(`/v1/jobs?${query}`);
}

export function getJob(id) {
  return requestJson(`/v1/jobs/${enc(id)}`);
}

// Runs the finished job's request again and compares the trees (arbor.v1.ReplayResult); answers
// once the replay has finished.
export function replayJob(id) {
  return requestJson(`/v1/jobs/${enc(id)}/replay`, {post: true});
}

// The whole tree (TREE_FORMAT.md, JSON version 1), without alternatives: those are fetched per
// node when shown, so a long job's tree stays small enough to poll.
export function getTree(id) {
  return requestJson(`/v1/jobs/${enc(id)}/tree`);
}

// The alternatives recorded for one node (best first; empty when the job kept none).
export async function getAlternatives(id, node) {
  const tree = await requestJson(`/v1/jobs/${enc(id)}/tree?root=${node}&max_depth=1&top_logprobs=1`);
  return tree.nodes[0].top_logprobs;
}
