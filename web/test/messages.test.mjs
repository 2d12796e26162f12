// Unit tests of how the UI classifies tool results: `node --test web/test/`.
import test from 'node:test';
import assert from 'node:assert/strict';
import { toolOutcome, toolMedia } from '../static/js/messages.js';

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

test('a tool result\'s images are shown, and their base64 is not printed', () => {
  const png = 'iVBORw0KGgo=';
  const v = { content: [{ type: 'text', text: 'here' }, { type: 'image', mimeType: 'image/png', bytes: 8, data: png },
    { type: 'audio', mimeType: 'audio/wav', bytes: 4, data: 'UklGRg==' }, { type: 'image', mimeType: 'image/svg+xml', bytes: 3, data: 'PHM+' },
    { type: 'image', mimeType: 'image/png', bytes: 9 }] };
  const { images, shown } = toolMedia(v);
  assert.deepEqual(images, [{ src: `data:image/png;base64,${png}`, mimeType: 'image/png' }]);
  assert.equal(shown.content[0].text, 'here');
  assert.equal(shown.content[1].data, '[12 characters of base64, shown above]');
  assert.equal(shown.content[2].data, '[8 characters of base64]');
  assert.equal(shown.content[3].data, '[4 characters of base64]', 'an SVG is not shown (scripts)');
  assert.equal(shown.content[4].data, undefined, 'a block over the media cap has no data');
  assert.equal(v.content[1].data, png, 'the result itself is left alone');
});

test('results that are not MCP content pass through', () => {
  assert.deepEqual(toolMedia('plain'), { images: [], shown: 'plain' });
  assert.deepEqual(toolMedia({ ok: true }), { images: [], shown: { ok: true } });
  assert.deepEqual(toolMedia(null), { images: [], shown: null });
});
