// Attachments: the composer's attach button, drag-and-drop and paste of
// files, uploads with progress (XMLHttpRequest upload events) to POST
// /files, thumbnails, and the limits (GET /files/limits) shown before an
// upload; fileChips renders a message's file parts (images from
// GET /files/{id}, which CSP img-src 'self' allows).

import { API, api } from './api.js';
import { h, icon } from './dom.js';
import { isTextType, textPreview } from './preview.js';

const IMAGE_TYPES = ['image/png', 'image/jpeg', 'image/gif', 'image/webp'];
const PDF = 'application/pdf';
const ACCEPT = IMAGE_TYPES.join(',') + ',' + PDF + ',text/*,.md,.txt,.csv,.json,.yaml,.yml,.toml,.xml,.log,.go,.js,.ts,.py,.rs,.java,.c,.h,.sh,.sql';

// TEXT_EXTENSIONS are names a browser may give no text type (or
// application/octet-stream) although the server stores them as text.
const TEXT_EXTENSIONS = new Set(ACCEPT.split(',').filter((a) => a.startsWith('.')).map((a) => a.slice(1))
  .concat(['html', 'css', 'tsx', 'jsx', 'rb', 'php', 'kt', 'swift', 'cpp', 'hpp', 'ini', 'env', 'makefile', 'dockerfile']));
const TEXT_TYPES = new Set(['application/json', 'application/xml', 'application/yaml', 'application/x-yaml', 'application/toml',
  'application/javascript', 'application/x-sh', 'application/sql']);

// inspect decides what the server will make of a file, before anything is
// uploaded: {error} when the chosen model could not be given it (the
// reason, shown in the composer), else {type}, the Content-Type to upload
// it with. Images of the four types and text pass (the server's rule: a
// declared text type, or bytes that are UTF-8 without NUL); a PDF passes
// only when model (a ChatModel of GET /chats/models) says pdf_input, as
// the server refuses it for the others at send; the bytes of a file the
// browser typed as something else are read in part to tell text from
// binary, and text found that way is uploaded untyped, so the server
// sniffs it as text/plain (a browser calls a .ts file video/mp2t).
export async function inspect(file, model) {
  return verdictByType(file, model) || verdictByBytes(file);
}

// verdictByType is inspect's answer from the name and type alone, or null
// when the bytes must be read.
function verdictByType(file, model) {
  const type = (file.type || '').toLowerCase();
  if (IMAGE_TYPES.includes(type)) return { type };
  if (type === PDF || ((!type || type === 'application/octet-stream') && /\.pdf$/i.test(file.name || ''))) return pdfVerdict(model);
  if (type.startsWith('image/')) return { error: `${type.slice(6).toUpperCase()} images cannot be given to a model; use PNG, JPEG, GIF or WebP` };
  if (type.startsWith('text/') || TEXT_TYPES.has(type) || type.endsWith('+json') || type.endsWith('+xml')) return { type };
  const ext = (file.name || '').toLowerCase().split('.').pop();
  if (type && type !== 'application/octet-stream' && !TEXT_EXTENSIONS.has(ext)) {
    return { error: `${kindName(type, ext)} cannot be given to a model; attach images or text files` };
  }
  return null;
}

async function verdictByBytes(file) {
  const head = new Uint8Array(await file.slice(0, 64 << 10).arrayBuffer());
  if (head.includes(0)) return { error: 'A binary file cannot be given to a model; attach images or text files' };
  try {
    // stream: a UTF-8 sequence cut at the end of the slice is no error.
    new TextDecoder('utf-8', { fatal: true }).decode(head, { stream: head.length < file.size });
  } catch {
    return { error: 'This file is not UTF-8 text; attach images or text files' };
  }
  return { type: 'application/octet-stream' };
}

// pdfVerdict: a PDF goes only to a model that reads PDFs (pdf_input).
function pdfVerdict(model) {
  if (model && model.pdf_input) return { type: PDF };
  const name = model ? (model.display_name || `${model.provider}/${model.model}`) : 'The chosen model';
  return { error: `${name} cannot read PDFs; choose a model that can (OpenAI and Anthropic vision models) or attach images or text files` };
}

function kindName(type, ext) {
  if (ext && ext !== type) return `A .${ext} file (${type})`;
  return `A file of type ${type}`;
}

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
// file, opening the lightbox: preview.js), text files' first lines, and
// named chips; a file that is gone shows as expired.
export function fileChips(parts) {
  const files = (parts || []).filter((p) => p.type === 'file');
  if (!files.length) return null;
  return h('div', { class: 'chips attachments' }, files.map((p) => {
    const name = p.name || p.media_type || 'file';
    if (p.file_id && IMAGE_TYPES.includes(p.media_type)) {
      const img = h('img', { class: 'thumb', src: fileURL(p.file_id), alt: name, loading: 'lazy', decoding: 'async' });
      const link = h('a', { class: 'chip file image', href: fileURL(p.file_id), target: '_blank', rel: 'noopener', title: name, 'data-lightbox': '' }, img);
      img.addEventListener('error', () => link.replaceWith(expiredChip(name)), { once: true });
      return link;
    }
    if (p.file_id && isTextType(p.media_type)) return textPreview(name, fileURL(p.file_id), () => expiredChip(name));
    return h('span', { class: 'chip file', title: p.media_type || '', text: name });
  }));
}

// kind is the badge of a file without a thumbnail: its extension.
function kind(name) {
  return (name.split('.').pop() || 'file').slice(0, 4).toUpperCase();
}

function expiredChip(name) {
  return h('span', { class: 'chip file expired', title: 'This attachment has expired', text: `${name} (expired)` });
}

// Attachments holds the files of the message being written.
export class Attachments {
  // opts: {onChange()} — called whenever the set or an upload's state
  // changes; {model()} — the chosen model (a PDF is refused for one
  // without pdf_input).
  constructor(opts = {}) {
    this.opts = opts;
    this.items = [];
    this.limits = null;
    this.input = h('input', { type: 'file', multiple: true, accept: ACCEPT, hidden: true, class: 'attach-input', 'aria-hidden': 'true', tabindex: '-1' });
    this.input.addEventListener('change', () => { this.add([...this.input.files]); this.input.value = ''; });
    this.button = h('button', {
      type: 'button', class: 'attach-btn', 'aria-label': 'Attach files', title: 'Attach images, PDFs or text files',
      onclick: () => this.input.click(),
    }, icon('clip'));
    this.tray = h('div', { class: 'attach-tray', role: 'list', 'aria-label': 'Attachments', hidden: true });
    fileLimits().then((l) => {
      if (!l) return;
      this.limits = l;
      this.button.title = `Attach images, PDFs or text files (up to ${formatBytes(l.max_file_bytes)} each; ` +
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

  // add checks each file (its type, then the limits), then uploads it. A
  // file no model can take is refused here, with the reason, and never
  // uploaded.
  async add(files) {
    const added = files.map((file) => ({ file, name: file.name || 'pasted file', size: file.size, type: file.type, progress: 0, state: 'checking', error: '' }));
    this.items.push(...added);
    // Most files are judged by their type at once; the rest once their
    // bytes are read (the item says "checking…" meanwhile).
    for (const item of added) {
      item.verdict = verdictByType(item.file, this.opts.model && this.opts.model());
      if (item.verdict) this.check(item);
    }
    this.render();
    for (const item of added.filter((x) => !x.verdict)) {
      item.verdict = await verdictByBytes(item.file);
      if (this.items.includes(item)) this.check(item); // else removed meanwhile
      this.render();
    }
  }

  // check applies an item's verdict and the limits, then uploads it.
  check(item) {
    const { file, verdict } = item;
    const max = this.limits ? this.limits.max_file_bytes : 0;
    const left = this.limits ? this.limits.quota_bytes - this.limits.used_bytes : Infinity;
    item.type = verdict.type;
    item.error = verdict.error
      || (max && file.size > max ? `${formatBytes(file.size)} is over the ${formatBytes(max)} limit` : '')
      || (file.size > left ? `not enough space left (${formatBytes(Math.max(0, left))})` : '');
    item.state = item.error ? 'error' : 'uploading';
    if (!item.error) this.upload(item);
  }

  // recheck applies the PDF rule again once the chosen model changes: an
  // uploaded PDF the model cannot read shows the reason and is left out of
  // the message (parts) until a model that reads it is chosen again or it
  // is removed.
  recheck() {
    const model = this.opts.model && this.opts.model();
    let changed = false;
    for (const item of this.items) {
      if (item.mediaType !== PDF || !(item.state === 'done' || item.modelRefused)) continue;
      const v = pdfVerdict(model);
      const state = v.error ? 'error' : 'done';
      changed = changed || state !== item.state;
      Object.assign(item, { state, error: v.error || '', modelRefused: !!v.error });
    }
    if (changed) this.render();
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

  get uploading() { return this.items.some((x) => x.state === 'uploading' || x.state === 'checking'); }

  // saved is what a send keeps of the uploaded files, so a refused send can
  // put them back (restore) with the draft.
  saved() {
    return this.items.filter((x) => x.state === 'done')
      .map(({ id, name, size, type, mediaType }) => ({ id, name, size, type, mediaType }));
  }

  restore(saved) {
    if (!saved || !saved.length) return;
    const have = new Set(this.items.map((x) => x.id));
    for (const s of saved) if (!have.has(s.id)) this.items.push({ ...s, state: 'done', progress: 1, error: '' });
    this.render();
  }

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
        ? h('button', { type: 'button', class: 'thumb-btn', 'data-lightbox': fileURL(item.id), 'aria-label': `Preview ${item.name}` },
          h('img', { class: 'thumb', src: fileURL(item.id), alt: item.name }))
        : item.state === 'done' && isTextType(item.mediaType)
          ? h('button', { type: 'button', class: 'attach-kind', 'data-text-preview': fileURL(item.id), 'data-name': item.name, 'aria-label': `Preview ${item.name}`, text: kind(item.name) })
          : h('span', { class: 'attach-kind', 'aria-hidden': 'true', text: kind(item.name) });
      item.el = h('div', { class: `attach-item ${item.state}`, role: 'listitem', title: item.error || `${item.name} · ${formatBytes(item.size)}` },
        preview,
        h('span', { class: 'attach-meta' },
          h('span', { class: 'attach-name', text: item.name }),
          item.state === 'checking'
            ? h('span', { class: 'attach-size', text: 'checking…' })
            : item.state === 'uploading'
            ? h('progress', { class: 'attach-progress', max: 1, value: item.progress, 'aria-label': `Uploading ${item.name}` })
            : h('span', { class: 'attach-size', text: item.state === 'error' ? item.error : formatBytes(item.size) })),
        h('button', { type: 'button', class: 'attach-remove', 'aria-label': `Remove ${item.name}`, title: 'Remove', onclick: () => this.remove(item) }, icon('x')));
      return item.el;
    }));
    this.tray.hidden = this.items.length === 0;
    if (this.opts.onChange) this.opts.onChange();
  }
}
