// A chat's settings (its system prompt), its export (Markdown or JSON, a
// download) and the import of a JSON export (API.md: System prompt, Export
// and import). Pure helpers (exportFileName, importSummary) are exported
// for node tests.

import { h, icon } from './dom.js';
import { API, api, ApiError } from './api.js';
import { toast } from './widgets.js';

// exportFileName reads the file name of a Content-Disposition header
// (filename="..."), or falls back to chat.<ext>.
export function exportFileName(disposition, format) {
  const m = /filename\*?=(?:UTF-8'')?"?([^";]+)"?/i.exec(disposition || '');
  if (m) {
    try { return decodeURIComponent(m[1]); } catch { return m[1]; }
  }
  return format === 'markdown' ? 'chat.md' : 'chat.json';
}

// importSummary says what an import answered: a new chat (201) or the chat
// an earlier import of the same export made (200).
export function importSummary(status, chat) {
  const title = chat && chat.title ? `“${chat.title}”` : 'the chat';
  return status === 201 ? `Imported ${title}.` : `This export was imported before: opened ${title}.`;
}

// chatSettingsDialog edits a chat's system prompt. It reads the chat
// first (lists do not carry the prompt) and saves with a PATCH.
export async function chatSettingsDialog(chat) {
  const prompt = h('textarea', {
    class: 'text-input', id: 'chat-system-prompt', rows: 8, placeholder: 'Instructions the model gets before every reply in this chat',
  });
  prompt.disabled = true;
  const status = h('p', { class: 'muted small', id: 'chat-settings-status', role: 'status', 'aria-live': 'polite' });
  const err = h('p', { class: 'form-error', role: 'alert' });
  const save = h('button', { type: 'submit', class: 'btn primary', id: 'chat-settings-save', disabled: true }, 'Save');
  const d = h('dialog', { class: 'dialog chat-settings-dialog', 'aria-labelledby': 'chat-settings-title' },
    h('form', {
      onsubmit: async (e) => {
        e.preventDefault();
        err.textContent = '';
        status.textContent = 'Saving…';
        save.disabled = true;
        try {
          await api('PATCH', `/chats/${chat.id}`, { system_prompt: prompt.value });
          status.textContent = prompt.value.trim() ? 'Saved. The next reply uses this system prompt.' : 'Saved. The chat has no system prompt now.';
          toast('Chat settings saved.');
        } catch (x) {
          status.textContent = '';
          err.textContent = [x.message, x.detail].filter(Boolean).join(' ');
        } finally {
          save.disabled = false;
        }
      },
    },
    h('h2', { id: 'chat-settings-title', text: 'Chat settings' }),
    h('label', { for: 'chat-system-prompt', class: 'field-label', text: 'System prompt' }),
    prompt,
    h('p', { class: 'muted small', text: 'Applies from the next reply; a project’s instructions come before it.' }),
    status, err,
    h('div', { class: 'dialog-actions' },
      h('button', { type: 'button', class: 'btn ghost', onclick: () => d.close() }, 'Close'),
      save)));
  d.addEventListener('close', () => d.remove());
  document.body.append(d);
  d.showModal();
  try {
    const full = await api('GET', `/chats/${chat.id}`);
    prompt.value = full.system_prompt || '';
    prompt.disabled = false;
    save.disabled = false;
    prompt.focus();
  } catch (x) {
    err.textContent = 'Could not read the chat: ' + x.message;
  }
}

// exportChat downloads the chat's export in format (markdown or json;
// JSON with the files inline, so it imports anywhere).
export async function exportChat(chat, format) {
  const q = new URLSearchParams({ format });
  if (format === 'json') q.set('files', 'inline');
  let res;
  try {
    res = await fetch(`${API}/chats/${chat.id}/export?${q}`, { credentials: 'same-origin' });
  } catch {
    toast('Could not export the chat', 'error', 'The server could not be reached.');
    return;
  }
  if (!res.ok) {
    const body = await res.json().catch(() => ({}));
    toast('Could not export the chat', 'error', body.message || `HTTP ${res.status}`);
    return;
  }
  const blob = await res.blob();
  const url = URL.createObjectURL(blob);
  const a = h('a', { href: url, download: exportFileName(res.headers.get('Content-Disposition'), format), hidden: true });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60000);
  toast(format === 'json' ? 'Chat exported as JSON.' : 'Chat exported as Markdown.');
}

// importButton is the sidebar's "Import chat": a file picker for a JSON
// export; the new (or earlier imported) chat opens.
export function importButton(app) {
  const input = h('input', { type: 'file', accept: 'application/json,.json', id: 'import-chat-file', class: 'sr-only', tabindex: -1, 'aria-hidden': 'true' });
  input.addEventListener('change', async () => {
    const file = input.files && input.files[0];
    input.value = '';
    if (!file) return;
    let doc;
    try {
      doc = JSON.parse(await file.text());
    } catch {
      toast('Could not import the chat', 'error', `${file.name} is not a JSON chat export.`);
      return;
    }
    try {
      const res = await fetch(`${API}/chats/import`, {
        method: 'POST', credentials: 'same-origin',
        headers: { 'Content-Type': 'application/json', Accept: 'application/json' }, body: JSON.stringify(doc),
      });
      const body = await res.json().catch(() => ({}));
      if (!res.ok) throw new ApiError(res.status, body);
      toast(importSummary(res.status, body));
      if (app.sidebar) await app.sidebar.refresh();
      app.navigate(`/chats/${body.id}`);
    } catch (x) {
      toast('Could not import the chat', 'error', [x.message, x.detail].filter(Boolean).join(' '));
    }
  });
  const btn = h('button', { type: 'button', class: 'side-btn import-chat', onclick: () => input.click() }, icon('clip'), h('span', { text: 'Import chat' }));
  return h('div', { class: 'import-wrap' }, btn, input);
}
