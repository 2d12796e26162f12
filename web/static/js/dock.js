// The chat's state above the composer: the status line (with the retry
// countdown), the queue chips, the error banner and the archived notice.
// Each part rebuilds its nodes only when what it shows changed.

import { h, icon, formatSeconds } from './dom.js';
import { messageText } from './api.js';
import { mcpTool } from './mcp.js';

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

// SWITCHABLE: the kinds of error another model may not have.
const SWITCHABLE = new Set(['generic', 'overloaded', 'rate_limit', 'timeout', 'auth', 'config', 'content_filter']);

// toolTitle names a tool for the status line: "server · tool" for an MCP tool.
function toolTitle(name) {
  const m = mcpTool(name);
  return m ? `${m.server.name} · ${m.tool.mcp_name || name}` : name || 'a tool';
}

// statusText is what the status line says for chat state s, or null.
// While the connection is down the last known state is not news: the line
// says so instead of "Streaming…".
export function statusText(s) {
  if (s.offline && s.status) {
    return { cls: 'offline', text: s.stopQueued ? 'Offline — Stop will be sent when the connection is back' : 'Offline — reconnecting…' };
  }
  if (s.retry && s.status === 'running') {
    const left = (Date.parse(s.retry.retrying_at) - Date.now()) / 1000;
    const what = KIND_LABEL[s.retry.kind] || 'Provider error';
    return { cls: 'retry', text: left > 0.5 ? `${what} — retrying in ${formatSeconds(left)} (attempt ${s.retry.attempt + 1})` : `${what} — retrying now (attempt ${s.retry.attempt + 1})`, title: s.retry.error };
  }
  switch (s.status) {
    case 'running': {
      if (s.elicitations && s.elicitations.length) return { cls: 'action', text: 'Waiting for your answer' };
      const parts = s.preview ? s.preview.parts : [];
      const last = parts[parts.length - 1];
      if (last && last.type === 'text') return { cls: 'streaming', text: 'Streaming…' };
      if (last && last.type === 'tool-call') return { cls: 'thinking', text: `Calling ${toolTitle(last.tool_name)}…` };
      return { cls: 'thinking', text: 'Thinking…' };
    }
    case 'interrupting': return { cls: 'interrupting', text: 'Interrupting…' };
    case 'requires_action': return { cls: 'action', text: s.review ? 'Waiting for an operator review' : s.approvals && s.approvals.length ? 'Waiting for your approval' : 'Waiting for your tool result' };
    // An error has its banner just below: no status line repeating "Error".
    default: return null;
  }
}

// StatusLine: Thinking / Streaming / Calling a tool / Interrupting /
// Waiting for your tool result, and the retry countdown (an error has its banner).
export class StatusLine {
  constructor() {
    this.el = h('div', { class: 'status-line', role: 'status', 'aria-live': 'polite' });
    this.key = null;
  }

  // show renders the line for s; force redraws it even when its text seems
  // unchanged (the countdown ticks).
  show(s, force = false) {
    const st = statusText(s);
    const key = st ? st.cls + st.text : '';
    if (key === this.key && !force) return;
    this.key = key;
    if (!st) {
      this.el.replaceChildren();
      this.el.className = 'status-line';
      return;
    }
    this.el.className = 'status-line ' + st.cls;
    const spin = st.cls === 'thinking' || st.cls === 'streaming' || st.cls === 'interrupting' || st.cls === 'retry';
    this.el.replaceChildren(
      spin ? h('span', { class: 'spinner small', 'aria-hidden': 'true' }) : h('span', { class: 'status-dot', 'aria-hidden': 'true' }),
      h('span', { text: st.text, title: st.title || null }));
  }
}

// QueueChips: the queued messages, each with "Send now" and remove.
export class QueueChips {
  // handlers: {onPromote(q), onRemove(q)}
  constructor(handlers) {
    this.handlers = handlers;
    this.el = h('div', { class: 'queue', 'aria-label': 'Queued messages', hidden: true });
    this.sig = undefined;
  }

  show(queue) {
    const sig = JSON.stringify(queue.map((q) => q.id));
    if (sig === this.sig) return;
    this.sig = sig;
    this.el.hidden = queue.length === 0;
    this.el.replaceChildren(
      h('span', { class: 'queue-label', text: `Queued (${queue.length})` }),
      h('div', { class: 'queue-chips' }, ...queue.map((q) => h('div', { class: 'queue-chip', dataset: { id: q.id } },
        h('span', { class: 'queue-text', text: messageText(q) || '(attachment)', title: messageText(q) }),
        h('button', { type: 'button', class: 'chip-btn', onclick: () => this.handlers.onPromote(q), title: 'Stop the current reply and send this now' }, 'Send now'),
        h('button', { type: 'button', class: 'chip-btn icon-only', 'aria-label': 'Remove from queue', title: 'Remove from queue', onclick: () => this.handlers.onRemove(q) }, icon('x'))))));
  }
}

// ErrorBanner: the chat's error, its kind and what the user can do.
export class ErrorBanner {
  // handlers: {onRetry(), onEditLast(), onCommand(cmd), switcher(): a model
  //            picker that reruns the last message, or null}
  constructor(handlers) {
    this.handlers = handlers;
    this.el = h('div', { class: 'banner-slot' });
    this.sig = undefined;
  }

  // show renders err (null hides the banner); hasUserMessage offers Retry
  // and Edit last message.
  show(err, hasUserMessage) {
    const sig = err ? JSON.stringify(err) : '';
    if (sig === this.sig) return;
    this.sig = sig;
    if (!err) {
      this.el.replaceChildren();
      return;
    }
    const label = KIND_LABEL[err.kind] || 'Error';
    let hint = KIND_HINT[err.kind] || 'Retry, or edit your last message.';
    // /compact and /clear only where they can help: a conversation too
    // long for the model, or a chat whose history needs a fresh context.
    const tooLong = /context|too long|token/i.test(err.message + ' ' + (err.detail || ''));
    if (tooLong) hint = 'The conversation may be too long: /compact summarizes it, /clear starts a fresh context.';
    const compact = tooLong, clear = tooLong || err.kind === 'invalid_state';
    const hd = this.handlers;
    this.el.replaceChildren(h('div', { class: 'error-banner', role: 'alert' },
      icon('alert', 'banner-icon'),
      h('div', { class: 'banner-body' },
        h('div', { class: 'banner-title' }, h('strong', { text: label }), err.status_code ? h('span', { class: 'muted', text: ` · HTTP ${err.status_code}` }) : null,
          err.provider ? h('span', { class: 'muted', text: ` · ${err.provider}` }) : null),
        h('div', { class: 'banner-msg', text: err.message || '' }),
        err.detail ? h('div', { class: 'banner-detail', text: err.detail }) : null,
        h('div', { class: 'banner-hint', text: hint }),
        h('div', { class: 'banner-actions' },
          hasUserMessage ? h('button', { type: 'button', class: 'btn small primary', onclick: () => hd.onRetry() }, icon('retry'), 'Retry') : null,
          hasUserMessage ? h('button', { type: 'button', class: 'btn small', onclick: () => hd.onEditLast() }, icon('edit'), 'Edit last message') : null,
          compact ? h('button', { type: 'button', class: 'btn small ghost', onclick: () => hd.onCommand({ name: 'compact' }) }, '/compact') : null,
          clear ? h('button', { type: 'button', class: 'btn small ghost', onclick: () => hd.onCommand({ name: 'clear' }) }, '/clear') : null,
          hasUserMessage && hd.switcher && SWITCHABLE.has(err.kind) ? hd.switcher() : null))));
  }
}

// ArchivedNotice: "This chat is archived" with Unarchive, placed just
// before anchor while the chat is archived.
export class ArchivedNotice {
  constructor(anchor, onUnarchive) {
    this.anchor = anchor;
    this.onUnarchive = onUnarchive;
    this.el = null;
  }

  show(archived) {
    if (archived === !!this.el) return;
    if (!archived) {
      this.el.remove();
      this.el = null;
      return;
    }
    this.el = h('div', { class: 'info-banner', role: 'status' }, icon('archive'),
      h('span', { text: 'This chat is archived. Unarchive it to continue the conversation.' }),
      h('button', { type: 'button', class: 'btn small', onclick: () => this.onUnarchive() }, 'Unarchive'));
    this.anchor.before(this.el);
  }
}
