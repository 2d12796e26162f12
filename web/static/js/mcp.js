// MCP servers in the UI: the list of GET /chats/mcp-servers (fetched once
// per page load, refreshed when the tools popover opens, and polled with
// back-off while a server is still connecting), the lookup of a
// tool name (SERVER__TOOL) to its server, own name and effect class, the
// effect badge, the tools popover with a switch per server, and the notice
// of a chat's unavailable servers.

import { h, icon } from './dom.js';
import { api } from './api.js';

// EFFECTS explains each effect class: what it means after a crash.
export const EFFECTS = {
  pure: 'Pure: only reads. After a crash, a call that had started simply runs again.',
  idempotent: 'Idempotent: running it twice does what running it once does. After a crash, a call that had started runs again.',
  effectful: 'Effectful: it changes something. After a crash, a call that had started is never run again; the chat stops for your review.',
};

let servers = [];
let byTool = new Map(); // SERVER__TOOL -> {server, tool}
let loading = null;
let loaded = false;
const listeners = new Set();
// POLL_MS: the waits between fetches while a server is connecting.
const POLL_MS = [500, 1000, 2000, 4000, 8000];
let polls = 0;
let pollTimer = null;

// mcpVersion changes whenever the server list does, so cached nodes that
// show MCP details know to rebuild.
export let mcpVersion = 0;

let serversJSON = '';

function setServers(list) {
  list = Array.isArray(list) ? list : [];
  const json = JSON.stringify(list);
  if (loaded && json === serversJSON) {
    schedulePoll();
    return;
  }
  serversJSON = json;
  servers = list;
  byTool = new Map();
  for (const s of servers) {
    for (const t of s.tools || []) byTool.set(t.name, { server: s, tool: t });
  }
  loaded = true;
  mcpVersion++;
  for (const fn of listeners) fn(servers);
  schedulePoll();
}

// schedulePoll fetches again, a little later each time, while a server
// is connecting: its state and tools are known once it is connected.
function schedulePoll() {
  clearTimeout(pollTimer);
  pollTimer = null;
  if (!servers.some((s) => s.state === 'connecting')) {
    polls = 0;
    return;
  }
  if (polls >= POLL_MS.length) return;
  pollTimer = setTimeout(() => {
    pollTimer = null;
    refreshMCP();
  }, POLL_MS[polls++]);
}

// loadMCP fetches the servers once per page load; later calls share it.
export function loadMCP() {
  if (!loading) loading = refreshMCP();
  return loading;
}

// refreshMCP fetches the servers again. A failure (an older server, the
// network) keeps what was known.
export async function refreshMCP() {
  try {
    setServers(await api('GET', '/chats/mcp-servers'));
  } catch {
    if (!loaded) setServers([]);
  }
  return servers;
}

// onMCP calls fn with the servers whenever they change; it returns the
// function that stops it.
export function onMCP(fn) {
  listeners.add(fn);
  return () => listeners.delete(fn);
}

// mcpServers is the list as last fetched.
export function mcpServers() { return servers; }

// mcpTool looks up a tool name the model used: {server, tool} or null.
export function mcpTool(name) { return byTool.get(name) || null; }

// enabledIn reports whether server id is on for selection (null: every server).
export function enabledIn(selection, id) {
  return selection == null || selection.includes(id);
}

// toggled is selection with server id switched on or off: the explicit list
// of the others when one goes off; null again once every server is on.
export function toggled(selection, id, on, all) {
  const ids = all.map((s) => s.id);
  const current = selection == null ? ids : selection.filter((x) => ids.includes(x) || x === id);
  const next = on ? [...new Set([...current, id])] : current.filter((x) => x !== id);
  return ids.every((x) => next.includes(x)) ? null : ids.filter((x) => next.includes(x));
}

// effectBadge is the small effect-class badge, its meaning as a tooltip
// (also on keyboard focus).
export function effectBadge(effect) {
  const tip = EFFECTS[effect] || 'Unknown effect class.';
  return h('span', { class: `effect effect-${effect}`, tabindex: '0', title: tip, 'data-tip': tip }, effect || '?');
}

const STATE_LABEL = { connected: 'Connected', connecting: 'Connecting…', failed: 'Failed', disabled: 'Disabled' };

function plural(n, one, many) { return `${n} ${n === 1 ? one : many}`; }

// ToolsPopover is the composer's tools button and its popover: the
// configured MCP servers with their state and tools, and a switch per
// server for the chat. The button hides itself when no server is
// configured.
export class ToolsPopover {
  // opts: {selection(): ids or null, onChange(next ids or null): Promise
  //        (rejects to keep the old state), subtitle: what the switches choose for,
  //        ready(): false hides the button while what it acts on is loading}
  constructor(opts) {
    this.opts = opts;
    this.busy = new Set(); // server ids with a change in flight
    this.panel = h('div', { id: 'tools-popover', class: 'tools-popover', role: 'dialog', 'aria-label': 'Tools', hidden: true });
    this.count = h('span', { class: 'tools-count' });
    this.btn = h('button', {
      type: 'button', class: 'tools-btn', 'aria-haspopup': 'dialog', 'aria-expanded': 'false', 'aria-controls': 'tools-popover',
      title: 'Tools', hidden: true, onclick: () => this.toggle(),
    }, icon('tool'), this.count);
    this.el = h('div', { class: 'tools-anchor' }, this.btn);
    const onEsc = (e) => {
      if (e.key === 'Escape' && this.open) {
        e.preventDefault();
        e.stopPropagation();
        this.close(true);
      }
    };
    this.panel.addEventListener('keydown', onEsc);
    this.btn.addEventListener('keydown', onEsc);
    this.onDoc = (e) => {
      if (!this.panel.contains(e.target) && !this.btn.contains(e.target)) this.close(false);
    };
    this.panel.addEventListener('focusout', (e) => {
      if (e.relatedTarget && !this.panel.contains(e.relatedTarget) && e.relatedTarget !== this.btn) this.close(false);
    });
    this.stop = onMCP(() => this.update());
    loadMCP();
    if (loaded) this.update();
  }

  // host is where the panel goes (positioned against it).
  mount(host) { host.append(this.panel); }

  destroy() {
    this.close(false);
    this.stop();
  }

  get open() { return !this.panel.hidden; }

  toggle() {
    if (this.open) this.close(true);
    else this.show();
  }

  async show() {
    this.panel.hidden = false;
    this.btn.setAttribute('aria-expanded', 'true');
    document.addEventListener('mousedown', this.onDoc, true);
    this.render();
    this.focusFirst();
    polls = 0;
    await refreshMCP();
    if (this.open && !this.panel.contains(document.activeElement)) this.focusFirst();
  }

  focusFirst() {
    const first = this.panel.querySelector('[role="switch"]') || this.panel.querySelector('button');
    if (first) first.focus();
  }

  close(refocus) {
    if (!this.open) return;
    this.panel.hidden = true;
    this.btn.setAttribute('aria-expanded', 'false');
    document.removeEventListener('mousedown', this.onDoc, true);
    if (refocus) this.btn.focus();
  }

  // update reflects a new server list or selection: the button's count and,
  // while open, the panel.
  update() {
    const list = mcpServers();
    const sel = this.opts.selection();
    this.btn.hidden = list.length === 0 || (this.opts.ready && !this.opts.ready());
    const n = list.filter((s) => enabledIn(sel, s.id)).reduce((k, s) => k + (s.state === 'connected' ? (s.tools || []).length : 0), 0);
    this.count.textContent = String(n);
    const label = `Tools: ${plural(n, 'tool', 'tools')} available`;
    this.btn.setAttribute('aria-label', label);
    this.btn.title = label;
    this.btn.classList.toggle('warn', list.some((s) => s.state === 'failed' && enabledIn(sel, s.id)));
    if (this.open) this.render();
  }

  render() {
    const list = mcpServers();
    const sel = this.opts.selection();
    const had = document.activeElement && this.panel.contains(document.activeElement) ? document.activeElement.dataset.focusKey : null;
    const head = h('div', { class: 'tools-pop-head' },
      h('strong', { text: 'Tools' }),
      h('span', { class: 'muted small', text: this.opts.subtitle || 'MCP servers for this chat' }),
      h('span', { class: 'spacer' }),
      h('button', { type: 'button', class: 'icon-btn', 'aria-label': 'Close', 'data-focus-key': 'close', onclick: () => this.close(true) }, icon('x')));
    const body = list.length
      ? list.map((s) => this.serverNode(s, enabledIn(sel, s.id)))
      : [h('p', { class: 'muted tools-empty', text: 'No MCP servers are configured on this chatd.' })];
    this.panel.replaceChildren(head, h('div', { class: 'tools-pop-body' }, body));
    if (had) {
      const again = this.panel.querySelector(`[data-focus-key="${CSS.escape(had)}"]`);
      if (again) again.focus();
    }
  }

  serverNode(s, on) {
    const tools = s.tools || [];
    const sw = h('button', {
      type: 'button', class: 'switch', role: 'switch', 'aria-checked': String(on), 'data-focus-key': 'sw-' + s.id,
      'aria-label': `Use ${s.name} in this chat`, title: on ? `Turn ${s.name} off for this chat` : `Turn ${s.name} on for this chat`,
      'aria-disabled': this.busy.has(s.id) ? 'true' : null, onclick: () => { if (!this.busy.has(s.id)) this.flip(s, !on); },
    }, h('span', { class: 'switch-knob', 'aria-hidden': 'true' }));
    let err = null;
    if ((s.state === 'failed' || s.state === 'disabled') && s.last_error) err = h('div', { class: 'mcp-error', text: s.last_error });
    else if (s.state === 'disabled') err = h('div', { class: 'mcp-note muted', text: 'Turned off in chatd’s MCP configuration: its tools are never offered.' });
    return h('section', { class: 'mcp-server' + (on ? '' : ' off'), dataset: { server: s.name }, 'aria-label': s.name },
      h('div', { class: 'mcp-server-head' },
        h('span', { class: 'mcp-server-name', text: s.name }),
        h('span', { class: `mcp-state mcp-state-${s.state}`, text: STATE_LABEL[s.state] || s.state }),
        h('span', { class: 'mcp-count muted', text: plural(tools.length, 'tool', 'tools') }),
        h('span', { class: 'spacer' }),
        sw),
      err,
      tools.length ? h('ul', { class: 'mcp-tools' }, tools.map((t) => h('li', { class: 'mcp-tool' },
        h('div', { class: 'mcp-tool-head' }, h('code', { class: 'mcp-tool-name', text: t.mcp_name || t.name }), effectBadge(t.effect)),
        t.description ? h('div', { class: 'mcp-tool-desc', text: t.description }) : null))) : null);
  }

  async flip(s, on) {
    const next = toggled(this.opts.selection(), s.id, on, mcpServers());
    this.busy.add(s.id);
    this.render();
    try {
      await this.opts.onChange(next);
    } catch {
      // onChange said why; the switch shows the state that stands.
    } finally {
      this.busy.delete(s.id);
      this.update();
      if (this.open) this.render();
    }
  }
}

// MCPNotice says which of the chat's servers are unavailable (failed):
// their tools are left out of its turns. It never blocks the composer.
export class MCPNotice {
  constructor() {
    this.el = h('div', { class: 'mcp-notices', role: 'status' });
    this.sig = undefined;
  }

  // show renders the failed servers among those selection allows.
  show(selection) {
    const failed = mcpServers().filter((s) => s.state === 'failed' && enabledIn(selection, s.id));
    const sig = JSON.stringify(failed.map((s) => [s.id, s.last_error]));
    if (sig === this.sig) return;
    this.sig = sig;
    this.el.replaceChildren(...failed.map((s) => h('div', { class: 'mcp-notice', dataset: { server: s.name } },
      icon('alert', 'banner-icon'),
      h('div', { class: 'banner-body' },
        h('div', { text: `MCP server ${s.name} is unavailable: its tools are left out.` }),
        s.last_error ? h('div', { class: 'banner-detail', text: s.last_error }) : null))));
  }
}
