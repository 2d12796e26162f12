// Small DOM helpers: element construction without innerHTML, icons, and
// clipboard, time and storage utilities shared by the views.

const PROPS = new Set(['value', 'checked', 'disabled', 'hidden', 'selected', 'indeterminate', 'open']);

// h builds an element: h('button', {class: 'x', onclick: fn, text: 'Go'}, child...).
// Strings among children become text nodes; null/false children are skipped.
export function h(tag, props, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(props || {})) {
    if (v == null || v === false) continue;
    if (k === 'class') el.className = v;
    else if (k === 'text') el.textContent = v;
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (PROPS.has(k)) el[k] = v;
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c == null || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

// setHTML puts markup produced by the markdown renderer (which escapes all
// input) into el. It is the only way the UI writes HTML.
export function setHTML(el, trustedMarkup) {
  el.innerHTML = trustedMarkup;
}

const SVG = 'http://www.w3.org/2000/svg';
const ICONS = {
  plus: 'M12 5v14M5 12h14',
  x: 'M6 6l12 12M18 6L6 18',
  menu: 'M4 7h16M4 12h16M4 17h16',
  sidebar: 'M4 4h16v16H4zM10 4v16',
  search: 'M11 4a7 7 0 1 0 0 14a7 7 0 1 0 0-14zM20 20l-4.2-4.2',
  dots: 'M6 12h.01M12 12h.01M18 12h.01',
  send: 'M12 19V5M6 11l6-6 6 6',
  stop: 'M8 8h8v8H8z',
  copy: 'M9 9h10v10H9zM5 15V5h10',
  check: 'M5 12.5l4.5 4.5L19 7.5',
  edit: 'M4 20h4L19 9l-4-4L4 16zM13.5 6.5l4 4',
  fork: 'M7 4v6a4 4 0 0 0 4 4h2a4 4 0 0 1 4 4v2M17 4v6M7 14v6',
  pin: 'M9 4h6M10 4v5l-3 4h10l-3-4V4M12 13v7',
  archive: 'M4 5h16v4H4zM6 9v10h12V9M10 13h4',
  unarchive: 'M4 5h16v4H4zM6 9v10h12V9M12 17v-5M9.5 14.5L12 12l2.5 2.5',
  trash: 'M5 7h14M10 7V4h4v3M7 7l1 13h8l1-13',
  down: 'M12 5v14M6 13l6 6 6-6',
  chevron: 'M9 6l6 6-6 6',
  logout: 'M14 4h5v16h-5M10 8l-4 4 4 4M6 12h10',
  alert: 'M12 4l9 16H3zM12 10v4M12 17h.01',
  tool: 'M15 4a5 5 0 0 0-4.6 7L4 17.4 6.6 20l6.4-6.4A5 5 0 0 0 20 9l-3 3-3-1-1-3z',
  retry: 'M19 12a7 7 0 1 1-2-4.9M19 4v4h-4',
  chat: 'M5 5h14v10H9l-4 4z',
  folder: 'M3 6h6l2 2h10v11H3z',
  chart: 'M4 20h16M7 16v-5M12 16V7M17 16v-8',
  // A cog with eight teeth (the old rays beside the theme button read as a sun).
  gear: 'M18.6 9.8L21.3 10.2L21.3 13.8L18.6 14.2L18.3 15.1L19.9 17.3L17.3 19.9L15.1 18.3L14.2 18.6L13.8 21.3L10.2 21.3L9.8 18.6L8.9 18.3L6.7 19.9L4.1 17.3L5.7 15.1L5.4 14.2L2.7 13.8L2.7 10.2L5.4 9.8L5.7 8.9L4.1 6.7L6.7 4.1L8.9 5.7L9.8 5.4L10.2 2.7L13.8 2.7L14.2 5.4L15.1 5.7L17.3 4.1L19.9 6.7L18.3 8.9ZM12 9a3 3 0 1 0 0 6a3 3 0 1 0 0-6z',
  tag: 'M4 4h7l9 9-7 7-9-9zM8 8h.01',
  clock: 'M12 4a8 8 0 1 0 0 16a8 8 0 1 0 0-16zM12 8v4l3 2',
  spark: 'M12 3v4M12 17v4M3 12h4M17 12h4M6 6l2.5 2.5M15.5 15.5L18 18M6 18l2.5-2.5M15.5 8.5L18 6',
  sun: 'M12 8a4 4 0 1 0 0 8a4 4 0 1 0 0-8zM12 2v2M12 20v2M4.9 4.9l1.4 1.4M17.7 17.7l1.4 1.4M2 12h2M20 12h2M4.9 19.1l1.4-1.4M17.7 6.3l1.4-1.4',
  moon: 'M20 14.5A8 8 0 1 1 9.5 4a6.5 6.5 0 0 0 10.5 10.5z',
  monitor: 'M4 5h16v11H4zM9 20h6M12 16v4',
  clip: 'M16.5 6.5l-7.8 7.8a2 2 0 0 0 2.8 2.8l7.8-7.8a4 4 0 0 0-5.7-5.7L5.8 11.4a6 6 0 0 0 8.5 8.5L20 14.2',
};

// icon returns an inline SVG icon (decorative: aria-hidden).
export function icon(name, cls = '') {
  const svg = document.createElementNS(SVG, 'svg');
  svg.setAttribute('viewBox', '0 0 24 24');
  svg.setAttribute('aria-hidden', 'true');
  svg.setAttribute('class', 'icon ' + cls);
  const path = document.createElementNS(SVG, 'path');
  path.setAttribute('d', ICONS[name] || ICONS.dots);
  svg.append(path);
  return svg;
}

// copyText copies to the clipboard; navigator.clipboard needs a secure
// context, so plain-HTTP LAN hosts fall back to a hidden textarea.
export async function copyText(text) {
  if (navigator.clipboard && window.isSecureContext) {
    try {
      await navigator.clipboard.writeText(text);
      return true;
    } catch { /* fall through */ }
  }
  const ta = h('textarea', { class: 'sr-only', 'aria-hidden': 'true', readonly: true });
  ta.value = text;
  document.body.append(ta);
  ta.select();
  let ok = false;
  try { ok = document.execCommand('copy'); } catch { ok = false; }
  ta.remove();
  return ok;
}

// flashCopied shows a short "Copied" state on a copy button.
export function flashCopied(btn) {
  const label = btn.querySelector('.label');
  const old = label ? label.textContent : null;
  btn.classList.add('copied');
  if (label) label.textContent = 'Copied';
  setTimeout(() => {
    btn.classList.remove('copied');
    if (label) label.textContent = old;
  }, 1500);
}

// store wraps localStorage/sessionStorage, tolerating their absence.
function wrap(getStorage) {
  return {
    get(key, fallback = null) {
      try {
        const v = getStorage().getItem(key);
        return v == null ? fallback : JSON.parse(v);
      } catch { return fallback; }
    },
    set(key, value) {
      try {
        if (value == null || value === '') getStorage().removeItem(key);
        else getStorage().setItem(key, JSON.stringify(value));
      } catch { /* storage full or disabled */ }
    },
  };
}
export const local = wrap(() => window.localStorage);

// THEMES are the theme switch's choices: system follows the OS setting.
export const THEMES = [['system', 'System', 'monitor'], ['light', 'Light', 'sun'], ['dark', 'Dark', 'moon']];

// theme is the remembered choice (system by default).
export function theme() {
  const t = local.get('chatd.theme', 'system');
  return THEMES.some(([v]) => v === t) ? t : 'system';
}

// setTheme applies and remembers a choice (js/theme.js applies it on the
// next load before the first paint).
export function setTheme(t) {
  if (t === 'light' || t === 'dark') document.documentElement.dataset.theme = t;
  else delete document.documentElement.dataset.theme;
  local.set('chatd.theme', t === 'system' ? null : t);
}
export const session = wrap(() => window.sessionStorage);

export function isToday(date) {
  const d = new Date(date), n = new Date();
  return d.getFullYear() === n.getFullYear() && d.getMonth() === n.getMonth() && d.getDate() === n.getDate();
}

export function formatTime(date) {
  const d = new Date(date);
  if (isNaN(d)) return '';
  if (isToday(d)) return d.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });
  return d.toLocaleDateString([], { month: 'short', day: 'numeric' }) + ', ' +
    d.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });
}

// formatSeconds: 65 -> "1 min 5 s", 4 -> "4 s".
export function formatSeconds(s) {
  s = Math.max(0, Math.ceil(s));
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60), r = s % 60;
  return r ? `${m} min ${r} s` : `${m} min`;
}

export function debounce(fn, ms) {
  let t = null;
  const d = (...args) => {
    clearTimeout(t);
    t = setTimeout(() => fn(...args), ms);
  };
  d.cancel = () => clearTimeout(t);
  return d;
}

// prettyJSON formats a JSON value or JSON text; other text is returned as is.
export function prettyJSON(v) {
  if (typeof v === 'string') {
    try { return JSON.stringify(JSON.parse(v), null, 2); } catch { return v; }
  }
  if (v === undefined) return '';
  return JSON.stringify(v, null, 2);
}
