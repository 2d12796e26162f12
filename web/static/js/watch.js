// watch.js: the chat-list watch (GET /chats/watch): one WebSocket per tab
// telling the sidebar when the user's chats are created, renamed, change
// status, need an action, are archived or deleted, so the list stays live
// without polling. Reconnects with jittered back-off; the sidebar keeps a
// slow poll as a fallback and a fast one while the watch is down.

import { API } from './api.js';

const MAX_DELAY_MS = 15000;

export class ChatWatch {
  // onEvent({kind, chat}) for each event; onState(up) when the watch
  // connects (true) or is lost (false).
  constructor(onEvent, onState) {
    this.onEvent = onEvent;
    this.onState = onState;
    this.closed = false;
    this.attempts = 0;
    this.connect();
  }

  connect() {
    if (this.closed) return;
    const proto = location.protocol === 'https:' ? 'wss:' : 'ws:';
    const ws = new WebSocket(`${proto}//${location.host}${API}/chats/watch`);
    this.ws = ws;
    ws.onopen = () => {
      this.attempts = 0;
      this.onState(true);
    };
    ws.onmessage = (ev) => {
      let e;
      try { e = JSON.parse(ev.data); } catch { return; }
      if (e && e.kind && e.chat) this.onEvent(e);
    };
    ws.onclose = () => {
      if (this.ws !== ws) return;
      this.ws = null;
      this.onState(false);
      if (this.closed) return;
      this.attempts++;
      const delay = Math.min(MAX_DELAY_MS, 500 * 2 ** Math.min(this.attempts, 6)) * (0.8 + Math.random() * 0.4);
      this.timer = setTimeout(() => this.connect(), delay);
    };
  }

  close() {
    this.closed = true;
    clearTimeout(this.timer);
    const ws = this.ws;
    this.ws = null;
    if (ws) ws.close(1000, 'leaving');
  }
}
