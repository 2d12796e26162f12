// The conversation pane: the scroller with the thread of messages, the
// streaming preview and a pending send's ghost; following new content
// only while the user is at the bottom ("Jump to latest" otherwise); and
// the screen-reader announcements of a streaming reply. Nodes are cached
// by key and signature, so a message is rebuilt only when it changed
// (messages.js builds them).

import { h, icon, copyText, flashCopied } from './dom.js';
import { messageText } from './api.js';
import * as render from './messages.js';
import { mcpVersion } from './mcp.js';
import { OlderPages } from './older.js';
import { switcher, firstReplies, refocus, versionInfo } from './versions.js';
import { isScheduled, learnAuthors } from './schedule.js';

// toolsSig is part of a message's signature: tool cards show MCP details
// (server, effect) from a list that arrives or changes after the message.
function toolsSig(m) {
  return (m.content || []).some((p) => p.type === 'tool-call' || p.type === 'tool-result') ? mcpVersion : 0;
}

// AT_BOTTOM_PX: closer than this to the end counts as at the bottom.
const AT_BOTTOM_PX = 48;
// NEAR_TOP_PX: scrolled closer than this to the top loads the older page.
const NEAR_TOP_PX = 400;

// markMatch marks the first case-insensitive occurrence of query within one
// text node of node and returns the mark (null when there is none).
function markMatch(node, query) {
  if (!query) return null;
  const q = query.toLowerCase();
  const walk = document.createTreeWalker(node, NodeFilter.SHOW_TEXT);
  for (let t = walk.nextNode(); t; t = walk.nextNode()) {
    const at = t.data.toLowerCase().indexOf(q);
    if (at < 0 || t.data.toLowerCase().length !== t.data.length) continue;
    const range = document.createRange();
    range.setStart(t, at);
    range.setEnd(t, at + query.length);
    const mark = h('mark', { class: 'search-mark' });
    range.surroundContents(mark);
    return mark;
  }
  return null;
}

export class Thread {
  // handlers: {chatId: the chat whose older pages it loads (older.js),
  //            onJump(): after "Jump to latest",
  //            onEdit(m), onSaveEdit(m, text), onCancelEdit(): the inline editor}
  constructor(handlers) {
    this.handlers = handlers;
    this.nodes = new Map(); // key -> {sig, node}
    this.reasoningTimes = new Map(); // reasoning text -> seconds, measured live
    this.rendered = false;
    this.lastUserId = null;
    this.list = h('div', { class: 'thread', role: 'log', 'aria-label': 'Conversation', 'aria-live': 'off' });
    this.live = h('div', { class: 'sr-only', 'aria-live': 'polite', 'aria-atomic': 'false' });
    this.scroller = h('div', { class: 'scroller', tabindex: '-1' }, this.list);
    this.pinned = true; // the user is at the bottom: follow new content
    // Older messages than the stream's window load a page at a time when
    // the user scrolls near the top (or presses "Load older messages").
    this.older = handlers.chatId ? new OlderPages(handlers.chatId, () => this.rerender()) : null;
    this.scroller.addEventListener('scroll', () => {
      this.pinned = this.isAtBottom();
      if (this.pinned) this.jumpBtn.hidden = true;
      if (this.rendered && this.scroller.scrollTop < NEAR_TOP_PX) this.loadOlder();
    }, { passive: true });
    if (window.ResizeObserver) {
      this.resizer = new ResizeObserver(() => {
        if (this.pinned) this.scroller.scrollTop = this.scroller.scrollHeight;
      });
      this.resizer.observe(this.scroller);
      this.resizer.observe(this.list);
    }
    // A search result opens the chat at ?message=<id>: the first render
    // with messages finds it, follow() scrolls to it and highlights it.
    const jump = new URLSearchParams(location.search);
    this.jumpTo = Number(jump.get('message')) || 0;
    this.jumpQuery = jump.get('q') || '';
    this.jump = null;
    this.jumpBtn = h('button', { type: 'button', class: 'jump-btn', hidden: true, onclick: () => { this.scrollToBottom(); handlers.onJump(); } },
      icon('down'), 'Jump to latest');
    this.skeleton();
  }

  destroy() {
    this.destroyed = true;
    if (this.resizer) this.resizer.disconnect();
  }

  // loadOlder loads the page before the oldest message shown, if any.
  loadOlder() {
    const o = this.older;
    if (o && o.more && !o.loading && !o.error && !this.destroyed) o.loadOlder();
  }

  // rerender shows a change of the older pages (or of authors' names) at
  // once, with the last render's state: the message at the top of the view
  // stays where it is (the page goes above it), the bottom stays the bottom.
  rerender() {
    if (!this.last || this.destroyed) return;
    const stick = this.pinned && this.isAtBottom();
    const top = this.scroller.getBoundingClientRect().top;
    const anchor = [...this.list.children].find((n) => n.dataset.id && n.getBoundingClientRect().bottom > top);
    const before = anchor ? anchor.getBoundingClientRect().top : 0;
    // The keyboard's place: on the bar's button, kept through the load.
    const focused = !!(document.activeElement && document.activeElement.closest('.older-bar')) ||
      (this.olderFocus && document.activeElement === this.scroller);
    this.render(...this.last, true);
    if (this.jump) this.follow(false);
    else if (stick) this.scrollToBottom();
    else if (anchor && anchor.isConnected) this.scroller.scrollTop += anchor.getBoundingClientRect().top - before;
    this.olderFocus = false;
    if (focused) {
      const btn = this.list.querySelector('.older-bar button');
      (btn || this.scroller).focus({ preventScroll: true });
      this.olderFocus = !btn;
    }
  }

  skeleton() {
    this.list.replaceChildren(h('div', { class: 'skeleton-thread', role: 'status', 'aria-label': 'Loading conversation' },
      h('div', { class: 'skeleton-bubble' }),
      h('div', { class: 'skeleton-line w90' }), h('div', { class: 'skeleton-line w75' }), h('div', { class: 'skeleton-line w60' })));
  }

  // replace shows node instead of the conversation (the view is done).
  replace(node) {
    this.list.replaceChildren(node);
  }

  isAtBottom() {
    const s = this.scroller;
    return s.scrollHeight - s.scrollTop - s.clientHeight < AT_BOTTOM_PX;
  }

  // scrollToBottom jumps (never smooth: a smooth scroll chasing a growing
  // reply would lose the bottom).
  scrollToBottom() {
    this.scroller.scrollTop = this.scroller.scrollHeight;
    this.pinned = true;
    this.jumpBtn.hidden = true;
  }

  // sticky: whether the next render should end at the bottom. Ask before
  // rendering; follow(sticky) after everything around the thread is laid out.
  sticky() {
    return !this.jumpTo && (this.pinned || this.isAtBottom() || !this.rendered);
  }

  follow(stick) {
    if (this.jump) {
      // The hit's node as it is now: a render between the one that found
      // it and this call may have rebuilt it (reconcile marked the new one).
      const cached = this.jump.found ? this.nodes.get(this.jump.key) : null;
      this.jump = null;
      if (cached) {
        const node = cached.node;
        (node.querySelector('.search-mark') || node).scrollIntoView({ block: 'center' });
        this.pinned = this.isAtBottom();
        this.jumpBtn.hidden = this.pinned;
        return;
      }
      stick = true; // the message is gone: open at the bottom as usual
    }
    if (stick) this.scrollToBottom();
    else if (this.scroller.scrollHeight - this.scroller.scrollTop - this.scroller.clientHeight > AT_BOTTOM_PX) this.jumpBtn.hidden = false;
  }

  // markHit highlights the message a search opened and marks the term in
  // it; it returns the mark (null when the text has no match).
  markHit(node) {
    node.classList.add('search-hit');
    return node.querySelector('.search-mark') || markMatch(node, this.jumpQuery);
  }

  reasoningFor(m) {
    const r = (m.content || []).find((p) => p.type === 'reasoning');
    return r ? this.reasoningTimes.get(r.text) ?? null : null;
  }

  // render shows chat state s; editingId is the user message being edited,
  // saved the ids of messages shown from a saved (replayed) answer, ghost
  // (or null) the node maker for a pending send, ghostSig its signature.
  // It sets lastUserId.
  // idle says the chat takes a new turn now (Continue, Regenerate);
  // outcome(requestId) is a finished turn's durable outcome, or null.
  // It also sets requestIds: the request ids of the user messages, in order.
  // again: a rerender of the last state (it may already be replaced: the
  // pages follow the state of the chat's own renders only).
  render(s, opts, again = false) {
    this.last = [s, opts];
    const { editingId, saved, ghost, ghostSig, idle = false, outcome = () => null } = opts;
    const o = this.older;
    if (o && !again) o.sync(s);
    const byId = new Map(o ? o.msgs : []);
    for (const [id, m] of s.messages) byId.set(id, m);
    const msgs = [...byId.values()].sort((a, b) => a.id - b.id);
    // Each turn: its user message and the last assistant message it has.
    const lastReply = new Map();
    let turn = null, lastTurn = null, lastAssistant = null;
    this.requestIds = [];
    for (const m of msgs) {
      if (render.boundaryOf(m)) continue;
      if (m.role === 'user') {
        turn = lastTurn = m;
        if (m.request_id) this.requestIds.push(m.request_id);
      } else if (m.role === 'assistant' && turn) {
        lastReply.set(turn.id, m.id);
        lastAssistant = m;
      }
    }
    const stoppedStatus = (u) => {
      const o = u && outcome(u.request_id);
      return !!o && (o.status === 'interrupted' || o.status === 'superseded');
    };
    const replyOf = new Map([...lastReply].map(([u, a]) => [a, u]));
    const users = new Map(msgs.filter((m) => m.role === 'user').map((m) => [m.id, m]));
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
    const approvalIds = new Set((s.approvals || []).map((c) => c.tool_call_id));
    const ctx = { results, calls, running, waitingIds, approvalIds, reasoningFor: (m) => this.reasoningFor(m) };
    const hd = this.handlers;
    const actions = {
      copy: async (text, btn) => { if (await copyText(text)) flashCopied(btn); },
      edit: (m) => hd.onEdit(m),
      continue: () => hd.onContinue(),
      regenerate: (m) => hd.onRegenerate(replyOf.get(m.id) != null ? firstReply.get(replyOf.get(m.id)) : m.id),
      versions: hd.onSwitch ? (m) => switcher(m, hd.onSwitch, !idle) : null,
      fork: hd.onFork ? (m) => hd.onFork(m) : null,
    };
    const firstReply = firstReplies(msgs);
    // Only a message with versions shows idleness (its switcher is off
    // while a turn runs): a turn ending rebuilds those, not every message.
    const versioned = (m) => (versionInfo(m) ? idle : 0);
    const waitSig = [...waitingIds].join(',') + '|' + [...approvalIds].join(',');

    // Remember how long live reasoning took, for the committed message.
    if (s.preview) {
      const r = s.preview.parts.find((p) => p.type === 'reasoning');
      if (r && s.preview.reasoningStart != null) {
        const end = s.preview.reasoningEnd ?? Date.now();
        this.reasoningTimes.set(r.text, (end - s.preview.reasoningStart) / 1000);
      }
    }

    const items = [];
    if (o && (o.more || o.loading || o.error)) {
      items.push({ key: 'older', sig: JSON.stringify([o.more, o.loading, o.error]),
        make: () => render.olderBar(o, () => { o.error = ''; this.loadOlder(); }) });
    }
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
        const editing = editingId === m.id;
        const isLast = m === lastTurn;
        const o = outcome(m.request_id);
        // A failed turn keeps its error here once the chat has moved on
        // (the banner shows the current one); a turn stopped before any
        // reply says so here.
        const note = o && o.status === 'error' && !(isLast && s.status === 'error')
          ? { kind: 'failed', text: (o.last_error && o.last_error.message) || 'The turn failed.' }
          : stoppedStatus(m) && !lastReply.has(m.id) ? { kind: 'stopped', canContinue: isLast && idle } : null;
        const scheduled = isScheduled(m.created_by);
        items.push({
          key: 'u' + m.id, sig: JSON.stringify([m.content, editing, note, m.sibling_ids, versioned(m), scheduled]),
          make: () => {
            if (editing) return render.userEditor(m, (text) => hd.onSaveEdit(m, text), () => hd.onCancelEdit());
            const node = render.userMessage(m, actions, note);
            if (scheduled) node.prepend(h('div', { class: 'scheduled-label', title: 'Sent by a schedule of this chat or of the chat it started from' }, icon('clock'), 'Scheduled'));
            return node;
          },
        });
      } else if (m.role === 'assistant') {
        const own = (m.content || []).filter((p) => p.type === 'tool-call').map((p) => results.get(p.tool_call_id) || null);
        const rsec = this.reasoningFor(m);
        const isSaved = !!(saved && saved.has(m.id));
        const u = users.get(replyOf.get(m.id));
        const last = m === lastAssistant && u === lastTurn;
        const extra = {
          stopped: !!u && stoppedStatus(u),
          canContinue: last && idle,
          canRegenerate: last && idle && !!u,
        };
        items.push({
          key: 'a' + m.id, sig: JSON.stringify([m.content, own, own.some((r) => !r) ? [running, waitSig] : 0, rsec, isSaved, toolsSig(m), extra, m.sibling_ids, versioned(m)]),
          make: () => {
            const node = render.assistantMessage(m, ctx, actions, extra);
            if (isSaved) {
              node.classList.add('saved');
              node.prepend(h('div', { class: 'saved-label', title: 'This request was answered before; nothing ran again.' }, icon('check'), 'Saved answer'));
            }
            return node;
          },
        });
      } else if (m.role === 'tool') {
        if ((m.content || []).some((p) => p.type === 'tool-result' && !calls.has(p.tool_call_id))) {
          items.push({ key: 't' + m.id, sig: JSON.stringify([m.content, mcpVersion]), make: () => render.toolResults(m, ctx) });
        }
      }
    }
    if (s.preview && s.preview.parts.length) {
      const p = s.preview;
      items.push({ key: 'preview', sig: `${p.hv}/${p.ga}/${p.lastSeq}/${p.parts.length}/${p.reasoningEnd}/${waitSig}/${mcpVersion}`, make: () => render.preview(p, ctx) });
    } else if (s.status === 'running' && !s.retry) {
      items.push({ key: 'typing', sig: 'typing', make: () => h('div', { class: 'msg msg-assistant typing', 'aria-label': 'Assistant is thinking' }, h('span', { class: 'dots' }, h('i'), h('i'), h('i'))) });
    }
    if (ghost) items.push({ key: 'ghost', sig: ghostSig, make: ghost });
    if (!items.length) {
      items.push({ key: 'empty', sig: 'empty', make: () => h('div', { class: 'empty-state' },
        h('div', { class: 'empty-icon', 'aria-hidden': 'true' }, icon('chat')),
        h('h2', { text: 'Nothing here yet' }),
        h('p', { class: 'muted', text: 'Send a message below to start; replies stream in as they are written.' })) });
    }
    this.reconcile(items);
    learnAuthors([...users.values()].map((u) => u.created_by), () => this.rerender());
    // After a switch from the keyboard, the focus follows to the version shown.
    if (this.refocus && refocus(this.scroller, this.refocus.id, this.refocus.label)) this.refocus = null;
    if (this.jumpTo && msgs.length) {
      const id = this.jumpTo;
      const key = this.nodes.has('u' + id) ? 'u' + id : 'a' + id;
      const hit = this.nodes.get(key);
      // A hit older than the pages shown: load pages until it is in.
      if (!hit && o && id < msgs[0].id && (o.more || o.loading) && !o.error) {
        queueMicrotask(() => this.loadOlder()); // after this render, not inside it
        this.announce(s, msgs);
        this.rendered = true;
        return;
      }
      this.jumpTo = 0;
      // Marked now, and again whenever reconcile rebuilds it; follow()
      // scrolls to it once everything around the thread is laid out.
      this.jump = { found: !!hit, key };
      if (hit) {
        this.hitKey = key;
        this.markHit(hit.node);
      }
      const url = new URL(location.href);
      url.searchParams.delete('message');
      url.searchParams.delete('q');
      history.replaceState(null, '', url.pathname + url.search + url.hash);
    }
    this.announce(s, msgs);
    this.rendered = true;
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
        // A rebuilt search hit (its author's name arrived, say) keeps its
        // highlight.
        if (it.key === this.hitKey) this.markHit(node);
      }
      const expected = prev ? prev.nextSibling : this.list.firstChild;
      if (cached.node !== expected) this.list.insertBefore(cached.node, expected);
      prev = cached.node;
    }
    for (const [key, c] of this.nodes) {
      if (!keep.has(key)) {
        c.node.remove();
        this.nodes.delete(key);
      }
    }
    // Anything else (the loading skeleton) goes.
    for (const child of [...this.list.children]) {
      if (![...this.nodes.values()].some((c) => c.node === child)) child.remove();
    }
  }
}
