// Projects: the list at /projects (and a form to create one), and a
// project's page at /projects/{id}: its chats, its instructions (editable)
// and its memories (view, edit, delete, add). "New chat" opens the
// new-chat page for the project (/?project={id}).

import { h, icon, formatTime } from './dom.js';
import { api } from './api.js';
import { dialog, toast } from './widgets.js';

const MEMORY_NAME = /^[a-z0-9][a-z0-9._-]{0,63}$/;

function header(app, title) {
  return h('header', { class: 'chat-header' }, app.sidebarButton(), h('h1', { class: 'chat-title-h', text: title }));
}

function errorText(e) { return e && e.message ? e.message : String(e); }

export class ProjectsView {
  constructor(app) {
    this.app = app;
    this.list = h('ul', { class: 'project-list', 'aria-label': 'Projects' });
    this.name = h('input', { class: 'text-input', type: 'text', id: 'new-project-name', maxlength: 200, required: true, 'aria-label': 'Project name', placeholder: 'Project name' });
    const form = h('form', { class: 'project-create', onsubmit: (e) => { e.preventDefault(); this.create(); } },
      this.name, h('button', { type: 'submit', class: 'btn primary' }, icon('plus'), 'Create project'));
    this.el = h('section', { class: 'chat-view project-view', 'aria-label': 'Projects' },
      header(app, 'Projects'),
      h('div', { class: 'scroller' }, h('div', { class: 'project-page' },
        h('p', { class: 'muted', text: 'Chats in a project share its instructions and a memory their agents keep.' }),
        form, this.list)));
    document.title = 'Projects · chatd';
  }

  mounted() { this.load(); this.name.focus(); }

  destroy() {}

  async load() {
    try {
      const projects = await api('GET', '/projects');
      this.list.replaceChildren(...projects.map((p) => h('li', {},
        h('a', { href: `/projects/${p.id}`, 'data-link': true, class: 'project-link', text: p.name }))));
      if (!projects.length) this.list.replaceChildren(h('li', { class: 'muted', text: 'No projects yet.' }));
    } catch (e) {
      toast('Could not load the projects', 'error', errorText(e));
    }
  }

  async create() {
    const name = this.name.value.trim();
    if (!name) return;
    try {
      const p = await api('POST', '/projects', { name });
      this.app.navigate(`/projects/${p.id}`);
    } catch (e) {
      toast('The project was not created', 'error', errorText(e));
    }
  }
}

export class ProjectView {
  constructor(app, id) {
    this.app = app;
    this.id = id;
    this.project = null;
    this.title = h('h1', { class: 'chat-title-h', text: 'Project' });
    // Off until the project has loaded: its stored text replaces the field's.
    this.instructions = h('textarea', { class: 'text-input', rows: 5, id: 'project-instructions', 'aria-label': 'Instructions', maxlength: 32768, placeholder: 'Instructions every chat in this project follows.', disabled: true });
    this.saveBtn = h('button', { type: 'button', class: 'btn primary', onclick: () => this.saveInstructions(), disabled: true }, 'Save instructions');
    this.chats = h('ul', { class: 'project-chats', 'aria-label': 'Chats in this project' });
    this.memories = h('div', { class: 'memory-list', 'aria-label': 'Memories' });
    this.memName = h('input', { class: 'text-input mono', type: 'text', id: 'memory-name', maxlength: 64, 'aria-label': 'Memory name', placeholder: 'name (a-z, 0-9, . _ -)' });
    this.memContent = h('textarea', { class: 'text-input', rows: 3, id: 'memory-content', 'aria-label': 'Memory content', placeholder: 'What chats in this project should remember' });
    const add = h('form', { class: 'memory-add', onsubmit: (e) => { e.preventDefault(); this.addMemory(); } },
      this.memName, this.memContent, h('button', { type: 'submit', class: 'btn' }, icon('plus'), 'Add memory'));
    this.el = h('section', { class: 'chat-view project-view', 'aria-label': 'Project' },
      h('header', { class: 'chat-header' }, app.sidebarButton(), this.title,
        h('a', { class: 'btn new-project-chat', href: `/?project=${id}`, 'data-link': true }, icon('plus'), 'New chat'),
        h('button', { type: 'button', class: 'icon-btn', 'aria-label': 'Delete project', title: 'Delete project', onclick: () => this.deleteProject() }, icon('trash'))),
      h('div', { class: 'scroller' }, h('div', { class: 'project-page' },
        h('h2', { text: 'Instructions' }), this.instructions, h('div', { class: 'row-end' }, this.saveBtn),
        h('h2', { text: 'Chats' }), this.chats,
        h('h2', { text: 'Memory' }),
        h('p', { class: 'muted', text: 'The agents of this project\'s chats save and prune these themselves; you can too.' }),
        this.memories, add)));
  }

  mounted() { this.load(); }

  destroy() {}

  async load() {
    try {
      const [p, chats, memories] = await Promise.all([
        api('GET', `/projects/${this.id}`),
        api('GET', `/chats?project_id=${this.id}&archived=all`),
        api('GET', `/projects/${this.id}/memories`),
      ]);
      this.project = p;
      this.title.textContent = p.name;
      document.title = `${p.name} · chatd`;
      this.instructions.value = p.instructions;
      this.instructions.disabled = false;
      this.saveBtn.disabled = false;
      this.renderChats(chats);
      this.renderMemories(memories);
    } catch (e) {
      this.title.textContent = e.status === 404 ? 'Project not found' : 'Project';
      toast('Could not load the project', 'error', errorText(e));
    }
  }

  renderChats(chats) {
    const roots = chats.filter((c) => !c.parent_chat_id);
    this.chats.replaceChildren(...roots.map((c) => h('li', {},
      h('a', { href: `/chats/${c.id}`, 'data-link': true, class: 'project-chat', text: c.title || 'Untitled' }),
      c.archived ? h('span', { class: 'muted', text: ' (archived)' }) : null)));
    if (!roots.length) this.chats.replaceChildren(h('li', { class: 'muted', text: 'No chats yet.' }));
  }

  renderMemories(memories) {
    this.memories.replaceChildren(...memories.map((m) => this.memoryCard(m)));
    if (!memories.length) this.memories.replaceChildren(h('p', { class: 'muted', text: 'No memories yet.' }));
  }

  memoryCard(m) {
    const content = h('textarea', { class: 'text-input', rows: 3, 'aria-label': `Content of ${m.name}`, value: m.content, readonly: true });
    const edit = h('button', { type: 'button', class: 'btn ghost memory-edit' }, icon('edit'), 'Edit');
    const save = h('button', { type: 'button', class: 'btn primary memory-save', hidden: true }, 'Save');
    edit.addEventListener('click', () => { content.readOnly = false; edit.hidden = true; save.hidden = false; content.focus(); });
    save.addEventListener('click', async () => {
      try {
        await api('PUT', `/projects/${this.id}/memories/${encodeURIComponent(m.name)}`, { content: content.value });
        toast(`Saved ${m.name}`);
        this.refreshMemories();
      } catch (e) {
        toast('The memory was not saved', 'error', errorText(e));
      }
    });
    const del = h('button', { type: 'button', class: 'btn ghost memory-delete', 'aria-label': `Delete ${m.name}` }, icon('trash'), 'Delete');
    del.addEventListener('click', async () => {
      if (!(await dialog({ title: `Delete memory “${m.name}”?`, confirm: 'Delete', danger: true }))) return;
      try {
        await api('DELETE', `/projects/${this.id}/memories/${encodeURIComponent(m.name)}`);
        this.refreshMemories();
      } catch (e) {
        toast('The memory was not deleted', 'error', errorText(e));
      }
    });
    const by = m.chat_id ? h('a', { href: `/chats/${m.chat_id}`, 'data-link': true, text: 'a chat' }) : 'you';
    return h('article', { class: 'memory', dataset: { name: m.name } },
      h('div', { class: 'memory-head' }, h('strong', { class: 'mono', text: m.name }),
        h('span', { class: 'muted' }, ' · saved by ', by, ' · ', formatTime(new Date(m.updated_at)))),
      content, h('div', { class: 'row-end' }, edit, save, del));
  }

  async refreshMemories() {
    try {
      this.renderMemories(await api('GET', `/projects/${this.id}/memories`));
    } catch (e) {
      toast('Could not load the memories', 'error', errorText(e));
    }
  }

  async saveInstructions() {
    try {
      this.project = await api('PATCH', `/projects/${this.id}`, { instructions: this.instructions.value });
      toast('Instructions saved');
    } catch (e) {
      toast('The instructions were not saved', 'error', errorText(e));
    }
  }

  async addMemory() {
    const name = this.memName.value.trim();
    if (!MEMORY_NAME.test(name)) {
      toast('Memory names are lowercase letters, digits, “.”, “_” and “-” (at most 64)', 'error');
      return;
    }
    try {
      await api('PUT', `/projects/${this.id}/memories/${encodeURIComponent(name)}`, { content: this.memContent.value });
      this.memName.value = '';
      this.memContent.value = '';
      this.refreshMemories();
    } catch (e) {
      toast('The memory was not saved', 'error', errorText(e));
    }
  }

  async deleteProject() {
    const name = this.project ? this.project.name : 'this project';
    if (!(await dialog({ title: `Delete “${name}”?`, message: 'Its memories go with it. A project with chats cannot be deleted.', confirm: 'Delete', danger: true }))) return;
    try {
      await api('DELETE', `/projects/${this.id}`);
      this.app.navigate('/projects');
    } catch (e) {
      toast('The project was not deleted', 'error', errorText(e));
    }
  }
}
