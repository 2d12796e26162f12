// Durable sends (API.md, "Durable requests"): a request's body, with its
// client-chosen request_id, is kept in sessionStorage from before it is
// posted until the server acknowledges it. A send whose outcome is unknown
// (the connection failed, the page was reloaded) stays "Not confirmed":
// the user can check its outcome or retry the very same request, which the
// server never runs twice. Nothing here resends on its own. The chat view
// and the new-chat view both send through one DurableSend.

import { h, icon, session } from './dom.js';
import { api, ApiError, sha256Hex, messageText } from './api.js';
import { toast } from './widgets.js';

// A pending send is {body, text, state, note, at, ...extra}; state is
// 'sending' (posted, no answer yet), 'checking' (its outcome is being
// looked up) or 'unconfirmed' (the outcome is unknown).

export class DurableSend {
  // opts: {key: the sessionStorage key,
  //        submit(body): posts the request, resolves to the server's answer,
  //        onChange(): the pending send (or its state) changed,
  //        onAccepted(result, pending): the server took it,
  //        onRefused(err, pending): the server refused it, nothing happened,
  //        reloadNote: the note for a send found pending when the page loads (optional),
  //        findInHistory(pending): resolves true when the send visibly arrived (optional)}
  constructor(opts) {
    this.opts = opts;
    this.pending = session.get(opts.key, null);
    if (this.pending) {
      // Whatever it was doing, this page never saw the answer.
      this.pending.state = 'unconfirmed';
      if (opts.reloadNote) this.pending.note = opts.reloadNote;
    }
  }

  save() { session.set(this.opts.key, this.pending); }

  clear() {
    this.pending = null;
    this.save();
    this.opts.onChange();
  }

  // start records a new send (saved before it is posted); false while an
  // earlier one is still pending. extra is kept with it for the caller.
  start(body, text, extra = {}) {
    if (this.pending) return false;
    this.pending = { ...extra, body, text, state: 'sending', at: Date.now() };
    this.save();
    return true;
  }

  // post sends the pending request (again, with the same request_id).
  async post() {
    const p = this.pending;
    if (!p) return;
    p.state = 'sending';
    p.note = '';
    this.save();
    this.opts.onChange();
    let result;
    try {
      result = await this.opts.submit(p.body);
    } catch (e) {
      if (this.pending !== p) return;
      if (e instanceof ApiError && e.definite) {
        this.clear();
        this.opts.onRefused(e, p);
        return;
      }
      p.state = 'unconfirmed';
      p.note = e.code === 'INVOCATION_IN_PROGRESS' ? 'The server is still processing it.' : e.message;
      this.save();
      this.opts.onChange();
      return;
    }
    if (this.pending === p) this.clear();
    this.opts.onAccepted(result, p);
  }

  // arrived forgets the pending send: the owner saw it land (a new
  // message or queue entry with its text) — a read, never a resend. It
  // does not call onChange: the owner is rendering.
  arrived() {
    this.pending = null;
    this.save();
  }

  // checkOutcome asks the server what became of the pending request.
  async checkOutcome() {
    const p = this.pending;
    if (!p) return;
    p.state = 'checking';
    this.opts.onChange();
    let note;
    try {
      // The server binds a request id to the SHA-256 of the message text
      // (its text parts, concatenated).
      const sha = await sha256Hex(p.body.content.filter((c) => c.type === 'text').map((c) => c.text).join(''));
      await api('GET', `/requests/${p.body.request_id}?content_sha256=${sha}`);
      toast('The message was received.');
      this.clear();
      return;
    } catch (e) {
      switch (e.code) {
        case 'INVOCATION_NOT_FOUND': note = 'The server never received it. Retrying the same request is safe.'; break;
        case 'INVOCATION_IN_PROGRESS': toast('The message was received and is being processed.'); this.clear(); return;
        case 'INVOCATION_UNRESOLVED': note = 'Its outcome is unknown after a server failure; an operator must reconcile it.'; break;
        case 'INVOCATION_RECONCILED': note = 'An operator has closed this request; it will not run again.'; break;
        case 'INVOCATION_CONFLICT': note = 'This request id was used for different content.'; break;
        default: note = this.opts.findInHistory && await this.opts.findInHistory(p)
          ? null : 'No sign of it in this chat yet. Retrying the same request cannot send it twice.';
      }
    }
    if (note === null) {
      toast('The message was received.');
      this.clear();
      return;
    }
    if (this.pending === p) {
      p.state = 'unconfirmed';
      p.note = note;
      this.save();
      this.opts.onChange();
    }
  }

  // discard forgets the pending send and returns it (its text goes back to
  // the composer).
  discard() {
    const p = this.pending;
    this.clear();
    return p;
  }
}

// sentAfter: a user message newer than the send's baseId, or a queued
// message, that carries the send's text.
export function sentAfter(p, messages, queued) {
  return messages.some((m) => m.role === 'user' && m.id > p.baseId && messageText(m) === p.text) ||
    queued.some((q) => messageText(q) === p.text);
}

// notConfirmed is the alert for a send whose outcome is unknown: what is
// known about it, and buttons [label, class, onclick] for what the user
// can do.
export function notConfirmed(detail, buttons) {
  return h('div', { class: 'ghost-status', role: 'alert' },
    h('div', {}, icon('alert'), h('strong', { text: 'Not confirmed' }), detail ? h('span', { class: 'muted', text: ' — ' + detail }) : null),
    h('div', { class: 'ghost-actions' },
      buttons.map(([label, cls, onclick]) => h('button', { type: 'button', class: 'btn small' + (cls ? ' ' + cls : ''), onclick }, label))));
}
