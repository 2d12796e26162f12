// Durable sends (API.md, "Durable requests"; the console rules of
// spec/durable-messages.txt): a request's body, with its client-chosen
// request_id, is kept in sessionStorage from before it is posted until a
// confirmed outcome. A send whose outcome is unknown (the connection
// failed, the page was reloaded) stays "Not confirmed": the user can check
// its outcome, a read-only lookup. Only after a lookup found no admission
// (INVOCATION_NOT_FOUND) is "Retry same request" offered, which posts the
// very same request again. Nothing here resends on its own, and nothing
// clears a pending send because some message carries the same text: only
// the server's answer (an acknowledgement, a definite refusal or a lookup
// with the outcome) does. The chat view and the new-chat view both send
// through one DurableSend.

import { h, icon, session } from './dom.js';
import { api, ApiError, sha256Hex } from './api.js';
import { toast } from './widgets.js';

// A pending send is {body, text, state, note, lookup, chatId, at, ...extra}.
// state is 'sending' (posted, no answer yet), 'checking' (its outcome is
// being looked up), 'progress' (admitted and still running: a lookup
// answered INVOCATION_IN_PROGRESS, or the stream showed its message) or
// 'unconfirmed' (the outcome is unknown). lookup is the code of the last
// answer that said what became of it ('INVOCATION_NOT_FOUND' allows a
// retry); chatId is the chat it ran in when the server named it.

export class DurableSend {
  // opts: {key: the sessionStorage key,
  //        submit(body): posts the request, resolves to the server's answer,
  //        onChange(): the pending send (or its state) changed,
  //        onAccepted(result, pending): the server took it (result.replayed:
  //          a saved answer, the request was not run again),
  //        onRefused(err, pending): the server refused it, nothing happened,
  //        reloadNote: the note for a send found pending when the page loads (optional)}
  constructor(opts) {
    this.opts = opts;
    this.pending = session.get(opts.key, null);
    if (this.pending) this.pending.fresh = false; // posted before: a retry needs a lookup first
    if (this.pending && this.pending.state !== 'progress') {
      // Whatever it was doing, this page never saw the answer.
      this.pending.state = 'unconfirmed';
      if (opts.reloadNote && !this.pending.lookup) this.pending.note = opts.reloadNote;
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
    this.pending = { ...extra, body, text, state: 'sending', lookup: '', note: '', at: Date.now(), fresh: true };
    this.save();
    return true;
  }

  // canRetry: the pending send may be posted again — a lookup found no
  // admission under its id.
  canRetry() {
    return !!this.pending && this.pending.lookup === 'INVOCATION_NOT_FOUND';
  }

  // post sends the pending request: a new one once, an unconfirmed one
  // again (with the same request_id) only when canRetry.
  async post() {
    const p = this.pending;
    if (!p || !(p.fresh || this.canRetry())) return;
    p.fresh = false;
    p.state = 'sending';
    p.note = '';
    p.lookup = '';
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
      this.unsettled(p, e);
      return;
    }
    this.settled(p, result);
  }

  // settled ends a pending send with the server's answer.
  settled(p, result) {
    if (result && result.replayed) rememberSaved(result.messages);
    if (this.pending === p) this.clear();
    this.opts.onAccepted(result, p);
  }

  // unsettled records an answer that is not the outcome: the request may
  // be admitted (still running, unresolved, closed) or its fate unknown.
  unsettled(p, e) {
    if (this.pending !== p) return;
    const code = e instanceof ApiError ? e.code : '';
    if (e instanceof ApiError && e.chatId) p.chatId = e.chatId;
    p.lookup = code.startsWith('INVOCATION_') ? code : '';
    p.state = code === 'INVOCATION_IN_PROGRESS' ? 'progress' : 'unconfirmed';
    p.note = NOTES[code] || (e && e.message) || 'The outcome is unknown.';
    this.save();
    this.opts.onChange();
  }

  // admitted marks the pending send as admitted: the stream showed a
  // message carrying its request_id (never its text). Its outcome still
  // comes from a lookup.
  admitted() {
    const p = this.pending;
    if (!p || p.state !== 'unconfirmed' || p.lookup) return;
    p.state = 'progress';
    p.note = NOTES.INVOCATION_IN_PROGRESS;
    this.save();
  }

  // checkOutcome asks the server what became of the pending request (a
  // read-only lookup: it never submits anything).
  async checkOutcome() {
    const p = this.pending;
    if (!p || p.state === 'sending' || p.state === 'checking') return;
    const was = p.state;
    p.state = 'checking';
    this.opts.onChange();
    let result;
    try {
      // content_sha256: the SHA-256 of the message text (its text parts,
      // concatenated); the id alone already names the claim.
      const sha = await sha256Hex(p.body.content.filter((c) => c.type === 'text').map((c) => c.text).join(''));
      result = await api('GET', `/requests/${p.body.request_id}?content_sha256=${sha}`);
    } catch (e) {
      if (this.pending !== p) return;
      if (!(e instanceof ApiError) || !e.code.startsWith('INVOCATION_')) {
        // The lookup itself failed: nothing new is known.
        p.state = was;
        p.note = 'Could not check: ' + (e && e.message ? e.message : 'the server did not answer') + '.';
        this.save();
        this.opts.onChange();
        return;
      }
      this.unsettled(p, e);
      return;
    }
    if (this.pending !== p) return;
    toast('The request was answered; showing the saved answer.');
    this.settled(p, result);
  }

  // discard forgets the pending send and returns it (its text goes back to
  // the composer). It changes nothing on the server.
  discard() {
    const p = this.pending;
    this.clear();
    return p;
  }
}

// What an INVOCATION_* answer says about a pending send.
const NOTES = {
  INVOCATION_NOT_FOUND: 'The server never received it. Retrying the same request is safe.',
  INVOCATION_IN_PROGRESS: 'Received: the server is still working on it.',
  INVOCATION_UNRESOLVED: 'Its outcome is unknown after a server failure; an operator must review it.',
  INVOCATION_RECONCILED: 'An operator has closed this request; it will not run again.',
  INVOCATION_CONFLICT: 'This request id was used for a different request.',
};

// savedKey is where a chat's saved (replayed) answers are remembered for
// the tab, so the chat view labels them.
const savedKey = (chatId) => `chatd.saved.${chatId}`;

// rememberSaved records the messages of a replayed answer.
function rememberSaved(messages) {
  for (const m of messages || []) {
    if (!m || !m.chat_id) continue;
    const ids = session.get(savedKey(m.chat_id), []);
    if (!ids.includes(m.id)) session.set(savedKey(m.chat_id), [...ids, m.id]);
  }
}

// savedAnswers is the set of message ids of a chat that were shown from a
// saved answer.
export function savedAnswers(chatId) {
  return new Set(session.get(savedKey(chatId), []));
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

// inProgress is the status of a send the server admitted that is still
// running: a spinner, what is known, and buttons as for notConfirmed.
export function inProgress(detail, buttons) {
  return h('div', { class: 'ghost-status in-progress', role: 'status' },
    h('div', {}, h('span', { class: 'spinner small' }), h('strong', { text: ' In progress' }), detail ? h('span', { class: 'muted', text: ' — ' + detail }) : null),
    h('div', { class: 'ghost-actions' },
      buttons.map(([label, cls, onclick]) => h('button', { type: 'button', class: 'btn small' + (cls ? ' ' + cls : ''), onclick }, label))));
}

// pendingButtons are the actions for a pending send: Check outcome
// always, Retry same request only after a lookup found no admission, and
// Discard.
export function pendingButtons(send, onDiscard) {
  const out = [['Check outcome', send.canRetry() ? '' : 'primary', () => send.checkOutcome()]];
  if (send.canRetry()) out.push(['Retry same request', 'primary', () => send.post()]);
  out.push(['Discard', 'ghost', onDiscard]);
  return out;
}
