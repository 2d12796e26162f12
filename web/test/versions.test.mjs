import { test } from 'node:test';
import assert from 'node:assert/strict';
import { versionInfo, firstReplies } from '../static/js/versions.js';

test('versionInfo places a message among its versions', () => {
  assert.equal(versionInfo({ id: 5, sibling_ids: [5] }), null, 'one version: no switcher');
  assert.equal(versionInfo({ id: 5 }), null, 'an old server sends no sibling_ids');
  assert.deepEqual(versionInfo({ id: 5, sibling_ids: [5, 9, 12] }), { index: 1, count: 3, prev: null, next: 9 });
  assert.deepEqual(versionInfo({ id: 9, sibling_ids: [5, 9, 12] }), { index: 2, count: 3, prev: 5, next: 12 });
  assert.deepEqual(versionInfo({ id: 12, sibling_ids: [5, 9, 12] }), { index: 3, count: 3, prev: 9, next: null });
  assert.equal(versionInfo({ id: 7, sibling_ids: [5, 9] }), null, 'not among them: no switcher');
});

test('firstReplies names the first reply of each turn', () => {
  const msgs = [
    { id: 1, role: 'user' },
    { id: 2, role: 'assistant' },
    { id: 3, role: 'tool' },
    { id: 4, role: 'assistant' },
    { id: 5, role: 'user', visibility: 'model' },
    { id: 6, role: 'user' },
    { id: 7, role: 'assistant', compressed: true },
    { id: 8, role: 'user' },
  ];
  assert.deepEqual([...firstReplies(msgs)], [[1, 2]], 'a hidden anchor is no turn; a boundary is no reply; a turn without reply has none');
});
