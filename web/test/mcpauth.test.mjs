// Unit tests of the MCP authorization helpers: `node --test web/test/`.
import test from 'node:test';
import assert from 'node:assert/strict';
import { oauthBody, authPending } from '../static/js/mcpauth.js';

test('the edit form keeps the stored OAuth registration and sets per_user', () => {
  assert.equal(oauthBody(undefined, false), null);
  assert.deepEqual(oauthBody(undefined, true), { per_user: true });
  assert.deepEqual(oauthBody({ client_id: 'c', has_client_secret: true, client_metadata_url: '', per_user: true }, false),
    { client_id: 'c', client_secret: null });
  assert.deepEqual(oauthBody({ client_id: '', has_client_secret: false, client_metadata_url: 'https://x/m.json', per_user: false }, true),
    { client_metadata_url: 'https://x/m.json', per_user: true });
});

test('a per-user server waiting for the user consent keeps the list reloading', () => {
  assert.equal(authPending([{ auth: { status: 'needs_user_authorization', per_user: true } }]), false);
  assert.equal(authPending([{ auth: { status: 'needs_authorization', per_user: true, authorization_url: 'https://a' } }]), true);
});
