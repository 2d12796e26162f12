// The settings page at /settings: Models, Providers, MCP servers and Users
// for admins, My tokens for everyone (non-admins also get a read-only list
// of the enabled models). Every section reads its API on mount and after
// each change; the API's errors show inline, in the form or the row that
// caused them.

import { h, icon, formatTime, copyText } from './dom.js';
import { api } from './api.js';
import { dialog, toast } from './widgets.js';
import { effectBadge } from './mcp.js';
import { WebhooksSection } from './webhooks.js';
import { authLine, authPending, oauthBody } from './mcpauth.js';
import { MCPConnectionsSection } from './mcpconnections.js';

const EFFORTS = ['none', 'minimal', 'low', 'medium', 'high', 'xhigh', 'max'];
const PROVIDER_TYPES = [['openai', 'OpenAI'], ['openai-compat', 'OpenAI-compatible (Ollama, vLLM, …)'], ['anthropic', 'Anthropic']];
const EXPIRY = [['', 'Never'], ['7', '7 days'], ['30', '30 days'], ['90', '90 days'], ['365', '1 year']];
const MCP_STATE = { connected: 'Connected', connecting: 'Connecting…', failed: 'Failed', disabled: 'Disabled' };

// errorText is an API error as one line: the message, its detail and the
// fields the validations name.
export function errorText(e) {
  if (!e) return '';
  const parts = [e.message || String(e)];
  if (e.detail) parts.push(e.detail);
  for (const v of e.validations || []) parts.push(`${v.field}: ${v.detail || v.message || ''}`.trim());
  return parts.filter(Boolean).join(' — ');
}

let uid = 0;
function fieldId(name) { uid += 1; return `set-${name}-${uid}`; }

// field is a labelled control: [label, control] in a .set-field.
function field(label, control, hint) {
  if (!control.id) control.id = fieldId('f');
  return h('div', { class: 'set-field' },
    h('label', { class: 'field-label', for: control.id, text: label }), control,
    hint ? h('p', { class: 'muted small set-hint', text: hint }) : null);
}

function input(props) { return h('input', { class: 'text-input', type: 'text', ...props }); }

function select(options, value, props = {}) {
  return h('select', { class: 'text-input', ...props },
    options.map(([v, label]) => h('option', { value: v, selected: v === value, text: label })));
}

// toggle is a switch button (role=switch) whose click runs onChange(next);
// it is busy (aria-disabled) until onChange settles.
function toggle(label, on, onChange) {
  const b = h('button', { type: 'button', class: 'switch', role: 'switch', 'aria-checked': String(!!on), 'aria-label': label, title: label },
    h('span', { class: 'switch-knob', 'aria-hidden': 'true' }));
  b.addEventListener('click', async () => {
    if (b.getAttribute('aria-disabled') === 'true') return;
    b.setAttribute('aria-disabled', 'true');
    try { await onChange(b.getAttribute('aria-checked') !== 'true'); } finally { b.removeAttribute('aria-disabled'); }
  });
  return b;
}

function btn(label, onclick, { cls = 'btn small', iconName = null, aria = null } = {}) {
  return h('button', { type: 'button', class: cls, onclick, 'aria-label': aria }, iconName ? icon(iconName) : null, label);
}

function errorLine() { return h('p', { class: 'form-error set-error', role: 'alert' }); }

// Section is one part of the page: a heading, a body that load() fills,
// an inline error line, and an optional form area.
class Section {
  constructor(view, id, title, help) {
    this.view = view;
    this.error = errorLine();
    this.body = h('div', { class: 'set-body' });
    this.formHost = h('div', { class: 'set-form-host' });
    this.actions = h('div', { class: 'set-actions' });
    this.el = h('section', { class: 'set-section', id: `settings-${id}`, 'aria-labelledby': `settings-${id}-h` },
      h('div', { class: 'set-head' }, h('h2', { id: `settings-${id}-h`, text: title }), this.actions),
      help ? h('p', { class: 'muted set-help', text: help }) : null,
      this.formHost, this.error, this.body);
  }

  fail(e) { this.error.textContent = errorText(e); }

  clear() { this.error.textContent = ''; }

  // run does one API change and reloads; its error shows in target (the
  // section's error line by default).
  async run(fn, target = this.error) {
    target.textContent = '';
    try {
      await fn();
      await this.load();
      return true;
    } catch (e) {
      target.textContent = errorText(e);
      return false;
    }
  }

  closeForm() { this.formHost.replaceChildren(); }

  // openForm shows a form with a Save and a Cancel button; submit(form
  // error line) posts it, and the form closes when it succeeds.
  openForm(title, fields, submit) {
    const err = errorLine();
    const save = h('button', { type: 'submit', class: 'btn primary' }, 'Save');
    const form = h('form', { class: 'set-form', 'aria-label': title, onsubmit: async (e) => {
      e.preventDefault();
      save.disabled = true;
      const ok = await this.run(submit, err);
      save.disabled = false;
      if (ok) this.closeForm();
    } },
    h('h3', { text: title }), fields, err,
    h('div', { class: 'row-end' }, h('button', { type: 'button', class: 'btn ghost', onclick: () => this.closeForm() }, 'Cancel'), save));
    form.addEventListener('keydown', (e) => { if (e.key === 'Escape') { e.preventDefault(); this.closeForm(); } });
    this.formHost.replaceChildren(form);
    const first = form.querySelector('input:not([disabled]), select:not([disabled]), textarea');
    if (first) first.focus();
    return form;
  }
}

// ---- Models -----------------------------------------------------------

class ModelsSection extends Section {
  constructor(view) {
    super(view, 'models', 'Models', view.admin
      ? 'The star marks the default model of new chats. Reasoning effort: the default a message gets and the most it may ask for.'
      : 'The models you can choose in a chat.');
    if (view.admin) this.actions.append(btn('Add model', () => this.edit(null), { iconName: 'plus', cls: 'btn small add-model' }));
    this.results = new Map(); // model config id -> node with the last test's outcome
  }

  async load() {
    const [models, providers] = await Promise.all([
      api('GET', '/chats/model-configs'),
      this.view.admin ? api('GET', '/chats/providers') : Promise.resolve([]),
    ]);
    this.models = models || [];
    this.providers = providers || [];
    this.view.providers = this.providers;
    this.view.app.refreshModels(); // the pickers follow without a reload
    if (!this.models.length) {
      this.body.replaceChildren(h('p', { class: 'muted', text: 'No models yet. Add a provider, then its models.' }));
      return;
    }
    this.body.replaceChildren(h('ul', { class: 'set-list model-list', 'aria-label': 'Models' }, this.models.map((m) => this.row(m))));
  }

  row(m) {
    const admin = this.view.admin;
    const provider = this.providers.find((p) => p.id === m.ai_provider_id);
    const effort = m.model_config && m.model_config.reasoning_effort;
    const star = h('button', {
      type: 'button', class: 'icon-btn star' + (m.is_default ? ' on' : ''), 'aria-pressed': String(m.is_default),
      'aria-label': m.is_default ? `${m.display_name} is the default model` : `Make ${m.display_name} the default model`,
      title: m.is_default ? 'Default model' : 'Make default', disabled: !admin || m.is_default,
      onclick: () => this.run(() => api('PATCH', `/chats/model-configs/${m.id}`, { is_default: true })),
    }, h('span', { 'aria-hidden': 'true', text: m.is_default ? '★' : '☆' }));
    const facts = [
      `${provider ? provider.display_name : m.provider} · ${m.model}`,
      m.context_limit ? `${m.context_limit.toLocaleString()} tokens` : 'context unknown',
      effort ? (effort.default ? `effort ${effort.default} (max ${effort.max})` : `effort up to ${effort.max}`) : 'no reasoning effort',
    ];
    const result = admin ? this.results.get(m.id) || h('div', { class: 'provider-result model-result', 'aria-live': 'polite' }) : null;
    if (result) this.results.set(m.id, result);
    return h('li', { class: 'set-row model-row' + (m.enabled ? '' : ' off'), dataset: { id: m.id, model: m.model } },
      star,
      h('div', { class: 'set-main' }, h('div', { class: 'set-name', text: m.display_name }),
        h('div', { class: 'muted small set-facts', text: facts.join(' · ') }), result),
      admin ? h('div', { class: 'set-row-actions' },
        toggle(`Enable ${m.display_name}`, m.enabled, (on) => this.run(() => api('PATCH', `/chats/model-configs/${m.id}`, { enabled: on }))),
        btn('Test', () => this.test(m, result), { cls: 'btn small test', aria: `Test ${m.display_name}` }),
        btn('Edit', () => this.edit(m), { cls: 'btn small ghost edit', iconName: 'edit', aria: `Edit ${m.display_name}` }),
        btn('', () => this.remove(m), { cls: 'icon-btn delete', iconName: 'trash', aria: `Delete ${m.display_name}` })) : null);
  }

  // test runs one tiny generation with m and shows how it went in the row:
  // the latency and the start of the reply, or the provider's error.
  async test(m, out) {
    out.className = 'provider-result model-result muted small';
    out.replaceChildren('Testing…');
    let r;
    try {
      r = await api('POST', `/chats/model-configs/${m.id}/test`);
    } catch (e) {
      out.className = 'provider-result model-result set-bad small';
      out.replaceChildren(errorText(e));
      return;
    }
    if (!r.ok) {
      out.className = 'provider-result model-result set-bad small';
      out.replaceChildren(`Test failed: ${r.error || 'unknown error'}`);
      return;
    }
    out.className = 'provider-result model-result set-good small';
    out.replaceChildren(`Works · ${r.latency_ms} ms · `, r.sample ? h('q', { class: 'model-sample', text: r.sample }) : h('span', { class: 'muted', text: 'no text in the reply' }));
  }

  // edit opens the form for m (null: a new model; prefill: a discovered one).
  edit(m, prefill = {}) {
    const providers = this.providers.filter((p) => p.provider !== 'demo' || (m && p.id === m.ai_provider_id));
    if (!m && !providers.length) {
      this.needProvider();
      return;
    }
    const cur = m || {};
    const cfg = cur.model_config || {};
    const eff = cfg.reasoning_effort || null;
    const provider = select(providers.map((p) => [p.id, `${p.display_name} (${p.provider})`]), cur.ai_provider_id || prefill.ai_provider_id || '', { name: 'provider', disabled: !!m });
    const model = input({ name: 'model', value: cur.model || prefill.model || '', required: true, disabled: !!m, autocomplete: 'off' });
    const display = input({ name: 'display_name', value: cur.display_name || '', placeholder: 'Same as the model' });
    const limit = input({ name: 'context_limit', type: 'number', min: 0, value: cur.context_limit || prefill.context_limit || '', placeholder: 'Known or discovered' });
    const maxOut = input({ name: 'max_output_tokens', type: 'number', min: 1, value: cfg.max_output_tokens || '' });
    const effOpts = [['', '— none —'], ...EFFORTS.map((e) => [e, e])];
    const effMax = select(effOpts, eff ? eff.max : '', { name: 'effort_max' });
    const effDefault = select(effOpts, eff ? eff.default || '' : '', { name: 'effort_default' });
    const enabled = h('input', { type: 'checkbox', name: 'enabled', checked: m ? m.enabled : true });
    const fields = h('div', { class: 'set-grid' },
      field('Provider', provider), field('Model', model), field('Display name', display),
      field('Context limit (tokens)', limit), field('Max output tokens', maxOut),
      field('Reasoning effort: max', effMax, 'None: the model gets no effort at all.'),
      field('Reasoning effort: default', effDefault),
      h('label', { class: 'set-check' }, enabled, ' Enabled'));
    const num = (el) => (el.value === '' ? undefined : Number(el.value));
    this.openForm(m ? `Edit ${m.display_name}` : 'Add a model', fields, () => {
      const mc = { ...(cfg.openai_config ? { openai_config: cfg.openai_config } : {}) };
      if (num(maxOut)) mc.max_output_tokens = num(maxOut);
      if (effMax.value) mc.reasoning_effort = { max: effMax.value, ...(effDefault.value ? { default: effDefault.value } : {}) };
      else if (effDefault.value) mc.reasoning_effort = { max: '', default: effDefault.value }; // the API says what is wrong
      const body = { display_name: display.value.trim() || undefined, enabled: enabled.checked, model_config: mc };
      if (limit.value !== '') body.context_limit = num(limit);
      if (m) return api('PATCH', `/chats/model-configs/${m.id}`, body);
      return api('POST', '/chats/model-configs', { ...body, ai_provider_id: provider.value, model: model.value.trim() });
    });
  }

  // needProvider says why no model can be added yet (only the built-in demo
  // provider exists, and it has its one model) and leads to the provider
  // form.
  needProvider() {
    const providers = this.view.sections.find((s) => s instanceof ProvidersSection);
    const note = h('div', { class: 'set-form set-need-provider', role: 'status' },
      h('p', { text: 'Add a provider first: a model runs on a provider (OpenAI, an OpenAI-compatible server such as Ollama, or Anthropic).' }),
      h('div', { class: 'row-end' },
        h('button', { type: 'button', class: 'btn ghost', onclick: () => this.closeForm() }, 'Cancel'),
        btn('Add a provider', () => {
          this.closeForm();
          providers.edit(null);
          providers.el.scrollIntoView({ block: 'start' });
        }, { iconName: 'plus', cls: 'btn primary add-provider-first' })));
    this.formHost.replaceChildren(note);
    note.querySelector('.add-provider-first').focus();
  }

  async remove(m) {
    if (!(await dialog({ title: `Delete the model “${m.display_name}”?`, message: 'Chats that used it go on with the default model.', confirm: 'Delete', danger: true }))) return;
    await this.run(() => api('DELETE', `/chats/model-configs/${m.id}`));
  }
}

// ---- Providers --------------------------------------------------------

class ProvidersSection extends Section {
  constructor(view) {
    super(view, 'providers', 'Providers', 'Where the models run. API keys are stored encrypted and never shown again.');
    this.actions.append(btn('Add provider', () => this.edit(null), { iconName: 'plus', cls: 'btn small add-provider' }));
    this.results = new Map(); // provider id -> node with the last test's outcome
  }

  async load() {
    const providers = await api('GET', '/chats/providers');
    this.providers = providers || [];
    if (!this.providers.length) {
      this.body.replaceChildren(h('p', { class: 'muted', text: 'No providers yet.' }));
      return;
    }
    this.body.replaceChildren(h('ul', { class: 'set-list provider-list', 'aria-label': 'Providers' }, this.providers.map((p) => this.row(p))));
  }

  row(p) {
    const result = this.results.get(p.id) || h('div', { class: 'provider-result', 'aria-live': 'polite' });
    this.results.set(p.id, result);
    const facts = [p.provider, p.base_url, p.has_api_key ? 'key set' : 'no key', p.source === 'env_preset' ? 'from the environment' : null].filter(Boolean);
    const demo = p.provider === 'demo';
    return h('li', { class: 'set-row provider-row' + (p.enabled ? '' : ' off'), dataset: { id: p.id } },
      h('div', { class: 'set-main' }, h('div', { class: 'set-name', text: p.display_name }),
        h('div', { class: 'muted small set-facts', text: facts.join(' · ') }), result),
      h('div', { class: 'set-row-actions' },
        toggle(`Enable ${p.display_name}`, p.enabled, (on) => this.run(() => api('PATCH', `/chats/providers/${p.id}`, { enabled: on }))),
        demo ? null : btn('Test', () => this.test(p, result, false), { cls: 'btn small test', aria: `Test the connection to ${p.display_name}` }),
        demo ? null : btn('Discover models', () => this.test(p, result, true), { cls: 'btn small discover', aria: `Discover the models of ${p.display_name}` }),
        demo ? null : btn('Edit', () => this.edit(p), { cls: 'btn small ghost edit', iconName: 'edit', aria: `Edit ${p.display_name}` }),
        demo ? null : btn('', () => this.remove(p), { cls: 'icon-btn delete', iconName: 'trash', aria: `Delete ${p.display_name}` })));
  }

  // test asks the provider for its models: the outcome, and with discover
  // the models with an Add button each (those not configured yet).
  async test(p, out, discover) {
    out.className = 'provider-result muted small';
    out.replaceChildren('Testing…');
    let r;
    try {
      r = await api('POST', `/chats/providers/${p.id}/test`);
    } catch (e) {
      out.className = 'provider-result set-bad small';
      out.replaceChildren(errorText(e));
      return;
    }
    if (!r.ok) {
      out.className = 'provider-result set-bad small';
      out.replaceChildren(`Connection failed: ${r.error || 'unknown error'}`);
      return;
    }
    const models = r.models || [];
    out.className = 'provider-result set-good small';
    out.replaceChildren(`Connected · ${models.length} ${models.length === 1 ? 'model' : 'models'}`);
    if (!discover) return;
    const have = new Set((this.view.models.models || []).filter((m) => m.ai_provider_id === p.id).map((m) => m.model));
    out.append(h('ul', { class: 'discovered', 'aria-label': `Models of ${p.display_name}` }, models.map((m) => h('li', { dataset: { model: m.id } },
      h('span', { class: 'mono', text: m.id }),
      h('span', { class: 'muted', text: m.context_limit ? ` ${m.context_limit.toLocaleString()} tokens` : '' }),
      have.has(m.id) ? h('span', { class: 'muted', text: ' · added' })
        : btn('Add', () => { this.view.models.edit(null, { ai_provider_id: p.id, model: m.id, context_limit: m.context_limit || '' }); this.view.models.el.scrollIntoView({ block: 'start' }); },
          { cls: 'btn small ghost add-discovered', aria: `Add ${m.id}` })))));
  }

  edit(p) {
    const type = select(PROVIDER_TYPES, p ? p.provider : 'openai', { name: 'provider', disabled: !!p });
    const display = input({ name: 'display_name', value: p ? p.display_name : '' });
    const base = input({ name: 'base_url', type: 'url', value: p ? p.base_url || '' : '', placeholder: 'https://api.openai.com/v1' });
    const key = input({ name: 'api_key', type: 'password', autocomplete: 'new-password', value: '', placeholder: p && p.has_api_key ? '•••• set' : '' });
    const enabled = h('input', { type: 'checkbox', name: 'enabled', checked: p ? p.enabled : true });
    const removeKey = p && p.has_api_key ? h('input', { type: 'checkbox', name: 'remove_key' }) : null;
    if (removeKey) removeKey.addEventListener('change', () => { key.disabled = removeKey.checked; if (removeKey.checked) key.value = ''; });
    const fields = h('div', { class: 'set-grid' },
      field('Type', type), field('Display name', display),
      field('Base URL', base, 'Required for OpenAI-compatible servers, e.g. http://localhost:11434/v1.'),
      field('API key', key, p && p.has_api_key ? 'Leave empty to keep the stored key.' : null),
      h('label', { class: 'set-check' }, enabled, ' Enabled'),
      removeKey ? h('label', { class: 'set-check' }, removeKey, ' Remove the stored key') : null);
    this.openForm(p ? `Edit ${p.display_name}` : 'Add a provider', fields, () => {
      const body = { display_name: display.value.trim() || undefined, base_url: base.value.trim(), enabled: enabled.checked };
      if (removeKey && removeKey.checked) body.api_key = '';
      else if (key.value) body.api_key = key.value;
      if (p) return api('PATCH', `/chats/providers/${p.id}`, body);
      return api('POST', '/chats/providers', { ...body, provider: type.value, base_url: body.base_url || undefined });
    });
  }

  async remove(p) {
    if (!(await dialog({ title: `Delete the provider “${p.display_name}”?`, message: 'Its model configs go with it.', confirm: 'Delete', danger: true }))) return;
    await this.run(() => api('DELETE', `/chats/providers/${p.id}`));
  }

  // After a provider change the models change too.
  async run(fn, target) {
    const ok = await super.run(fn, target);
    if (ok) this.view.models.load().catch((e) => this.view.models.fail(e));
    return ok;
  }
}

// ---- MCP servers ------------------------------------------------------

// secretRows edits env or headers as name/value rows. A stored value is
// never shown: its row says "set", an empty value keeps it (sent as null)
// and a typed one replaces it; a removed row is left out of the object.
function secretRows(kind, label, storedKeys) {
  const list = h('div', { class: 'kv-rows' });
  const rows = [];
  const noun = kind === 'env' ? 'variable' : 'header';
  const add = (key, stored) => {
    const nameIn = input({ name: `${kind}_name`, value: key, placeholder: kind === 'env' ? 'NAME' : 'Header-Name', readonly: stored,
      autocomplete: 'off', 'aria-label': stored ? `${label}: ${key}` : `New ${noun} name` });
    const valueIn = input({ name: `${kind}_value`, type: 'password', autocomplete: 'new-password', placeholder: stored ? '•••• set' : 'value',
      'aria-label': stored ? `New value of ${key} (empty keeps the stored one)` : `New ${noun} value` });
    const entry = { nameIn, valueIn, stored };
    const row = h('div', { class: 'kv-row', dataset: { name: key, stored: String(stored) } }, nameIn, valueIn,
      btn('', () => { rows.splice(rows.indexOf(entry), 1); row.remove(); }, { cls: 'icon-btn kv-remove', iconName: 'trash', aria: stored ? `Remove ${key}` : `Remove this ${noun}` }));
    rows.push(entry);
    list.append(row);
    return entry;
  };
  for (const k of storedKeys) add(k, true);
  const addBtn = btn(`Add ${noun}`, () => add('', false).nameIn.focus(), { cls: `btn small ghost kv-add add-${kind}`, iconName: 'plus' });
  return {
    el: h('div', { class: 'set-field kv-field', dataset: { kind } }, h('div', { class: 'field-label', text: label }), list, addBtn,
      storedKeys.length ? h('p', { class: 'muted small set-hint', text: 'Stored values are never shown: leave one empty to keep it.' }) : null),
    value() {
      const out = {};
      for (const e of rows) {
        const key = e.nameIn.value.trim();
        if (!key) {
          if (e.valueIn.value) throw new Error(`${label}: a ${noun} with a value needs a name.`);
          continue;
        }
        out[key] = e.stored && e.valueIn.value === '' ? null : e.valueIn.value;
      }
      return out;
    },
  };
}

// nameList edits a list of tool names as removable chips, with an input
// that offers the names known (a datalist) and adds one on Enter or Add.
function nameList(kind, label, names, offered, hint) {
  const id = fieldId(kind);
  const values = [];
  const chips = h('ul', { class: 'name-chips', 'aria-label': label });
  const addName = (raw) => {
    const n = raw.trim();
    if (!n || values.includes(n)) return;
    values.push(n);
    const li = h('li', { class: 'name-chip', dataset: { name: n } }, h('span', { class: 'mono', text: n }),
      btn('', () => { values.splice(values.indexOf(n), 1); li.remove(); }, { cls: 'icon-btn name-remove', iconName: 'x', aria: `Remove ${n} from ${label}` }));
    chips.append(li);
  };
  names.forEach(addName);
  const list = h('datalist', { id: `${id}-names` }, offered.map((n) => h('option', { value: n })));
  const entry = input({ id, name: kind, list: list.id, placeholder: 'Tool name', autocomplete: 'off' });
  const take = () => { addName(entry.value); entry.value = ''; };
  entry.addEventListener('keydown', (e) => { if (e.key === 'Enter') { e.preventDefault(); take(); } });
  return {
    el: h('div', { class: 'set-field name-field', dataset: { kind } },
      h('label', { class: 'field-label', for: id, text: label }), chips,
      h('div', { class: 'name-add' }, entry, btn('Add', take, { cls: `btn small ghost name-add-btn add-${kind}`, aria: `Add to ${label}` })), list,
      hint ? h('p', { class: 'muted small set-hint', text: hint }) : null),
    // values are the chips, and a name typed but not added yet.
    values() { take(); return [...values]; },
  };
}

const EFFECT_OPTIONS = [['pure', 'pure'], ['idempotent', 'idempotent'], ['effectful', 'effectful']];
const TOOL_APPROVAL_OPTIONS = [['', 'Server policy'], ['never', 'Never'], ['effectful', 'If effectful'], ['always', 'Always']];

// accessText says who may use a server, for its row (admins see config).
function accessText(cfg) {
  const a = cfg.access;
  if (a === undefined) return null;
  const who = Array.isArray(a) ? `${a.join(', ')} and admins` : a === 'admins' ? 'admins only' : 'all users';
  return `used by ${who}${cfg.access_default ? ' (default)' : ''}`;
}

// toolSettings sets each tool's effect class and approval: a row per tool
// name offered, and an input to add one the server has not shown yet.
function toolSettings(names, effects, approvals, tools) {
  const rows = new Map();
  const body = h('div', { class: 'tool-settings' });
  const addRow = (raw) => {
    const n = raw.trim();
    if (!n || rows.has(n)) return;
    const t = tools.find((x) => (x.mcp_name || x.name) === n);
    const auto = t && t.effect_source !== 'config' ? `Automatic (${t.effect})` : 'Automatic';
    const effect = select([['', auto], ...EFFECT_OPTIONS], effects[n] || '', { name: 'tool_effect', 'aria-label': `Effect class of ${n}` });
    const approval = select(TOOL_APPROVAL_OPTIONS, approvals[n] || '', { name: 'tool_approval', 'aria-label': `Approval of ${n}` });
    rows.set(n, { effect, approval });
    body.append(h('div', { class: 'tool-setting', dataset: { tool: n } }, h('span', { class: 'mono tool-setting-name', text: n }), effect, approval));
  };
  names.forEach(addRow);
  const id = fieldId('tool');
  const entry = input({ id, name: 'tool_name', placeholder: 'Tool name', autocomplete: 'off' });
  const take = () => { addRow(entry.value); entry.value = ''; };
  entry.addEventListener('keydown', (e) => { if (e.key === 'Enter') { e.preventDefault(); take(); } });
  const pick = (key) => {
    const out = {};
    for (const [n, r] of rows) if (r[key].value) out[n] = r[key].value;
    return out;
  };
  return {
    el: h('div', { class: 'set-field tool-settings-field' },
      h('label', { class: 'field-label', for: id, text: 'Per tool: effect class and approval' }), body,
      h('div', { class: 'name-add' }, entry, btn('Add tool', take, { cls: 'btn small ghost add-tool-setting' })),
      h('p', { class: 'muted small set-hint', text: 'The effect class says what happens to a call a crash interrupted; approval overrides the server’s for that tool.' })),
    effects: () => pick('effect'),
    approvals: () => pick('approval'),
  };
}

class MCPSection extends Section {
  constructor(view) {
    super(view, 'mcp', 'MCP servers', 'Tool servers every chat may use. The effect class says what happens to a call a crash interrupted.');
    this.actions.append(btn('Add server', () => this.edit(null), { iconName: 'plus', cls: 'btn small add-mcp' }));
    this.results = new Map();
  }

  async load() {
    clearTimeout(this.timer);
    const servers = (await api('GET', '/chats/mcp-servers')) || [];
    // Listing starts connecting servers without waiting: look again while
    // any is still connecting.
    if ((servers.some((s) => s.state === 'connecting') || authPending(servers)) && !this.view.gone) {
      this.timer = setTimeout(() => this.load().catch((e) => this.fail(e)), 1000);
    }
    if (!servers.length) {
      this.body.replaceChildren(h('p', { class: 'muted', text: 'No MCP servers yet.' }));
      return;
    }
    this.body.replaceChildren(h('ul', { class: 'set-list mcp-list', 'aria-label': 'MCP servers' }, servers.map((s) => this.row(s))));
  }

  row(s) {
    const cfg = s.config || {};
    const result = this.results.get(s.id) || h('div', { class: 'provider-result', 'aria-live': 'polite' });
    this.results.set(s.id, result);
    const tools = h('details', { class: 'mcp-tools-box' },
      h('summary', { text: `${s.tools.length} ${s.tools.length === 1 ? 'tool' : 'tools'}` }),
      h('ul', { class: 'mcp-tools' }, s.tools.map((t) => h('li', { class: 'mcp-tool' },
        h('div', { class: 'mcp-tool-head' }, h('span', { class: 'mcp-tool-name', text: t.mcp_name || t.name }), effectBadge(t.effect)),
        t.description ? h('div', { class: 'mcp-tool-desc', text: t.description }) : null))));
    return h('li', { class: 'set-row mcp-row' + (cfg.enabled === false ? ' off' : ''), dataset: { id: s.id, name: s.name } },
      h('div', { class: 'set-main' },
        h('div', { class: 'set-name' }, s.name, ' ', h('span', { class: `mcp-state mcp-state-${s.state}`, text: MCP_STATE[s.state] || s.state })),
        h('div', { class: 'muted small set-facts', text: [s.transport, cfg.url || [cfg.command, ...(cfg.args || [])].filter(Boolean).join(' '), cfg.source === 'config_file' ? 'from the config file' : null, accessText(cfg), cfg.oauth && cfg.oauth.per_user ? 'each user connects it' : null].filter(Boolean).join(' · ') }),
        s.last_error ? h('div', { class: 'mcp-error', text: s.last_error }) : null,
        authLine(s, () => this.load().catch((e) => this.fail(e))),
        s.tools.length ? tools : null, result),
      h('div', { class: 'set-row-actions' },
        toggle(`Enable ${s.name}`, cfg.enabled !== false, (on) => this.run(() => api('PATCH', `/chats/mcp-servers/${s.id}`, { enabled: on }))),
        btn('Test', () => this.test(s, result), { cls: 'btn small test', aria: `Test ${s.name}` }),
        btn('Edit', () => this.edit(s), { cls: 'btn small ghost edit', iconName: 'edit', aria: `Edit ${s.name}` }),
        btn('', () => this.remove(s), { cls: 'icon-btn delete', iconName: 'trash', aria: `Delete ${s.name}` })));
  }

  async test(s, out) {
    out.className = 'provider-result muted small';
    out.replaceChildren('Testing…');
    try {
      const r = await api('POST', `/chats/mcp-servers/${s.id}/test`);
      const n = (r.tools || []).length;
      out.className = 'provider-result small ' + (r.ok ? 'set-good' : 'set-bad');
      out.replaceChildren(r.ok ? `Connected (${r.transport}) · ${n} ${n === 1 ? 'tool' : 'tools'}` : `Connection failed: ${r.error || 'unknown error'}`);
    } catch (e) {
      out.className = 'provider-result set-bad small';
      out.replaceChildren(errorText(e));
    }
  }

  edit(s) {
    const cfg = (s && s.config) || {};
    const name = input({ name: 'name', value: s ? s.name : '', required: !s, disabled: !!s, autocomplete: 'off' });
    const kind = select([['stdio', 'Command (stdio)'], ['http', 'URL (HTTP)']], cfg.url ? 'http' : 'stdio', { name: 'kind' });
    const command = input({ name: 'command', value: cfg.command || '', placeholder: 'npx' });
    const args = h('textarea', { class: 'text-input', name: 'args', rows: 3, value: (cfg.args || []).join('\n'), placeholder: 'One argument per line' });
    const url = input({ name: 'url', type: 'url', value: cfg.url || '', placeholder: 'https://host/mcp' });
    const approval = select([['', 'Deployment default'], ['never', 'Never'], ['effectful', 'Effectful tools'], ['always', 'Always']], cfg.approval || '', { name: 'approval' });
    const timeout = input({ name: 'timeout', value: cfg.timeout || '', placeholder: '60s' });
    const enabled = h('input', { type: 'checkbox', name: 'enabled', checked: s ? cfg.enabled !== false : true });
    // Access: the default (admins when env or headers are set, else all),
    // all users, admins only, or named users (and the admins).
    const given = s && cfg.access !== undefined && !cfg.access_default ? cfg.access : null;
    const access = select([['', 'Default: admins if it has env or headers, else all users'], ['all', 'All users'], ['admins', 'Admins only'], ['users', 'These users (and admins)']],
      given === null ? '' : Array.isArray(given) ? 'users' : given, { name: 'access' });
    const accessUsers = input({ name: 'access_users', value: Array.isArray(given) ? given.join(', ') : '', placeholder: 'alice, bob', autocomplete: 'off' });
    const accessUsersField = field('Users', accessUsers, 'Usernames, separated by commas.');
    const syncAccess = () => { accessUsersField.hidden = access.value !== 'users'; };
    access.addEventListener('change', syncAccess);
    syncAccess();
    const env = secretRows('env', 'Environment variables', cfg.env_keys || []);
    const headers = secretRows('headers', 'Headers', cfg.header_keys || []);
    // The tool names to offer: the connected server's, and those the config names.
    const tools = (s && s.tools) || [];
    const found = s && s.state === 'connected' ? tools.map((t) => t.mcp_name || t.name) : [];
    const named = [...((cfg.tools && cfg.tools.include) || []), ...((cfg.tools && cfg.tools.exclude) || []),
      ...Object.keys(cfg.effects || {}), ...Object.keys(cfg.approvals || {})];
    const offered = [...new Set([...found, ...named])].sort();
    const include = nameList('include', 'Only these tools', (cfg.tools && cfg.tools.include) || [], offered, 'Empty: every tool the server offers.');
    const exclude = nameList('exclude', 'Never these tools', (cfg.tools && cfg.tools.exclude) || [], offered);
    const perTool = toolSettings(offered, cfg.effects || {}, cfg.approvals || {}, tools);
    const cmdFields = h('div', { class: 'set-grid' }, field('Command', command), field('Arguments', args), env.el);
    const perUser = h('input', { type: 'checkbox', name: 'per_user', checked: !!(cfg.oauth && cfg.oauth.per_user) });
    const urlFields = h('div', { class: 'set-grid' }, field('URL', url), headers.el,
      h('label', { class: 'set-check' }, perUser, ' Each user connects it with their own account (OAuth identity per user)'));
    const sync = () => { cmdFields.hidden = kind.value !== 'stdio'; urlFields.hidden = kind.value === 'stdio'; };
    kind.addEventListener('change', sync);
    sync();
    const fields = h('div', {},
      h('div', { class: 'set-grid' }, field('Name', name), field('Kind', kind)), cmdFields, urlFields,
      h('div', { class: 'set-grid' }, field('Approval', approval, 'Which calls wait for a person.'), field('Timeout per call', timeout)),
      h('div', { class: 'set-grid' }, field('Who may use it', access, 'Others do not see the server or its tools.'), accessUsersField),
      h('div', { class: 'set-grid' }, include.el, exclude.el), perTool.el,
      h('label', { class: 'set-check' }, enabled, ' Enabled'));
    this.openForm(s ? `Edit ${s.name}` : 'Add an MCP server', fields, () => {
      // Every field is sent, so what the form shows is what is stored; null
      // resets a field, and a null env or header value keeps the stored one.
      const body = { enabled: enabled.checked, approval: approval.value || null, timeout: timeout.value.trim() || null };
      body.access = access.value === 'users' ? accessUsers.value.split(',').map((u) => u.trim()).filter(Boolean) : access.value || null;
      if (kind.value === 'stdio') {
        Object.assign(body, { command: command.value.trim(), args: args.value.split('\n').map((a) => a.trim()).filter(Boolean), env: env.value(), url: null, headers: null, oauth: null });
      } else {
        Object.assign(body, { url: url.value.trim(), headers: headers.value(), command: null, args: null, env: null, oauth: oauthBody(cfg.oauth, perUser.checked) });
      }
      const inc = include.values();
      const exc = exclude.values();
      body.tools = inc.length || exc.length ? { include: inc, exclude: exc } : null;
      const effects = perTool.effects();
      const approvals = perTool.approvals();
      body.effects = Object.keys(effects).length ? effects : null;
      body.approvals = Object.keys(approvals).length ? approvals : null;
      if (s) return api('PATCH', `/chats/mcp-servers/${s.id}`, body);
      for (const k of Object.keys(body)) if (body[k] === null) delete body[k];
      return api('POST', '/chats/mcp-servers', { name: name.value.trim(), ...body });
    });
  }

  async remove(s) {
    if (!(await dialog({ title: `Delete the MCP server “${s.name}”?`, message: 'Chats lose its tools.', confirm: 'Delete', danger: true }))) return;
    await this.run(() => api('DELETE', `/chats/mcp-servers/${s.id}`));
  }
}

// ---- Users ------------------------------------------------------------

class UsersSection extends Section {
  constructor(view) {
    super(view, 'users', 'Users', 'A new user signs in with a login link: Create login link, then send it to them (it works once, for 15 minutes).');
    this.actions.append(btn('Add user', () => this.create(), { iconName: 'plus', cls: 'btn small add-user' }));
    this.link = h('div', { class: 'token-secret-host login-link-host' });
    this.el.insertBefore(this.link, this.error);
  }

  // createLink asks for a one-time login link for u and shows it with Copy.
  async createLink(u) {
    this.clear();
    let r;
    try {
      r = await api('POST', `/users/${u.id}/login-link`);
    } catch (e) {
      this.fail(e);
      return;
    }
    const url = location.origin + r.path;
    const copy = h('button', { type: 'button', class: 'btn small copy-link' }, icon('copy'), h('span', { class: 'label', text: 'Copy' }));
    copy.addEventListener('click', async () => {
      copy.querySelector('.label').textContent = (await copyText(url)) ? 'Copied' : 'Copy failed';
    });
    this.link.replaceChildren(h('div', { class: 'token-new', role: 'status' },
      h('p', {}, h('strong', { text: `Login link for ${u.username}.` }), ` It works once, until ${formatTime(r.expires_at)}: send it to them privately.`),
      h('div', { class: 'token-secret-line' }, h('code', { class: 'mono token-secret login-link', text: url }), copy),
      h('div', { class: 'row-end' }, btn('Done', () => this.link.replaceChildren(), { cls: 'btn small ghost' }))));
    copy.focus();
  }

  async load() {
    const r = await api('GET', '/users');
    const users = (r && r.users) || [];
    this.body.replaceChildren(h('ul', { class: 'set-list user-list', 'aria-label': 'Users' }, users.map((u) => this.row(u))));
  }

  row(u) {
    const me = u.id === this.view.app.me.id;
    return h('li', { class: 'set-row user-row' + (u.disabled ? ' off' : ''), dataset: { id: u.id, username: u.username } },
      h('span', { class: 'avatar', 'aria-hidden': 'true', text: u.username.slice(0, 1).toUpperCase() }),
      h('div', { class: 'set-main' },
        h('div', { class: 'set-name' }, u.username, me ? h('span', { class: 'muted', text: ' (you)' }) : null,
          u.admin ? h('span', { class: 'set-badge', text: 'admin' }) : null,
          u.disabled ? h('span', { class: 'set-badge bad', text: 'disabled' }) : null),
        h('div', { class: 'muted small', text: `since ${formatTime(u.created_at)}` })),
      h('div', { class: 'set-row-actions' },
        u.disabled ? null : btn('Create login link', () => this.createLink(u), { cls: 'btn small login-link-btn', aria: `Create a login link for ${u.username}` }),
        btn(u.admin ? 'Remove admin' : 'Make admin', () => this.run(() => api('PATCH', `/users/${u.id}`, { admin: !u.admin })), { cls: 'btn small admin-toggle' }),
        btn(u.disabled ? 'Enable' : 'Disable', () => this.run(() => api('PATCH', `/users/${u.id}`, { disabled: !u.disabled })), { cls: 'btn small disable-toggle' })));
  }

  create() {
    const name = input({ name: 'username', required: true, maxlength: 64, autocomplete: 'off' });
    const admin = h('input', { type: 'checkbox', name: 'admin' });
    this.openForm('Add a user', h('div', { class: 'set-grid' }, field('Username', name), h('label', { class: 'set-check' }, admin, ' Admin')),
      () => api('POST', '/users', { username: name.value.trim(), admin: admin.checked }));
  }
}

// ---- My tokens --------------------------------------------------------

class TokensSection extends Section {
  constructor(view) {
    super(view, 'tokens', 'My tokens', 'API tokens for scripts and clients. Sessions are your web sign-ins.');
    this.actions.append(btn('Create token', () => this.create(), { iconName: 'plus', cls: 'btn small add-token' }));
    this.secret = h('div', { class: 'token-secret-host' });
    this.el.insertBefore(this.secret, this.error);
  }

  async load() {
    const tokens = (await api('GET', '/users/me/tokens')) || [];
    if (!tokens.length) {
      this.body.replaceChildren(h('p', { class: 'muted', text: 'No tokens.' }));
      return;
    }
    this.body.replaceChildren(h('ul', { class: 'set-list token-list', 'aria-label': 'My tokens' }, tokens.map((t) => this.row(t))));
  }

  row(t) {
    const name = t.token_name || (t.kind === 'session' ? 'Web session' : t.kind);
    const facts = [t.kind, `created ${formatTime(t.created_at)}`,
      t.last_used ? `used ${formatTime(t.last_used)}` : 'never used',
      t.expired ? 'expired' : t.expires_at ? `expires ${formatTime(t.expires_at)}` : 'never expires'];
    return h('li', { class: 'set-row token-row' + (t.expired ? ' off' : ''), dataset: { id: t.id, name: t.token_name || '' } },
      h('div', { class: 'set-main' }, h('div', { class: 'set-name', text: name }), h('div', { class: 'muted small set-facts', text: facts.join(' · ') })),
      t.kind === 'bootstrap' ? null : h('div', { class: 'set-row-actions' }, btn('Revoke', () => this.revoke(t, name), { cls: 'btn small revoke', aria: `Revoke ${name}` })));
  }

  create() {
    const name = input({ name: 'token_name', required: true, maxlength: 128, autocomplete: 'off' });
    const expiry = select(EXPIRY, '30', { name: 'expiry' });
    this.openForm('Create a token', h('div', { class: 'set-grid' }, field('Name', name), field('Expires', expiry)), async () => {
      const body = { token_name: name.value.trim() };
      if (expiry.value) body.expires_at = new Date(Date.now() + Number(expiry.value) * 86400000).toISOString();
      const r = await api('POST', '/users/me/tokens', body);
      this.showSecret(r.key, r.token.token_name);
    });
  }

  // showSecret shows a new token's secret, once, with a Copy button.
  showSecret(key, name) {
    const code = h('code', { class: 'mono token-secret', text: key });
    const copy = h('button', { type: 'button', class: 'btn small copy-token' }, icon('copy'), h('span', { class: 'label', text: 'Copy' }));
    copy.addEventListener('click', async () => {
      const ok = await copyText(key);
      copy.querySelector('.label').textContent = ok ? 'Copied' : 'Copy failed';
    });
    this.secret.replaceChildren(h('div', { class: 'token-new', role: 'status' },
      h('p', {}, h('strong', { text: `Token “${name}” created.` }), ' Copy it now: it is not shown again.'),
      h('div', { class: 'token-secret-line' }, code, copy),
      h('div', { class: 'row-end' }, btn('Done', () => this.secret.replaceChildren(), { cls: 'btn small ghost' }))));
    copy.focus();
  }

  async revoke(t, name) {
    const session = t.kind === 'session';
    if (!(await dialog({ title: `Revoke “${name}”?`, message: session ? 'If this is this browser’s session, you are signed out.' : 'Clients using it stop working at once.', confirm: 'Revoke', danger: true }))) return;
    await this.run(() => api('DELETE', `/users/me/tokens/${t.id}`));
  }
}

// SettingsView is the page: a table of contents and the sections.
export class SettingsView {
  constructor(app) {
    this.app = app;
    this.admin = !!(app.me && app.me.admin);
    this.models = new ModelsSection(this);
    this.sections = this.admin
      ? [this.models, new ProvidersSection(this), new MCPSection(this), new UsersSection(this), new TokensSection(this), new WebhooksSection(this)]
      : [this.models, new MCPConnectionsSection(this), new TokensSection(this), new WebhooksSection(this)];
    const toc = h('nav', { class: 'set-toc', 'aria-label': 'Settings sections' },
      this.sections.map((s) => h('a', { href: `#${s.el.id}`, class: 'set-toc-link', text: s.el.querySelector('h2').textContent,
        onclick: (e) => { e.preventDefault(); s.el.scrollIntoView({ block: 'start' }); s.el.querySelector('h2').focus(); } })));
    for (const s of this.sections) s.el.querySelector('h2').setAttribute('tabindex', '-1');
    this.el = h('section', { class: 'chat-view settings-view', 'aria-label': 'Settings' },
      h('header', { class: 'chat-header' }, app.sidebarButton(), h('h1', { class: 'chat-title-h', text: 'Settings' })),
      h('div', { class: 'scroller' }, h('div', { class: 'settings-page' }, toc, this.sections.map((s) => s.el))));
    document.title = 'Settings · chatd';
  }

  // mounted loads the sections. Each is busy until its first load ends,
  // its header's buttons off meanwhile: Add model offers the providers that
  // load reads, and a click before then would act on nothing.
  mounted() {
    for (const s of this.sections) {
      const head = [...s.el.querySelectorAll('.set-head button')];
      s.el.setAttribute('aria-busy', 'true');
      for (const b of head) b.disabled = true;
      s.load().catch((e) => s.fail(e)).finally(() => {
        s.el.removeAttribute('aria-busy');
        for (const b of head) b.disabled = false;
      });
    }
  }

  destroy() {
    this.gone = true;
    for (const s of this.sections) clearTimeout(s.timer);
  }
}
