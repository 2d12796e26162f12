// The chat view: the conversation driven by the chat's WebSocket stream,
// and everything around it — status line, retry countdown, error banner,
// required-action card, queue chips, composer, unconfirmed sends.

import { h, icon, session, copyText, flashCopied, prettyJSON, formatSeconds } from './dom.js';
import { api, ApiError, streamURL, newUUID, sha256Hex, textContent, messageText } from './api.js';
import { newChatState, applyEvent, maxMessageId, isBusy } from './state.js';
import { Composer } from './composer.js';
import { toast } from './widgets.js';
import * as render from './messages.js';

const KIND_LABEL = {
  overloaded: 'Provider overloaded', rate_limit: 'Rate limited', timeout: 'Provider timed out',
  generic: 'Provider error', auth: 'Authentication failed', config: 'Configuration error',
  content_filter: 'Blocked by the content filter', invalid_state: 'Invalid chat state',
  unresolved_effects: 'Unresolved tool effects',
};

const KIND_HINT = {
  overloaded: 'This is usually temporary: retry, or send again in a moment.',
  rate_limit: 'Wait a moment, then retry.',
  timeout: 'Retry; if it keeps timing out, try a shorter request.',
  generic: 'Retry, or edit your last message.',
  auth: 'The provider rejected chatd’s credentials. Fix the API key in the server’s configuration, then retry.',
  config: 'Pick another model or fix the provider configuration, then retry.',
  content_filter: 'Edit your last message and rerun it.',
  invalid_state: 'An operator can repair it (reconcile-invalid); /clear starts a fresh context.',
  unresolved_effects: 'A tool may have run without its result being recorded; an operator must reconcile it.',
};

const STALE_PREVIEW_MS = 1500;

export class ChatView {
  constructor(app, chatId) {
    this.app = app;
    this.id = chatId;
    this.state = newChatState();
    this.next = null;
    this.loaded = false;
    this.closed = false;
    this.attempts = 0;
    this.nodes = new Map(); // key -> {sig, node}
    this.editingId = null;
    this.chat = null;
    this.actionSig = '';
    this.reasoningTimes = new Map(); // reasoning text -> seconds, measured live
    this.pendingKey = `chatd.pending.${chatId}`;
    this.pending = session.get(this.pendingKey, null);
    if (this.pending && this.pending.state === 'sending') this.pending.state = 'unconfirmed';

    this.build();
    this.connect();
    this.loadChat();
    this.ticker = setInterval(() => this.tick(), 1000);
    this.onVisible = () => {
      if (document.visibilityState === 'visible' && !this.ws && this.retryTimer) this.reconnectNow();
    };
    document.addEventListener('visibilitychange', this.onVisible);
    window.addEventListener('online', this.onVisible);
  }

  build() {
    this.titleEl = h('h1', { class: 'chat-title-h', text: 'Loading…' });
    this.pill = h('span', { class: 'conn-pill', role: 'status', hidden: true }, h('span', { class: 'spinner small' }), 'Reconnecting…');
    this.menuBtn = h('button', {
      type: 'button', class: 'icon-btn', 'aria-label': 'Chat options', 'aria-haspopup': 'menu', 'aria-expanded': 'false',
      onclick: (e) => this.chat && this.app.chatMenu(this.chat, e.currentTarget),
    }, icon('dots'));
    const header = h('header', { class: 'chat-header' },
      this.app.sidebarButton(), this.titleEl, this.pill, h('span', { class: 'spacer' }), this.menuBtn);

    this.thread = h('div', { class: 'thread', role: 'log', 'aria-label': 'Conversation', 'aria-live': 'off' });
    this.live = h('div', { class: 'sr-only', 'aria-live': 'polite', 'aria-atomic': 'false' });
    this.scroller = h('div', { class: 'scroller', tabindex: '-1' }, this.thread);
    this.pinned = true; // the user is at the bottom: follow new content
    this.scroller.addEventListener('scroll', () => {
      this.pinned = this.isAtBottom();
      this.updateJump();
    }, { passive: true });
    if (window.ResizeObserver) {
      this.resizer = new ResizeObserver(() => {
        if (this.pinned) this.scroller.scrollTop = this.scroller.scrollHeight;
      });
      this.resizer.observe(this.scroller);
      this.resizer.observe(this.thread);
    }
    this.jumpBtn = h('button', { type: 'button', class: 'jump-btn', hidden: true, onclick: () => { this.scrollToBottom(); this.composer.focus(); } },
      icon('down'), 'Jump to latest');

    this.banner = h('div', { class: 'banner-slot' });
    this.actionSlot = h('div', { class: 'action-slot' });
    this.statusLine = h('div', { class: 'status-line', role: 'status', 'aria-live': 'polite' });
    this.queueEl = h('div', { class: 'queue', 'aria-label': 'Queued messages', hidden: true });
    this.composer = new Composer({
      draftKey: `chatd.draft.${this.id}`,
      models: this.app.models,
      placeholder: 'Message chatd',
      commands: true,
      onSend: (text, behavior) => this.send(text, behavior),
      onStop: () => this.stop(),
      onCommand: (cmd) => this.command(cmd),
      onEditLast: () => this.editLast(),
    });
    const dock = h('div', { class: 'dock' },
      h('div', { class: 'dock-inner' }, this.jumpBtn, this.banner, this.actionSlot, this.statusLine, this.queueEl, this.composer.el));
    this.el = h('section', { class: 'chat-view', 'aria-label': 'Chat' }, header, this.scroller, dock, this.live);
    // Esc stops a running chat, wherever the focus is (an open editor,
    // popup, menu or dialog takes Esc first).
    this.onKeydown = (e) => {
      if (e.key === 'Escape' && !e.defaultPrevented && (this.state.status === 'running' || this.state.status === 'interrupting') &&
        !this.el.querySelector('.editing') && !document.querySelector('dialog[open], .menu') &&
        !document.body.classList.contains('drawer-open')) {
        e.preventDefault();
        this.stop();
      }
    };
    document.addEventListener('keydown', this.onKeydown);
    this.renderSkeleton();
  }

  mounted() {
    this.composer.focus();
  }

  destroy() {
    this.closed = true;
    clearInterval(this.ticker);
    clearTimeout(this.retryTimer);
    clearTimeout(this.staleTimer);
    if (this.resizer) this.resizer.disconnect();
    document.removeEventListener('visibilitychange', this.onVisible);
    document.removeEventListener('keydown', this.onKeydown);
    window.removeEventListener('online', this.onVisible);
    if (this.ws) this.ws.close(1000, 'leaving');
    this.ws = null;
  }

  // ---- data -------------------------------------------------------------

  async loadChat() {
    try {
      this.chat = await api('GET', `/chats/${this.id}`);
      this.scheduleRender();
      this.titleEl.textContent = this.chat.title || 'New chat';
      document.title = (this.chat.title || 'New chat') + ' · chatd';
      if (this.chat.last_model_config_id) this.composer.setModels(this.app.models, this.chat.last_model_config_id);
    } catch (e) {
      if (e instanceof ApiError && e.status === 404) this.notFound();
    }
  }

  setChatFields(fields) {
    if (!this.chat) return;
    Object.assign(this.chat, fields);
    if (fields.archived !== undefined) this.scheduleRender();
    if (fields.title !== undefined) {
      this.titleEl.textContent = this.chat.title || 'New chat';
      document.title = (this.chat.title || 'New chat') + ' · chatd';
    }
  }

  notFound() {
    this.closed = true;
    if (this.ws) this.ws.close();
    clearTimeout(this.retryTimer);
    this.pill.hidden = true;
    this.titleEl.textContent = 'Chat not found';
    this.el.querySelector('.dock').hidden = true;
    this.thread.replaceChildren(h('div', { class: 'empty-state' },
      h('h2', { text: 'This chat does not exist' }),
      h('p', { class: 'muted', text: 'It may have been deleted. Start a new chat from the sidebar.' }),
      h('a', { class: 'btn primary', href: '/', 'data-link': true }, 'New chat')));
  }

  // ---- stream -----------------------------------------------------------

  connect() {
    if (this.closed) return;
    const ws = new WebSocket(streamURL(this.id));
    this.ws = ws;
    this.next = newChatState();
    let received = false;
    ws.onmessage = (ev) => {
      if (this.ws !== ws) return;
      received = true;
      let events;
      try { events = JSON.parse(ev.data); } catch { return; }
      if (Array.isArray(events)) this.onFrame(events);
    };
    ws.onclose = (ev) => {
      if (this.ws !== ws) return;
      this.ws = null;
      this.next = null;
      if (this.closed) return;
      if (ev.reason === 'chat deleted') {
        this.notFound();
        this.app.sidebar.refresh();
        return;
      }
      this.attempts = received ? 1 : this.attempts + 1;
      this.pill.hidden = false;
      const delay = Math.min(10000, 400 * 2 ** Math.min(this.attempts, 6)) * (0.8 + Math.random() * 0.4);
      this.retryTimer = setTimeout(() => this.reconnectNow(), delay);
      if (!received && this.attempts >= 2) this.probe();
    };
  }

  reconnectNow() {
    clearTimeout(this.retryTimer);
    this.retryTimer = null;
    if (!this.ws) this.connect();
  }

  // probe asks why the stream keeps failing: a 401 goes to login, a 404
  // means the chat is gone.
  async probe() {
    try {
      await api('GET', `/chats/${this.id}`);
    } catch (e) {
      if (e instanceof ApiError && e.status === 404) this.notFound();
    }
  }

  onFrame(events) {
    const now = Date.now();
    const target = this.next || this.state;
    const before = target.status;
    for (const e of events) {
      applyEvent(target, e, now);
      if (e.type === 'action_required') this.loadChat();
    }
    if (this.next && this.next.booted) this.swapIn(this.next);
    const st = this.state.status;
    if (this.loaded && st !== before) {
      this.app.sidebar.patchLocal(this.id, { status: st });
      if (st === 'waiting' || st === 'error') {
        this.loadChat();
        setTimeout(() => this.app.sidebar.refresh(), 300);
      }
    }
    this.scheduleRender();
  }

  // swapIn replaces the shown state with a reconnect's bootstrap. A live
  // preview is kept (marked stale) while the chat still runs and nothing
  // new was committed: the episode's parts are replayed from seq 1 and
  // deduplicated by seq, so the text neither flickers nor doubles.
  swapIn(next) {
    const old = this.state;
    if (old.preview && !next.preview && next.status === 'running' && maxMessageId(next) === maxMessageId(old)) {
      next.preview = old.preview;
      next.preview.stale = true;
      clearTimeout(this.staleTimer);
      this.staleTimer = setTimeout(() => {
        if (this.state.preview && this.state.preview.stale) {
          this.state.preview = null;
          this.scheduleRender();
        }
      }, STALE_PREVIEW_MS);
    }
    this.state = next;
    this.next = null;
    this.loaded = true;
    this.attempts = 0;
    this.pill.hidden = true;
    this.app.sidebar.patchLocal(this.id, { status: next.status });
  }

  scheduleRender() {
    if (this.renderQueued) return;
    this.renderQueued = true;
    requestAnimationFrame(() => {
      this.renderQueued = false;
      if (!this.closed) this.render();
    });
  }

  // ---- rendering --------------------------------------------------------

  renderSkeleton() {
    this.thread.replaceChildren(h('div', { class: 'skeleton-thread', role: 'status', 'aria-label': 'Loading conversation' },
      h('div', { class: 'skeleton-bubble' }),
      h('div', { class: 'skeleton-line w90' }), h('div', { class: 'skeleton-line w75' }), h('div', { class: 'skeleton-line w60' })));
  }

  reasoningFor(m) {
    const r = (m.content || []).find((p) => p.type === 'reasoning');
    return r ? this.reasoningTimes.get(r.text) ?? null : null;
  }

  isAtBottom() {
    const s = this.scroller;
    return s.scrollHeight - s.scrollTop - s.clientHeight < 48;
  }

  // scrollToBottom jumps (never smooth: a smooth scroll chasing a growing
  // reply would lose the bottom).
  scrollToBottom() {
    this.scroller.scrollTop = this.scroller.scrollHeight;
    this.pinned = true;
    this.jumpBtn.hidden = true;
  }

  updateJump() {
    if (this.isAtBottom()) this.jumpBtn.hidden = true;
  }

  render() {
    if (!this.loaded) return;
    const s = this.state;
    const stick = this.pinned || this.isAtBottom() || !this.rendered;
    const msgs = [...s.messages.values()].sort((a, b) => a.id - b.id);
    const results = new Map();
    const calls = new Set();
    for (const m of msgs) {
      for (const p of m.content || []) {
        if (p.type === 'tool-result') results.set(p.tool_call_id, p);
        else if (p.type === 'tool-call') calls.add(p.tool_call_id);
      }
    }
    const running = s.status === 'running' || s.status === 'interrupting';
    const waitingIds = new Set(((s.action && s.action.tool_calls) || []).map((c) => c.tool_call_id));
    const ctx = { results, calls, running, waitingIds, reasoningFor: (m) => this.reasoningFor(m) };
    const actions = {
      copy: async (text, btn) => { if (await copyText(text)) flashCopied(btn); },
      edit: (m) => this.startEdit(m.id),
    };
    const waitSig = [...waitingIds].join(',');

    // Remember how long live reasoning took, for the committed message.
    if (s.preview) {
      const r = s.preview.parts.find((p) => p.type === 'reasoning');
      if (r && s.preview.reasoningStart != null) {
        const end = s.preview.reasoningEnd ?? Date.now();
        this.reasoningTimes.set(r.text, (end - s.preview.reasoningStart) / 1000);
      }
    }

    const items = [];
    this.lastUserId = null;
    for (const m of msgs) {
      const kind = render.boundaryOf(m);
      if (kind) {
        if (m.role === 'assistant') {
          const callId = (m.content.find((p) => p.type === 'tool-call') || {}).tool_call_id;
          const res = results.get(callId);
          items.push({ key: 'd' + m.id, sig: JSON.stringify([m.content, res && res.result]), make: () => render.divider(m, kind, ctx) });
        }
        continue;
      }
      if (m.role === 'user') {
        this.lastUserId = m.id;
        const editing = this.editingId === m.id;
        items.push({
          key: 'u' + m.id, sig: JSON.stringify([m.content, editing]),
          make: () => editing ? render.userEditor(m, (text) => this.saveEdit(m, text), () => this.cancelEdit()) : render.userMessage(m, actions),
        });
      } else if (m.role === 'assistant') {
        const own = (m.content || []).filter((p) => p.type === 'tool-call').map((p) => results.get(p.tool_call_id) || null);
        const rsec = this.reasoningFor(m);
        items.push({
          key: 'a' + m.id, sig: JSON.stringify([m.content, own, own.some((r) => !r) ? [running, waitSig] : 0, rsec]),
          make: () => render.assistantMessage(m, ctx, actions),
        });
      } else if (m.role === 'tool') {
        if ((m.content || []).some((p) => p.type === 'tool-result' && !calls.has(p.tool_call_id))) {
          items.push({ key: 't' + m.id, sig: JSON.stringify(m.content), make: () => render.toolResults(m, ctx) });
        }
      }
    }
    if (s.preview && s.preview.parts.length) {
      const p = s.preview;
      items.push({ key: 'preview', sig: `${p.hv}/${p.ga}/${p.lastSeq}/${p.parts.length}/${p.reasoningEnd}/${waitSig}`, make: () => render.preview(p, ctx) });
    } else if (s.status === 'running' && !s.retry) {
      items.push({ key: 'typing', sig: 'typing', make: () => h('div', { class: 'msg msg-assistant typing', 'aria-label': 'Assistant is thinking' }, h('span', { class: 'dots' }, h('i'), h('i'), h('i'))) });
    }
    this.checkPending(s);
    if (this.pending) {
      const p = this.pending;
      items.push({ key: 'ghost', sig: JSON.stringify(p), make: () => this.ghost(p) });
    }
    if (!items.length) {
      items.push({ key: 'empty', sig: 'empty', make: () => h('div', { class: 'empty-state' },
        h('div', { class: 'empty-icon', 'aria-hidden': 'true' }, icon('chat')),
        h('h2', { text: 'Nothing here yet' }),
        h('p', { class: 'muted', text: 'Send a message below to start; replies stream in as they are written.' })) });
    }
    this.reconcile(items);
    this.announce(s, msgs);
    this.renderDock(s);
    this.rendered = true;
    if (stick) this.scrollToBottom();
    else if (this.scroller.scrollHeight - this.scroller.scrollTop - this.scroller.clientHeight > 48) this.jumpBtn.hidden = false;
  }

  // announce reads the reply to screen readers as it streams, a sentence
  // at a time (re-reading the whole preview on every token would drown
  // them), and the rest once it is committed.
  announce(s, msgs) {
    const p = s.preview;
    const key = p ? `${p.hv}/${p.ga}` : null;
    const text = p ? p.parts.filter((x) => x.type === 'text').map((x) => x.text).join('') : '';
    if (!this.rendered) {
      this.liveKey = key;
      this.liveLen = text.length;
      this.liveMax = msgs.length ? msgs[msgs.length - 1].id : 0;
      return;
    }
    if (key !== this.liveKey) {
      if (this.liveKey && !key) {
        const last = [...msgs].reverse().find((m) => m.role === 'assistant' && m.id > this.liveMax);
        const done = last ? messageText(last) : '';
        if (done.length > this.liveLen) this.say(done.slice(this.liveLen));
      }
      this.liveKey = key;
      this.liveLen = 0;
    }
    if (msgs.length) this.liveMax = Math.max(this.liveMax || 0, msgs[msgs.length - 1].id);
    if (text.length > this.liveLen) {
      const m = /^[\s\S]*[.!?:\n]/.exec(text.slice(this.liveLen));
      if (m) {
        this.say(m[0]);
        this.liveLen += m[0].length;
      }
    }
  }

  say(text) {
    const plain = text.replace(/[`*_#>|]+/g, ' ').replace(/\s+/g, ' ').trim();
    if (!plain) return;
    this.live.append(h('p', { text: plain }));
    while (this.live.childElementCount > 4) this.live.firstElementChild.remove();
  }

  // reconcile makes the thread's children the items' nodes, rebuilding only
  // the ones whose signature changed.
  reconcile(items) {
    const keep = new Set();
    let prev = null;
    for (const it of items) {
      keep.add(it.key);
      let cached = this.nodes.get(it.key);
      if (!cached || cached.sig !== it.sig) {
        const node = it.make();
        if (!node) continue;
        if (cached && cached.node.parentNode) {
          // Keep open <details> open across a rebuild.
          const open = [...cached.node.querySelectorAll('details')].map((d) => d.open);
          const fresh = node.querySelectorAll('details');
          open.forEach((o, i) => { if (fresh[i] && o) fresh[i].open = true; });
          cached.node.replaceWith(node);
        }
        cached = { sig: it.sig, node };
        this.nodes.set(it.key, cached);
      }
      const expected = prev ? prev.nextSibling : this.thread.firstChild;
      if (cached.node !== expected) this.thread.insertBefore(cached.node, expected);
      prev = cached.node;
    }
    for (const [key, c] of this.nodes) {
      if (!keep.has(key)) {
        c.node.remove();
        this.nodes.delete(key);
      }
    }
    // Anything else (the loading skeleton) goes.
    for (const child of [...this.thread.children]) {
      if (![...this.nodes.values()].some((c) => c.node === child)) child.remove();
    }
  }

  renderDock(s) {
    this.renderArchived();
    const running = s.status === 'running' || s.status === 'interrupting';
    this.composer.setState({ busy: isBusy(s.status), running, stopping: s.status === 'interrupting' });
    this.renderStatus(s);
    this.renderQueue(s);
    this.renderBanner(s);
    this.renderAction();
  }

  renderArchived() {
    const archived = !!(this.chat && this.chat.archived);
    if (archived === !!this.archivedEl) return;
    if (!archived) {
      this.archivedEl.remove();
      this.archivedEl = null;
      return;
    }
    this.archivedEl = h('div', { class: 'info-banner', role: 'status' }, icon('archive'),
      h('span', { text: 'This chat is archived. Unarchive it to continue the conversation.' }),
      h('button', { type: 'button', class: 'btn small', onclick: () => this.app.sidebar.patch(this.chat, { archived: false }) }, 'Unarchive'));
    this.banner.before(this.archivedEl);
  }

  statusText(s) {
    if (s.retry && s.status === 'running') {
      const left = (Date.parse(s.retry.retrying_at) - Date.now()) / 1000;
      const what = KIND_LABEL[s.retry.kind] || 'Provider error';
      return { cls: 'retry', text: left > 0.5 ? `${what} — retrying in ${formatSeconds(left)} (attempt ${s.retry.attempt + 1})` : `${what} — retrying now (attempt ${s.retry.attempt + 1})`, title: s.retry.error };
    }
    switch (s.status) {
      case 'running': {
        const parts = s.preview ? s.preview.parts : [];
        const last = parts[parts.length - 1];
        if (last && last.type === 'text') return { cls: 'streaming', text: 'Streaming…' };
        if (last && last.type === 'tool-call') return { cls: 'thinking', text: `Calling ${last.tool_name || 'a tool'}…` };
        return { cls: 'thinking', text: 'Thinking…' };
      }
      case 'interrupting': return { cls: 'interrupting', text: 'Interrupting…' };
      case 'requires_action': return { cls: 'action', text: 'Waiting for your tool result' };
      case 'error': return { cls: 'error', text: 'Error' };
      default: return null;
    }
  }

  renderStatus(s) {
    const st = this.statusText(s);
    const key = st ? st.cls + st.text : '';
    if (key === this.statusKey) return;
    this.statusKey = key;
    if (!st) {
      this.statusLine.replaceChildren();
      this.statusLine.className = 'status-line';
      return;
    }
    this.statusLine.className = 'status-line ' + st.cls;
    const spin = st.cls === 'thinking' || st.cls === 'streaming' || st.cls === 'interrupting' || st.cls === 'retry';
    this.statusLine.replaceChildren(
      spin ? h('span', { class: 'spinner small', 'aria-hidden': 'true' }) : h('span', { class: 'status-dot', 'aria-hidden': 'true' }),
      h('span', { text: st.text, title: st.title || null }));
  }

  renderQueue(s) {
    const sig = JSON.stringify(s.queue.map((q) => q.id));
    if (sig === this.queueSig) return;
    this.queueSig = sig;
    this.queueEl.hidden = s.queue.length === 0;
    this.queueEl.replaceChildren(
      h('span', { class: 'queue-label', text: `Queued (${s.queue.length})` }),
      ...s.queue.map((q) => h('div', { class: 'queue-chip', dataset: { id: q.id } },
        h('span', { class: 'queue-text', text: messageText(q) || '(attachment)', title: messageText(q) }),
        h('button', { type: 'button', class: 'chip-btn', onclick: () => this.promote(q), title: 'Stop the current reply and send this now' }, 'Send now'),
        h('button', { type: 'button', class: 'chip-btn icon-only', 'aria-label': 'Remove from queue', title: 'Remove from queue', onclick: () => this.unqueue(q) }, icon('x')))));
  }

  renderBanner(s) {
    const err = s.status === 'error' ? s.error : null;
    const sig = err ? JSON.stringify(err) : '';
    if (sig === this.bannerSig) return;
    this.bannerSig = sig;
    if (!err) {
      this.banner.replaceChildren();
      return;
    }
    const label = KIND_LABEL[err.kind] || 'Error';
    let hint = KIND_HINT[err.kind] || 'Retry, or edit your last message.';
    if (/context|too long|token/i.test(err.message + ' ' + (err.detail || ''))) hint = 'The conversation may be too long: /compact summarizes it, /clear starts a fresh context.';
    this.banner.replaceChildren(h('div', { class: 'error-banner', role: 'alert' },
      icon('alert', 'banner-icon'),
      h('div', { class: 'banner-body' },
        h('div', { class: 'banner-title' }, h('strong', { text: label }), err.status_code ? h('span', { class: 'muted', text: ` · HTTP ${err.status_code}` }) : null,
          err.provider ? h('span', { class: 'muted', text: ` · ${err.provider}` }) : null),
        h('div', { class: 'banner-msg', text: err.message || '' }),
        err.detail ? h('div', { class: 'banner-detail', text: err.detail }) : null,
        h('div', { class: 'banner-hint', text: hint }),
        h('div', { class: 'banner-actions' },
          this.lastUserId ? h('button', { type: 'button', class: 'btn small primary', onclick: () => this.retryLast() }, icon('retry'), 'Retry') : null,
          this.lastUserId ? h('button', { type: 'button', class: 'btn small', onclick: () => this.startEdit(this.lastUserId) }, icon('edit'), 'Edit last message') : null,
          h('button', { type: 'button', class: 'btn small ghost', onclick: () => this.command({ name: 'compact' }) }, '/compact'),
          h('button', { type: 'button', class: 'btn small ghost', onclick: () => this.command({ name: 'clear' }) }, '/clear')))));
  }

  // renderAction shows the required-action card; it is rebuilt only when the
  // pending calls change, so what the user typed in the editors stays.
  renderAction() {
    const s = this.state;
    const a = s.status === 'requires_action' ? s.action : null;
    const sig = a ? JSON.stringify(a) : '';
    if (sig === this.actionSig) {
      this.tickDeadline();
      return;
    }
    this.actionSig = sig;
    if (!a) {
      this.actionSlot.replaceChildren();
      this.actionCard = null;
      return;
    }
    const calls = a.tool_calls || [];
    const editors = calls.map((c) => {
      const ta = h('textarea', { class: 'json-editor', rows: 4, spellcheck: 'false', 'aria-label': `Result for ${c.tool_name} (JSON)` });
      ta.value = '{\n  \n}';
      const err = h('div', { class: 'json-error', role: 'alert' });
      ta.addEventListener('input', () => {
        err.textContent = validJSON(ta.value) ? '' : 'Not valid JSON yet.';
      });
      return { call: c, ta, err };
    });
    this.deadlineEl = h('span', { class: 'deadline', 'aria-live': 'off' });
    const submit = async (isError, btn) => {
      const results = [];
      for (const e of editors) {
        let out;
        try { out = JSON.parse(e.ta.value); } catch {
          if (!isError) {
            e.err.textContent = 'Not valid JSON: fix it, or use Submit as error to send it as an error message.';
            e.ta.focus();
            return;
          }
          out = e.ta.value;
        }
        results.push({ tool_call_id: e.call.tool_call_id, output: out, is_error: isError });
      }
      btn.disabled = true;
      try {
        await api('POST', `/chats/${this.id}/tool-results`, { results });
      } catch (err) {
        btn.disabled = false;
        toast('Could not submit the tool result', 'error', err.message);
      }
    };
    const submitBtn = h('button', { type: 'button', class: 'btn primary', onclick: (e) => submit(false, e.currentTarget) }, 'Submit');
    const errorBtn = h('button', { type: 'button', class: 'btn', onclick: (e) => submit(true, e.currentTarget) }, 'Submit as error');
    this.actionCard = h('section', { class: 'action-card', 'aria-label': 'Tool result needed' },
      h('div', { class: 'action-head' }, icon('tool'),
        h('strong', { text: calls.length > 1 ? `${calls.length} tool calls need your result` : 'A tool call needs your result' }),
        h('span', { class: 'spacer' }), this.deadlineEl),
      editors.map((e) => h('div', { class: 'action-call' },
        h('div', { class: 'action-name' }, h('code', { text: e.call.tool_name }), h('span', { class: 'muted small', text: e.call.tool_call_id })),
        h('details', { class: 'tool-section', open: true }, h('summary', {}, 'Arguments'), h('pre', { class: 'json', tabindex: '0', text: prettyJSON(e.call.args) })),
        h('label', { class: 'field-label', text: 'Result (JSON)' }), e.ta, e.err)),
      h('div', { class: 'action-foot' }, errorBtn, submitBtn));
    this.actionSlot.replaceChildren(this.actionCard);
    this.tickDeadline();
  }

  tickDeadline() {
    if (!this.deadlineEl) return;
    const d = this.chat && this.chat.requires_action_deadline_at;
    if (!d) {
      this.deadlineEl.textContent = '';
      return;
    }
    const left = (Date.parse(d) - Date.now()) / 1000;
    this.deadlineEl.textContent = left > 0 ? `${formatSeconds(left)} left` : 'Deadline passed';
    this.deadlineEl.classList.toggle('urgent', left < 30);
  }

  tick() {
    const s = this.state;
    if (s.retry) {
      this.statusKey = null;
      this.renderStatus(s);
    }
    if (s.status === 'requires_action') this.tickDeadline();
  }

  // ---- actions ----------------------------------------------------------

  startEdit(id) {
    this.editingId = id;
    this.render();
  }

  cancelEdit() {
    this.editingId = null;
    this.render();
    this.composer.focus();
  }

  editLast() {
    if (!this.lastUserId || isBusy(this.state.status)) return false;
    this.startEdit(this.lastUserId);
    return true;
  }

  async saveEdit(m, text) {
    try {
      await api('PATCH', `/chats/${this.id}/messages/${m.id}`, { content: textContent(text), ...this.modelFields() });
      this.editingId = null;
      this.render();
      this.composer.focus();
    } catch (e) {
      toast('Could not save the edit', 'error', e.message);
    }
  }

  async retryLast() {
    const m = this.state.messages.get(this.lastUserId);
    if (m) await this.saveEdit(m, messageText(m));
  }

  modelFields() {
    const out = {};
    if (this.composer.model.value) out.model_config_id = this.composer.model.value;
    if (this.composer.effort.value) out.reasoning_effort = this.composer.effort.value;
    return out;
  }

  async stop() {
    try {
      await api('POST', `/chats/${this.id}/interrupt`);
    } catch (e) {
      if (!(e instanceof ApiError && e.code === 'TRANSITION_NOT_ALLOWED')) toast('Could not stop', 'error', e.message);
    }
  }

  async promote(q) {
    try {
      await api('POST', `/chats/${this.id}/queue/${q.id}/promote`);
    } catch (e) {
      toast('Could not send it now', 'error', e.message);
    }
  }

  async unqueue(q) {
    try {
      await api('DELETE', `/chats/${this.id}/queue/${q.id}`);
    } catch (e) {
      toast('Could not remove it from the queue', 'error', e.message);
    }
  }

  async command(cmd) {
    try {
      if (cmd.name === 'compact') {
        await api('POST', `/chats/${this.id}/compact`);
      } else if (cmd.name === 'clear') {
        await api('POST', `/chats/${this.id}/clear`);
        toast('Context cleared. Earlier messages stay visible but the model no longer sees them.');
      } else if (cmd.name === 'title') {
        if (!cmd.arg) {
          if (this.chat) this.app.sidebar.renameDialog(this.chat);
          return;
        }
        await api('PATCH', `/chats/${this.id}`, { title: cmd.arg });
        this.setChatFields({ title: cmd.arg });
        this.app.sidebar.refresh();
      }
    } catch (e) {
      toast(`/${cmd.name} failed`, 'error', e.message);
    }
  }

  // ---- sending (durable: request_id kept until acknowledged) ------------

  savePending() { session.set(this.pendingKey, this.pending); }

  clearPending() {
    this.pending = null;
    this.savePending();
    this.scheduleRender();
  }

  async send(text, behavior) {
    if (this.pending) {
      toast('A message is still unconfirmed', 'error', 'Check its outcome or discard it before sending another.');
      return;
    }
    const body = { content: textContent(text), request_id: newUUID(), ...this.modelFields() };
    if (isBusy(this.state.status)) body.busy_behavior = behavior === 'interrupt' ? 'interrupt' : 'queue';
    this.pending = { body, text, state: 'sending', at: Date.now(), baseId: maxMessageId(this.state), queueBase: this.state.queue.map((q) => q.id) };
    this.savePending();
    this.composer.clear();
    this.scheduleRender();
    this.scrollToBottom();
    await this.post();
  }

  async post() {
    const p = this.pending;
    if (!p) return;
    p.state = 'sending';
    p.note = '';
    this.savePending();
    this.scheduleRender();
    try {
      await api('POST', `/chats/${this.id}/messages`, p.body);
      if (this.pending === p) this.clearPending();
      this.app.sidebar.refresh();
    } catch (e) {
      if (this.pending !== p) return;
      if (e instanceof ApiError && e.definite) {
        this.clearPending();
        if (!this.composer.value) this.composer.value = p.text;
        toast(e.code === 'QUEUE_FULL' ? 'The queue is full' : 'The message was not sent', 'error', e.message);
        return;
      }
      p.state = 'unconfirmed';
      p.note = e.code === 'INVOCATION_IN_PROGRESS' ? 'The server is still processing it.' : e.message;
      this.savePending();
      this.scheduleRender();
    }
  }

  // checkPending drops a pending send that visibly arrived (a new user
  // message or queue entry with its text) — a read, never a resend.
  checkPending(s) {
    const p = this.pending;
    if (!p || p.state === 'sending' && !s.messages.size && !s.queue.length) return;
    const arrived = [...s.messages.values()].some((m) => m.role === 'user' && m.id > p.baseId && messageText(m) === p.text) ||
      s.queue.some((q) => !(p.queueBase || []).includes(q.id) && messageText(q) === p.text);
    if (arrived) {
      this.pending = null;
      this.savePending();
    }
  }

  async checkOutcome() {
    const p = this.pending;
    if (!p) return;
    p.state = 'checking';
    this.scheduleRender();
    let note;
    try {
      // The server binds a request id to the SHA-256 of the message text
      // (its text parts, concatenated).
      const sha = await sha256Hex(p.body.content.filter((c) => c.type === 'text').map((c) => c.text).join(''));
      await api('GET', `/requests/${p.body.request_id}?content_sha256=${sha}`);
      toast('The message was received.');
      this.clearPending();
      return;
    } catch (e) {
      switch (e.code) {
        case 'INVOCATION_NOT_FOUND': note = 'The server never received it. Retrying the same request is safe.'; break;
        case 'INVOCATION_IN_PROGRESS': toast('The message was received and is being processed.'); this.clearPending(); return;
        case 'INVOCATION_UNRESOLVED': note = 'Its outcome is unknown after a server failure; an operator must reconcile it.'; break;
        case 'INVOCATION_RECONCILED': note = 'An operator has closed this request; it will not run again.'; break;
        case 'INVOCATION_CONFLICT': note = 'This request id was used for different content.'; break;
        default: note = await this.findInHistory(p) ? null : 'No sign of it in this chat yet. Retrying the same request cannot send it twice.';
      }
    }
    if (note === null) {
      toast('The message was received.');
      this.clearPending();
      return;
    }
    if (this.pending === p) {
      p.state = 'unconfirmed';
      p.note = note;
      this.savePending();
      this.scheduleRender();
    }
  }

  async findInHistory(p) {
    try {
      const r = await api('GET', `/chats/${this.id}/messages?limit=50`);
      return (r.messages || []).some((m) => m.role === 'user' && m.id > p.baseId && messageText(m) === p.text) ||
        (r.queued_messages || []).some((q) => messageText(q) === p.text);
    } catch {
      return false;
    }
  }

  discardPending() {
    const p = this.pending;
    this.clearPending();
    if (p && !this.composer.value) this.composer.value = p.text;
    this.composer.focus();
  }

  ghost(p) {
    const sending = p.state === 'sending' || p.state === 'checking';
    return h('div', { class: 'msg msg-user ghost' + (sending ? ' sending' : ' unconfirmed') },
      h('div', { class: 'bubble', text: p.text }),
      sending
        ? h('div', { class: 'ghost-status' }, h('span', { class: 'spinner small' }), p.state === 'checking' ? 'Checking…' : 'Sending…')
        : h('div', { class: 'ghost-status', role: 'alert' },
          h('div', {}, icon('alert'), h('strong', { text: 'Not confirmed' }), p.note ? h('span', { class: 'muted', text: ' — ' + p.note }) : null),
          h('div', { class: 'ghost-actions' },
            h('button', { type: 'button', class: 'btn small', onclick: () => this.checkOutcome() }, 'Check outcome'),
            h('button', { type: 'button', class: 'btn small primary', onclick: () => this.post() }, 'Retry same request'),
            h('button', { type: 'button', class: 'btn small ghost', onclick: () => this.discardPending() }, 'Discard'))));
  }
}

function validJSON(s) {
  try { JSON.parse(s); return true; } catch { return false; }
}

// NewChatView is the empty page at /: the composer creates a chat.
export class NewChatView {
  constructor(app) {
    this.app = app;
    this.pendingKey = 'chatd.pending.new';
    this.composer = new Composer({
      draftKey: 'chatd.draft.new', models: app.models, placeholder: 'Ask anything',
      onSend: (text) => this.create(text), commands: false,
    });
    this.system = h('textarea', { class: 'text-input', rows: 2, 'aria-label': 'System prompt', placeholder: 'You are a helpful assistant.' });
    this.tools = h('textarea', {
      class: 'text-input mono', rows: 4, spellcheck: 'false', 'aria-label': 'Dynamic tools (JSON)',
      placeholder: '[{"name": "lookup", "description": "Look something up", "input_schema": {"type": "object"}}]',
    });
    this.labels = h('input', { class: 'text-input', type: 'text', 'aria-label': 'Labels', placeholder: 'project:demo, team:core' });
    const options = h('details', { class: 'new-options' },
      h('summary', {}, 'Options'),
      h('label', { class: 'field-label', text: 'System prompt' }), this.system,
      h('label', { class: 'field-label', text: 'Dynamic tools your client answers (JSON array)' }), this.tools,
      h('label', { class: 'field-label', text: 'Labels (key:value, comma separated)' }), this.labels);
    this.status = h('div', { class: 'new-status', role: 'status', 'aria-live': 'polite' });
    this.el = h('section', { class: 'chat-view new-chat-view', 'aria-label': 'New chat' },
      h('header', { class: 'chat-header' }, app.sidebarButton(), h('h1', { class: 'chat-title-h', text: 'New chat' })),
      h('div', { class: 'scroller' }, h('div', { class: 'hero' },
        h('div', { class: 'hero-mark', 'aria-hidden': 'true' }, icon('chat')),
        h('h2', { text: 'What can I help with?' }),
        h('p', { class: 'muted', text: 'Chats are durable: close the tab mid-reply and everything is still here when you come back.' }))),
      h('div', { class: 'dock' }, h('div', { class: 'dock-inner' }, this.status, this.composer.el, options)));
    const p = session.get(this.pendingKey, null);
    if (p) this.showUnconfirmed(p, 'The page was reloaded before the server answered.');
  }

  mounted() { this.composer.focus(); }

  destroy() {}

  async create(text) {
    if (session.get(this.pendingKey, null)) {
      toast('A new chat is still unconfirmed', 'error', 'Retry it or discard it first.');
      return;
    }
    const body = { content: textContent(text), request_id: newUUID() };
    if (this.composer.model.value) body.model_config_id = this.composer.model.value;
    if (this.composer.effort.value) body.reasoning_effort = this.composer.effort.value;
    if (this.system.value.trim()) body.system_prompt = this.system.value.trim();
    if (this.tools.value.trim()) {
      try {
        body.unsafe_dynamic_tools = JSON.parse(this.tools.value);
        if (!Array.isArray(body.unsafe_dynamic_tools)) throw new Error('not an array');
      } catch {
        toast('Dynamic tools must be a JSON array', 'error');
        return;
      }
    }
    if (this.labels.value.trim()) {
      body.labels = {};
      for (const pair of this.labels.value.split(',')) {
        const [k, ...v] = pair.split(':');
        if (k.trim()) body.labels[k.trim()] = v.join(':').trim();
      }
    }
    session.set(this.pendingKey, { body, text });
    this.composer.clear();
    await this.post({ body, text });
  }

  async post(p) {
    this.status.replaceChildren(h('span', { class: 'spinner small' }), ' Creating chat…');
    try {
      const chat = await api('POST', '/chats', p.body);
      session.set(this.pendingKey, null);
      this.status.replaceChildren();
      this.app.navigate(`/chats/${chat.id}`);
      this.app.sidebar.refresh();
    } catch (e) {
      if (e instanceof ApiError && e.definite) {
        session.set(this.pendingKey, null);
        this.status.replaceChildren();
        if (!this.composer.value) this.composer.value = p.text;
        toast('The chat was not created', 'error', e.message);
        return;
      }
      this.showUnconfirmed(p, e.message);
    }
  }

  showUnconfirmed(p, note) {
    this.status.replaceChildren(h('div', { class: 'ghost-status', role: 'alert' },
      h('div', {}, icon('alert'), h('strong', { text: 'Not confirmed' }), h('span', { class: 'muted', text: ` — “${p.text.slice(0, 80)}”: ${note}` })),
      h('div', { class: 'ghost-actions' },
        h('button', { type: 'button', class: 'btn small primary', onclick: () => this.post(p) }, 'Retry same request'),
        h('button', { type: 'button', class: 'btn small ghost', onclick: () => {
          session.set(this.pendingKey, null);
          this.status.replaceChildren();
          if (!this.composer.value) this.composer.value = p.text;
        } }, 'Discard'))));
  }
}
