// The new-chat view, the page at /: a composer (with options for the system
// prompt, dynamic tools and labels) whose first message creates the chat,
// sent durably (send.js) like every message.

import { h, icon } from './dom.js';
import { api, newUUID, textContent } from './api.js';
import { Composer } from './composer.js';
import { toast } from './widgets.js';
import { DurableSend, notConfirmed, inProgress, pendingButtons } from './send.js';
import { ToolsPopover } from './mcp.js';

export class NewChatView {
  constructor(app) {
    this.app = app;
    // mcpSelection is the MCP servers for the chat to be created: null
    // (every server) until the user switches one off.
    this.mcpSelection = null;
    this.toolsPopover = new ToolsPopover({
      selection: () => this.mcpSelection,
      onChange: async (ids) => { this.mcpSelection = ids; },
      subtitle: 'MCP servers for the new chat',
    });
    this.composer = new Composer({
      draftKey: 'chatd.draft.new', models: app.models, placeholder: 'Ask anything',
      onSend: (text, _behavior, files) => this.create(text, files), commands: false, tools: this.toolsPopover, attach: true,
    });
    this.system = h('textarea', { class: 'text-input', rows: 2, 'aria-label': 'System prompt', placeholder: 'You are a helpful assistant.' });
    this.tools = h('textarea', {
      class: 'text-input mono', rows: 4, spellcheck: 'false', 'aria-label': 'Dynamic tools (JSON)',
      placeholder: '[{"name": "lookup", "description": "Look something up", "input_schema": {"type": "object"}}]',
    });
    this.labels = h('input', { class: 'text-input', type: 'text', 'aria-label': 'Labels', placeholder: 'project:demo, team:core' });
    const options = h('details', { class: 'new-options' },
      h('summary', {}, 'Options'),
      h('label', { class: 'field-label', text: 'System prompt' }), this.system,
      h('label', { class: 'field-label', text: 'Dynamic tools your client answers (JSON array)' }), this.tools,
      h('label', { class: 'field-label', text: 'Labels (key:value, comma separated)' }), this.labels);
    this.status = h('div', { class: 'new-status', role: 'status', 'aria-live': 'polite' });
    // /?project={id} creates the chat in that project (project.js).
    const project = new URLSearchParams(location.search).get('project');
    this.projectId = project && /^[0-9a-fA-F-]{36}$/.test(project) ? project.toLowerCase() : null;
    this.projectNote = h('p', { class: 'project-note muted', hidden: !this.projectId });
    if (this.projectId) this.loadProject();
    this.el = h('section', { class: 'chat-view new-chat-view', 'aria-label': 'New chat' },
      h('header', { class: 'chat-header' }, app.sidebarButton(), h('h1', { class: 'chat-title-h', text: 'New chat' })),
      h('div', { class: 'scroller' }, h('div', { class: 'hero' },
        h('div', { class: 'hero-mark', 'aria-hidden': 'true' }, icon('chat')),
        h('h2', { text: 'What can I help with?' }),
        h('p', { class: 'muted', text: 'Chats are durable: close the tab mid-reply and everything is still here when you come back.' }),
        this.projectNote)),
      h('div', { class: 'dock' }, h('div', { class: 'dock-inner' }, this.status, this.composer.el, options)));
    this.send = new DurableSend({
      key: 'chatd.pending.new',
      submit: (body) => api('POST', '/chats', body),
      onChange: () => this.renderStatus(),
      onAccepted: (chat) => {
        if (chat.replayed) toast('This chat was created before: showing its saved answer. Nothing ran again.');
        this.app.navigate(`/chats/${chat.id}`);
        this.app.sidebar.refresh();
      },
      onRefused: (e, p) => {
        if (!this.composer.value) this.composer.value = p.text;
        if (this.composer.attachments) this.composer.attachments.restore(p.files);
        toast('The chat was not created', 'error', e.message);
      },
      reloadNote: 'The page was reloaded before the server answered.',
    });
    this.renderStatus();
  }

  mounted() { this.composer.focus(); }

  async loadProject() {
    try {
      const p = await api('GET', `/projects/${this.projectId}`);
      this.projectNote.replaceChildren('In project ', h('a', { href: `/projects/${p.id}`, 'data-link': true, text: p.name }));
    } catch (e) {
      this.projectId = null;
      this.projectNote.hidden = true;
      toast('The project was not found; this chat will be outside any project', 'error', e.message);
    }
  }

  destroy() { this.toolsPopover.destroy(); }

  async create(text, files = []) {
    if (this.send.pending) {
      toast('A new chat is still unconfirmed', 'error', 'Retry it or discard it first.');
      return;
    }
    const content = files.length ? [...(text ? textContent(text) : []), ...files] : textContent(text);
    const body = { content, request_id: newUUID() };
    if (this.composer.model.value) body.model_config_id = this.composer.model.value;
    if (this.composer.effort.value) body.reasoning_effort = this.composer.effort.value;
    if (this.mcpSelection !== null) body.mcp_server_ids = this.mcpSelection;
    if (this.projectId) body.project_id = this.projectId;
    if (this.system.value.trim()) body.system_prompt = this.system.value.trim();
    if (this.tools.value.trim()) {
      try {
        body.unsafe_dynamic_tools = JSON.parse(this.tools.value);
        if (!Array.isArray(body.unsafe_dynamic_tools)) throw new Error('not an array');
      } catch {
        toast('Dynamic tools must be a JSON array', 'error');
        return;
      }
    }
    if (this.labels.value.trim()) {
      body.labels = {};
      for (const pair of this.labels.value.split(',')) {
        const [k, ...v] = pair.split(':');
        if (k.trim()) body.labels[k.trim()] = v.join(':').trim();
      }
    }
    this.send.start(body, text, { files: this.composer.attachments ? this.composer.attachments.saved() : [] });
    this.composer.clear();
    await this.send.post();
  }

  // renderStatus shows the pending send above the composer: "Creating
  // chat…", "In progress" (created, still running: a link to the chat),
  // or "Not confirmed" with Check outcome, Retry same request (only after
  // a lookup found no admission) and Discard.
  renderStatus() {
    const p = this.send.pending;
    if (!p) {
      this.status.replaceChildren();
    } else if (p.state === 'sending' || p.state === 'checking') {
      this.status.replaceChildren(h('span', { class: 'spinner small' }), p.state === 'checking' ? ' Checking…' : ' Creating chat…');
    } else {
      const buttons = pendingButtons(this.send, () => {
        const d = this.send.discard();
        if (d && !this.composer.value) this.composer.value = d.text;
      });
      if (p.chatId) buttons.splice(1, 0, ['Open chat', '', () => this.app.navigate(`/chats/${p.chatId}`)]);
      this.status.replaceChildren((p.state === 'progress' ? inProgress : notConfirmed)(`“${p.text.slice(0, 80)}”: ${p.note}`, buttons));
    }
  }
}
