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

test('a PDF passes only for a model that reads PDFs, else is refused naming the model', async () => {
  const claude = { id: 'c', provider: 'anthropic', model: 'claude-sonnet-4-5', display_name: 'Claude', pdf_input: true };
  const demo = { id: 'd', provider: 'demo', model: 'demo', display_name: 'Demo (offline)', pdf_input: false };
  assert.deepEqual(await inspect(file(pdf, 'paper.pdf', 'application/pdf'), claude), { type: 'application/pdf' });
  assert.deepEqual(await inspect(file(pdf, 'paper.pdf', ''), claude), { type: 'application/pdf' }, 'an untyped .pdf');
  assert.match((await inspect(file(pdf, 'paper.pdf', 'application/pdf'), demo)).error, /^Demo \(offline\) cannot read PDFs; choose a model that can/);
  assert.match((await inspect(file(pdf, 'paper.pdf', 'application/octet-stream'), demo)).error, /cannot read PDFs/);
  assert.match((await inspect(file(pdf, 'paper.pdf', 'application/pdf'))).error, /^The chosen model cannot read PDFs/);
  assert.match((await inspect(file(pdf, 'paper.pdf', 'application/pdf'), { provider: 'openai', model: 'gpt-3.5-turbo' })).error, /^openai\/gpt-3.5-turbo cannot/);
});

test('another image type and binary bytes are refused with the reason', async () => {
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
