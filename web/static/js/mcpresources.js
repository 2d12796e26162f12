// MCP resources and prompts in the composer (API.md "MCP resources and
// prompts"): the "From MCP server…" button beside the attach button opens a
// panel listing, per server the user may use, its resources (and resource
// templates, whose variables are filled in a small form) and its prompts.
//
// Picking a resource reads it (GET .../resources/read) and adds its
// contents to the composer's attachments as files, through the same checks
// and upload as a picked file: the message then holds file parts, as the
// API's mcp_resource part would, so it replays without the server. Picking a
// prompt asks for its arguments, renders it (POST .../prompts/{name}/get)
// and puts its text in the composer, where the user edits it before sending.

import { h, icon } from './dom.js';
import { api } from './api.js';
import { loadMCP, refreshMCP } from './mcp.js';

// templateVars are the variable names of an RFC 6570 URI template, in order
// ("{id}", "{+path}", "{?q,lang}" give id, path, q, lang).
export function templateVars(template) {
  const out = [];
  for (const m of String(template).matchAll(/\{([+#./;?&]?)([^}]*)\}/g)) {
    for (const v of m[2].split(',')) {
      const name = v.replace(/[*]$|:\d+$/, '').trim();
      if (name && !out.includes(name)) out.push(name);
    }
  }
  return out;
}

// expandTemplate fills template's variables from values (simple and
// reserved expansion; query-style operators give "?a=1&b=2").
export function expandTemplate(template, values) {
  return String(template).replace(/\{([+#./;?&]?)([^}]*)\}/g, (_, op, list) => {
    const names = list.split(',').map((v) => v.replace(/[*]$|:\d+$/, '').trim()).filter(Boolean);
    const enc = (s) => (op === '+' || op === '#' ? encodeURI(s) : encodeURIComponent(s));
    const given = names.filter((n) => values[n] != null && values[n] !== '');
    switch (op) {
      case '?': case '&':
        return given.length ? op + given.map((n) => `${n}=${enc(values[n])}`).join('&') : '';
      case '/': case '.': case ';':
        return given.map((n) => op + (op === ';' ? `${n}=` : '') + enc(values[n])).join('');
      case '#':
        return given.length ? '#' + given.map((n) => enc(values[n])).join(',') : '';
      default:
        return given.map((n) => enc(values[n])).join(',');
    }
  });
}

// promptText is a rendered prompt as composer text: each message's text
// (and embedded text resources), messages apart by a blank line.
export function promptText(result) {
  const blocks = [];
  for (const m of (result && result.messages) || []) {
    for (const c of m.content || []) {
      if (c.type === 'text' && c.text) blocks.push(c.text);
      else if (c.type === 'resource' && c.text) blocks.push(c.text);
      else if (c.type === 'resource_link' && c.uri) blocks.push(c.uri);
    }
  }
  return blocks.join('\n\n');
}

// base64Bytes decodes the API's base64.
function base64Bytes(b64) {
  const bin = atob(b64);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

// resourceName is a file name for a resource's URI: its last path segment,
// decoded ("demo://docs/a%20b.md" gives "a b.md").
export function resourceName(uri) {
  const path = String(uri).replace(/[?#].*$/, '').replace(/\/+$/, '');
  let last = path.slice(path.lastIndexOf('/') + 1) || path;
  try { last = decodeURIComponent(last); } catch { /* keep it encoded */ }
  return last || 'resource';
}

// resourceFiles are a read resource's contents as Files: text as UTF-8 with
// its type (text/plain when none), a blob as its bytes.
export function resourceFiles(read, uri) {
  return ((read && read.contents) || []).map((c) => {
    const name = resourceName(c.uri || uri);
    if (c.blob != null) return new File([base64Bytes(c.blob)], name, { type: c.mime_type || 'application/octet-stream' });
    return new File([new TextEncoder().encode(c.text || '')], name, { type: c.mime_type || 'text/plain' });
  });
}

const base = (id) => `/chats/mcp-servers/${encodeURIComponent(id)}`;

// MCPPicker is the button and its panel. opts: {attachments (attach.js
// Attachments), insert(text): put text in the composer}.
export class MCPPicker {
  constructor(opts) {
    this.opts = opts;
    this.server = null;
    this.panel = h('div', { id: 'mcp-picker', class: 'tools-popover mcp-picker', role: 'dialog', 'aria-label': 'From MCP server', hidden: true });
    this.btn = h('button', {
      type: 'button', class: 'attach-btn mcp-pick-btn', 'aria-label': 'From MCP server…', title: 'From MCP server… (resources and prompts)',
      'aria-haspopup': 'dialog', 'aria-expanded': 'false', 'aria-controls': 'mcp-picker', hidden: true, onclick: () => this.toggle(),
    }, icon('plus'));
    this.el = this.btn;
    const onEsc = (e) => {
      if (e.key === 'Escape' && this.open) {
        e.preventDefault();
        e.stopPropagation();
        this.close(true);
      }
    };
    this.panel.addEventListener('keydown', onEsc);
    this.onDoc = (e) => {
      if (!this.panel.contains(e.target) && !this.btn.contains(e.target)) this.close(false);
    };
    loadMCP().then((list) => { this.btn.hidden = !(list && list.length); });
  }

  // host is where the panel goes (positioned against it).
  mount(host) { host.append(this.panel); }

  get open() { return !this.panel.hidden; }

  toggle() {
    if (this.open) this.close(true);
    else this.show();
  }

  async show() {
    this.panel.hidden = false;
    this.btn.setAttribute('aria-expanded', 'true');
    document.addEventListener('mousedown', this.onDoc, true);
    // Never the last opening's lists: the server's may have changed.
    this.fill(this.head('From MCP server'), h('div', { class: 'tools-pop-body' }, h('p', { class: 'muted tools-empty', text: 'Loading…' })));
    const servers = await refreshMCP();
    if (!this.open) return;
    this.servers = (servers || []).filter((s) => s.state !== 'disabled');
    if (!this.server || !this.servers.some((s) => s.id === this.server)) this.server = this.servers.length ? this.servers[0].id : null;
    this.load();
  }

  close(refocus) {
    if (!this.open) return;
    this.panel.hidden = true;
    this.btn.setAttribute('aria-expanded', 'false');
    document.removeEventListener('mousedown', this.onDoc, true);
    if (refocus) this.btn.focus();
  }

  head(title, back) {
    return h('div', { class: 'tools-pop-head' },
      back ? h('button', { type: 'button', class: 'btn ghost small mcp-pick-back', onclick: back, text: '‹ Back' }) : null,
      h('strong', { class: 'mcp-pick-title', text: title }),
      h('span', { class: 'spacer' }),
      h('button', { type: 'button', class: 'icon-btn', 'aria-label': 'Close', onclick: () => this.close(true) }, icon('x')));
  }

  fill(...body) {
    this.panel.replaceChildren(...body);
    const first = this.panel.querySelector('input, .mcp-pick-item, select');
    if (first) first.focus();
  }

  // load lists the chosen server's resources and prompts.
  async load() {
    const id = this.server;
    const select = this.servers.length > 1
      ? h('select', { class: 'picker mcp-pick-server', 'aria-label': 'MCP server', onchange: (e) => { this.server = e.target.value; this.load(); } },
        this.servers.map((s) => h('option', { value: s.id, text: s.name, selected: s.id === id })))
      : null;
    const status = h('p', { class: 'muted tools-empty', text: 'Loading…' });
    const body = h('div', { class: 'tools-pop-body' }, select ? h('div', { class: 'mcp-pick-row' }, select) : null, status);
    this.fill(this.head(this.servers.length === 1 ? this.servers[0].name : 'From MCP server'), body);
    if (!id) {
      status.textContent = 'No MCP servers are available to you.';
      return;
    }
    const [res, prompts] = await Promise.allSettled([api('GET', `${base(id)}/resources`), api('GET', `${base(id)}/prompts`)]);
    if (this.server !== id || !this.open) return;
    status.remove();
    body.append(
      h('h3', { class: 'mcp-pick-h', text: 'Resources' }),
      this.resourceList(id, res),
      h('h3', { class: 'mcp-pick-h', text: 'Prompts' }),
      this.promptList(id, prompts));
  }

  failure(r, what) {
    const e = r.reason || {};
    const text = e.code === 'MCP_UNSUPPORTED' ? `This server offers no ${what}.` : (e.message || `Could not list the ${what}.`);
    return h('p', { class: 'muted mcp-pick-note', text });
  }

  resourceList(id, r) {
    if (r.status === 'rejected') return this.failure(r, 'resources');
    const ul = h('ul', { class: 'mcp-pick-list', 'aria-label': 'Resources' });
    const add = (page) => {
      for (const res of page.resources || []) {
        ul.append(this.item(res.title || res.name || res.uri, res.uri + (res.mime_type ? ` · ${res.mime_type}` : ''), res.description,
          () => this.attach(id, res.uri), 'resource'));
      }
      for (const t of page.resource_templates || []) {
        ul.append(this.item(t.title || t.name || t.uri_template, t.uri_template, t.description, () => this.templateForm(id, t), 'template'));
      }
      if (page.next_cursor) {
        const more = h('li', {}, h('button', {
          type: 'button', class: 'btn ghost small mcp-pick-more', text: 'More…',
          onclick: async () => {
            more.remove();
            try { add(await api('GET', `${base(id)}/resources?cursor=${encodeURIComponent(page.next_cursor)}`)); } catch (e) { ul.append(h('li', { class: 'muted', text: e.message })); }
          },
        }));
        ul.append(more);
      }
    };
    add(r.value);
    if (!ul.children.length) return h('p', { class: 'muted mcp-pick-note', text: 'No resources.' });
    return ul;
  }

  promptList(id, r) {
    if (r.status === 'rejected') return this.failure(r, 'prompts');
    const ul = h('ul', { class: 'mcp-pick-list', 'aria-label': 'Prompts' });
    const add = (page) => {
      for (const p of page.prompts || []) {
        ul.append(this.item(p.title || p.name, p.name, p.description, () => this.promptForm(id, p), 'prompt'));
      }
      if (page.next_cursor) {
        const more = h('li', {}, h('button', {
          type: 'button', class: 'btn ghost small mcp-pick-more', text: 'More…',
          onclick: async () => {
            more.remove();
            try { add(await api('GET', `${base(id)}/prompts?cursor=${encodeURIComponent(page.next_cursor)}`)); } catch (e) { ul.append(h('li', { class: 'muted', text: e.message })); }
          },
        }));
        ul.append(more);
      }
    };
    add(r.value);
    if (!ul.children.length) return h('p', { class: 'muted mcp-pick-note', text: 'No prompts.' });
    return ul;
  }

  item(title, sub, desc, onclick, kind) {
    return h('li', {}, h('button', { type: 'button', class: `mcp-pick-item ${kind}`, title: desc || sub, onclick },
      h('span', { class: 'mcp-pick-name', text: title }),
      h('span', { class: 'mcp-pick-sub', text: sub })));
  }

  // form shows fields ({name, label, required, description}) and calls
  // done(values) on submit (the button, or Enter in a field); an error it
  // throws shows in the form. (A div, not a form: the panel sits inside
  // the composer's form.)
  form(title, fields, action, done) {
    const inputs = fields.map((f) => h('input', { type: 'text', class: 'text-input', name: f.name, 'aria-label': f.label, 'aria-required': f.required ? 'true' : false }));
    const note = h('p', { class: 'mcp-pick-error', role: 'alert', hidden: true });
    const run = async () => {
      const values = {};
      fields.forEach((f, i) => { if (inputs[i].value !== '') values[f.name] = inputs[i].value; });
      submit.disabled = true;
      note.hidden = true;
      try {
        await done(values);
      } catch (err) {
        note.textContent = (err.validations && err.validations[0] && err.validations[0].detail) || err.message;
        note.hidden = false;
      } finally {
        submit.disabled = false;
      }
    };
    const submit = h('button', { type: 'button', class: 'btn primary small mcp-pick-submit', text: action, onclick: run });
    for (const input of inputs) {
      input.addEventListener('keydown', (e) => {
        if (e.key !== 'Enter') return;
        e.preventDefault(); // not the composer's submit
        run();
      });
    }
    const box = h('div', { class: 'mcp-pick-form' },
      ...fields.map((f, i) => h('label', { class: 'mcp-pick-field' },
        h('span', { text: f.label + (f.required ? ' *' : '') }), inputs[i], f.description ? h('small', { class: 'muted', text: f.description }) : null)),
      note, h('div', { class: 'mcp-pick-actions' }, submit));
    this.fill(this.head(title, () => this.load()), h('div', { class: 'tools-pop-body' }, box));
    if (!fields.length) run();
  }

  templateForm(id, t) {
    const vars = templateVars(t.uri_template);
    this.form(t.title || t.name, vars.map((v) => ({ name: v, label: v, required: true })), 'Attach',
      (values) => this.attach(id, expandTemplate(t.uri_template, values), true));
  }

  promptForm(id, p) {
    const fields = (p.arguments || []).map((a) => ({ name: a.name, label: a.title || a.name, required: a.required, description: a.description }));
    this.form(p.title || p.name, fields, 'Insert', async (values) => {
      const out = await api('POST', `${base(id)}/prompts/${encodeURIComponent(p.name)}/get`, { arguments: values });
      this.opts.insert(promptText(out));
      this.close(false);
    });
  }

  // attach reads uri and adds its contents to the attachments; from a
  // form, errors go back to it (thrown), else they show in the panel.
  async attach(id, uri, fromForm) {
    try {
      const read = await api('GET', `${base(id)}/resources/read?uri=${encodeURIComponent(uri)}`);
      const files = resourceFiles(read, uri);
      if (!files.length) throw new Error('The resource has no contents.');
      this.opts.attachments.add(files);
      this.close(false);
    } catch (e) {
      if (fromForm) throw e;
      this.panel.querySelector('.mcp-pick-error')?.remove();
      this.panel.querySelector('.tools-pop-body')?.prepend(h('p', { class: 'mcp-pick-error', role: 'alert', text: e.message }));
    }
  }
}
