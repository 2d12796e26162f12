// Unit tests of the composer's pick-time file check: `node --test web/test/`.
import test from 'node:test';
import assert from 'node:assert/strict';
import { inspect } from '../static/js/attach.js';

const file = (bytes, name, type) => new File([bytes], name, { type });
const pdf = new TextEncoder().encode('%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n');

test('images of the four types and declared text pass with their type', async () => {
  assert.deepEqual(await inspect(file('x', 'cat.png', 'image/png')), { type: 'image/png' });
  assert.deepEqual(await inspect(file('a,b', 'data.csv', 'text/csv')), { type: 'text/csv' });
  assert.deepEqual(await inspect(file('{}', 'a.json', 'application/json')), { type: 'application/json' });
});

test('a PDF, another image type and binary bytes are refused with the reason', async () => {
  assert.match((await inspect(file(pdf, 'paper.pdf', 'application/pdf'))).error, /^A PDF cannot be given to a model/);
  assert.match((await inspect(file('x', 'photo.heic', 'image/heic'))).error, /HEIC images cannot be given/);
  assert.match((await inspect(file(new Uint8Array([0x7f, 0x45, 0x4c, 0x46, 0, 1]), 'a.out', ''))).error, /binary file/);
  assert.match((await inspect(file(new Uint8Array([0xff, 0xfe, 0x41]), 'latin.txt', 'application/octet-stream'))).error, /not UTF-8/);
  assert.match((await inspect(file('x', 'song.mp3', 'audio/mpeg'))).error, /\.mp3 file \(audio\/mpeg\)/);
});

test('text the browser mistyped is uploaded untyped, for the server to sniff', async () => {
  // Browsers call a .ts file video/mp2t.
  assert.deepEqual(await inspect(file('export const x = 1;\n', 'x.ts', 'video/mp2t')), { type: 'application/octet-stream' });
  assert.deepEqual(await inspect(file('all:\n\tgo build\n', 'Makefile', '')), { type: 'application/octet-stream' });
});

test('a UTF-8 character cut at the end of the inspected part is no error', async () => {
  const big = 'a'.repeat((64 << 10) - 1) + 'é' + 'tail';
  assert.deepEqual(await inspect(file(big, 'long.log', '')), { type: 'application/octet-stream' });
});
