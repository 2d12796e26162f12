// Shared widgets: popup menus, modal dialogs (native <dialog>) and toasts.

import { h, icon } from './dom.js';

let openMenuState = null;

export function closeMenu() {
  if (!openMenuState) return;
  const { el, anchor, onDoc } = openMenuState;
  openMenuState = null;
  el.remove();
  document.removeEventListener('mousedown', onDoc, true);
  anchor.setAttribute('aria-expanded', 'false');
}

// openMenu shows a menu of items [{label, icon, onSelect, danger}] under anchor.
export function openMenu(anchor, items) {
  const wasOpen = openMenuState && openMenuState.anchor === anchor;
  closeMenu();
  if (wasOpen) return;
  const buttons = items.map((it) => h('button', {
    type: 'button', class: 'menu-item' + (it.danger ? ' danger' : ''), role: 'menuitem',
    onclick: (e) => {
      e.stopPropagation();
      closeMenu();
      anchor.focus();
      it.onSelect();
    },
  }, it.icon ? icon(it.icon) : null, h('span', { text: it.label })));
  const el = h('div', { class: 'menu', role: 'menu' }, buttons);
  el.addEventListener('keydown', (e) => {
    const i = buttons.indexOf(document.activeElement);
    if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
      e.preventDefault();
      buttons[(i + (e.key === 'ArrowDown' ? 1 : -1) + buttons.length) % buttons.length].focus();
    } else if (e.key === 'Escape' || e.key === 'Tab') {
      e.preventDefault();
      e.stopPropagation();
      closeMenu();
      anchor.focus();
    }
  });
  document.body.append(el);
  const r = anchor.getBoundingClientRect();
  const w = el.offsetWidth, hgt = el.offsetHeight;
  let left = Math.min(r.right - w, window.innerWidth - w - 8);
  left = Math.max(8, left);
  let top = r.bottom + 4;
  if (top + hgt > window.innerHeight - 8) top = Math.max(8, r.top - hgt - 4);
  el.style.left = left + 'px';
  el.style.top = top + 'px';
  const onDoc = (e) => {
    if (!el.contains(e.target) && !anchor.contains(e.target)) closeMenu();
  };
  document.addEventListener('mousedown', onDoc, true);
  anchor.setAttribute('aria-expanded', 'true');
  openMenuState = { el, anchor, onDoc };
  buttons[0].focus();
}

// dialog asks for confirmation or a value. Resolves to false/null when
// cancelled, true (or the input's value) when confirmed.
export function dialog({ title, message, confirm = 'OK', danger = false, input = null }) {
  return new Promise((resolve) => {
    const field = input ? h('input', { class: 'text-input', type: 'text', value: input.value || '', 'aria-label': input.label || title, maxlength: 200 }) : null;
    const d = h('dialog', { class: 'dialog', 'aria-labelledby': 'dialog-title' },
      h('form', { method: 'dialog' },
        h('h2', { id: 'dialog-title', text: title }),
        message ? h('p', { class: 'muted', text: message }) : null,
        field,
        h('div', { class: 'dialog-actions' },
          h('button', { type: 'button', class: 'btn ghost', value: 'cancel', onclick: () => d.close('cancel') }, 'Cancel'),
          h('button', { type: 'submit', class: 'btn ' + (danger ? 'danger' : 'primary'), value: 'ok' }, confirm))));
    d.addEventListener('close', () => {
      const ok = d.returnValue === 'ok';
      d.remove();
      if (!ok) resolve(input ? null : false);
      else resolve(input ? field.value.trim() : true);
    });
    document.body.append(d);
    d.showModal();
    if (field) {
      field.focus();
      field.select();
    }
  });
}

// toast shows a short message; kind is info or error.
export function toast(message, kind = 'info', detail = '') {
  let host = document.getElementById('toasts');
  if (!host) {
    host = h('div', { id: 'toasts', class: 'toasts', role: 'status', 'aria-live': 'polite' });
    document.body.append(host);
  }
  const el = h('div', { class: 'toast ' + kind, role: kind === 'error' ? 'alert' : null },
    kind === 'error' ? icon('alert') : null,
    h('div', {}, h('div', { text: message }), detail ? h('div', { class: 'toast-detail', text: detail }) : null),
    h('button', { type: 'button', class: 'icon-btn', 'aria-label': 'Dismiss', onclick: () => el.remove() }, icon('x')));
  host.append(el);
  setTimeout(() => el.remove(), kind === 'error' ? 8000 : 4000);
}
