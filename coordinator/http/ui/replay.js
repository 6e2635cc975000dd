// The job view's Replay button: runs a finished job's request again (POST /v1/jobs/{id}/replay)
// and says whether the search reproduced — the same tree node for node, linking the new job —
// or where it first departs: the node, its position and the fields that differ, with a link
// that brings that node into view.

import {replayJob} from './api.js';
import {el} from './tree_view.js';

export class ReplayControl {
  constructor({button, box, onReveal, onError}) {
    Object.assign(this, {button, box, onReveal, onError});
    this.jobId = null;
    this.running = false;
    button.addEventListener('click', () => this.run());
  }

  // The job now shown: the button is offered once it has finished; a new job clears the verdict.
  show(job, finished) {
    if (job.job_id !== this.jobId) {
      this.jobId = job.job_id;
      this.box.hidden = true;
      this.box.replaceChildren();
    }
    this.button.hidden = !finished;
  }

  async run() {
    if (this.running) return;
    const id = this.jobId;
    this.running = true;
    this.button.disabled = true;
    this.button.textContent = 'Replaying…';
    try {
      const result = await replayJob(id);
      if (id === this.jobId) this.verdict(result);
    } catch (e) {
      this.onError(e);
    } finally {
      this.running = false;
      this.button.disabled = false;
      this.button.textContent = 'Replay';
    }
  }

  verdict(result) {
    const link = el('a', '', `job ${result.replay_job_id}`);
    link.href = `#/jobs/${encodeURIComponent(result.replay_job_id)}`;
    this.box.dataset.identical = String(result.identical);
    this.box.className = `replay-box ${result.identical ? 'same' : 'differs'}`;
    if (result.identical) {
      this.box.replaceChildren('Reproduced: ', link,
          ` grew the same tree, node for node (${result.nodes} nodes).`);
    } else {
      const node = result.first_difference;
      const where = node ? `node ${node.id} (position ${node.position})` : 'the prompt';
      const show = el('a', 'replay-node', `show ${where}`);
      show.href = '#';
      show.addEventListener('click', (e) => {
        e.preventDefault();
        if (node) this.onReveal(node.id);
      });
      this.box.dataset.node = node ? String(node.id) : '';
      this.box.replaceChildren(`Not reproduced: `, link, ` departs at ${where} · `, show,
          el('pre', 'replay-difference', result.difference));
    }
    this.box.hidden = false;
  }
}
