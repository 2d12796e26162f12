// Attachments: the composer's attach button, drag-and-drop and paste of
// files, uploads with progress (XMLHttpRequest upload events) to POST
// /files, thumbnails, and the limits (GET /files/limits) shown before an
// upload; fileChips renders a message's file parts (images from
// GET /files/{id}, which CSP img-src 'self' allows).

import { API, api } from './api.js';
import { h, icon } from './dom.js';

const IMAGE_TYPES = ['image/png', 'image/jpeg', 'image/gif', 'image/webp'];
const ACCEPT = IMAGE_TYPES.join(',') + ',text/*,.md,.txt,.csv,.json,.yaml,.yml,.toml,.xml,.log,.go,.js,.ts,.py,.rs,.java,.c,.h,.sh,.sql';

// formatBytes is a size for people: 512 B, 1.5 KB, 10 MB.
export function formatBytes(n) {
  if (n < 1024) return `${n} B`;
  const units = ['KB', 'MB', 'GB'];
  let v = n / 1024;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) { v /= 1024; i++; }
  return `${v >= 10 || Number.isInteger(v) ? Math.round(v) : v.toFixed(1)} ${units[i]}`;
}

let limitsPromise = null;

// fileLimits reads the upload limits once per page load.
export function fileLimits() {
  if (!limitsPromise) limitsPromise = api('GET', '/files/limits').catch(() => { limitsPromise = null; return null; });
  return limitsPromise;
}

// fileURL is where a file is read.
export function fileURL(id) { return `${API}/files/${encodeURIComponent(id)}`; }

// fileChips renders a message's file parts: image thumbnails (a link to the
// file) and named chips; a file that is gone shows as expired.
export function fileChips(parts) {
  const files = (parts || []).filter((p) => p.type === 'file');
  if (!files.length) return null;
  return h('div', { class: 'chips attachments' }, files.map((p) => {
    const name = p.name || p.media_type || 'file';
    if (p.file_id && IMAGE_TYPES.includes(p.media_type)) {
      const img = h('img', { class: 'thumb', src: fileURL(p.file_id), alt: name, loading: 'lazy', decoding: 'async' });
      const link = h('a', { class: 'chip file image', href: fileURL(p.file_id), target: '_blank', rel: 'noopener', title: name }, img);
      img.addEventListener('error', () => link.replaceWith(h('span', { class: 'chip file expired', title: 'This attachment has expired', text: `${name} (expired)` })), { once: true });
      return link;
    }
    return h('span', { class: 'chip file', title: p.media_type || '', text: name });
  }));
}

// Attachments holds the files of the message being written.
export class Attachments {
  // opts: {onChange()} — called whenever the set or an upload's state changes.
  constructor(opts = {}) {
    this.opts = opts;
    this.items = [];
    this.limits = null;
    this.input = h('input', { type: 'file', multiple: true, accept: ACCEPT, hidden: true, class: 'attach-input', 'aria-hidden': 'true', tabindex: '-1' });
    this.input.addEventListener('change', () => { this.add([...this.input.files]); this.input.value = ''; });
    this.button = h('button', {
      type: 'button', class: 'attach-btn', 'aria-label': 'Attach files', title: 'Attach images or text files',
      onclick: () => this.input.click(),
    }, icon('clip'));
    this.tray = h('div', { class: 'attach-tray', role: 'list', 'aria-label': 'Attachments', hidden: true });
    fileLimits().then((l) => {
      if (!l) return;
      this.limits = l;
      this.button.title = `Attach images or text files (up to ${formatBytes(l.max_file_bytes)} each; ` +
        `${formatBytes(Math.max(0, l.quota_bytes - l.used_bytes))} of ${formatBytes(l.quota_bytes)} left)`;
    });
  }

  // mount wires drag-and-drop onto zone and paste of files onto input.
  mount(zone, input) {
    zone.addEventListener('dragover', (e) => {
      if (!e.dataTransfer || ![...e.dataTransfer.types].includes('Files')) return;
      e.preventDefault();
      zone.classList.add('drop-target');
    });
    zone.addEventListener('dragleave', (e) => { if (!zone.contains(e.relatedTarget)) zone.classList.remove('drop-target'); });
    zone.addEventListener('drop', (e) => {
      zone.classList.remove('drop-target');
      if (!e.dataTransfer || !e.dataTransfer.files.length) return;
      e.preventDefault();
      this.add([...e.dataTransfer.files]);
    });
    input.addEventListener('paste', (e) => {
      const files = [...((e.clipboardData && e.clipboardData.files) || [])];
      if (!files.length) return;
      e.preventDefault();
      this.add(files);
    });
  }

  // add checks each file against the limits, then uploads it.
  add(files) {
    for (const file of files) {
      const item = { file, name: file.name || 'pasted file', size: file.size, type: file.type, progress: 0, state: 'uploading', error: '' };
      const max = this.limits ? this.limits.max_file_bytes : 0;
      if (max && file.size > max) {
        item.state = 'error';
        item.error = `${formatBytes(file.size)} is over the ${formatBytes(max)} limit`;
      } else if (this.limits && file.size > this.limits.quota_bytes - this.limits.used_bytes) {
        item.state = 'error';
        item.error = `not enough space left (${formatBytes(Math.max(0, this.limits.quota_bytes - this.limits.used_bytes))})`;
      }
      this.items.push(item);
      if (item.state === 'uploading') this.upload(item);
    }
    this.render();
  }

  upload(item) {
    const xhr = new XMLHttpRequest();
    item.xhr = xhr;
    xhr.open('POST', `${API}/files?name=${encodeURIComponent(item.name)}`);
    xhr.withCredentials = true;
    xhr.setRequestHeader('Content-Type', item.type || 'application/octet-stream');
    xhr.setRequestHeader('Accept', 'application/json');
    xhr.setRequestHeader('X-Chatd-Upload', '1'); // the cross-site check's proof (API.md Files)
    xhr.upload.addEventListener('progress', (e) => {
      if (!e.lengthComputable) return;
      item.progress = e.loaded / e.total;
      this.renderItem(item);
    });
    xhr.addEventListener('load', () => {
      let body = null;
      try { body = JSON.parse(xhr.responseText); } catch { /* not JSON */ }
      if (xhr.status === 201 && body && body.id) {
        Object.assign(item, { id: body.id, mediaType: body.media_type, name: body.name || item.name, state: 'done', progress: 1 });
        if (this.limits) this.limits.used_bytes += body.size || 0;
      } else {
        item.state = 'error';
        item.error = (body && body.message) || `upload failed (HTTP ${xhr.status})`;
      }
      this.render();
    });
    xhr.addEventListener('error', () => { item.state = 'error'; item.error = 'the server could not be reached'; this.render(); });
    xhr.send(item.file);
  }

  remove(item) {
    if (item.xhr && item.state === 'uploading') item.xhr.abort();
    this.items = this.items.filter((x) => x !== item);
    this.render();
  }

  // parts are the file parts of the uploaded files, for a message's content.
  parts() {
    return this.items.filter((x) => x.state === 'done').map((x) => ({ type: 'file', file_id: x.id }));
  }

  get uploading() { return this.items.some((x) => x.state === 'uploading'); }

  get ready() { return this.items.some((x) => x.state === 'done'); }

  clear() {
    this.items = [];
    this.render();
  }

  renderItem(item) {
    if (!item.el) return;
    const bar = item.el.querySelector('.attach-progress');
    if (bar) {
      bar.value = item.progress;
      bar.textContent = `${Math.round(item.progress * 100)}%`;
    }
  }

  render() {
    this.tray.replaceChildren(...this.items.map((item) => {
      const isImage = item.state === 'done' && IMAGE_TYPES.includes(item.mediaType);
      const preview = isImage
        ? h('img', { class: 'thumb', src: fileURL(item.id), alt: item.name })
        : h('span', { class: 'attach-kind', 'aria-hidden': 'true', text: (item.name.split('.').pop() || 'file').slice(0, 4).toUpperCase() });
      item.el = h('div', { class: `attach-item ${item.state}`, role: 'listitem', title: item.error || `${item.name} · ${formatBytes(item.size)}` },
        preview,
        h('span', { class: 'attach-meta' },
          h('span', { class: 'attach-name', text: item.name }),
          item.state === 'uploading'
            ? h('progress', { class: 'attach-progress', max: 1, value: item.progress, 'aria-label': `Uploading ${item.name}` })
            : h('span', { class: 'attach-size', text: item.state === 'error' ? item.error : formatBytes(item.size) })),
        h('button', { type: 'button', class: 'attach-remove', 'aria-label': `Remove ${item.name}`, title: 'Remove', onclick: () => this.remove(item) }, icon('x')));
      return item.el;
    }));
    this.tray.hidden = this.items.length === 0;
    if (this.opts.onChange) this.opts.onChange();
  }
}
