// Unit tests of the global shortcuts' matching: `node --test web/test/`.
import test from 'node:test';
import assert from 'node:assert/strict';
import { shortcutOf, SHORTCUTS } from '../static/js/shortcuts.js';

const field = (sel) => ({ closest: (s) => (s.split(',').some((x) => x.trim() === sel) ? {} : null) });
const body = { closest: () => null };
const key = (k, mods = {}, target = body) => ({ key: k, ctrlKey: false, metaKey: false, shiftKey: false, altKey: false, target, ...mods });

test('Ctrl or Cmd with Shift and O is a new chat, wherever the focus is', () => {
  assert.equal(shortcutOf(key('O', { ctrlKey: true, shiftKey: true })), 'new-chat');
  assert.equal(shortcutOf(key('o', { metaKey: true, shiftKey: true }, field('textarea'))), 'new-chat');
  assert.equal(shortcutOf(key('o', { ctrlKey: true })), null, 'Ctrl+O alone is the browser’s');
  assert.equal(shortcutOf(key('o', { ctrlKey: true, shiftKey: true, altKey: true })), null);
});

test('"?" opens the sheet, except while typing', () => {
  assert.equal(shortcutOf(key('?', { shiftKey: true })), 'help');
  assert.equal(shortcutOf(key('?', { shiftKey: true }, field('textarea'))), null);
  assert.equal(shortcutOf(key('?', { shiftKey: true }, field('input'))), null);
  assert.equal(shortcutOf(key('?', { ctrlKey: true })), null);
  assert.equal(shortcutOf(key('k')), null);
});

test('the sheet lists both new shortcuts', () => {
  const keys = SHORTCUTS.map(([k]) => k);
  assert.ok(keys.includes('?') && keys.includes('Ctrl/⌘ Shift O') && keys.includes('Ctrl/⌘ K'));
});
