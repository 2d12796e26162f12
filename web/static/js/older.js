// Older pages of a long chat (API.md, "Bounded bootstrap"): the stream
// sends only the newest HISTORY_LIMIT messages (?history_limit), and the
// ones before them come from GET /chats/{chat}/messages?before_id=<the
// oldest shown>, a page at a time. They are kept here across reconnects
// and history resets, always strictly older than the stream's oldest
// message (its floor), so the thread is one run without duplicates or
// gaps: a page ends right before the message the next one starts with.

import { api } from './api.js';

// HISTORY_LIMIT is the stream's ?history_limit.
export const HISTORY_LIMIT = 100;
const PAGE = 100; // one scroll-up load
const RESYNC_PAGE = 500; // refetching the pages shown, after the floor moved up

export class OlderPages {
  // onChange(): the pages (or their loading state) changed.
  constructor(chatId, onChange) {
    this.chatId = chatId;
    this.onChange = onChange;
    this.msgs = new Map(); // id -> message, every one older than floor
    this.floor = 0; // the oldest id of the stream's messages (0: none)
    this.state = null; // the chat state floor was taken from
    this.more = false; // the server may have messages older than all shown
    this.loading = false;
    this.error = '';
    this.gen = 0; // a resync bumps it: a page answer from before is dropped
  }

  // oldest is the oldest message id shown (0: none).
  oldest() {
    let min = this.floor;
    for (const id of this.msgs.keys()) if (id < min) min = id;
    return min;
  }

  // sync follows the stream's chat state s (a new connection's state, or a
  // history reset's new window), before each render.
  sync(s) {
    let floor = 0;
    for (const id of s.messages.keys()) if (!floor || id < floor) floor = id;
    if (s === this.state && floor === this.floor) return;
    const prevFloor = this.floor;
    this.state = s;
    this.floor = floor;
    if (!floor) { // an empty chat
      this.drop();
      this.msgs.clear();
      this.more = false;
      return;
    }
    // The stream is the truth from its floor on.
    for (const id of [...this.msgs.keys()]) if (id >= floor) this.msgs.delete(id);
    if (!this.msgs.size) {
      // Nothing paged in (any more): older messages exist when the window
      // is full. A first page on its way still fits a window that starts
      // where it did.
      if (floor !== prevFloor) this.drop();
      this.more = s.messages.size >= HISTORY_LIMIT;
      return;
    }
    // The window moved up past messages the pages never held (a reconnect
    // after new messages, or a reset of a window that had grown): fetch
    // the pages again, from the new floor down to the oldest shown.
    if (floor > prevFloor) this.resync();
  }

  // drop forgets a load in flight (its answer is for another window).
  drop() {
    this.gen++;
    this.loading = false;
    this.error = '';
  }

  // loadOlder fetches the page before the oldest message shown.
  async loadOlder() {
    if (this.loading || !this.more || !this.floor) return;
    const gen = this.gen;
    this.loading = true;
    this.error = '';
    this.onChange();
    try {
      const r = await api('GET', `/chats/${encodeURIComponent(this.chatId)}/messages?before_id=${this.oldest()}&limit=${PAGE}`);
      if (gen !== this.gen) return;
      const page = (r && r.messages) || [];
      for (const m of page) if (m.id < this.floor) this.msgs.set(m.id, m);
      this.more = !!(r && r.has_more) && page.length > 0;
    } catch (e) {
      if (gen === this.gen) this.error = (e && e.message) || 'The server could not be reached.';
    } finally {
      if (gen === this.gen) {
        this.loading = false;
        this.onChange();
      }
    }
  }

  // resync replaces the pages with the server's messages from floor back
  // to the oldest one shown.
  async resync() {
    const gen = ++this.gen;
    const stop = this.oldest();
    const got = new Map();
    let before = this.floor;
    let more = false;
    this.loading = true;
    try {
      for (;;) {
        const r = await api('GET', `/chats/${encodeURIComponent(this.chatId)}/messages?before_id=${before}&limit=${RESYNC_PAGE}`);
        if (gen !== this.gen) return;
        const page = (r && r.messages) || [];
        for (const m of page) if (m.id < this.floor) got.set(m.id, m);
        more = !!(r && r.has_more) && page.length > 0;
        if (!more || page[0].id <= stop) break;
        before = page[0].id;
      }
      this.msgs = got;
      this.more = more;
      this.error = '';
    } catch (e) {
      if (gen === this.gen) this.error = (e && e.message) || 'The server could not be reached.';
    } finally {
      if (gen === this.gen) {
        this.loading = false;
        this.onChange();
      }
    }
  }
}
