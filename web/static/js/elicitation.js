// The MCP question card (API.md, "MCP elicitation"): a question an MCP
// server asks the chat's person while one of its tools runs. A form is
// generated from the question's flat JSON Schema (strings, numbers,
// integers, booleans, enums, multi-select enums); a URL question offers a
// link to open. Submit accepts (fields left empty are left out, so the
// schema's defaults fill them on the server), Decline and Cancel refuse.
// The chat's stream carries the pending questions (elicitation_update,
// folded into the chat state): no polling.

import { h } from './dom.js';
import { api } from './api.js';

// formFields describes the inputs of a requested schema, in its
// properties' order.
export function formFields(schema) {
  const props = (schema && schema.properties) || {};
  const required = new Set((schema && schema.required) || []);
  return Object.entries(props).map(([name, p]) => {
    p = p || {};
    const options = p.enum || (p.oneOf && p.oneOf.map((o) => o.const)) ||
      (p.type === 'array' && p.items && (p.items.enum || (p.items.anyOf && p.items.anyOf.map((o) => o.const))));
    let kind = p.type || 'string';
    if (options && p.type === 'array') kind = 'multi';
    else if (options) kind = 'enum';
    const labels = p.enumNames || (p.oneOf && p.oneOf.map((o) => o.title ?? o.const)) || null;
    return {
      name, kind, required: required.has(name), title: p.title || name, description: p.description || '',
      default: p.default, options: options || null, labels,
    };
  });
}

// collect turns the inputs' raw values (strings; booleans for checkboxes;
// arrays for multi-selects) into the answer's content: empty optional
// fields are left out, numbers parsed. It returns {content} or {error}.
export function collect(fields, raw) {
  const content = {};
  for (const f of fields) {
    const v = raw[f.name];
    const empty = v === undefined || v === '' || (Array.isArray(v) && v.length === 0);
    if (empty) {
      if (f.required && f.default === undefined) return { error: `${f.title} is required.` };
      continue;
    }
    switch (f.kind) {
      case 'number':
      case 'integer': {
        const n = Number(v);
        if (!Number.isFinite(n) || (f.kind === 'integer' && !Number.isInteger(n))) {
          return { error: `${f.title} must be ${f.kind === 'integer' ? 'a whole number' : 'a number'}.` };
        }
        content[f.name] = n;
        break;
      }
      case 'boolean':
        content[f.name] = v === true || v === 'true';
        break;
      default:
        content[f.name] = v;
    }
  }
  return { content };
}

// ElicitationCard shows the chat's pending questions, as the stream last
// listed them (show).
export class ElicitationCard {
  constructor(chatId) {
    this.chatId = chatId;
    this.el = h('div', { class: 'elicitation-slot' });
    this.sig = '';
  }

  destroy() {}

  show(list) {
    const sig = JSON.stringify((list || []).map((e) => e.id));
    if (sig === this.sig) return;
    this.sig = sig;
    this.el.replaceChildren(...(list || []).map((e) => this.card(e)));
  }

  card(e) {
    const err = h('div', { class: 'json-error elicitation-error', role: 'alert' });
    const buttons = [];
    const send = async (action, content) => {
      for (const b of buttons) b.disabled = true;
      err.textContent = '';
      try {
        // Sent: the stream's next elicitation_update takes the card away.
        await api('POST', `/chats/${this.chatId}/elicitation-responses`, { elicitation_id: e.id, action, content });
      } catch (x) {
        for (const b of buttons) b.disabled = false;
        err.textContent = `Could not send the answer: ${x.message}`;
      }
    };
    const button = (text, cls, onclick) => {
      const b = h('button', { type: 'button', class: cls, onclick }, text);
      buttons.push(b);
      return b;
    };
    let body;
    let accept;
    if (e.mode === 'url') {
      body = h('p', {}, h('a', { href: e.url, target: '_blank', rel: 'noopener noreferrer', class: 'elicitation-url' }, e.url));
      accept = button('Done', 'btn primary elicitation-accept', () => send('accept'));
    } else {
      const fields = formFields(e.requested_schema);
      const inputs = {};
      body = h('div', { class: 'elicitation-form' }, ...fields.map((f) => {
        const input = fieldInput(f);
        inputs[f.name] = input;
        return h('label', { class: 'elicitation-field' },
          h('span', { class: 'elicitation-label', text: f.title + (f.required ? ' *' : '') }),
          input,
          f.description ? h('span', { class: 'muted small', text: f.description }) : null);
      }));
      accept = button('Submit', 'btn primary elicitation-accept', () => {
        const raw = {};
        for (const f of fields) raw[f.name] = readInput(f, inputs[f.name]);
        const r = collect(fields, raw);
        if (r.error) {
          err.textContent = r.error;
          return;
        }
        send('accept', r.content);
      });
    }
    return h('section', { class: 'action-card elicitation-card', 'aria-label': `Question from ${e.server}`, dataset: { elicitationId: e.id } },
      h('div', { class: 'action-head' }, h('strong', { text: `${e.server} asks` })),
      h('p', { class: 'elicitation-message', text: e.message }),
      body, err,
      h('div', { class: 'action-foot' },
        button('Cancel', 'btn elicitation-cancel', () => send('cancel')),
        button('Decline', 'btn elicitation-decline', () => send('decline')),
        accept));
  }
}

function fieldInput(f) {
  const placeholder = f.default !== undefined ? `default: ${Array.isArray(f.default) ? f.default.join(', ') : f.default}` : '';
  switch (f.kind) {
    case 'boolean':
      return h('input', { type: 'checkbox', checked: f.default === true });
    case 'enum':
    case 'multi':
      return h('select', { class: 'text-input', multiple: f.kind === 'multi' },
        ...(f.kind === 'enum' ? [h('option', { value: '' }, placeholder || '—')] : []),
        ...f.options.map((o, i) => h('option', { value: String(o) }, String(f.labels ? f.labels[i] : o))));
    case 'number':
    case 'integer':
      return h('input', { type: 'number', class: 'text-input', step: f.kind === 'integer' ? '1' : 'any', placeholder });
    default:
      return h('input', { type: 'text', class: 'text-input', placeholder });
  }
}

function readInput(f, input) {
  if (f.kind === 'boolean') return input.checked;
  if (f.kind === 'multi') return [...input.selectedOptions].map((o) => o.value);
  return input.value;
}
