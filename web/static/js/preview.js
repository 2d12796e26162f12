// Attachment previews: the lightbox for images (a message's thumbnails and
// the composer's), and the first lines of a text file in its message,
// expandable to the whole file.
//
// The lightbox opens from any element with data-lightbox (its value, or the
// link's href, is the image URL), and shows a text file's preview from one
// with data-text-preview (the file's URL; data-name its name): one click listener on the document, so
// nodes rebuilt by the thread need no wiring. A click with a modifier key
// still opens the link in a new tab. The lightbox is a modal dialog: the
// focus moves to its Close button and comes back to the thumbnail when it
// closes (Escape, a click anywhere, Close); the image fits the viewport.
// The dialog itself has the focus when it opens; Tab reaches Close.

import { h, icon } from './dom.js';

const TEXT_TYPES = new Set(['application/json', 'application/xml', 'application/yaml', 'application/x-yaml', 'application/toml',
  'application/javascript', 'application/x-sh', 'application/sql', 'application/x-ndjson']);

// PREVIEW_LINES are shown before "Show all"; PREVIEW_MAX_BYTES is the most
// of a file shown at all (the rest is said to be cut).
export const PREVIEW_LINES = 8;
export const PREVIEW_MAX_BYTES = 256 << 10;

// isTextType: whether a file of this media type gets a text preview.
export function isTextType(type) {
  const t = String(type || '').toLowerCase().split(';')[0].trim();
  return t.startsWith('text/') || TEXT_TYPES.has(t) || t.endsWith('+json') || t.endsWith('+xml');
}

// previewText splits a file's text into what shows first and the whole:
// {head, lines, more} (more: lines beyond head), cut at maxBytes chars.
export function previewText(text, maxLines = PREVIEW_LINES, maxChars = PREVIEW_MAX_BYTES) {
  let s = String(text);
  const cut = s.length > maxChars;
  if (cut) s = s.slice(0, maxChars);
  s = s.replace(/\r\n?/g, '\n').replace(/\n$/, '');
  const lines = s.split('\n');
  return { head: lines.slice(0, maxLines).join('\n'), full: s, lines: lines.length, more: Math.max(0, lines.length - maxLines), cut };
}

let open = null; // the lightbox shown, if any

// openLightbox shows the image at src; opener gets the focus back.
export function openLightbox(src, alt, opener) {
  const img = h('img', { class: 'lightbox-img', src, alt: alt || 'Image' });
  openDialog(img, alt ? `Image: ${alt}` : 'Image', opener);
}

// openTextDialog shows a text file's preview (textPreview) in the same
// frame: the composer's files, before they are sent.
export function openTextDialog(name, url, opener) {
  const card = textPreview(name, url, () => h('p', { class: 'file-preview lightbox-text', text: `${name} is gone` }));
  card.classList.add('lightbox-text');
  card.addEventListener('click', (e) => e.stopPropagation()); // a click in the card is not "close"
  openDialog(card, `File: ${name}`, opener);
}

function openDialog(content, label, opener) {
  closeLightbox();
  const close = h('button', { type: 'button', class: 'lightbox-close icon-btn', 'aria-label': 'Close preview', title: 'Close (Esc)' }, icon('x'));
  const el = h('div', { class: 'lightbox', role: 'dialog', 'aria-modal': 'true', tabindex: '-1', 'aria-label': label },
    content, close);
  const onKey = (e) => {
    if (e.key === 'Escape') {
      e.preventDefault();
      e.stopPropagation();
      closeLightbox();
    } else if (e.key === 'Tab') {
      // The focus stays in the dialog, going round its controls.
      e.preventDefault();
      const stops = [...el.querySelectorAll('button:not([hidden]), [tabindex="0"]')];
      let i = stops.indexOf(document.activeElement);
      if (i < 0) i = e.shiftKey ? 0 : -1;
      stops[(i + (e.shiftKey ? -1 : 1) + stops.length) % stops.length].focus();
    }
  };
  el.addEventListener('click', () => closeLightbox());
  document.addEventListener('keydown', onKey, true);
  open = { el, opener, onKey };
  document.body.append(el);
  // The dialog takes the focus, not its Close button: the Enter that
  // opened it (on a thumbnail) would otherwise go on to press Close.
  el.focus();
}

export function closeLightbox() {
  if (!open) return;
  const { el, opener, onKey } = open;
  open = null;
  document.removeEventListener('keydown', onKey, true);
  el.remove();
  if (opener && opener.isConnected) opener.focus();
}

if (typeof document !== 'undefined') {
  document.addEventListener('click', (e) => {
    const t = e.target instanceof Element ? e.target.closest('[data-lightbox], [data-text-preview]') : null;
    if (!t || e.button !== 0 || e.ctrlKey || e.metaKey || e.shiftKey || e.altKey) return;
    e.preventDefault();
    if (t.dataset.textPreview) {
      openTextDialog(t.dataset.name || 'file', t.dataset.textPreview, t);
      return;
    }
    const img = t.querySelector('img');
    openLightbox(t.dataset.lightbox || t.getAttribute('href'), img ? img.alt : t.getAttribute('aria-label'), t);
  });
}

const texts = new Map(); // url -> Promise of the file's text

function fetchText(url) {
  let p = texts.get(url);
  if (!p) {
    p = fetch(url, { credentials: 'same-origin' }).then((r) => {
      if (!r.ok) throw Object.assign(new Error(`HTTP ${r.status}`), { status: r.status });
      return r.text();
    });
    p.catch(() => texts.delete(url));
    texts.set(url, p);
  }
  return p;
}

// textPreview is a text file's card in a message: its name, the first
// lines, and Show all / Show less. expired() makes the node for a file
// that is gone.
export function textPreview(name, url, expired) {
  const body = h('pre', { class: 'file-preview-body', tabindex: '0', 'aria-label': `First lines of ${name}`, text: 'Loading…' });
  const toggle = h('button', { type: 'button', class: 'btn small file-preview-toggle', hidden: true, 'aria-expanded': 'false' });
  const el = h('div', { class: 'file-preview' },
    h('div', { class: 'file-preview-head' }, icon('clip'), h('span', { class: 'file-preview-name', text: name, title: name }), toggle),
    body);
  fetchText(url).then((text) => {
    const p = previewText(text);
    let expanded = false;
    const show = () => {
      body.textContent = expanded ? p.full + (p.cut ? '\n…' : '') : p.head;
      toggle.textContent = expanded ? 'Show less' : `Show all (${p.lines} lines)`;
      toggle.setAttribute('aria-expanded', String(expanded));
      el.classList.toggle('expanded', expanded);
    };
    toggle.hidden = p.more === 0 && !p.cut;
    toggle.onclick = () => { expanded = !expanded; show(); };
    show();
  }, (err) => {
    if (err.status === 404 || err.status === 410) el.replaceWith(expired());
    else body.textContent = `Could not load the preview (${err.message})`;
  });
  return el;
}
