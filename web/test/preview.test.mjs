import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isTextType, previewText, PREVIEW_LINES } from '../static/js/preview.js';

test('isTextType: text, JSON, XML, YAML and scripts get a text preview; images and binaries do not', () => {
  for (const t of ['text/plain', 'text/markdown; charset=utf-8', 'TEXT/CSV', 'application/json', 'application/ld+json',
    'image/svg+xml', 'application/x-yaml', 'application/toml', 'application/x-sh']) {
    assert.equal(isTextType(t), true, t);
  }
  for (const t of ['image/png', 'application/pdf', 'application/octet-stream', 'application/zip', '', undefined, null]) {
    assert.equal(isTextType(t), false, String(t));
  }
});

test('previewText: the first lines, how many there are, and the rest', () => {
  const lines = Array.from({ length: 20 }, (_, i) => `line ${i + 1}`);
  const p = previewText(lines.join('\n') + '\n');
  assert.equal(p.head, lines.slice(0, PREVIEW_LINES).join('\n'));
  assert.equal(p.lines, 20, 'a final newline is no extra line');
  assert.equal(p.more, 20 - PREVIEW_LINES);
  assert.equal(p.full, lines.join('\n'));
  assert.equal(p.cut, false);
});

test('previewText: a short file is whole, with nothing more; CRLF is read as lines', () => {
  const p = previewText('a\r\nb\r\n');
  assert.deepEqual([p.head, p.lines, p.more, p.full], ['a\nb', 2, 0, 'a\nb']);
  assert.deepEqual([previewText('').lines, previewText('').more], [1, 0]);
});

test('previewText: a huge file is cut at the limit and says so', () => {
  const p = previewText('x'.repeat(50) + '\n' + 'y'.repeat(50), 8, 60);
  assert.equal(p.cut, true);
  assert.equal(p.full.length, 60);
  assert.equal(p.lines, 2);
});

test('previewText: tabs and spacing are kept exactly', () => {
  const src = 'all:\n\tgo build ./...\n    four spaces';
  assert.equal(previewText(src).head, src);
});
