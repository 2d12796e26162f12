// Unit tests of the MCP picker's helpers: `node --test web/test/`.
import test from 'node:test';
import assert from 'node:assert/strict';
import { templateVars, expandTemplate, promptText, resourceName, resourceFiles } from '../static/js/mcpresources.js';

test('a URI template names its variables once, in order', () => {
  assert.deepEqual(templateVars('demo://resource/dynamic/text/{resourceId}'), ['resourceId']);
  assert.deepEqual(templateVars('file:///{+path}{?q,lang}{&q}'), ['path', 'q', 'lang']);
  assert.deepEqual(templateVars('plain://no/vars'), []);
});

test('a URI template is filled with encoded values', () => {
  assert.equal(expandTemplate('demo://text/{id}', { id: '7' }), 'demo://text/7');
  assert.equal(expandTemplate('demo://text/{id}', { id: 'a b/c' }), 'demo://text/a%20b%2Fc');
  assert.equal(expandTemplate('file:///{+path}', { path: 'a b/c' }), 'file:///a%20b/c');
  assert.equal(expandTemplate('s://x{?q,lang}', { q: 'cats', lang: '' }), 's://x?q=cats');
  assert.equal(expandTemplate('s://x{?q}', {}), 's://x');
});

test('a rendered prompt becomes composer text, messages apart', () => {
  assert.equal(promptText({ messages: [
    { role: 'user', content: [{ type: 'text', text: 'first' }] },
    { role: 'assistant', content: [{ type: 'resource', uri: 'r://1', text: 'embedded' }, { type: 'image', mime_type: 'image/png', data: 'AA==' }] },
    { role: 'user', content: [{ type: 'resource_link', uri: 'r://2', name: 'two' }] },
  ] }), 'first\n\nembedded\n\nr://2');
  assert.equal(promptText({ messages: [] }), '');
});

test('a resource becomes files named by its URI', async () => {
  assert.equal(resourceName('demo://resource/static/document/a%20b.md'), 'a b.md');
  assert.equal(resourceName('demo://x/7?v=1'), '7');
  const [text, blob] = resourceFiles({ contents: [
    { uri: 'demo://docs/notes.md', mime_type: 'text/markdown', text: 'héllo' },
    { uri: 'demo://bin/8', blob: btoa('raw bytes') },
  ] }, 'demo://ignored');
  assert.equal(text.name, 'notes.md');
  assert.equal(text.type, 'text/markdown');
  assert.equal(await text.text(), 'héllo');
  assert.equal(blob.name, '8');
  assert.equal(blob.type, 'application/octet-stream');
  assert.equal(await blob.text(), 'raw bytes');
  assert.equal(resourceFiles({ contents: [{ text: 'x' }] }, 'demo://fallback/name')[0].name, 'name');
});
