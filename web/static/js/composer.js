// The composer: a growing textarea with a per-chat draft, the model and
// reasoning pickers, Send / Stop, the queue-or-interrupt toggle for busy
// chats, and the slash-command popup (/compact, /clear, /title).

import { h, icon, local, debounce } from './dom.js';
import { Attachments } from './attach.js';
import { mountBudgetNotice } from './usage.js';

export const COMMANDS = [
  { name: 'compact', hint: 'Summarize older messages to free up context' },
  { name: 'clear', hint: 'Start a fresh context; the transcript stays visible' },
  { name: 'title', hint: 'Rename this chat: /title New name', arg: true },
];

// parseCommand returns {name, arg} for "/compact", "/clear", "/title x".
export function parseCommand(text) {
  const m = /^\/(compact|clear|title)(?:\s+([\s\S]*))?$/.exec(text.trim());
  return m ? { name: m[1], arg: (m[2] || '').trim() } : null;
}

const EFFORTS = [
  ['', 'Default effort'], ['minimal', 'Minimal'], ['low', 'Low effort'], ['medium', 'Medium effort'], ['high', 'High effort'],
];

export class Composer {
  // opts: {draftKey, models, placeholder, onSend(text, behavior, files),
  //        onStop(), onCommand(cmd), onEditLast(), commands: bool, tools: an
  //        optional popover part ({el, mount(host)}) whose button sits beside
  //        the pickers, attach: bool (files: attach.js; their parts go to onSend)}
  constructor(opts) {
    this.opts = opts;
    this.busy = false;
    this.running = false;
    this.popupIndex = 0;
    this.textarea = h('textarea', {
      id: 'composer-input', class: 'composer-input', rows: 1, placeholder: opts.placeholder || 'Message chatd',
      'aria-label': 'Message', autocomplete: 'off', spellcheck: 'true', 'aria-describedby': 'composer-hint',
    });
    this.textarea.value = local.get(opts.draftKey, '') || '';
    this.popup = h('div', { id: 'slash-popup', class: 'slash-popup', role: 'listbox', 'aria-label': 'Commands', 'aria-live': 'polite', hidden: true });

    this.model = h('select', { class: 'picker', 'aria-label': 'Model', title: 'Model' });
    this.effort = h('select', { class: 'picker effort', 'aria-label': 'Reasoning effort', title: 'Reasoning effort' },
      EFFORTS.map(([v, l]) => h('option', { value: v, text: l })));
    this.effort.value = local.get('chatd.effort', '') || '';
    this.effort.addEventListener('change', () => local.set('chatd.effort', this.effort.value));
    this.model.addEventListener('change', () => {
      local.set('chatd.model', this.model.value);
      if (this.attachments) this.attachments.recheck();
    });
    this.setModels(opts.models || []);

    const behavior = local.get('chatd.busyBehavior', 'queue');
    this.queueBtn = h('button', { type: 'button', class: 'seg', 'aria-pressed': String(behavior === 'queue'), onclick: () => this.setBehavior('queue') }, 'Queue');
    this.interruptBtn = h('button', { type: 'button', class: 'seg', 'aria-pressed': String(behavior === 'interrupt'), onclick: () => this.setBehavior('interrupt') }, 'Interrupt');
    this.toggle = h('div', { class: 'busy-toggle', role: 'group', 'aria-label': 'While the chat is busy, new messages', title: 'While the chat is busy, new messages…', hidden: true },
      this.queueBtn, this.interruptBtn);
    this.behavior = behavior;

    this.sendBtn = h('button', { type: 'submit', class: 'send-btn', 'aria-label': 'Send message', title: 'Send (Enter)' }, icon('send'));
    this.stopBtn = h('button', { type: 'button', class: 'stop-btn', 'aria-label': 'Stop', title: 'Stop (Esc)', hidden: true, onclick: () => opts.onStop && opts.onStop() }, icon('stop'));

    this.attachments = opts.attach ? new Attachments({ onChange: () => this.updateButtons(), model: () => this.chosenModel() }) : null;
    const att = this.attachments;
    this.form = h('form', { class: 'composer', onsubmit: (e) => { e.preventDefault(); this.submit(); } },
      this.popup,
      att ? att.tray : null,
      this.textarea,
      h('div', { class: 'composer-bar' },
        att ? att.button : null, att ? att.input : null,
        opts.tools ? opts.tools.el : null, this.model, this.effort,
        // The busy toggle, Stop and Send stay together at the right; on a
        // narrow screen they wrap below the pickers as one group rather
        // than leave the window.
        h('span', { class: 'composer-actions' }, this.toggle, this.stopBtn, this.sendBtn)));
    if (opts.tools) opts.tools.mount(this.form);
    if (att) att.mount(this.form, this.textarea);
    this.el = h('div', { class: 'composer-wrap' }, this.form,
      h('p', { id: 'composer-hint', class: 'composer-hint' },
        'Enter to send · Shift+Enter for a new line', opts.commands ? ' · / for commands' : ''));

    this.refreshBudget = () => mountBudgetNotice(this.el);
    this.refreshBudget();
    this.saveDraft = debounce(() => local.set(opts.draftKey, this.textarea.value), 250);
    this.textarea.addEventListener('input', () => {
      this.autosize();
      this.saveDraft();
      this.updatePopup();
      this.updateButtons();
    });
    this.textarea.addEventListener('keydown', (e) => this.onKey(e));
    this.textarea.addEventListener('blur', () => setTimeout(() => this.hidePopup(), 150));
    requestAnimationFrame(() => this.autosize());
    this.updateButtons();
  }

  // chosenModel is the picker's model (a ChatModel), if any.
  chosenModel() { return (this.models || []).find((m) => m.id === this.model.value) || null; }

  setModels(models, chosen) {
    this.models = models;
    const saved = chosen || local.get('chatd.model', '');
    this.model.replaceChildren(...models.map((m) => h('option', { value: m.id, text: m.display_name || `${m.provider}/${m.model}` })));
    const def = models.find((m) => m.id === saved) || models.find((m) => m.default || m.is_default) || models[0];
    if (def) this.model.value = def.id;
    this.model.hidden = models.length === 0;
    if (this.attachments) this.attachments.recheck();
  }

  setBehavior(b) {
    this.behavior = b;
    local.set('chatd.busyBehavior', b);
    this.queueBtn.setAttribute('aria-pressed', String(b === 'queue'));
    this.interruptBtn.setAttribute('aria-pressed', String(b === 'interrupt'));
    this.updateButtons();
  }

  // setState tells the composer whether the chat is busy (messages queue),
  // running (Stop is offered), and locked (archived: nothing can be sent
  // until it is unarchived; the draft is kept).
  setState({ busy, running, stopping, locked }) {
    this.busy = !!busy;
    this.running = !!running;
    this.stopping = !!stopping;
    if (!!locked !== !!this.locked) {
      this.locked = !!locked;
      this.textarea.disabled = this.locked;
      this.textarea.placeholder = this.locked ? 'Unarchive this chat to send a message' : (this.opts.placeholder || 'Message chatd');
      this.form.classList.toggle('locked', this.locked);
      if (this.locked) this.hidePopup();
    }
    this.updateButtons();
  }

  updateButtons() {
    const att = this.attachments;
    const hasText = this.textarea.value.trim() !== '' || !!(att && att.ready);
    this.toggle.hidden = !this.busy;
    this.stopBtn.hidden = !this.running;
    this.stopBtn.disabled = !!this.stopping;
    // While running, Send becomes Stop; typed text still goes to the queue.
    this.sendBtn.hidden = this.running && !hasText;
    this.sendBtn.disabled = !hasText || !!this.locked || !!(att && att.uploading);
    if (att) att.button.disabled = !!this.locked;
    const label = this.busy ? (this.behavior === 'interrupt' ? 'Interrupt and send' : 'Add to queue') : 'Send message';
    this.sendBtn.setAttribute('aria-label', label);
    this.sendBtn.title = label + ' (Enter)';
    this.sendBtn.classList.toggle('queue-mode', this.busy);
  }

  autosize() {
    const ta = this.textarea;
    ta.style.height = 'auto';
    ta.style.height = Math.min(ta.scrollHeight, Math.round(window.innerHeight * 0.4)) + 'px';
  }

  get value() { return this.textarea.value; }

  set value(v) {
    this.textarea.value = v;
    local.set(this.opts.draftKey, v);
    this.autosize();
    this.updateButtons();
  }

  clear() {
    this.value = '';
    if (this.attachments) this.attachments.clear();
  }

  focus() { this.textarea.focus(); }

  submit() {
    const text = this.textarea.value.trim();
    const att = this.attachments;
    const files = att ? att.parts() : [];
    if ((!text && !files.length) || this.locked || (att && att.uploading)) return;
    const cmd = this.opts.commands && !files.length ? parseCommand(text) : null;
    this.hidePopup();
    if (cmd) {
      this.clear();
      this.opts.onCommand(cmd);
      return;
    }
    this.opts.onSend(text, this.behavior, files);
  }

  onKey(e) {
    if (!this.popup.hidden) {
      const items = [...this.popup.children];
      if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
        e.preventDefault();
        this.popupIndex = (this.popupIndex + (e.key === 'ArrowDown' ? 1 : -1) + items.length) % items.length;
        this.highlightPopup();
        return;
      }
      if (e.key === 'Tab' || (e.key === 'Enter' && !e.shiftKey)) {
        const c = this.matches[this.popupIndex];
        const typed = this.textarea.value.trim();
        if (c && (e.key === 'Tab' || typed !== '/' + c.name)) {
          e.preventDefault();
          this.complete(c);
          return;
        }
      }
      if (e.key === 'Escape') {
        e.preventDefault();
        e.stopPropagation();
        this.hidePopup();
        return;
      }
    }
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      this.submit();
    } else if (e.key === 'ArrowUp' && this.textarea.value === '' && this.opts.onEditLast) {
      if (this.opts.onEditLast()) e.preventDefault();
    }
  }

  complete(c) {
    this.value = '/' + c.name + (c.arg ? ' ' : '');
    this.hidePopup();
    this.textarea.focus();
    if (!c.arg) this.updatePopup();
  }

  updatePopup() {
    const v = this.textarea.value;
    if (!this.opts.commands || !/^\/\w*$/.test(v)) {
      this.hidePopup();
      return;
    }
    const q = v.slice(1).toLowerCase();
    this.matches = COMMANDS.filter((c) => c.name.startsWith(q));
    if (!this.matches.length) {
      this.hidePopup();
      return;
    }
    this.popupIndex = Math.min(this.popupIndex, this.matches.length - 1);
    this.popup.replaceChildren(...this.matches.map((c, i) => h('div', {
      class: 'slash-item', role: 'option', id: `slash-${c.name}`, 'aria-selected': String(i === this.popupIndex),
      onmousedown: (e) => { e.preventDefault(); this.complete(c); },
    }, h('span', { class: 'slash-name', text: '/' + c.name }), h('span', { class: 'slash-hint', text: c.hint }))));
    this.popup.hidden = false;
    this.highlightPopup();
  }

  highlightPopup() {
    [...this.popup.children].forEach((el, i) => el.setAttribute('aria-selected', String(i === this.popupIndex)));
  }

  hidePopup() {
    this.popup.hidden = true;
  }
}
