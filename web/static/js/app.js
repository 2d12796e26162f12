// chatd's web UI: routing (/login, /, /chats/{id}), the app shell with the
// sidebar, login by token (also from the URL fragment of the first-start
// login link), and global keyboard shortcuts.

import { shortcutOf, showShortcuts } from './shortcuts.js';
import { h, icon, local, copyText, flashCopied } from './dom.js';
import { api, ApiError, onUnauthorized } from './api.js';
import { Sidebar } from './sidebar.js';
import { ChatView } from './chat.js';
import { NewChatView } from './newchat.js';
import { ProjectsView, ProjectView } from './project.js';
import { SettingsView } from './settings.js';
import { UsageView } from './usage.js';
import { openMenu, toast } from './widgets.js';
import { scheduleDialog } from './schedule.js';
import { chatSettingsDialog, exportChat } from './chatio.js';

const NARROW = window.matchMedia('(max-width: 800px)');

class App {
  constructor(root) {
    this.root = root;
    this.me = null;
    this.models = [];
    this.view = null;
    this.sidebar = null;
    onUnauthorized(() => {
      if (location.pathname !== '/login') this.navigate('/login', { replace: true });
    });
    window.addEventListener('popstate', () => this.route());
    document.addEventListener('click', (e) => this.onClick(e));
    document.addEventListener('keydown', (e) => this.onKey(e));
    NARROW.addEventListener('change', () => this.applySidebar());
    // Back in this tab: models may have changed in another.
    document.addEventListener('visibilitychange', () => {
      if (document.visibilityState === 'visible' && this.sidebar) this.refreshModels();
    });
  }

  onClick(e) {
    const copy = e.target.closest('[data-copy-code]');
    if (copy) {
      const code = copy.closest('.codeblock').querySelector('code');
      copyText(code.textContent).then((ok) => ok && flashCopied(copy));
      return;
    }
    const a = e.target.closest('a[data-link]');
    if (a && !e.defaultPrevented && e.button === 0 && !e.metaKey && !e.ctrlKey && !e.shiftKey && !e.altKey) {
      e.preventDefault();
      if (NARROW.matches) this.toggleSidebar(false);
      this.navigate(a.getAttribute('href'));
      return;
    }
    if (e.target.classList.contains('backdrop')) this.toggleSidebar(false);
  }

  onKey(e) {
    const sc = this.sidebar && !e.defaultPrevented ? shortcutOf(e) : null;
    if (sc === 'new-chat') {
      e.preventDefault();
      this.navigate('/');
    } else if (sc === 'help') {
      e.preventDefault();
      showShortcuts();
    } else if ((e.ctrlKey || e.metaKey) && e.key.toLowerCase() === 'k' && this.sidebar) {
      e.preventDefault();
      this.sidebar.focusSearch();
    } else if (e.key === 'Escape' && NARROW.matches && document.body.classList.contains('drawer-open') && !document.querySelector('.menu, dialog[open]')) {
      this.toggleSidebar(false);
    }
  }

  navigate(path, { replace = false } = {}) {
    if (path !== location.pathname + location.search) {
      if (replace) history.replaceState(null, '', path);
      else history.pushState(null, '', path);
    }
    this.route();
  }

  async route() {
    const path = location.pathname;
    if (path === '/login') {
      this.showLogin();
      return;
    }
    if (!this.me && !(await this.loadSession())) return;
    this.ensureShell();
    const m = /^\/chats\/([0-9a-fA-F-]{36})\/?$/.exec(path);
    const project = /^\/projects\/([0-9a-fA-F-]{36})\/?$/.exec(path);
    if (this.view) this.view.destroy();
    if (m) {
      this.view = new ChatView(this, m[1].toLowerCase());
      this.sidebar.setActive(m[1].toLowerCase());
    } else if (project) {
      this.view = new ProjectView(this, project[1].toLowerCase());
      this.sidebar.setActive(null);
    } else if (path === '/settings' || path === '/settings/') {
      this.view = new SettingsView(this);
      this.sidebar.setActive(null);
    } else if (path === '/usage' || path === '/usage/') {
      this.view = new UsageView(this);
      this.sidebar.setActive(null);
    } else if (path === '/projects' || path === '/projects/') {
      this.view = new ProjectsView(this);
      this.sidebar.setActive(null);
    } else {
      if (path !== '/') history.replaceState(null, '', '/' + location.search);
      this.view = new NewChatView(this);
      this.sidebar.setActive(null);
      document.title = 'chatd';
    }
    this.main.replaceChildren(this.view.el);
    this.view.mounted();
  }

  async loadSession() {
    try {
      this.me = await api('GET', '/users/me', undefined, { quiet401: true });
    } catch (e) {
      if (e instanceof ApiError && e.status === 401) {
        this.navigate('/login', { replace: true });
      } else {
        this.root.replaceChildren(h('div', { class: 'center-page' }, h('div', { class: 'card' },
          h('h1', { text: 'chatd is not reachable' }),
          h('p', { class: 'muted', text: e.message }),
          h('button', { type: 'button', class: 'btn primary', onclick: () => location.reload() }, 'Try again'))));
      }
      return false;
    }
    try {
      const r = await api('GET', '/chats/models');
      this.models = (r && r.models) || [];
    } catch {
      this.models = [];
    }
    return true;
  }

  // refreshModels re-reads the models (a change in Settings, here or in
  // another tab) and gives them to the open view's composer, its choice kept.
  async refreshModels() {
    try {
      const r = await api('GET', '/chats/models');
      this.models = (r && r.models) || [];
    } catch {
      return;
    }
    const c = this.view && this.view.composer;
    if (c && c.setModels) c.setModels(this.models, c.model.value || undefined);
  }

  ensureShell() {
    if (this.sidebar) return;
    this.sidebar = new Sidebar(this);
    this.main = h('main', { class: 'main', id: 'main' });
    this.root.replaceChildren(
      h('a', { class: 'skip-link', href: '#composer-input' }, 'Skip to message box'),
      this.sidebar.el,
      h('div', { class: 'backdrop', 'aria-hidden': 'true' }),
      this.main);
    this.root.removeAttribute('aria-busy');
    this.applySidebar();
    this.sidebar.refresh();
  }

  // The sidebar is a column that can be hidden on wide screens and a
  // drawer on narrow ones.
  toggleSidebar(open) {
    if (NARROW.matches) {
      document.body.classList.toggle('drawer-open', open);
      if (open) requestAnimationFrame(() => this.sidebar.el.querySelector('.new-chat').focus());
    } else {
      local.set('chatd.sidebarHidden', open ? null : true);
      this.applySidebar();
    }
    for (const b of document.querySelectorAll('.sidebar-toggle')) b.setAttribute('aria-expanded', String(this.sidebarOpen()));
  }

  sidebarOpen() {
    return NARROW.matches ? document.body.classList.contains('drawer-open') : !local.get('chatd.sidebarHidden', false);
  }

  applySidebar() {
    document.body.classList.toggle('sidebar-hidden', !NARROW.matches && !!local.get('chatd.sidebarHidden', false));
    if (!NARROW.matches) document.body.classList.remove('drawer-open');
    for (const b of document.querySelectorAll('.sidebar-toggle')) b.setAttribute('aria-expanded', String(this.sidebarOpen()));
  }

  sidebarButton() {
    return h('button', {
      type: 'button', class: 'icon-btn sidebar-toggle', 'aria-label': 'Show sidebar', title: 'Show sidebar',
      'aria-controls': 'sidebar', 'aria-expanded': String(this.sidebarOpen()),
      onclick: () => this.toggleSidebar(!this.sidebarOpen()),
    }, icon('menu'));
  }

  chatMenu(chat, anchor) {
    const items = this.sidebar.menuItems(chat).map((it) => it.label === 'Rename'
      ? { ...it, onSelect: () => this.sidebar.renameDialog(chat) } : it);
    const at = items.findIndex((it) => it.danger);
    items.splice(at < 0 ? items.length : at, 0, { label: 'Schedule', icon: 'clock', onSelect: () => scheduleDialog(chat) },
      { label: 'Chat settings', icon: 'gear', onSelect: () => chatSettingsDialog(chat) },
      { label: 'Export as Markdown', icon: 'down', onSelect: () => exportChat(chat, 'markdown') },
      { label: 'Export as JSON', icon: 'down', onSelect: () => exportChat(chat, 'json') });
    openMenu(anchor, items);
  }

  onChatsLoaded(chats) {
    if (this.view instanceof ChatView) {
      const c = chats.find((x) => x.id === this.view.id);
      if (c && this.view.chat && c.title !== this.view.chat.title) this.view.setChatFields({ title: c.title });
    }
  }

  onChatPatched(id, fields) {
    if (this.view instanceof ChatView && this.view.id === id) this.view.setChatFields(fields);
  }

  async logout() {
    try {
      await api('POST', '/auth/logout');
    } catch { /* the cookie is cleared either way on the next 401 */ }
    this.me = null;
    if (this.view) this.view.destroy();
    this.view = null;
    if (this.sidebar) this.sidebar.destroy();
    this.sidebar = null;
    this.navigate('/login');
  }

  showLogin() {
    if (this.view) this.view.destroy();
    this.view = null;
    if (this.sidebar) this.sidebar.destroy();
    this.sidebar = null;
    this.me = null;
    document.title = 'Sign in · chatd';
    // A login link carries a one-time code (or, in tests and old links, a
    // token) in the fragment (never sent to the server, never logged); take
    // it and clear it from the address bar.
    const frag = new URLSearchParams(location.hash.slice(1));
    const fromCode = frag.get('code');
    const fromLink = frag.get('token');
    if (location.hash) history.replaceState(null, '', '/login');

    const input = h('input', { id: 'token', class: 'text-input', type: 'password', autocomplete: 'current-password', required: true, 'aria-describedby': 'login-help' });
    const err = h('p', { class: 'form-error', role: 'alert' });
    const btn = h('button', { type: 'submit', class: 'btn primary wide' }, 'Sign in');
    // body is {token} or {code}; a used or expired code gets the server's
    // message, which says how to get a new link.
    const submit = async (body) => {
      err.textContent = '';
      btn.disabled = true;
      btn.textContent = 'Signing in…';
      try {
        await api('POST', '/auth/login', body, { quiet401: true });
        this.navigate('/', { replace: true });
      } catch (e) {
        // A login link opened again (a reload, a second click) while its
        // browser is already signed in: go on to the app, no error.
        if (body.code && await api('GET', '/users/me', undefined, { quiet401: true }).then(() => true, () => false)) {
          this.navigate('/', { replace: true });
          return;
        }
        btn.disabled = false;
        btn.textContent = 'Sign in';
        err.textContent = body.code ? [e.message, e.detail].filter(Boolean).join(' ')
          : e instanceof ApiError && e.status === 401 ? 'That token is not valid.' : e.message;
        input.focus();
      }
    };
    const form = h('form', { class: 'card login-card', onsubmit: (e) => { e.preventDefault(); if (input.value.trim()) submit({ token: input.value.trim() }); } },
      h('div', { class: 'login-mark', 'aria-hidden': 'true' }, icon('chat')),
      h('h1', { text: 'Sign in to chatd' }),
      h('label', { for: 'token', class: 'field-label', text: 'API token' }),
      input,
      h('p', { id: 'login-help', class: 'muted small', text: 'Use a login link (printed on the first start, or by “chatd login-link”), or a token from “chatd token create”.' }),
      err, btn);
    this.root.replaceChildren(h('main', { class: 'center-page' }, form));
    this.root.removeAttribute('aria-busy');
    if (fromCode || fromLink) {
      submit(fromCode ? { code: fromCode } : { token: fromLink });
      return;
    }
    input.focus();
    // Already signed in (a bookmark of /login): go on to the app.
    api('GET', '/users/me', undefined, { quiet401: true }).then(() => {
      if (location.pathname === '/login' && !input.value) this.navigate('/', { replace: true });
    }, () => {});
  }
}

const app = new App(document.getElementById('app'));
app.route();
window.addEventListener('unhandledrejection', (e) => {
  if (e.reason && e.reason.name === 'AbortError') return;
  toast('Something went wrong', 'error', String(e.reason && e.reason.message || e.reason));
});

