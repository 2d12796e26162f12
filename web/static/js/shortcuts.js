// Keyboard shortcuts beyond the composer's: a new chat, and "?" for the
// sheet that lists every shortcut.

import { h } from './dom.js';

// SHORTCUTS is the sheet's content: keys, what they do.
export const SHORTCUTS = [
  ['Ctrl/⌘ Shift O', 'New chat'],
  ['Ctrl/⌘ K', 'Search chats'],
  ['Enter', 'Send'],
  ['Shift Enter', 'New line'],
  ['Esc', 'Stop the reply; close a menu or dialog'],
  ['↑', 'Edit your last message (empty composer)'],
  ['↑ ↓', 'Move through the chat list and search results'],
  ['?', 'This list (outside a text field)'],
];

// typing: the event comes from a field that takes text.
function typing(e) {
  const t = e.target;
  return !!(t && t.closest && t.closest('input, textarea, select, [contenteditable=""], [contenteditable="true"]'));
}

// shortcutOf names the global shortcut a keydown is, or null: 'new-chat'
// (Ctrl/Cmd+Shift+O, as in ChatGPT), 'help' ("?" outside text fields).
export function shortcutOf(e) {
  if ((e.ctrlKey || e.metaKey) && e.shiftKey && !e.altKey && (e.key || '').toLowerCase() === 'o') return 'new-chat';
  if (e.key === '?' && !e.ctrlKey && !e.metaKey && !e.altKey && !typing(e)) return 'help';
  return null;
}

// showShortcuts opens the sheet (a modal dialog; Esc or Close ends it).
export function showShortcuts() {
  if (document.querySelector('dialog.shortcuts[open]')) return;
  const d = h('dialog', { class: 'dialog shortcuts', 'aria-labelledby': 'shortcuts-title' },
    h('h2', { id: 'shortcuts-title', text: 'Keyboard shortcuts' }),
    h('table', { class: 'shortcut-table' }, h('tbody', {},
      ...SHORTCUTS.map(([keys, what]) => h('tr', {}, h('td', {}, h('kbd', { text: keys })), h('td', { text: what }))))),
    h('div', { class: 'dialog-actions' }, h('button', { type: 'button', class: 'btn primary', onclick: () => d.close() }, 'Close')));
  d.addEventListener('close', () => d.remove());
  document.body.append(d);
  d.showModal();
}
