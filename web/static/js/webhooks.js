// Webhooks in Settings: the caller's webhooks (an admin sees all), a form
// to register one, each one's recent deliveries, and delete.

import { h, icon, formatTime } from './dom.js';
import { api } from './api.js';
import { dialog } from './widgets.js';

const EVENTS = ['turn.completed', 'turn.failed', 'chat.requires_action', 'tool.approval_requested'];

function errorText(e) { return e && e.message ? e.message : String(e); }

// WebhooksSection is a section of the settings page (the shape of
// settings.js' sections: el with an h2, load(), fail()).
export class WebhooksSection {
  constructor(view) {
    this.view = view;
    this.error = h('p', { class: 'form-error set-error', role: 'alert' });
    this.body = h('div', { class: 'set-body' });
    this.url = h('input', { class: 'text-input mono', id: 'webhook-url', type: 'url', placeholder: 'https://example.com/hooks/chatd', 'aria-label': 'Webhook URL' });
    this.events = EVENTS.map((e) => h('label', { class: 'check' }, h('input', { type: 'checkbox', value: e, checked: e === 'turn.completed' }), ' ' + e));
    this.secret = h('p', { class: 'webhook-secret mono', hidden: true });
    const form = h('form', { class: 'webhook-form', 'aria-label': 'Add a webhook', onsubmit: (e) => { e.preventDefault(); this.create(); } },
      this.url, h('div', { class: 'row' }, this.events),
      h('div', { class: 'row-end' }, h('button', { type: 'submit', class: 'btn primary' }, icon('plus'), 'Add webhook')));
    this.el = h('section', { class: 'set-section', id: 'settings-webhooks', 'aria-labelledby': 'settings-webhooks-h' },
      h('div', { class: 'set-head' }, h('h2', { id: 'settings-webhooks-h', text: 'Webhooks' })),
      h('p', { class: 'muted set-help', text: 'chatd POSTs signed events (Chatd-Signature: sha256=HMAC of the body) to these URLs, retrying for 24 hours.' }),
      form, this.secret, this.error, this.body);
  }

  fail(e) { this.error.textContent = errorText(e); }

  async load() {
    const hooks = await api('GET', '/webhooks');
    this.body.replaceChildren(...hooks.map((w) => this.row(w)));
    if (!hooks.length) this.body.replaceChildren(h('p', { class: 'muted', text: 'No webhooks.' }));
  }

  row(w) {
    const deliveries = h('ul', { class: 'webhook-deliveries' });
    const show = h('button', { type: 'button', class: 'btn ghost', onclick: async () => {
      try {
        const ds = await api('GET', `/webhooks/${w.id}/deliveries?limit=20`);
        deliveries.replaceChildren(...ds.map((d) => h('li', { class: `delivery ${d.status}` },
          `${formatTime(new Date(d.created_at))} ${d.event}: ${d.status} (${d.attempts} attempt${d.attempts === 1 ? '' : 's'})`,
          d.last_error ? h('span', { class: 'muted', text: ` ${d.last_error}` }) : null)));
        if (!ds.length) deliveries.replaceChildren(h('li', { class: 'muted', text: 'No deliveries yet.' }));
      } catch (e) { this.fail(e); }
    } }, 'Deliveries');
    const del = h('button', { type: 'button', class: 'icon-btn', 'aria-label': `Delete webhook ${w.url}`, onclick: async () => {
      if (!(await dialog({ title: 'Delete this webhook?', message: w.url, confirm: 'Delete', danger: true }))) return;
      try { await api('DELETE', `/webhooks/${w.id}`); await this.load(); } catch (e) { this.fail(e); }
    } }, icon('trash'));
    return h('div', { class: 'webhook', dataset: { id: w.id } },
      h('div', {}, h('strong', { class: 'mono', text: w.url }),
        h('span', { class: 'muted', text: ` · ${w.events.join(', ')}${w.owner_id ? '' : ' · global'}${w.chat_id ? ' · one chat' : ''}` })),
      h('div', { class: 'row-end' }, show, del), deliveries);
  }

  async create() {
    this.error.textContent = '';
    const events = this.events.map((l) => l.querySelector('input')).filter((i) => i.checked).map((i) => i.value);
    try {
      const w = await api('POST', '/webhooks', { url: this.url.value.trim(), events });
      this.url.value = '';
      this.secret.hidden = false;
      this.secret.textContent = `Signing secret (shown once): ${w.secret}`;
      await this.load();
    } catch (e) {
      this.fail(e);
    }
  }
}
