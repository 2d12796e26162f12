// outcomes.js: what became of a chat's earlier turns, for the notes in the
// thread: a reply that was stopped ("Stopped", and Continue on the last
// one) and a turn that failed (its error stays on its user message after
// the chat has moved on). The stream says only what the chat is doing now;
// each user message sent with a request id has a durable outcome, read
// here with the read-only lookup GET /requests/{id}, once per id: a
// finished request's outcome never changes. Messages sent without a
// request id (other API clients) get no note.

import { api, ApiError } from './api.js';

// RECENT is how many of the latest turns are looked up.
const RECENT = 10;

export class Outcomes {
  constructor(onChange) {
    this.onChange = onChange;
    this.known = new Map(); // request id -> outcome ({status, last_error}) or null (none)
    this.asking = new Set();
  }

  // of is the outcome of a request id, or null while unknown.
  of(requestId) { return (requestId && this.known.get(requestId)) || null; }

  // want looks up the outcomes of the latest turns' requests not known yet.
  want(requestIds) {
    for (const id of requestIds.slice(-RECENT)) {
      if (id && !this.known.has(id) && !this.asking.has(id)) this.ask(id);
    }
  }

  async ask(id) {
    this.asking.add(id);
    let changed = false;
    try {
      const r = await api('GET', `/requests/${id}`);
      this.known.set(id, r.outcome || null);
      changed = !!r.outcome;
    } catch (e) {
      // Still running or queued: ask again on a later render. Anything
      // else (not found, not ours, a network error) is no note.
      if (!(e instanceof ApiError && e.code === 'INVOCATION_IN_PROGRESS') && !(e instanceof ApiError && e.status === 0)) this.known.set(id, null);
    } finally {
      this.asking.delete(id);
    }
    if (changed) this.onChange();
  }
}
