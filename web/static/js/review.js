// The review card (API.md, "Review and reconcile"): a chat whose tool call
// was stopped for review after a crash (last_error kind
// unresolved_effects). The call may have run; only an operator's review
// answers it. An admin gets the reconcile form (assessment, result JSON,
// is_error); the owner is told the chat waits for an operator review.

import { h, icon, prettyJSON } from './dom.js';
import { api, ApiError } from './api.js';
import { toast } from './widgets.js';

export class ReviewCard {
  // admin: the signed-in user may reconcile.
  constructor(chatId, admin) {
    this.chatId = chatId;
    this.admin = admin;
    this.el = h('div', { class: 'review-slot' });
    this.sig = '';
  }

  // show displays the card for review (null hides it): {calls: [{tool_call_id,
  // tool_name, args}], requestId: the durable request of the calls' turn, or ''}.
  // It is rebuilt only when that changes, so what the admin typed stays.
  show(review) {
    const sig = review ? JSON.stringify(review) : '';
    if (sig === this.sig) return;
    this.sig = sig;
    if (!review) {
      this.el.replaceChildren();
      return;
    }
    const calls = review.calls || [];
    const head = h('div', { class: 'action-head' }, icon('alert'),
      h('strong', { text: this.admin ? 'A tool call needs an operator review' : 'Waiting for an operator review' }));
    const intro = h('p', { class: 'muted small', text: this.admin
      ? 'The server stopped while this call ran: it may have had its effect. Record what happened; nothing is run again.'
      : 'The server stopped while this tool call ran, so its outcome is unknown. An operator must review it before the chat continues.' });
    const list = calls.map((c) => h('div', { class: 'action-call' },
      h('div', { class: 'action-name' }, h('code', { text: c.tool_name }), h('span', { class: 'muted small', text: c.tool_call_id })),
      h('details', { class: 'tool-section' }, h('summary', {}, 'Arguments'), h('pre', { class: 'json', tabindex: '0', text: prettyJSON(parseArgs(c.args)) }))));
    const parts = [head, intro, ...list];
    if (this.admin) parts.push(this.form(review));
    this.el.replaceChildren(h('section', { class: 'action-card review-card', 'aria-label': 'Tool call under review' }, ...parts));
  }

  form(review) {
    const assessment = h('textarea', { class: 'text-input review-assessment', rows: 2, 'aria-label': 'Assessment', placeholder: 'What happened, and how you know' });
    const result = h('textarea', { class: 'json-editor review-result', rows: 3, spellcheck: 'false', 'aria-label': 'Result (JSON, optional)', placeholder: '{"reviewed": "…"} when left empty' });
    const isError = h('input', { type: 'checkbox', class: 'review-is-error' });
    const err = h('div', { class: 'json-error', role: 'alert' });
    const btn = h('button', { type: 'button', class: 'btn primary review-submit' }, 'Record review');
    btn.addEventListener('click', async () => {
      const body = { assessment: assessment.value.trim(), is_error: isError.checked };
      if (!body.assessment) {
        err.textContent = 'Write an assessment: what happened to the call.';
        assessment.focus();
        return;
      }
      if (result.value.trim()) {
        try { body.result = JSON.parse(result.value); } catch {
          err.textContent = 'The result is not valid JSON.';
          result.focus();
          return;
        }
      }
      err.textContent = '';
      btn.disabled = true;
      try {
        await this.reconcile(review, body);
        toast('Review recorded; the chat continues.');
      } catch (e) {
        btn.disabled = false;
        toast('Could not record the review', 'error', e.message);
      }
    });
    return h('div', { class: 'review-form' },
      h('label', { class: 'field-label', text: 'Assessment' }), assessment,
      h('label', { class: 'field-label', text: 'Result (JSON, optional)' }), result,
      h('label', { class: 'check-label' }, isError, ' The call failed (record the result as an error)'),
      err,
      h('div', { class: 'action-foot' }, btn));
  }

  // reconcile records the review: for the turn's request when it has one
  // (every call of it at once), else call by call until the chat leaves
  // review. Calls that were never started are not under review (404/409)
  // and are skipped: the chat answers them as not run when it resumes.
  async reconcile(review, body) {
    if (review.requestId) {
      await api('POST', `/requests/${review.requestId}/reconcile`, body);
      return;
    }
    let done = false;
    let last = null;
    for (const c of review.calls || []) {
      try {
        const out = await api('POST', `/chats/${this.chatId}/tool-calls/${encodeURIComponent(c.tool_call_id)}/reconcile`, body);
        done = true;
        const chat = out && out.chat;
        if (!chat || chat.status !== 'requires_action' || !chat.last_error || chat.last_error.kind !== 'unresolved_effects') return;
      } catch (e) {
        if (!(e instanceof ApiError) || !(e.code === 'NOT_FOUND' || e.code === 'TRANSITION_NOT_ALLOWED')) throw e;
        last = e;
      }
    }
    if (!done && last) throw last;
  }
}

function parseArgs(a) {
  if (typeof a !== 'string') return a ?? '';
  try { return JSON.parse(a); } catch { return a; }
}
