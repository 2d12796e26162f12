// The approval card (API.md, "Tool approval"): the server-side tool calls
// that wait for a person before they run. Per call: the MCP server, the
// tool's own name, its effect class, the arguments, Approve / Deny (with an
// optional reason); Approve all when there are several. Each answer is
// posted on its own (partial answers are fine: the server waits for the
// rest); the stream's next approval_required, or the status leaving
// requires_action, rebuilds or hides the card.

import { h, icon, prettyJSON } from './dom.js';
import { api } from './api.js';
import { mcpTool, effectBadge, mcpVersion } from './mcp.js';

export class ApprovalCard {
  constructor(chatId) {
    this.chatId = chatId;
    this.el = h('div', { class: 'approval-slot' });
    this.sig = '';
    this.busy = false;
  }

  // show displays the card for calls (the approvals still pending; empty or
  // null hides it). It is rebuilt only when they change, so a reason being
  // typed stays.
  show(calls) {
    calls = calls && calls.length ? calls : null;
    const key = calls ? JSON.stringify(calls) : '';
    const sig = calls ? JSON.stringify([key, mcpVersion]) : '';
    if (sig === this.sig) return;
    // The same calls with other MCP names (the server list loaded or
    // changed): what the person started carries over to the rebuilt card.
    const kept = key && key === this.key ? this.snapshot() : null;
    this.sig = sig;
    this.key = key;
    if (!kept) this.busy = false;
    if (!calls) {
      this.el.replaceChildren();
      return;
    }
    this.errEl = h('div', { class: 'json-error approval-error', role: 'alert' });
    this.buttons = [];
    const rows = calls.map((c) => this.row(c));
    const foot = [];
    if (calls.length > 1) {
      const all = this.button('Approve all', 'btn primary approval-all', () => this.answer(calls.map((c) => ({ tool_call_id: c.tool_call_id, approved: true }))));
      foot.push(h('div', { class: 'action-foot' }, all));
    }
    this.el.replaceChildren(h('section', { class: 'action-card approval-card', 'aria-label': 'Tool calls awaiting approval' },
      h('div', { class: 'action-head' }, icon('alert'),
        h('strong', { text: calls.length > 1 ? `${calls.length} tool calls need your approval` : 'A tool call needs your approval' })),
      h('p', { class: 'muted small', text: 'Nothing runs until you answer. A denied call tells the model it was denied, with your reason.' }),
      ...rows, this.errEl, ...foot));
    if (kept) this.restore(kept);
  }

  // snapshot is the state of the card a person may have started: per call
  // an open deny form, its reason and the focus, and the card's error.
  snapshot() {
    const active = document.activeElement;
    const calls = new Map([...this.el.querySelectorAll('.approval-call')].map((row) => [row.dataset.toolCallId, {
      open: !row.querySelector('.approval-deny-form').hidden,
      reason: row.querySelector('.approval-reason').value,
      focus: row.contains(active) ? FOCUSABLE.find((c) => active.classList.contains(c)) : null,
    }]));
    return { calls, all: !!(active && active.classList.contains('approval-all')), error: this.errEl ? this.errEl.textContent : '' };
  }

  restore(kept) {
    for (const row of this.el.querySelectorAll('.approval-call')) {
      const k = kept.calls.get(row.dataset.toolCallId);
      if (!k) continue;
      row.querySelector('.approval-deny-form').hidden = !k.open;
      row.querySelector('.approval-deny').hidden = k.open;
      row.querySelector('.approval-reason').value = k.reason;
      if (k.focus) row.querySelector('.' + k.focus).focus();
    }
    if (kept.all) this.el.querySelector('.approval-all').focus();
    this.errEl.textContent = kept.error;
    for (const b of this.buttons) b.disabled = this.busy;
  }

  row(c) {
    const m = mcpTool(c.tool_name);
    const own = (m && m.tool.mcp_name) || ownName(c);
    const reason = h('input', { type: 'text', class: 'text-input approval-reason', maxlength: '2000', placeholder: 'Reason (optional)', 'aria-label': `Reason for denying ${own} (optional)` });
    const approve = this.button('Approve', 'btn primary approval-approve', () => this.answer([{ tool_call_id: c.tool_call_id, approved: true }]));
    const deny = this.button('Deny', 'btn approval-deny', () => {
      form.hidden = false;
      deny.hidden = true;
      reason.focus();
    });
    const confirm = this.button('Deny call', 'btn danger approval-deny-confirm', () => {
      const r = reason.value.trim();
      this.answer([r ? { tool_call_id: c.tool_call_id, approved: false, reason: r } : { tool_call_id: c.tool_call_id, approved: false }]);
    });
    const cancel = this.button('Cancel', 'btn approval-deny-cancel', () => {
      form.hidden = true;
      deny.hidden = false;
      deny.focus();
    });
    reason.addEventListener('keydown', (e) => {
      if (e.key === 'Enter') {
        e.preventDefault();
        confirm.click();
      } else if (e.key === 'Escape') {
        e.preventDefault();
        cancel.click();
      }
    });
    const form = h('div', { class: 'approval-deny-form', hidden: true }, reason, cancel, confirm);
    return h('div', { class: 'action-call approval-call', dataset: { toolCallId: c.tool_call_id } },
      h('div', { class: 'action-name approval-name' },
        c.server ? h('span', { class: 'approval-server', text: c.server }) : h('span', { class: 'approval-server muted', text: 'built-in' }),
        h('span', { class: 'tool-sep', 'aria-hidden': 'true', text: ' · ' }),
        h('code', { class: 'approval-tool', text: own }),
        effectBadge(c.effect),
        h('span', { class: 'muted small approval-id', text: c.tool_call_id })),
      h('details', { class: 'tool-section', open: true }, h('summary', {}, 'Arguments'),
        h('pre', { class: 'json approval-args', tabindex: '0', text: prettyJSON(parseArgs(c.args)) })),
      h('div', { class: 'action-foot approval-buttons' }, deny, approve),
      form);
  }

  button(text, cls, onclick) {
    const b = h('button', { type: 'button', class: cls, onclick }, text);
    this.buttons.push(b);
    return b;
  }

  // answer posts approvals; every button is disabled meanwhile. On success
  // they stay disabled until the stream shows what is left.
  async answer(approvals) {
    if (this.busy) return;
    this.busy = true;
    const key = this.key;
    for (const b of this.buttons) b.disabled = true;
    this.errEl.textContent = '';
    try {
      await api('POST', `/chats/${this.chatId}/tool-approvals`, { approvals });
    } catch (e) {
      if (this.key !== key) return;
      this.busy = false;
      for (const b of this.buttons) b.disabled = false;
      this.errEl.textContent = `Could not send the answer: ${e.message}`;
    }
  }
}

// FOCUSABLE are the classes of a call's controls, to find the focused one
// again in a rebuilt card.
const FOCUSABLE = ['approval-reason', 'approval-approve', 'approval-deny', 'approval-deny-confirm', 'approval-deny-cancel'];

// ownName is the tool's name without its server's prefix (SERVER__TOOL).
function ownName(c) {
  const p = c.server ? c.server + '__' : '';
  return p && c.tool_name.startsWith(p) ? c.tool_name.slice(p.length) : c.tool_name;
}

function parseArgs(a) {
  if (typeof a !== 'string') return a ?? {};
  try { return JSON.parse(a); } catch { return a; }
}
