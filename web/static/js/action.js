// The required-action card (dynamic tools, API.md "requires_action"): the
// pending tool calls with their arguments, a JSON editor for each result,
// Submit / Submit as error, and the deadline counting down.

import { h, icon, prettyJSON, formatSeconds } from './dom.js';
import { api } from './api.js';
import { toast } from './widgets.js';

export class ActionCard {
  // deadline() returns the chat's requires_action_deadline_at (or null).
  constructor(chatId, deadline) {
    this.chatId = chatId;
    this.deadline = deadline;
    this.el = h('div', { class: 'action-slot' });
    this.sig = '';
    this.card = null;
    this.deadlineEl = null;
  }

  // show displays the card for action (null hides it). It is rebuilt only
  // when the pending calls change, so what the user typed stays.
  show(action) {
    const sig = action ? JSON.stringify(action) : '';
    if (sig === this.sig) {
      this.tick();
      return;
    }
    this.sig = sig;
    if (!action) {
      this.el.replaceChildren();
      this.card = null;
      return;
    }
    const calls = action.tool_calls || [];
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
    const submitBtn = h('button', { type: 'button', class: 'btn primary', onclick: (e) => this.submit(editors, false, e.currentTarget) }, 'Submit');
    const errorBtn = h('button', { type: 'button', class: 'btn', onclick: (e) => this.submit(editors, true, e.currentTarget) }, 'Submit as error');
    this.card = h('section', { class: 'action-card', 'aria-label': 'Tool result needed' },
      h('div', { class: 'action-head' }, icon('tool'),
        h('strong', { text: calls.length > 1 ? `${calls.length} tool calls need your result` : 'A tool call needs your result' }),
        h('span', { class: 'spacer' }), this.deadlineEl),
      editors.map((e) => h('div', { class: 'action-call' },
        h('div', { class: 'action-name' }, h('code', { text: e.call.tool_name }), h('span', { class: 'muted small', text: e.call.tool_call_id })),
        h('details', { class: 'tool-section', open: true }, h('summary', {}, 'Arguments'), h('pre', { class: 'json', tabindex: '0', text: prettyJSON(e.call.args) })),
        h('label', { class: 'field-label', text: 'Result (JSON)' }), e.ta, e.err)),
      h('div', { class: 'action-foot' }, errorBtn, submitBtn));
    this.el.replaceChildren(this.card);
    this.tick();
  }

  // submit posts every editor's result; as an error, text that is not
  // JSON is sent as it is.
  async submit(editors, isError, btn) {
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
      await api('POST', `/chats/${this.chatId}/tool-results`, { results });
    } catch (err) {
      btn.disabled = false;
      toast('Could not submit the tool result', 'error', err.message);
    }
  }

  // tick counts the deadline down.
  tick() {
    if (!this.deadlineEl) return;
    const d = this.deadline();
    if (!d) {
      this.deadlineEl.textContent = '';
      return;
    }
    const left = (Date.parse(d) - Date.now()) / 1000;
    this.deadlineEl.textContent = left > 0 ? `${formatSeconds(left)} left` : 'Deadline passed';
    this.deadlineEl.classList.toggle('urgent', left < 30);
  }
}

function validJSON(s) {
  try { JSON.parse(s); return true; } catch { return false; }
}
