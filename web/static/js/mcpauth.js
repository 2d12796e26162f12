// An MCP server's authorization in Settings (tools.md, "Authorization"):
// its status, "Connect" (opens the authorization server's consent page in
// a new tab; its callback lands on chatd) while the server waits for one,
// and "Reconnect" (forgets the tokens and authorizes again). A server
// whose identity is each user's (auth.per_user) shows the signed-in
// user's own connection instead (userAuthLine).

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
  if (a.per_user) return userAuthLine(s, after);
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

const USER_LABEL = {
  needs_user_authorization: 'Not connected',
  needs_authorization: 'Waiting for your consent',
  authorized: 'Connected as you',
  failed: 'Authorization failed',
};

// userAuthLine is the signed-in user's own connection to a per-user
// server: Connect (begins their authorization; the reloaded row then links
// the consent page), Reconnect and Disconnect.
export function userAuthLine(s, after) {
  const a = s.auth;
  const post = (path) => async (e) => {
    e.target.disabled = true;
    try {
      await api('POST', `/chats/mcp-servers/${s.id}/${path}`);
    } finally {
      after();
    }
  };
  const button = (label, path, cls) => h('button', {
    type: 'button', class: `btn small ${cls}`, 'aria-label': `${label} ${s.name}`, onclick: post(path),
  }, label);
  const parts = [h('span', { class: `mcp-auth mcp-auth-${a.status}`, text: USER_LABEL[a.status] || a.status })];
  if (a.status === 'needs_authorization' && a.authorization_url) {
    parts.push(' ', h('a', {
      class: 'btn small primary mcp-connect', href: a.authorization_url, target: '_blank', rel: 'noopener noreferrer',
      'aria-label': `Open the consent page of ${s.name}`,
    }, 'Open consent page'));
    parts.push(' ', button('Disconnect', 'disconnect', 'ghost mcp-disconnect'));
  } else if (a.status === 'authorized') {
    parts.push(' ', button('Reconnect', 'connect', 'mcp-user-reconnect'), ' ', button('Disconnect', 'disconnect', 'ghost mcp-disconnect'));
  } else {
    parts.push(' ', button('Connect', 'connect', 'primary mcp-user-connect'));
  }
  if (a.error && a.status !== 'needs_user_authorization') parts.push(h('div', { class: 'mcp-error', text: a.error }));
  return h('div', { class: 'mcp-auth-line mcp-user-auth small' }, ...parts);
}

// authPending reports whether a server waits for a person's consent (the
// list is worth reloading until it is given).
export function authPending(servers) {
  return servers.some((s) => s.auth && s.auth.status === 'needs_authorization');
}

// oauthBody is a server's oauth field for the edit form's PATCH: the
// stored registration kept (a null client_secret keeps the stored one,
// never shown) with per_user as the form says; null when nothing is set.
export function oauthBody(o, perUser) {
  const out = {};
  if (o && o.client_id) out.client_id = o.client_id;
  if (o && o.has_client_secret) out.client_secret = null;
  if (o && o.client_metadata_url) out.client_metadata_url = o.client_metadata_url;
  if (perUser) out.per_user = true;
  return Object.keys(out).length ? out : null;
}
