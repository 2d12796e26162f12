// The sidebar: New chat, search (Ctrl/Cmd+K), label filter, the chat list
// grouped Pinned / Today / Earlier with status dots and per-chat menus,
// and the Archived view.

import { h, icon, isToday, debounce, THEMES, theme, setTheme } from './dom.js';
import { api } from './api.js';
import { openMenu, dialog, toast } from './widgets.js';
import { ChatWatch } from './watch.js';
import { importButton } from './chatio.js';

// PAGE chats come at a time; scrolling to the end of the list loads the
// next page (GET /chats?after_id=…). A refresh asks again for as many as
// are shown and some, up to the server's MAX_LIST.
const PAGE = 200;
const MAX_LIST = 500;

const STATUS_LABEL = {
  running: 'Running', interrupting: 'Stopping', requires_action: 'Needs your action', error: 'Error',
};

// snippetEl shows a search snippet from a little before the match (the
// sidebar is narrow), the match marked. The store folds case like
// toLowerCase, one character for one, so the indexes line up.
function snippetEl(text, query) {
  const at = text.toLowerCase().indexOf(query.toLowerCase());
  if (at < 0) return h('span', { class: 'chat-snippet', text });
  const from = Math.max(0, at - 16);
  return h('span', { class: 'chat-snippet' }, (from > 0 ? '…' : '') + text.slice(from, at),
    h('mark', { text: text.slice(at, at + query.length) }), text.slice(at + query.length));
}

export class Sidebar {
  constructor(app) {
    this.app = app;
    this.chats = null; // null until the first load
    this.archived = false;
    this.query = '';
    this.label = '';
    this.labels = new Set();
    this.activeId = null;
    this.renamingId = null;
    this.seq = 0;

    this.search = h('input', {
      type: 'search', class: 'search-input', placeholder: 'Search chats', 'aria-label': 'Search chats',
      autocomplete: 'off', enterkeyhint: 'search',
    });
    const kbd = /Mac|iPhone|iPad/.test(navigator.platform || '') ? '⌘K' : 'Ctrl K';
    this.search.addEventListener('input', debounce(() => {
      this.query = this.search.value.trim();
      this.refresh();
    }, 200));
    this.search.addEventListener('keydown', (e) => {
      if (e.key === 'ArrowDown') {
        // Down from the search box walks into its results.
        const first = this.list.querySelector('.chat-link');
        if (first) { e.preventDefault(); first.focus(); }
        return;
      }
      if (e.key === 'Escape' && this.search.value) {
        e.stopPropagation();
        this.search.value = '';
        this.query = '';
        this.refresh();
      }
    });
    this.labelSelect = h('select', { class: 'picker label-filter', 'aria-label': 'Filter by label', hidden: true });
    this.labelSelect.addEventListener('change', () => {
      this.label = this.labelSelect.value;
      this.refresh();
    });
    this.list = h('nav', { class: 'chat-list', 'aria-label': 'Chats' });
    this.more = false; // the last page was full: there may be more
    this.moreBtn = h('button', { type: 'button', class: 'side-more', onclick: () => this.loadMore() }, 'Load more chats');
    // The button loads the next page as soon as it scrolls into view.
    this.moreSeen = typeof IntersectionObserver === 'function'
      ? new IntersectionObserver((entries) => { if (entries.some((e) => e.isIntersecting)) this.loadMore(); }, { root: this.list, rootMargin: '0px 0px 300px 0px' })
      : null;
    this.watchMore();
    // Up and Down move between the chats (search results included); Up
    // from the first goes back to the search box.
    this.list.addEventListener('keydown', (e) => {
      if ((e.key !== 'ArrowDown' && e.key !== 'ArrowUp') || !e.target.classList.contains('chat-link')) return;
      const links = [...this.list.querySelectorAll('.chat-link')];
      const next = links.indexOf(e.target) + (e.key === 'ArrowDown' ? 1 : -1);
      e.preventDefault();
      if (next < 0) this.search.focus();
      else if (next < links.length) links[next].focus();
    });
    this.archivedBtn = h('button', { type: 'button', class: 'side-btn', 'aria-pressed': 'false', onclick: () => this.toggleArchived() },
      icon('archive'), h('span', { text: 'Archived' }));
    this.userName = h('span', { class: 'user-name', text: app.me ? app.me.username : '' });

    this.el = h('aside', { class: 'sidebar', id: 'sidebar', 'aria-label': 'Sidebar' },
      h('div', { class: 'sidebar-top' },
        h('a', { class: 'brand', href: '/', 'data-link': true, 'aria-label': 'chatd home' },
          h('span', { class: 'brand-mark', 'aria-hidden': 'true' }, icon('chat')), 'chatd'),
        h('button', { type: 'button', class: 'icon-btn', 'aria-label': 'Hide sidebar', title: 'Hide sidebar', onclick: () => app.toggleSidebar(false) }, icon('sidebar'))),
      h('a', { class: 'btn new-chat', href: '/', 'data-link': true }, icon('plus'), h('span', { text: 'New chat' })),
      h('div', { class: 'search' }, icon('search'), this.search, h('kbd', { text: kbd, 'aria-hidden': 'true' })),
      this.labelSelect,
      this.list,
      h('div', { class: 'sidebar-bottom' },
        h('a', { class: 'side-btn projects-link', href: '/projects', 'data-link': true }, icon('folder'), h('span', { text: 'Projects' })),
        h('a', { class: 'side-btn usage-link', href: '/usage', 'data-link': true }, icon('chart'), h('span', { text: 'Usage' })),
        this.archivedBtn,
        importButton(app),
        h('div', { class: 'user' },
          h('span', { class: 'avatar', 'aria-hidden': 'true', text: (app.me && app.me.username || '?').slice(0, 1).toUpperCase() }),
          this.userName,
          h('a', { class: 'icon-btn settings-link', href: '/settings', 'data-link': true, 'aria-label': 'Settings', title: 'Settings' }, icon('gear')),
          this.themeBtn = h('button', { type: 'button', class: 'icon-btn theme-btn', onclick: () => this.cycleTheme() }),
          h('button', { type: 'button', class: 'icon-btn', 'aria-label': 'Log out', title: 'Log out', onclick: () => app.logout() }, icon('logout')))));
    this.showTheme();
    this.renderSkeleton();
    // The list follows the chat-list watch; a poll stays as the fallback:
    // every 5 s while the watch is down, every minute while it is up.
    this.watchUp = false;
    this.lastRefresh = 0;
    this.watch = new ChatWatch((e) => this.onWatch(e), (up) => {
      this.watchUp = up;
      if (up) this.refreshSoon(); // catch up on what happened while it was down
    });
    this.timer = setInterval(() => {
      const every = this.watchUp ? 60000 : 5000;
      if (Date.now() - this.lastRefresh >= every - 100 && this.idle()) this.refresh();
    }, 5000);
  }

  // idle: no rename or menu open, and the tab is shown (a refresh would
  // redraw under the user's hands).
  idle() { return document.visibilityState === 'visible' && !this.renamingId && !document.querySelector('.menu'); }

  // onWatch applies one chat-list event: status, title and archived are
  // patched in place; what changes the list's membership or order is
  // re-fetched (at most every 300 ms).
  onWatch(e) {
    const c = e.chat;
    const known = this.chats && this.chats.find((x) => x.id === c.id);
    if (known && e.kind !== 'deleted' && known.archived === c.archived) {
      this.patchLocal(c.id, { status: c.status, title: c.title, updated_at: c.updated_at, pin_order: c.pin_order });
      if (e.kind !== 'title_change') this.refreshSoon();
      return;
    }
    this.refreshSoon();
  }

  refreshSoon() {
    clearTimeout(this.soon);
    this.soon = setTimeout(() => {
      if (this.idle()) this.refresh();
      else this.refreshSoon();
    }, 300);
  }

  // cycleTheme switches System -> Light -> Dark -> System.
  cycleTheme() {
    const i = THEMES.findIndex(([v]) => v === theme());
    setTheme(THEMES[(i + 1) % THEMES.length][0]);
    this.showTheme();
  }

  showTheme() {
    const i = THEMES.findIndex(([v]) => v === theme());
    const [value, label, glyph] = THEMES[i];
    const next = THEMES[(i + 1) % THEMES.length][1];
    this.themeBtn.dataset.theme = value;
    this.themeBtn.setAttribute('aria-label', `Theme: ${label}`);
    this.themeBtn.title = `Theme: ${label} (switch to ${next})`;
    this.themeBtn.replaceChildren(icon(glyph));
  }

  focusSearch() {
    this.app.toggleSidebar(true);
    this.search.focus();
    this.search.select();
  }

  toggleArchived() {
    this.archived = !this.archived;
    this.archivedBtn.setAttribute('aria-pressed', String(this.archived));
    this.archivedBtn.querySelector('span').textContent = this.archived ? 'Back to chats' : 'Archived';
    this.chats = null;
    this.renderedSig = null;
    this.renderSkeleton();
    this.refresh();
  }

  setActive(id) {
    this.activeId = id;
    for (const el of this.list.querySelectorAll('.chat-item')) {
      const on = el.dataset.id === id;
      el.classList.toggle('active', on);
      const a = el.querySelector('a');
      if (a) {
        if (on) a.setAttribute('aria-current', 'page');
        else a.removeAttribute('aria-current');
      }
    }
  }

  // patchLocal updates one chat in the list without a round trip (status
  // changes seen on the chat's stream).
  patchLocal(id, fields) {
    if (!this.chats) return;
    const c = this.chats.find((x) => x.id === id);
    if (!c) return;
    let changed = false;
    for (const [k, v] of Object.entries(fields)) if (c[k] !== v) { c[k] = v; changed = true; }
    if (changed) this.render();
  }

  async refresh() {
    const seq = ++this.seq;
    this.lastRefresh = Date.now();
    // As many as are shown, and room for new ones, so nothing shown drops off.
    const limit = Math.min(MAX_LIST, Math.max(PAGE, this.chats && this.chats.length > PAGE ? this.chats.length + 50 : 0));
    try {
      const chats = await api('GET', '/chats?' + this.listQuery(limit));
      if (seq !== this.seq) return;
      this.chats = chats || [];
      this.more = this.chats.length === limit;
      for (const c of this.chats) for (const [k, v] of Object.entries(c.labels || {})) this.labels.add(`${k}:${v}`);
      this.render();
      this.app.onChatsLoaded(this.chats);
    } catch (e) {
      if (seq === this.seq && this.chats === null) {
        this.list.replaceChildren(h('p', { class: 'side-empty', text: 'Could not load chats: ' + e.message }));
      }
    }
  }

  listQuery(limit, afterId) {
    const q = new URLSearchParams({ limit: String(limit) });
    if (this.query) q.set('q', this.query);
    if (this.archived) q.set('archived', 'true');
    if (this.label) q.set('label', this.label);
    if (afterId) q.set('after_id', afterId);
    return q;
  }

  // loadMore appends the page after the last chat shown; a refresh that
  // starts meanwhile wins.
  async loadMore() {
    if (!this.more || this.loadingMore || !this.chats || !this.chats.length) return;
    this.loadingMore = true;
    this.moreBtn.disabled = true;
    this.moreBtn.textContent = 'Loading…';
    const seq = this.seq;
    try {
      const page = (await api('GET', '/chats?' + this.listQuery(PAGE, this.chats[this.chats.length - 1].id))) || [];
      if (seq !== this.seq) return;
      const have = new Set(this.chats.map((c) => c.id));
      this.chats.push(...page.filter((c) => !have.has(c.id)));
      this.more = page.length === PAGE;
      for (const c of page) for (const [k, v] of Object.entries(c.labels || {})) this.labels.add(`${k}:${v}`);
      this.render();
    } catch (e) {
      toast('Could not load more chats', 'error', e.message);
    } finally {
      this.loadingMore = false;
      this.moreBtn.disabled = false;
      this.moreBtn.textContent = 'Load more chats';
      this.watchMore();
    }
  }

  // watchMore (re)starts watching the "Load more" button: observing
  // reports its visibility at once, so a button still in view after a
  // load that lost to a refresh, or came while another ran, loads again
  // (an observer only reports changes).
  watchMore() {
    if (!this.moreSeen) return;
    this.moreSeen.unobserve(this.moreBtn);
    if (this.more) this.moreSeen.observe(this.moreBtn);
  }

  renderSkeleton() {
    this.list.replaceChildren(h('div', { class: 'skeleton-list', 'aria-label': 'Loading chats', role: 'status' },
      [70, 85, 55, 75, 60].map((w) => h('div', { class: `skeleton-line w${w}` }))));
  }

  renderLabels() {
    const labels = [...this.labels].sort();
    this.labelSelect.hidden = labels.length === 0 && !this.label;
    const cur = this.label;
    this.labelSelect.replaceChildren(h('option', { value: '', text: 'All labels' }),
      ...labels.map((l) => h('option', { value: l, text: l.replace(':', ': ') })));
    this.labelSelect.value = cur;
  }

  render(force) {
    if (!this.chats) return;
    const sig = JSON.stringify([this.chats.map((c) => [c.id, c.title, c.status, c.pin_order, c.archived, c.updated_at, c.root_chat_id, c.search_snippet]),
      this.activeId, this.renamingId, this.archived, [...this.labels], this.label, this.query, this.more]);
    if (sig === this.renderedSig && !force) return;
    this.renderedSig = sig;
    this.renderLabels();
    const chats = this.chats;
    if (!chats.length) {
      const msg = this.query || this.label ? 'No chats match.' : this.archived ? 'No archived chats.' : 'No chats yet. Start one with New chat.';
      this.list.replaceChildren(h('p', { class: 'side-empty', text: msg }));
      return;
    }
    // Subagent chats sit under their root, with their own status dot; a
    // child whose root is not in the list shows on its own.
    const ids = new Set(chats.map((c) => c.id));
    const kids = new Map();
    for (const c of chats) {
      if (c.root_chat_id && ids.has(c.root_chat_id)) {
        if (!kids.has(c.root_chat_id)) kids.set(c.root_chat_id, []);
        kids.get(c.root_chat_id).push(c);
      }
    }
    const tops = chats.filter((c) => !(c.root_chat_id && ids.has(c.root_chat_id)));
    const withKids = (cs) => cs.flatMap((c) => [this.item(c),
      ...(kids.get(c.id) || []).sort((a, b) => a.created_at < b.created_at ? -1 : 1).map((k) => this.item(k, true))]);
    const groups = this.archived ? [['Archived', tops]] : [
      ['Pinned', tops.filter((c) => c.pin_order > 0).sort((a, b) => a.pin_order - b.pin_order)],
      ['Today', tops.filter((c) => !(c.pin_order > 0) && isToday(c.updated_at))],
      ['Earlier', tops.filter((c) => !(c.pin_order > 0) && !isToday(c.updated_at))],
    ];
    const focused = document.activeElement;
    const focusKey = focused && this.list.contains(focused) ? focused.dataset.focusKey : null;
    this.rendering = true; // (the rename field moves into the new list)
    try {
      this.list.replaceChildren(...groups.filter(([, cs]) => cs.length).map(([name, cs]) => h('section', { class: 'chat-group' },
        h('h2', { class: 'group-title', text: name }),
        h('ul', { role: 'list' }, withKids(cs)))), ...(this.more ? [this.moreBtn] : []));
    } finally {
      this.rendering = false;
    }
    this.watchMore();
    if (focusKey) {
      const el = this.list.querySelector(`[data-focus-key="${CSS.escape(focusKey)}"]`);
      if (el) el.focus();
    }
  }

  // item renders one chat; child marks a subagent shown under its root.
  item(c, child) {
    const active = c.id === this.activeId;
    const title = c.title || 'New chat';
    if (this.renamingId === c.id) {
      // The field being typed in is the same node through every render (a
      // chat's status changing redraws the list), so the text stays.
      if (!this.renameItem || this.renameItem.dataset.id !== c.id) this.renameItem = this.renameField(c);
      this.renameItem.classList.toggle('active', active);
      return this.renameItem;
    }
    const status = STATUS_LABEL[c.status];
    const menuBtn = h('button', {
      type: 'button', class: 'icon-btn chat-menu-btn', 'aria-label': `Options for ${title}`, 'aria-haspopup': 'menu',
      'aria-expanded': 'false', dataset: { focusKey: 'menu:' + c.id },
      onclick: (e) => { e.preventDefault(); openMenu(e.currentTarget, this.menuItems(c)); },
    }, icon('dots'));
    // A search hit in a message shows its snippet and opens the chat at it.
    const hit = this.query && c.search_snippet;
    const titleEl = h('span', { class: 'chat-title', text: title });
    return h('li', { class: 'chat-item' + (child ? ' chat-child' : '') + (active ? ' active' : ''), dataset: { id: c.id } },
      h('a', {
        href: `/chats/${c.id}` + (hit ? '?' + new URLSearchParams({ message: hit.message_id, q: this.query }) : ''), 'data-link': true, class: 'chat-link', 'aria-current': active ? 'page' : null,
        dataset: { focusKey: 'link:' + c.id }, title: child ? `${title} (subagent)` : title,
      },
        child ? h('span', { class: 'child-mark', 'aria-hidden': 'true', text: '↳' }) : null,
        c.pin_order > 0 && !this.archived ? icon('pin', 'pin-icon') : null,
        hit ? h('span', { class: 'chat-hit' }, titleEl, snippetEl(hit.text, this.query)) : titleEl,
        status ? h('span', { class: `dot dot-${c.status}`, role: 'img', 'aria-label': status, title: status }) : null),
      menuBtn);
  }

  // renameField is the list item with c's title in a field: Enter or
  // leaving it saves, Escape cancels.
  renameField(c) {
    const title = c.title || 'New chat';
    const input = h('input', { class: 'rename-input', type: 'text', value: title, 'aria-label': 'Chat title', maxlength: 200, dataset: { focusKey: 'rename:' + c.id } });
    const done = async (save) => {
      if (this.renamingId !== c.id) return;
      this.renamingId = null;
      this.renameItem = null;
      const v = input.value.trim();
      if (save && v && v !== c.title) await this.patch(c, { title: v });
      else this.render();
    };
    input.addEventListener('keydown', (e) => {
      if (e.key === 'Enter') { e.preventDefault(); done(true); }
      if (e.key === 'Escape') { e.preventDefault(); e.stopPropagation(); done(false); }
    });
    // A render moving the field takes its focus for a moment: no save.
    input.addEventListener('blur', () => { if (!this.rendering) done(true); });
    requestAnimationFrame(() => { input.focus(); input.select(); });
    return h('li', { class: 'chat-item renaming', dataset: { id: c.id } }, input);
  }

  menuItems(c) {
    const pinned = c.pin_order > 0;
    return [
      { label: 'Rename', icon: 'edit', onSelect: () => this.rename(c) },
      c.archived ? null : { label: pinned ? 'Unpin' : 'Pin', icon: 'pin', onSelect: () => this.togglePin(c) },
      { label: c.archived ? 'Unarchive' : 'Archive', icon: c.archived ? 'unarchive' : 'archive', onSelect: () => this.toggleArchive(c) },
      { label: 'Delete', icon: 'trash', danger: true, onSelect: () => this.remove(c) },
    ].filter(Boolean);
  }

  rename(c) {
    if (this.chats && this.chats.some((x) => x.id === c.id)) {
      this.renamingId = c.id;
      this.app.toggleSidebar(true);
      this.render();
      return;
    }
    this.renameDialog(c);
  }

  async renameDialog(c) {
    const v = await dialog({ title: 'Rename chat', input: { value: c.title, label: 'Chat title' }, confirm: 'Rename' });
    if (v) await this.patch(c, { title: v });
  }

  async togglePin(c) {
    const max = Math.max(0, ...(this.chats || []).map((x) => x.pin_order || 0));
    await this.patch(c, { pin_order: c.pin_order > 0 ? 0 : max + 1 });
  }

  async toggleArchive(c) {
    const archive = !c.archived;
    if (await this.patch(c, { archived: archive })) toast(archive ? 'Chat archived.' : 'Chat restored from the archive.');
  }

  async remove(c) {
    const ok = await dialog({ title: 'Delete chat?', message: `“${c.title || 'New chat'}” and its messages will be deleted.`, confirm: 'Delete', danger: true });
    if (!ok) return;
    try {
      await api('DELETE', `/chats/${c.id}`);
      if (this.activeId === c.id) this.app.navigate('/');
      await this.refresh();
    } catch (e) {
      toast('Could not delete the chat', 'error', e.message);
    }
  }

  // patch changes the chat and answers whether the server took it (a
  // failure is toasted here).
  async patch(c, body) {
    let ok = false;
    try {
      await api('PATCH', `/chats/${c.id}`, body);
      Object.assign(c, body);
      this.app.onChatPatched(c.id, body);
      ok = true;
    } catch (e) {
      toast('Could not update the chat', 'error', e.message);
    }
    await this.refresh();
    return ok;
  }

  destroy() {
    clearInterval(this.timer);
    clearTimeout(this.soon);
    this.watch.close();
  }
}
