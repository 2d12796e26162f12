// "My MCP connections" in Settings, for users who are not admins (admins
// see the same controls in the MCP servers section): the MCP servers
// whose identity is each user's (auth.per_user), with the signed-in
// user's own connection, Connect, Reconnect and Disconnect.

import { h } from './dom.js';
import { api } from './api.js';
import { authPending, userAuthLine } from './mcpauth.js';

const STATE = { connected: 'Connected', connecting: 'Connecting…', failed: 'Not connected', disabled: 'Disabled' };

function errorText(e) { return e && e.message ? e.message : String(e); }

// MCPConnectionsSection is a section of the settings page (the shape of
// settings.js' sections: el with an h2, load(), fail()).
export class MCPConnectionsSection {
  constructor(view) {
    this.view = view;
    this.error = h('p', { class: 'form-error set-error', role: 'alert' });
    this.body = h('div', { class: 'set-body' });
    this.el = h('section', { class: 'set-section', id: 'settings-mcp-connections', 'aria-labelledby': 'settings-mcp-connections-h' },
      h('div', { class: 'set-head' }, h('h2', { id: 'settings-mcp-connections-h', text: 'My MCP connections' })),
      h('p', { class: 'muted set-help', text: 'Tool servers that act as you: connect each with your own account before your chats use them.' }),
      this.error, this.body);
  }

  fail(e) { this.error.textContent = errorText(e); }

  async load() {
    clearTimeout(this.timer);
    const servers = ((await api('GET', '/chats/mcp-servers')) || []).filter((s) => s.auth && s.auth.per_user);
    if ((servers.some((s) => s.state === 'connecting') || authPending(servers)) && !this.view.gone) {
      this.timer = setTimeout(() => this.load().catch((e) => this.fail(e)), 1000);
    }
    if (!servers.length) {
      this.body.replaceChildren(h('p', { class: 'muted', text: 'No MCP server needs your own connection.' }));
      return;
    }
    const reload = () => this.load().catch((e) => this.fail(e));
    this.body.replaceChildren(h('ul', { class: 'set-list mcp-list', 'aria-label': 'My MCP connections' }, servers.map((s) =>
      h('li', { class: 'set-row mcp-row', dataset: { id: s.id, name: s.name } },
        h('div', { class: 'set-main' },
          h('div', { class: 'set-name' }, s.name, ' ', h('span', { class: `mcp-state mcp-state-${s.state}`, text: STATE[s.state] || s.state })),
          userAuthLine(s, reload))))));
  }
}
