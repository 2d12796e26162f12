// Unit tests of the chat's client state, folded from stream events
// (state.js): `node --test web/test/`.
import test from 'node:test';
import assert from 'node:assert/strict';
import { newChatState, applyEvent, mergePart, maxMessageId, isBusy } from '../static/js/state.js';

const msg = (id, role, text) => ({ id, role, content: [{ type: 'text', text }] });
const status = (st) => ({ type: 'status', status: { status: st } });
const part = (seq, p, hv = 1, ga = 1) => ({ type: 'message_part', message_part: { history_version: hv, generation_attempt: ga, seq, part: p } });
const fold = (s, events, now = 1000) => { for (const e of events) applyEvent(s, e, now); return s; };

test('messages are keyed by id: a replayed bootstrap never duplicates one', () => {
  const s = newChatState();
  fold(s, [{ type: 'message', message: msg(1, 'user', 'hi') }, { type: 'message', message: msg(2, 'assistant', 'hello') }, status('waiting')]);
  fold(s, [{ type: 'message', message: msg(1, 'user', 'hi') }, { type: 'message', message: msg(2, 'assistant', 'hello, edited') }]);
  assert.deepEqual([...s.messages.keys()], [1, 2]);
  assert.equal(s.messages.get(2).content[0].text, 'hello, edited');
  assert.equal(maxMessageId(s), 2);
  assert.ok(s.booted, 'the status event ends the bootstrap');
  applyEvent(s, { type: 'history_reset' }, 0);
  assert.equal(s.messages.size, 0);
  assert.equal(maxMessageId(s), 0);
});

test('the preview gathers one episode by seq: a reconnect replaying it adds nothing', () => {
  const s = fold(newChatState(), [status('running')]);
  fold(s, [part(1, { type: 'text', text: 'Hel' }), part(2, { type: 'text', text: 'lo' })]);
  fold(s, [part(1, { type: 'text', text: 'Hel' }), part(2, { type: 'text', text: 'lo' }), part(3, { type: 'text', text: '!' })]);
  assert.deepEqual(s.preview.parts, [{ type: 'text', text: 'Hello!' }]);
  assert.equal(s.preview.lastSeq, 3);
  // A new generation attempt (a retry) starts a new preview.
  fold(s, [part(1, { type: 'text', text: 'Again' }, 1, 2)]);
  assert.deepEqual(s.preview.parts, [{ type: 'text', text: 'Again' }]);
  // Leaving running drops it.
  fold(s, [status('waiting')]);
  assert.equal(s.preview, null);
});

test('reasoning is timed from its first part to the first part after it', () => {
  const s = fold(newChatState(), [status('running')]);
  applyEvent(s, part(1, { type: 'reasoning', text: 'hmm' }), 1000);
  applyEvent(s, part(2, { type: 'reasoning', text: '…' }), 2000);
  applyEvent(s, part(3, { type: 'text', text: 'Answer' }), 4500);
  assert.equal(s.preview.reasoningStart, 1000);
  assert.equal(s.preview.reasoningEnd, 4500);
  assert.deepEqual(s.preview.parts.map((p) => p.type), ['reasoning', 'text']);
});

test('tool-call deltas gather by call id; whole args replace the deltas', () => {
  const parts = [];
  mergePart(parts, { type: 'tool-call', tool_call_id: 'a', tool_name: 'lookup', args_delta: '{"ci' });
  mergePart(parts, { type: 'tool-call', tool_call_id: 'b', tool_name: 'other', args_delta: '{}' });
  mergePart(parts, { type: 'tool-call', tool_call_id: 'a', args_delta: 'ty":1}' });
  assert.deepEqual(parts.map((p) => [p.tool_call_id, p.tool_name, p.argsText]), [['a', 'lookup', '{"city":1}'], ['b', 'other', '{}']]);
  mergePart(parts, { type: 'tool-call', tool_call_id: 'b', args: { x: 2 } });
  assert.equal(parts[1].argsText, '{"x":2}');
  mergePart(parts, { type: 'text', text: 'a' });
  mergePart(parts, { type: 'text', text: 'b' });
  mergePart(parts, { type: 'file', file_id: 'f' });
  assert.deepEqual(parts.slice(2), [{ type: 'text', text: 'ab' }, { type: 'file', file_id: 'f' }]);
});

test('a status clears what belongs to other statuses', () => {
  const s = fold(newChatState(), [status('running'),
    { type: 'retry', retry: { attempt: 1, delay_ms: 4000, kind: 'overloaded', error: 'boom', retrying_at: new Date(5000).toISOString() } }]);
  assert.equal(s.retry.kind, 'overloaded');
  fold(s, [status('requires_action'), { type: 'action_required', action_required: { tool_calls: [{ tool_call_id: 'c' }] } },
    { type: 'approval_required', approval_required: { tool_calls: [{ tool_call_id: 'd' }] } }]);
  assert.equal(s.retry, null, 'no retry outside running');
  assert.equal(s.action.tool_calls[0].tool_call_id, 'c');
  assert.equal(s.approvals[0].tool_call_id, 'd');
  fold(s, [status('error'), { type: 'error', error: { kind: 'auth', message: 'bad key' } }]);
  assert.equal(s.action, null);
  assert.equal(s.approvals, null);
  assert.deepEqual(s.error, { kind: 'auth', message: 'bad key' });
  fold(s, [status('waiting')]);
  assert.equal(s.error, null);
  fold(s, [{ type: 'error' }]);
  assert.equal(s.error.kind, 'generic', 'an error without a body still shows');
});

test('the retry ends with the next attempt: a preview reset at its time, or a new part', () => {
  const retry = { attempt: 2, delay_ms: 4000, kind: 'overloaded', error: 'x', retrying_at: new Date(10_000).toISOString() };
  const s = fold(newChatState(), [status('running'), { type: 'retry', retry }]);
  applyEvent(s, { type: 'preview_reset' }, 2000);
  assert.equal(s.retry, retry, 'a reset long before the retry time keeps the countdown');
  applyEvent(s, { type: 'preview_reset' }, 9500);
  assert.equal(s.retry, null);
  fold(s, [{ type: 'retry', retry }, part(1, { type: 'text', text: 'x' })]);
  assert.equal(s.retry, null);
});

test('the queue is replaced by each update', () => {
  const s = fold(newChatState(), [{ type: 'queue_update', queued_messages: [{ id: 1 }, { id: 2 }] }]);
  assert.deepEqual(s.queue.map((q) => q.id), [1, 2]);
  fold(s, [{ type: 'queue_update' }]);
  assert.deepEqual(s.queue, []);
});

test('busy is running, interrupting or waiting on an action', () => {
  assert.deepEqual(['running', 'interrupting', 'requires_action', 'waiting', 'error', null].map(isBusy), [true, true, true, false, false, false]);
});

test('elicitation_update replaces the pending questions, none once the last is answered', () => {
  const s = fold(newChatState(), [status('running')]);
  assert.deepEqual(s.elicitations, []);
  fold(s, [{ type: 'elicitation_update', elicitations: [{ id: 'q1' }, { id: 'q2' }] }]);
  assert.deepEqual(s.elicitations.map((e) => e.id), ['q1', 'q2']);
  fold(s, [{ type: 'elicitation_update', elicitations: [] }]);
  assert.deepEqual(s.elicitations, []);
});
