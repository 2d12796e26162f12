// Math and diagrams in rendered markdown: markdown.js leaves math spans
// (.math, escaped TeX) and closed ```mermaid fences (.mermaid-block, around
// their code block) as placeholders; enhance(node) typesets them with the
// vendored KaTeX and Mermaid (web/static/vendor/, see its README).
//
// Each library loads on first need only: a chat without math or diagrams
// never fetches them. KaTeX (a <script> and its stylesheet, added to
// <head>) runs in the page under the UI's Content-Security-Policy (no eval,
// no inline scripts or styles): it builds its nodes with the DOM
// (katex.render, never renderToString into innerHTML). Mermaid runs with
// securityLevel "strict" in a sandboxed iframe (below) and its SVG is shown
// as an image, never parsed into the page.
//
// A formula or diagram that does not render shows its source with the
// error; the rest of the message is untouched. Diagrams follow the theme
// (light or dark, the switch or the system's) and are drawn again when it
// changes. A reply still streaming is rebuilt often: a diagram's SVG is
// kept by source and theme, so a rebuild does not draw it again.

const VENDOR = new URL('../vendor/', import.meta.url);

const loads = new Map(); // url -> Promise of the library's global

// loadScript adds a <script src=url> once and resolves to window[global].
function loadScript(path, global) {
  const url = new URL(path, VENDOR).href;
  let p = loads.get(url);
  if (!p) {
    p = new Promise((resolve, reject) => {
      if (window[global]) return resolve(window[global]);
      const s = document.createElement('script');
      s.src = url;
      s.async = true;
      s.onload = () => (window[global] ? resolve(window[global]) : reject(new Error(`${path} defined no ${global}`)));
      s.onerror = () => reject(new Error(`Could not load ${path}`));
      document.head.append(s);
    });
    // A failed load (offline) is tried again by the next message that needs it.
    p.catch(() => loads.delete(url));
    loads.set(url, p);
  }
  return p;
}

function loadStylesheet(path) {
  const url = new URL(path, VENDOR).href;
  if (document.querySelector(`link[rel="stylesheet"][href="${url}"]`)) return;
  const l = document.createElement('link');
  l.rel = 'stylesheet';
  l.href = url;
  document.head.append(l);
}

function loadKatex() {
  loadStylesheet('katex/katex.min.css');
  return loadScript('katex/katex.min.js', 'katex');
}

// enhance typesets the math and diagrams in root (a freshly rendered
// markdown node, in the document or not yet).
export function enhance(root) {
  if (!root || !root.querySelectorAll) return;
  const maths = root.querySelectorAll('.math:not([data-rendered])');
  if (maths.length) {
    if (window.katex) maths.forEach((el) => typeset(window.katex, el));
    else loadKatex().then((k) => maths.forEach((el) => typeset(k, el)), (err) => maths.forEach((el) => failed(el, el.textContent, err)));
  }
  root.querySelectorAll('.mermaid-block:not([data-rendered])').forEach((el) => diagram(el));
}

// typeset renders one math placeholder, or shows its source with the error.
function typeset(katex, el) {
  if (el.dataset.rendered) return;
  const tex = el.textContent;
  const display = el.classList.contains('math-display');
  const out = document.createElement('span');
  try {
    // trust: false (the default) keeps \href, \url and \includegraphics
    // inert; throwOnError so a mistake shows as such, with the source.
    katex.render(tex, out, { displayMode: display, throwOnError: true, trust: false, output: 'htmlAndMathml' });
  } catch (err) {
    failed(el, tex, err);
    return;
  }
  el.dataset.rendered = 'ok';
  el.dataset.tex = tex;
  el.replaceChildren(...out.childNodes);
}

// failed shows a span's source and why it did not render.
function failed(el, tex, err) {
  el.dataset.rendered = 'error';
  el.classList.add('render-error');
  const msg = String((err && err.message) || err || 'Could not render');
  el.title = msg;
  const src = document.createElement('code');
  src.className = 'render-source';
  src.textContent = tex;
  const note = document.createElement('span');
  note.className = 'render-error-msg';
  note.setAttribute('role', 'note');
  note.textContent = msg;
  el.replaceChildren(src, note);
}

// ---- Mermaid ---------------------------------------------------------
//
// Mermaid lays diagrams out in a live document and writes inline styles
// while it does, which this page's policy forbids: it runs in a hidden
// iframe sandboxed to scripts only (diagram-frame.html, its own policy),
// and sends back SVG text, shown here as an <img> (an image runs no script
// and its styles stay inside it).

const svgs = new Map(); // theme + '\n' + source -> Promise of the SVG markup
const asked = new Map(); // request id -> {resolve, reject}
let frame = null; // Promise of the frame's window
let seq = 0;

// FRAME_TIMEOUT is how long the frame has to load Mermaid (5 MB) and say so.
const FRAME_TIMEOUT = 60_000;

function diagramFrame() {
  if (frame) return frame;
  frame = new Promise((resolve, reject) => {
    const el = document.createElement('iframe');
    el.className = 'diagram-frame';
    el.setAttribute('sandbox', 'allow-scripts');
    el.setAttribute('aria-hidden', 'true');
    el.tabIndex = -1;
    el.title = 'Diagram renderer';
    const fail = (err) => {
      window.removeEventListener('message', onMessage);
      el.remove();
      frame = null; // the next diagram tries again
      for (const [, p] of asked) p.reject(err);
      asked.clear();
      reject(err);
    };
    const timer = setTimeout(() => fail(new Error('The diagram renderer did not load')), FRAME_TIMEOUT);
    function onMessage(e) {
      if (e.source !== el.contentWindow || !e.data || typeof e.data !== 'object') return;
      const m = e.data;
      if ('ready' in m) {
        clearTimeout(timer);
        if (m.ready) resolve(el.contentWindow);
        else fail(new Error(m.error || 'The diagram renderer did not load'));
        return;
      }
      const p = asked.get(m.id);
      if (!p) return;
      asked.delete(m.id);
      if (typeof m.svg === 'string') p.resolve(m.svg);
      else p.reject(new Error(String(m.error || 'could not draw')));
    }
    window.addEventListener('message', onMessage);
    el.src = new URL('../diagram-frame.html', import.meta.url).href;
    document.body.append(el);
  });
  return frame;
}

export function darkTheme() {
  const t = document.documentElement.dataset.theme;
  if (t === 'dark' || t === 'light') return t === 'dark';
  return !!(window.matchMedia && window.matchMedia('(prefers-color-scheme: dark)').matches);
}

function drawSVG(source, theme) {
  const key = theme + '\n' + source;
  let p = svgs.get(key);
  if (p) return p;
  p = diagramFrame().then((win) => new Promise((resolve, reject) => {
    const id = ++seq;
    asked.set(id, { resolve, reject });
    // The frame's origin is opaque: '*' is the only target that reaches it.
    win.postMessage({ id, source, theme, font: getComputedStyle(document.body).fontFamily }, '*');
  }));
  svgs.set(key, p);
  p.catch(() => svgs.delete(key));
  // Keep the cache small: a long chat's diagrams, not every edit of them.
  if (svgs.size > 64) svgs.delete(svgs.keys().next().value);
  return p;
}

// diagram draws one .mermaid-block (its code block stays, hidden, for an
// error or a theme change).
async function diagram(block) {
  const code = block.querySelector('pre code');
  if (!code) return;
  const source = code.textContent;
  const theme = darkTheme() ? 'dark' : 'default';
  block.dataset.rendered = 'pending';
  block.dataset.theme = theme;
  let svg;
  try {
    svg = await drawSVG(source, theme);
  } catch (err) {
    showDiagramError(block, err);
    return;
  }
  if (!/^<svg[\s>]/.test(svg)) {
    showDiagramError(block, new Error('Mermaid returned no SVG'));
    return;
  }
  const figure = document.createElement('div');
  figure.className = 'mermaid-svg';
  const img = document.createElement('img');
  img.src = 'data:image/svg+xml;charset=utf-8,' + encodeURIComponent(svg);
  img.alt = 'Diagram: ' + (source.trim().split('\n')[0] || 'mermaid');
  // Its size from the start, so a rebuilt (streaming) message does not jump.
  const tag = /^<svg[^>]*>/.exec(svg)[0];
  const w = /\swidth="(\d+)"/.exec(tag);
  const ht = /\sheight="(\d+)"/.exec(tag);
  if (w && ht) {
    img.width = Number(w[1]);
    img.height = Number(ht[1]);
  }
  figure.append(img);
  block.querySelector('.mermaid-svg, .render-error-msg')?.remove();
  block.classList.remove('render-error');
  block.prepend(figure);
  block.querySelector('.codeblock').hidden = true;
  block.dataset.rendered = 'ok';
}

function showDiagramError(block, err) {
  block.querySelector('.mermaid-svg, .render-error-msg')?.remove();
  block.classList.add('render-error');
  block.querySelector('.codeblock').hidden = false;
  const note = document.createElement('div');
  note.className = 'render-error-msg';
  note.setAttribute('role', 'note');
  note.textContent = 'Diagram error: ' + String((err && err.message) || err || 'could not render').split('\n').slice(0, 4).join(' ');
  block.append(note);
  block.dataset.rendered = 'error';
}

// The theme changes: draw the shown diagrams again in the new one.
function redrawAll() {
  const theme = darkTheme() ? 'dark' : 'default';
  document.querySelectorAll('.mermaid-block[data-rendered]').forEach((b) => {
    if (b.dataset.theme !== theme && b.dataset.rendered !== 'pending') diagram(b);
  });
}
if (typeof window !== 'undefined' && window.matchMedia) {
  window.matchMedia('(prefers-color-scheme: dark)').addEventListener('change', redrawAll);
  new MutationObserver(redrawAll).observe(document.documentElement, { attributes: true, attributeFilter: ['data-theme'] });
}
