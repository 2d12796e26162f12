// An MCP server's authorization in Settings (tools.md, "Authorization"):
// its status, "Connect" (opens the authorization server's consent page in
// a new tab; its callback lands on chatd) while the server waits for one,
// and "Reconnect" (forgets the tokens and authorizes again).

import { h } from './dom.js';
import { api } from './api.js';

const LABEL = {
  needs_authorization: 'Needs authorization',
  authorized: 'Authorized',
  failed: 'Authorization failed',
};

// authLine is the row's authorization part, or null for a server that
// asked for none. after runs once an action was sent (to reload).
export function authLine(s, after) {
  const a = s.auth;
  if (!a) return null;
  const parts = [h('span', { class: `mcp-auth mcp-auth-${a.status}`, text: LABEL[a.status] || a.status })];
  if (a.status === 'needs_authorization' && a.authorization_url) {
    parts.push(' ', h('a', {
      class: 'btn small primary mcp-connect', href: a.authorization_url, target: '_blank', rel: 'noopener noreferrer',
      'aria-label': `Connect ${s.name}`,
    }, 'Connect'));
  } else {
    parts.push(' ', h('button', {
      type: 'button', class: 'btn small mcp-reconnect', 'aria-label': `Reconnect ${s.name}`,
      onclick: async (e) => {
        e.target.disabled = true;
        try {
          await api('POST', `/chats/mcp-servers/${s.id}/reconnect`);
        } finally {
          after();
        }
      },
    }, 'Reconnect'));
  }
  if (a.error) parts.push(h('div', { class: 'mcp-error', text: a.error }));
  return h('div', { class: 'mcp-auth-line small' }, ...parts);
}

// authPending reports whether a server waits for a person's consent (the
// list is worth reloading until it is given).
export function authPending(servers) {
  return servers.some((s) => s.auth && s.auth.status === 'needs_authorization');
}
