// The chat view: one chat's page. It keeps the chat's state, built from
// the stream (stream.js, state.js), and wires the parts around it: the
// thread (thread.js), the dock above the composer (dock.js), the
// required-action card (action.js), the review card (review.js), the
// composer, and durable sends (send.js).

import { h, icon } from './dom.js';
import { api, ApiError, newUUID, textContent, messageText } from './api.js';
import { newChatState, applyEvent, maxMessageId, isBusy } from './state.js';
import { Composer } from './composer.js';
import { toast } from './widgets.js';
import { ChatStream } from './stream.js';
import { Thread } from './thread.js';
import { StatusLine, QueueChips, ErrorBanner, ArchivedNotice } from './dock.js';
import { ActionCard } from './action.js';
import { ReviewCard } from './review.js';
import { ApprovalCard } from './approval.js';
import { ElicitationCard } from './elicitation.js';
import { DurableSend, notConfirmed, inProgress, pendingButtons, savedAnswers } from './send.js';
import { ToolsPopover, MCPNotice, onMCP } from './mcp.js';
import { Outcomes } from './outcomes.js';
import * as versions from './versions.js';
import { RetryNotice, modelSwitch } from './retry.js';

const STALE_PREVIEW_MS = 1500;

export class ChatView {
  constructor(app, chatId) {
    this.app = app;
    this.id = chatId;
    this.state = newChatState();
    this.next = null; // the state a new connection bootstraps, until it is complete
    this.loaded = false;
    this.closed = false;
    this.editingId = null;
    this.chat = null;
    this.loadSeq = 0; // loadChat's reads, the last one's answer counts
    this.changes = 0; // changes made here, which an older read would undo
    this.send = new DurableSend({
      key: `chatd.pending.${chatId}`,
      submit: (body) => api('POST', `/chats/${this.id}/messages`, body),
      onChange: () => this.scheduleRender(),
      onAccepted: (r) => {
        if (r && r.replayed) {
          this.saved = savedAnswers(this.id);
          this.scheduleRender();
        }
        this.app.sidebar.refresh();
      },
      onRefused: (e, p) => {
        if (!this.composer.value) this.composer.value = p.text;
        if (this.composer.attachments) this.composer.attachments.restore(p.files);
        toast(e.code === 'QUEUE_FULL' ? 'The queue is full' : 'The message was not sent', 'error', e.message);
      },
    });
    this.saved = savedAnswers(chatId); // ids of messages shown from a saved answer

    this.build();
    this.stream = new ChatStream(chatId, {
      onOpen: () => { this.next = newChatState(); },
      onFrame: (events) => this.onFrame(events),
      onDown: () => {
        this.next = null;
        this.pill.hidden = false;
        this.offline = true;
        this.scheduleRender();
      },
      onGone: (deleted) => {
        this.notFound();
        if (deleted) this.app.sidebar.refresh();
      },
    });
    this.stream.connect();
    this.loadChat();
    this.ticker = setInterval(() => this.tick(), 1000);
  }

  build() {
    this.titleEl = h('h1', { class: 'chat-title-h', text: 'Loading…' });
    this.pill = h('span', { class: 'conn-pill', role: 'status', hidden: true }, h('span', { class: 'spinner small' }), 'Reconnecting…');
    // The chat menu acts on the loaded chat, so it shows once that is here.
    this.menuBtn = h('button', {
      type: 'button', class: 'icon-btn', 'aria-label': 'Chat options', 'aria-haspopup': 'menu', 'aria-expanded': 'false',
      hidden: true, onclick: (e) => this.chat && this.app.chatMenu(this.chat, e.currentTarget),
    }, icon('dots'));
    // A subagent's view says whose subagent it is, with a link back.
    this.parentEl = h('span', { class: 'subagent-of', hidden: true });
    const header = h('header', { class: 'chat-header' },
      this.app.sidebarButton(), this.titleEl, this.parentEl, this.pill, h('span', { class: 'spacer' }), this.menuBtn);

    this.thread = new Thread({
      chatId: this.id,
      onJump: () => this.composer.focus(),
      onEdit: (m) => this.startEdit(m.id),
      onSaveEdit: (m, text) => this.saveEdit(m, text),
      onCancelEdit: () => this.cancelEdit(),
      onContinue: () => this.sendMessage('Continue', 'queue', false),
      onRegenerate: (replyId) => replyId ? versions.regenerate(this.id, replyId, this.modelFields()) : this.retryLast(),
      onSwitch: (id, label) => {
        this.thread.refocus = { id, label };
        versions.switchBranch(this.id, id).then((ok) => { if (!ok) this.thread.refocus = null; });
      },
      onFork: async (m) => {
        const c = await versions.fork(this.id, m.id);
        if (c) this.app.navigate(`/chats/${c.id}`);
      },
    });
    this.outcomes = new Outcomes(() => this.scheduleRender());
    this.banner = new ErrorBanner({
      onRetry: () => this.retryLast(),
      onEditLast: () => this.startEdit(this.thread.lastUserId),
      onCommand: (cmd) => this.command(cmd),
      // A failed turn can be rerun on another model.
      switcher: () => modelSwitch(this.app.models, this.composer.model.value, (m) => this.switchModel(m)),
    });
    this.retryNotice = new RetryNotice({
      models: () => this.app.models,
      current: () => this.composer.model.value,
      onSwitch: (m) => this.switchModel(m),
      onStop: () => this.stop(),
    });
    this.archived = new ArchivedNotice(this.banner.el, () => this.app.sidebar.patch(this.chat, { archived: false }));
    this.action = new ActionCard(this.id, () => this.chat && this.chat.requires_action_deadline_at);
    this.review = new ReviewCard(this.id, !!(this.app.me && this.app.me.admin));
    this.approval = new ApprovalCard(this.id);
    this.elicitation = new ElicitationCard(this.id);
    this.statusLine = new StatusLine();
    this.mcpNotice = new MCPNotice();
    this.tools = new ToolsPopover({
      selection: () => this.mcpSelection(),
      ready: () => !!this.chat, // the switches act on the loaded chat
      onChange: (ids) => this.setMCPServers(ids),
    });
    this.stopMCP = onMCP(() => this.scheduleRender());
    this.queue = new QueueChips({ onPromote: (q) => this.promote(q), onRemove: (q) => this.unqueue(q) });
    this.composer = new Composer({
      draftKey: `chatd.draft.${this.id}`,
      models: this.app.models,
      placeholder: 'Message chatd',
      commands: true,
      onSend: (text, behavior, files) => this.sendMessage(text, behavior, true, files),
      attach: true,
      onStop: () => this.stop(),
      onCommand: (cmd) => this.command(cmd),
      onEditLast: () => this.editLast(),
      tools: this.tools,
    });
    const dock = h('div', { class: 'dock' },
      h('div', { class: 'dock-inner' }, this.thread.jumpBtn, this.mcpNotice.el, this.banner.el, this.retryNotice.el, this.review.el, this.approval.el, this.elicitation.el, this.action.el, this.statusLine.el, this.queue.el, this.composer.el));
    this.el = h('section', { class: 'chat-view', 'aria-label': 'Chat' }, header, this.thread.scroller, dock, this.thread.live);
    // Esc stops a running chat, wherever the focus is (an open editor,
    // popup, menu or dialog takes Esc first).
    this.onKeydown = (e) => {
      if (e.key === 'Escape' && !e.defaultPrevented && (this.state.status === 'running' || this.state.status === 'interrupting') &&
        !this.el.querySelector('.editing') && !document.querySelector('dialog[open], .menu, .tools-popover:not([hidden])') &&
        !document.body.classList.contains('drawer-open')) {
        e.preventDefault();
        this.stop();
      }
    };
    document.addEventListener('keydown', this.onKeydown);
  }

  mounted() {
    this.composer.focus();
  }

  destroy() {
    this.closed = true;
    clearInterval(this.ticker);
    clearTimeout(this.staleTimer);
    this.thread.destroy();
    this.tools.destroy();
    this.elicitation.destroy();
    this.stopMCP();
    document.removeEventListener('keydown', this.onKeydown);
    this.stream.close(1000, 'leaving');
  }

  // ---- data -------------------------------------------------------------

  // loadChat reads the chat. An answer that a later read or a change made
  // here (a rename, archive, the tools) has overtaken is dropped: it could
  // undo what the person just did.
  async loadChat() {
    const seq = ++this.loadSeq;
    const changed = this.changes;
    try {
      const chat = await api('GET', `/chats/${this.id}`);
      if (this.closed || seq !== this.loadSeq) return;
      if (changed !== this.changes) {
        this.loadChat();
        return;
      }
      this.chat = chat;
      this.menuBtn.hidden = false;
      this.scheduleRender();
      this.tools.update();
      this.titleEl.textContent = this.chat.title || 'New chat';
      document.title = (this.chat.title || 'New chat') + ' · chatd';
      // The chat's last model is the picker's start; loaded again (each
      // turn end), the chat leaves what the person picked since alone.
      if (this.chat.last_model_config_id && !this.modelShown && this.app.models.length) {
        this.modelShown = true;
        this.composer.setModels(this.app.models, this.chat.last_model_config_id);
      }
      if (this.chat.parent_chat_id) this.showParent(this.chat.parent_chat_id);
    } catch (e) {
      if (e instanceof ApiError && e.status === 404) this.notFound();
    }
  }

  // showParent fills the "Subagent of …" line with a link to the parent.
  async showParent(parentId) {
    let title = 'its parent chat';
    try {
      const p = await api('GET', `/chats/${parentId}`);
      title = p.title || 'New chat';
    } catch (e) { /* the link still leads there */ }
    if (this.closed) return;
    this.parentEl.replaceChildren('Subagent of ',
      h('a', { href: `/chats/${parentId}`, 'data-link': true, class: 'parent-link', text: title }));
    this.parentEl.hidden = false;
  }

  setChatFields(fields) {
    if (!this.chat) return;
    this.changes++;
    Object.assign(this.chat, fields);
    if (fields.archived !== undefined) this.scheduleRender();
    if (fields.title !== undefined) {
      this.titleEl.textContent = this.chat.title || 'New chat';
      document.title = (this.chat.title || 'New chat') + ' · chatd';
    }
  }

  notFound() {
    this.closed = true;
    this.stream.close();
    this.pill.hidden = true;
    this.menuBtn.hidden = true; // nothing to rename, archive or delete
    this.titleEl.textContent = 'Chat not found';
    this.el.querySelector('.dock').hidden = true;
    this.thread.replace(h('div', { class: 'empty-state' },
      h('h2', { text: 'This chat does not exist' }),
      h('p', { class: 'muted', text: 'It may have been deleted. Start a new chat from the sidebar.' }),
      h('a', { class: 'btn primary', href: '/', 'data-link': true }, 'New chat')));
  }

  // ---- stream -----------------------------------------------------------

  // onFrame folds a frame into the state being shown, or into the one a
  // new connection is bootstrapping (shown once its status event is in).
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
      // Review ends when the chat leaves requires_action (API.md).
      if (st !== 'requires_action' && this.chat && this.chat.last_error && this.chat.last_error.kind === 'unresolved_effects') this.chat.last_error = null;
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
    this.pill.hidden = true;
    this.app.sidebar.patchLocal(this.id, { status: next.status });
    if (this.offline) this.backOnline(next);
  }

  // backOnline runs when a lost connection is back (its bootstrap is in):
  // a Stop pressed meanwhile is sent now if the chat still runs, and a
  // send whose answer was lost is looked up (read-only), so "Retry same
  // request" is offered when the server never got it. Nothing is resent
  // by itself.
  backOnline(s) {
    this.offline = false;
    if (this.stopQueued) {
      this.stopQueued = false;
      if (s.status === 'running' || s.status === 'requires_action') this.stop();
    }
    const p = this.send.pending;
    if (p && p.state === 'unconfirmed' && !p.lookup) this.send.checkOutcome();
  }

  // ---- rendering --------------------------------------------------------

  scheduleRender() {
    if (this.renderQueued) return;
    this.renderQueued = true;
    requestAnimationFrame(() => {
      this.renderQueued = false;
      if (!this.closed) this.render();
    });
  }

  render() {
    if (!this.loaded) return;
    const s = this.state;
    const stick = this.thread.sticky();
    this.settleSend(s);
    const p = this.send.pending;
    const idle = s.status === 'waiting' || s.status === 'error';
    this.thread.render(s, {
      idle: idle && !p && !(this.chat && this.chat.archived),
      outcome: (requestId) => this.outcomes.of(requestId),
      editingId: this.editingId,
      saved: this.saved,
      ghost: p ? () => this.ghost(p) : null,
      ghostSig: p ? JSON.stringify([p, p.state === 'progress' && this.admittedMessage(p)]) : '',
    });
    // The latest turns' outcomes (the current turn's only once it ended).
    const asks = this.thread.requestIds;
    this.outcomes.want(idle ? asks : asks.slice(0, -1));
    this.archived.show(!!(this.chat && this.chat.archived));
    const running = s.status === 'running' || s.status === 'interrupting';
    // A turn that ended spent tokens: the budget notice reads them again.
    if (this.wasRunning && !running) this.composer.refreshBudget();
    this.wasRunning = running;
    this.composer.setState({ busy: isBusy(s.status), running, stopping: s.status === 'interrupting' || !!this.stopQueued, locked: !!(this.chat && this.chat.archived) });
    const review = this.underReview(s);
    s.review = !!review;
    s.offline = !!this.offline;
    s.stopQueued = !!this.stopQueued;
    this.statusLine.show(s);
    if (this.chat) this.mcpNotice.show(this.mcpSelection());
    this.queue.show(s.queue);
    this.banner.show(s.status === 'error' ? s.error : null, !!this.thread.lastUserId);
    this.retryNotice.show(s.status === 'running' && !this.offline ? s.retry : null);
    this.review.show(review);
    const approvals = s.status === 'requires_action' && !review ? s.approvals : null;
    this.approval.show(approvals);
    this.elicitation.show(s.elicitations);
    this.action.show(s.status === 'requires_action' && !review ? withoutApprovals(s.action, approvals) : null);
    this.thread.follow(stick);
  }

  // underReview is what the review card shows for s, or null: the chat
  // stopped for an operator review (requires_action with last_error kind
  // unresolved_effects), its pending calls and their turn's request id.
  underReview(s) {
    if (s.status !== 'requires_action' || !this.chat || !this.chat.last_error || this.chat.last_error.kind !== 'unresolved_effects') return null;
    const calls = (s.action && s.action.tool_calls) || [];
    const msgs = [...s.messages.values()].sort((a, b) => a.id - b.id);
    const first = calls.length ? msgs.find((m) => (m.content || []).some((p) => p.type === 'tool-call' && p.tool_call_id === calls[0].tool_call_id)) : null;
    let requestId = '';
    for (const m of msgs) {
      if (first && m.id > first.id) break;
      if (m.role === 'user') requestId = m.request_id || '';
    }
    return { calls, requestId };
  }

  // ghost is the pending send, shown as a user message until its outcome
  // is confirmed: "Sending…", "In progress" (admitted, still running; its
  // message is in the thread once the stream shows it), or "Not
  // confirmed" with what the user can do.
  ghost(p) {
    const sending = p.state === 'sending' || p.state === 'checking';
    const shown = p.state === 'progress' && this.admittedMessage(p);
    return h('div', { class: 'msg msg-user ghost' + (sending ? ' sending' : p.state === 'progress' ? ' in-progress' : ' unconfirmed') },
      shown ? null : h('div', { class: 'bubble', text: p.text }),
      sending
        ? h('div', { class: 'ghost-status' }, h('span', { class: 'spinner small' }), p.state === 'checking' ? 'Checking…' : 'Sending…')
        : (p.state === 'progress' ? inProgress : notConfirmed)(p.note, pendingButtons(this.send, () => this.discardSend())));
  }

  // admittedMessage: the stream shows a user message or queued message
  // carrying the pending send's request_id (matched by id, never by text).
  admittedMessage(p) {
    const id = p.body.request_id;
    return [...this.state.messages.values()].some((m) => m.role === 'user' && m.request_id === id) ||
      this.state.queue.some((q) => q.request_id === id);
  }

  tick() {
    const s = this.state;
    if (s.retry) this.statusLine.show(s, true);
    if (s.status === 'requires_action') this.action.tick();
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
    if (!this.thread.lastUserId || isBusy(this.state.status)) return false;
    this.startEdit(this.thread.lastUserId);
    return true;
  }

  async saveEdit(m, text) {
    try {
      // The edit keeps the message's attachments (one that has expired makes the server refuse it).
      const files = (m.content || []).filter((p) => p.type === 'file' && p.file_id).map((p) => ({ type: 'file', file_id: p.file_id }));
      const content = [...(text.trim() ? textContent(text) : []), ...files];
      await api('PATCH', `/chats/${this.id}/messages/${m.id}`, { content: content.length ? content : textContent(text), ...this.modelFields() });
      this.editingId = null;
      this.render();
      this.composer.focus();
    } catch (e) {
      toast('Could not save the edit', 'error', e.message);
    }
  }

  async retryLast() {
    const m = this.state.messages.get(this.thread.lastUserId);
    if (m) await this.saveEdit(m, messageText(m));
  }

  // switchModel reruns the last user message on model m (the composer's
  // model from now on), ending the current attempts.
  async switchModel(m) {
    this.composer.model.value = m.id;
    this.composer.model.dispatchEvent(new Event('change'));
    await this.retryLast();
  }

  modelFields() {
    const out = {};
    if (this.composer.model.value) out.model_config_id = this.composer.model.value;
    if (this.composer.effort.value) out.reasoning_effort = this.composer.effort.value;
    return out;
  }

  // mcpSelection is the chat's MCP servers: null for every server.
  mcpSelection() {
    return this.chat ? this.chat.mcp_server_ids ?? null : null;
  }

  // setMCPServers switches the chat's MCP servers (null: every server).
  async setMCPServers(ids) {
    if (!this.chat) throw new Error('the chat is not loaded yet');
    try {
      await api('PATCH', `/chats/${this.id}`, { mcp_server_ids: ids });
    } catch (e) {
      toast('Could not change the chat’s tools', 'error', e.message);
      throw e;
    }
    this.changes++;
    this.chat.mcp_server_ids = ids;
    this.scheduleRender();
  }

  // stop interrupts the chat; while the connection is down (or the
  // request cannot reach the server) the Stop waits and is sent when the
  // connection is back.
  async stop() {
    if (this.offline) {
      this.queueStop();
      return;
    }
    try {
      await api('POST', `/chats/${this.id}/interrupt`);
    } catch (e) {
      if (e instanceof ApiError && e.status === 0) this.queueStop();
      else if (!(e instanceof ApiError && e.code === 'TRANSITION_NOT_ALLOWED')) toast('Could not stop', 'error', e.message);
    }
  }

  queueStop() {
    if (!this.stopQueued) toast('Offline: Stop will be sent when the connection is back.');
    this.stopQueued = true;
    this.scheduleRender();
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

  // ---- sending (durable, send.js) -----------------------------------------

  // sendMessage sends text durably; from the composer (the default) it
  // clears the draft, from a button (Continue) it leaves the draft alone.
  async sendMessage(text, behavior, fromComposer = true, files = []) {
    const content = files.length ? [...(text ? textContent(text) : []), ...files] : textContent(text);
    const body = { content, request_id: newUUID(), ...this.modelFields() };
    if (isBusy(this.state.status)) body.busy_behavior = behavior === 'interrupt' ? 'interrupt' : 'queue';
    const saved = fromComposer && this.composer.attachments ? this.composer.attachments.saved() : [];
    if (!this.send.start(body, text, { files: saved })) {
      toast('A message is still unconfirmed', 'error', 'Check its outcome or discard it before sending another.');
      return;
    }
    if (fromComposer) this.composer.clear();
    this.scheduleRender();
    this.thread.scrollToBottom();
    await this.send.post();
  }

  // settleSend follows a pending send whose answer was lost: once the
  // stream shows its message (by request_id) it is admitted, and once the
  // chat is idle its outcome is looked up (read-only; never a resend).
  // Only that lookup's answer clears it.
  settleSend(s) {
    const p = this.send.pending;
    if (!p || p.state === 'sending' || p.state === 'checking') return;
    if (p.state === 'unconfirmed' && this.admittedMessage(p)) this.send.admitted();
    if (p.state !== 'progress' || isBusy(s.status) || !s.status) return;
    const at = `${s.status}/${maxMessageId(s)}`;
    if (this.autoChecked === at) return;
    this.autoChecked = at;
    this.send.checkOutcome();
  }

  discardSend() {
    const p = this.send.discard();
    if (p && !this.composer.value) this.composer.value = p.text;
    this.composer.focus();
  }
}

// withoutApprovals is action without the calls awaiting approval (those are
// the approval card's; the server runs them), or null when none is left.
function withoutApprovals(action, approvals) {
  if (!action || !approvals || !approvals.length) return action;
  const waiting = new Set(approvals.map((a) => a.tool_call_id));
  const calls = (action.tool_calls || []).filter((c) => !waiting.has(c.tool_call_id));
  return calls.length ? { ...action, tool_calls: calls } : null;
}
