// The diagram renderer: a classic script of diagram-frame.html, which
// js/rich.js loads in a hidden iframe sandboxed to scripts only (an opaque
// origin: no cookies, no storage, no access to the UI's page). Mermaid needs
// a live document to lay a diagram out and writes inline styles while it
// does; the UI's Content-Security-Policy forbids inline styles, so that
// happens here, under this page's own policy (app/ui DiagramFramePolicy:
// inline styles allowed, scripts still only the UI's files).
//
// Protocol (postMessage, only with the parent): the frame says {ready:true}
// once; the parent asks {id, source, theme: 'dark'|'default', font}; the
// frame answers {id, svg} (the diagram sized by its viewBox, for an <img>)
// or {id, error}. Diagrams are drawn one at a time, in order.
'use strict';

(() => {
  let theme = null;
  let font = null;
  let n = 0;
  let queue = Promise.resolve();

  function draw(source, t, f) {
    if (theme !== t || font !== f) {
      window.mermaid.initialize({
        startOnLoad: false, securityLevel: 'strict', theme: t, suppressErrorRendering: true,
        // Labels as SVG text, not HTML in foreignObject: the page shows the
        // diagram as an image.
        htmlLabels: false, flowchart: { htmlLabels: false },
        fontFamily: f || 'system-ui, sans-serif',
      });
      theme = t;
      font = f;
    }
    return window.mermaid.render('diagram-' + (++n), source).then(({ svg }) => {
      const doc = new DOMParser().parseFromString(svg, 'image/svg+xml');
      const root = doc.documentElement;
      if (!root || root.nodeName !== 'svg') throw new Error('Mermaid returned no SVG');
      const vb = (root.getAttribute('viewBox') || '').trim().split(/[\s,]+/).map(Number);
      if (vb.length === 4 && vb[2] > 0 && vb[3] > 0) {
        root.setAttribute('width', String(Math.ceil(vb[2])));
        root.setAttribute('height', String(Math.ceil(vb[3])));
        root.style.removeProperty('max-width');
      }
      return new XMLSerializer().serializeToString(root);
    });
  }

  window.addEventListener('message', (e) => {
    if (e.source !== window.parent) return;
    const m = e.data || {};
    if (typeof m.id !== 'number' || typeof m.source !== 'string') return;
    const t = m.theme === 'dark' ? 'dark' : 'default';
    const f = typeof m.font === 'string' ? m.font : '';
    queue = queue.then(() => draw(m.source, t, f)).then(
      (svg) => window.parent.postMessage({ id: m.id, svg }, '*'),
      (err) => window.parent.postMessage({ id: m.id, error: String((err && err.message) || err || 'could not draw') }, '*'));
  });

  window.parent.postMessage({ ready: !!window.mermaid, error: window.mermaid ? undefined : 'Mermaid did not load' }, '*');
})();
