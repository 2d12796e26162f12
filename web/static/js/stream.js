// The chat's stream connection (API.md, "Stream"): one WebSocket at a
// time, reconnected with jittered exponential back-off, at once when the
// tab becomes visible or the network comes back. It knows nothing of chat
// state: it hands each frame's events to its owner, and says when a
// connection begins (a fresh bootstrap follows), when one is lost, and
// when the chat is gone. The bootstrap is bounded (?history_limit).

import { api, ApiError, streamURL } from './api.js';
import { HISTORY_LIMIT } from './older.js';

const MAX_DELAY_MS = 10000;

export class ChatStream {
  // handlers: {onOpen(): a new connection (its bootstrap follows),
  //            onFrame(events): one frame's events,
  //            onDown(): the connection was lost, a retry is scheduled,
  //            onGone(deleted): the chat was deleted (true) or is not found (false)}
  constructor(chatId, handlers) {
    this.chatId = chatId;
    this.handlers = handlers;
    this.ws = null;
    this.closed = false;
    this.attempts = 0;
    this.retryTimer = null;
    this.onVisible = () => {
      if (document.visibilityState === 'visible' && !this.ws && this.retryTimer) this.reconnectNow();
    };
    document.addEventListener('visibilitychange', this.onVisible);
    window.addEventListener('online', this.onVisible);
  }

  connect() {
    if (this.closed) return;
    // The newest HISTORY_LIMIT messages only; the thread pages in older
    // ones (older.js).
    const ws = new WebSocket(`${streamURL(this.chatId)}?history_limit=${HISTORY_LIMIT}`);
    this.ws = ws;
    this.handlers.onOpen();
    let received = false;
    ws.onmessage = (ev) => {
      if (this.ws !== ws) return;
      received = true;
      let events;
      try { events = JSON.parse(ev.data); } catch { return; }
      if (Array.isArray(events)) this.handlers.onFrame(events);
    };
    ws.onclose = (ev) => {
      if (this.ws !== ws) return;
      this.ws = null;
      if (this.closed) return;
      if (ev.reason === 'chat deleted') {
        this.handlers.onGone(true);
        return;
      }
      this.attempts = received ? 1 : this.attempts + 1;
      this.handlers.onDown();
      const delay = Math.min(MAX_DELAY_MS, 400 * 2 ** Math.min(this.attempts, 6)) * (0.8 + Math.random() * 0.4);
      this.retryTimer = setTimeout(() => this.reconnectNow(), delay);
      if (!received && this.attempts >= 2) this.probe();
    };
  }

  reconnectNow() {
    clearTimeout(this.retryTimer);
    this.retryTimer = null;
    if (!this.ws) this.connect();
  }

  // probe asks why the stream keeps failing: a 401 goes to login (api
  // does that), a 404 means the chat is gone.
  async probe() {
    try {
      await api('GET', `/chats/${this.chatId}`);
    } catch (e) {
      if (e instanceof ApiError && e.status === 404) this.handlers.onGone(false);
    }
  }

  // close ends the stream for good; code and reason go to the server.
  close(code, reason) {
    this.closed = true;
    clearTimeout(this.retryTimer);
    this.retryTimer = null;
    document.removeEventListener('visibilitychange', this.onVisible);
    window.removeEventListener('online', this.onVisible);
    const ws = this.ws;
    this.ws = null;
    if (ws) {
      if (code === undefined) ws.close();
      else ws.close(code, reason);
    }
  }
}
