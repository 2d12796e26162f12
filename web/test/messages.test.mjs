// Unit tests of how the UI classifies tool results: `node --test web/test/`.
import test from 'node:test';
import assert from 'node:assert/strict';
import { toolOutcome } from '../static/js/messages.js';

const result = (value, isError) => ({ result: JSON.stringify(value), is_error: isError });

test('a call a person or a hook denied is "denied", not an error', () => {
  assert.equal(toolOutcome(result({ error: 'denied: not on prod' }, true)), 'denied');
  assert.equal(toolOutcome(result({ error: 'denied' }, true)), 'denied');
});

test('other results keep their outcome', () => {
  assert.equal(toolOutcome(null), 'pending');
  assert.equal(toolOutcome(result({ error: 'connection refused' }, true)), 'error');
  assert.equal(toolOutcome(result({ error: 'deniedness is not a denial' }, true)), 'error');
  assert.equal(toolOutcome(result({ error: 'denied: but not an error result' }, false)), 'ok');
  assert.equal(toolOutcome(result({ cancelled: true }, true)), 'cancelled');
  assert.equal(toolOutcome(result('plain text', false)), 'ok');
});
