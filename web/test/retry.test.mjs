// Unit tests of how a provider failure's cause is told: `node --test web/test/`.
import test from 'node:test';
import assert from 'node:assert/strict';
import { describeCause } from '../static/js/retry.js';
import { statusText } from '../static/js/dock.js';

const title = (msg, code) => describeCause(msg, code)?.title ?? null;

test('the causes people meet are named', () => {
  assert.equal(title('Post "http://127.0.0.1:1/v1/chat/completions": dial tcp 127.0.0.1:1: connect: connection refused'), 'Connection refused');
  assert.equal(title('dial tcp: lookup llm.internal on 10.0.0.2:53: no such host'), 'Unknown host');
  assert.equal(title('Incorrect API key provided: sk-xx****', 401), '401 Unauthorized');
  assert.equal(title('POST "https://api.openai.com/v1/responses": 401 Unauthorized'), '401 Unauthorized');
  assert.equal(title('The model `gpt-9` does not exist or you do not have access to it.'), 'Model not found');
  assert.equal(title('model "llama9" not found, try pulling it first', 404), 'Model not found');
  assert.equal(title('Too Many Requests', 429), 'Rate limited');
  assert.equal(title('context deadline exceeded'), 'Timed out');
  assert.equal(title('Overloaded', 529), 'Provider unavailable');
  assert.match(describeCause('connect: connection refused').hint, /base URL/);
});

test('an unknown failure is no guess', () => {
  assert.equal(describeCause('something odd happened'), null);
  assert.equal(describeCause(''), null);
  assert.equal(describeCause(undefined), null);
});

test('the status line counts down to the next attempt', () => {
  const at = (ms) => new Date(Date.now() + ms).toISOString();
  const line = statusText({ status: 'running', retry: { attempt: 2, kind: 'overloaded', error: 'x', retrying_at: at(4200) } });
  assert.equal(line.cls, 'retry');
  assert.match(line.text, /^Provider overloaded — retrying in [45] s \(attempt 3\)$/);
  assert.match(statusText({ status: 'running', retry: { attempt: 0, kind: 'nope', retrying_at: at(-10) } }).text, /^Provider error — retrying now \(attempt 1\)$/);
  assert.equal(statusText({ status: 'running', offline: true, retry: { attempt: 0, retrying_at: at(1000) } }).cls, 'offline');
  assert.equal(statusText({ status: 'error' }), null, 'an error has its banner');
});
