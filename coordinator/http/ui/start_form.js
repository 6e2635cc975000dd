// The viewer's prompt box: starts a chat job with a policy picked by name (the HTTP API's
// arbor.policy_name) and opens the job as soon as the stream names it. The stream is then read
// to its end in the background: closing it would cancel the job.

import {token} from './api.js';

export class StartForm {
  constructor({form, prompt, policy, maxTokens, error, onStarted}) {
    Object.assign(this, {form, prompt, policy, maxTokens, error, onStarted});
    form.addEventListener('submit', (e) => {
      e.preventDefault();
      this.start();
    });
  }

  fail(message) {
    this.error.textContent = message;
    this.error.hidden = false;
  }

  async start() {
    this.error.hidden = true;
    const body = {
      messages: [{role: 'user', content: this.prompt.value}],
      max_tokens: Number(this.maxTokens.value) || 128,
      stream: true,
      arbor: {client_tag: 'viewer'},
    };
    if (this.policy.value) body.arbor.policy_name = this.policy.value;
    const headers = {'Content-Type': 'application/json'};
    if (token()) headers.Authorization = `Bearer ${token()}`;
    let response;
    try {
      response = await fetch('/v1/chat/completions',
          {method: 'POST', headers, body: JSON.stringify(body)});
    } catch (e) {
      return this.fail(`the coordinator cannot be reached (${e.message})`);
    }
    if (!response.ok) {
      const answer = await response.json().catch(() => null);
      return this.fail((answer && answer.error && answer.error.message) ||
          `HTTP ${response.status}`);
    }
    await this.follow(response.body.getReader());
  }

  // Reads server-sent events; the first chunk that names the job opens it.
  async follow(reader) {
    const decoder = new TextDecoder();
    let buffer = '';
    let opened = false;
    for (;;) {
      const {done, value} = await reader.read();
      if (done) return;
      if (opened) continue;
      buffer += decoder.decode(value, {stream: true});
      let cut;
      while (!opened && (cut = buffer.indexOf('\n\n')) >= 0) {
        const data = buffer.slice(0, cut).split('\n').filter((l) => l.startsWith('data: '))
            .map((l) => l.slice(6)).join('');
        buffer = buffer.slice(cut + 2);
        if (!data || data === '[DONE]') continue;
        let chunk;
        try {
          chunk = JSON.parse(data);
        } catch (e) {
          continue;
        }
        const choice = chunk.choices && chunk.choices[0];
        const id = choice && choice.arbor && choice.arbor.job_id;
        if (id) {
          opened = true;
          this.onStarted(id);
        }
      }
    }
  }
}
