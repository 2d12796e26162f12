// Rendering of the conversation: user and assistant messages, reasoning,
// tool-call cards, context boundaries and the streaming preview. Each
// function returns a fresh node; the chat view caches nodes by signature
// so unchanged messages are never rebuilt.

import { h, icon, setHTML, prettyJSON, formatSeconds, formatTime } from './dom.js';
import { fileChips } from './attach.js';
import { renderMarkdown, renderPlain } from './markdown.js';
import { enhance } from './rich.js';
import { messageText } from './api.js';
import { mcpTool, effectBadge } from './mcp.js';

export const BOUNDARY_TOOLS = { chat_summarized: 'Context summarized', chat_cleared: 'Context cleared' };

// boundaryOf returns the boundary kind of a compressed message, if any.
export function boundaryOf(m) {
  if (!m.compressed) return null;
  for (const p of m.content || []) {
    if ((p.type === 'tool-call' || p.type === 'tool-result') && BOUNDARY_TOOLS[p.tool_name]) return p.tool_name;
  }
  return null;
}

function parseJSON(v) {
  if (v == null) return undefined;
  if (typeof v !== 'string') return v;
  try { return JSON.parse(v); } catch { return v; }
}

// toolOutcome classifies a tool result: ok, error, cancelled, or denied (a
// person or a hook refused the call: the server's error result
// {"error": "denied: <reason>"}), which is no failure of the tool.
export function toolOutcome(result) {
  if (!result) return 'pending';
  const v = parseJSON(result.result);
  if (v && typeof v === 'object' && v.cancelled === true) return 'cancelled';
  if (result.is_error && v && typeof v === 'object' && typeof v.error === 'string' && /^denied(?::|$)/.test(v.error)) return 'denied';
  return result.is_error ? 'error' : 'ok';
}

const STATE_LABEL = {
  pending: 'Running…', waiting: 'Waiting for your result', ok: 'Done', error: 'Error',
  cancelled: 'Cancelled', denied: 'Denied', missing: 'No result', approval: 'Awaiting approval',
};

// toolLabel names a tool: an MCP tool as "server · tool" with its effect
// badge, any other as the model called it.
function toolLabel(name) {
  const m = mcpTool(name);
  if (!m) return h('span', { class: 'tool-name', text: name || 'tool' });
  return h('span', { class: 'tool-label', title: name },
    h('span', { class: 'tool-server', text: m.server.name }),
    h('span', { class: 'tool-sep', 'aria-hidden': 'true', text: ' · ' }),
    h('span', { class: 'tool-name', text: m.tool.mcp_name || name }),
    effectBadge(m.tool.effect));
}

// AGENT_TOOLS are the subagent tools whose cards link to the child chats.
const AGENT_TOOLS = new Set(['spawn_agent', 'wait_agent', 'message_agent', 'interrupt_agent', 'close_agent', 'list_agents']);
const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

// agentLinks links a subagent tool's card to the chats it names: the
// result's chat_id or agents, else the arguments' chat_id / chat_ids.
function agentLinks(call, result) {
  if (!AGENT_TOOLS.has(call.tool_name)) return null;
  const out = new Map();
  const add = (id, title) => { if (typeof id === 'string' && UUID_RE.test(id) && !out.has(id)) out.set(id, title || ''); };
  let args = parseJSON(call.argsText !== undefined ? call.argsText : call.args);
  if (!args || typeof args !== 'object') args = null;
  const res = result && !result.is_error ? parseJSON(result.result) : null;
  if (res && typeof res === 'object') {
    add(res.chat_id, call.tool_name === 'spawn_agent' && args && typeof args.title === 'string' ? args.title : '');
    for (const a of Array.isArray(res.agents) ? res.agents : []) add(a && a.chat_id, a && a.title);
  }
  if (args) {
    add(args.chat_id);
    for (const id of Array.isArray(args.chat_ids) ? args.chat_ids : []) add(id);
  }
  if (!out.size) return null;
  return h('div', { class: 'agent-links' }, [...out].map(([id, title]) =>
    h('a', { class: 'agent-link', href: `/chats/${id}`, 'data-link': true, dataset: { chatId: id }, text: title ? `Open subagent “${title}”` : 'Open subagent' })));
}

// toolCard renders one call with its result (or its pending state).
export function toolCard(call, result, ctx) {
  const args = call.argsText !== undefined ? call.argsText : call.args;
  let state = toolOutcome(result);
  if (state === 'pending') {
    if (ctx.approvalIds && ctx.approvalIds.has(call.tool_call_id)) state = 'approval';
    else if (ctx.waitingIds && ctx.waitingIds.has(call.tool_call_id)) state = 'waiting';
    else if (!ctx.running) state = 'missing';
  }
  const head = h('div', { class: 'tool-head' },
    state === 'pending' ? h('span', { class: 'spinner', role: 'img', 'aria-label': 'running' }) : icon('tool', 'tool-icon'),
    toolLabel(call.tool_name),
    h('span', { class: `tool-state state-${state}`, text: STATE_LABEL[state] }));
  const card = h('div', { class: `tool-card tool-${state}`, dataset: { toolCallId: call.tool_call_id || '' } }, head);
  const argText = prettyJSON(parseJSON(args) ?? '');
  if (argText && argText !== '{}') {
    card.append(h('details', { class: 'tool-section' },
      h('summary', {}, 'Arguments'), h('pre', { class: 'json', tabindex: '0', text: argText })));
  }
  const links = agentLinks(call, result);
  if (links) card.append(links);
  if (result) {
    const { images, shown } = toolMedia(parseJSON(result.result));
    const label = { cancelled: 'Cancelled', error: 'Error', denied: 'Denied' }[state] || 'Result';
    if (images.length) {
      card.append(h('div', { class: 'chips tool-images' }, images.map((img, i) => {
        const alt = `Image ${i + 1} from ${call.tool_name || 'the tool'}`;
        return h('a', { class: 'chip file image', href: img.src, title: alt, 'data-lightbox': '' },
          h('img', { class: 'thumb', src: img.src, alt, decoding: 'async' }));
      })));
    }
    card.append(h('details', { class: 'tool-section', open: state === 'error' },
      h('summary', {}, label), h('pre', { class: 'json', tabindex: '0', text: prettyJSON(shown ?? '') })));
  }
  return card;
}

// The image types a tool result may show inline (the types the UI shows
// as attachments; CSP img-src allows data: URLs).
const TOOL_IMAGE_TYPES = ['image/png', 'image/jpeg', 'image/gif', 'image/webp'];

// toolMedia splits an MCP tool result ({content: [blocks]}) into the images
// the card shows and the result as the card prints it: an image or audio
// block's base64 "data" is replaced by a short note instead of pages of
// base64.
export function toolMedia(v) {
  const images = [];
  if (!v || typeof v !== 'object' || !Array.isArray(v.content)) return { images, shown: v };
  const content = v.content.map((b) => {
    if (!b || typeof b !== 'object' || typeof b.data !== 'string' || (b.type !== 'image' && b.type !== 'audio')) return b;
    const show = b.type === 'image' && TOOL_IMAGE_TYPES.includes(b.mimeType) && /^[A-Za-z0-9+/]*={0,2}$/.test(b.data);
    if (show) images.push({ src: `data:${b.mimeType};base64,${b.data}`, mimeType: b.mimeType });
    return { ...b, data: `[${b.data.length} characters of base64${show ? ', shown above' : ''}]` };
  });
  return { images, shown: { ...v, content } };
}

function thinkingBlock(text, seconds, live) {
  const label = live ? 'Thinking…' : seconds != null ? `Thought for ${formatSeconds(seconds)}` : 'Thoughts';
  const body = h('div', { class: 'md thinking-body' });
  setHTML(body, renderMarkdown(text));
  enhance(body);
  return h('details', { class: 'thinking' + (live ? ' live' : '') },
    h('summary', {}, icon('spark'), h('span', { text: label })), body);
}

function markdownNode(text, cls = '') {
  const el = h('div', { class: 'md ' + cls });
  setHTML(el, renderMarkdown(text));
  enhance(el);
  return el;
}

function sourceChip(p) {
  const safe = /^https?:\/\//i.test(p.url || '') ? p.url : null;
  const label = p.title || p.url || 'source';
  return safe ? h('a', { class: 'chip source', href: safe, target: '_blank', rel: 'noopener noreferrer nofollow', text: label })
    : h('span', { class: 'chip source', text: label });
}

// partsNodes renders assistant parts in order.
function partsNodes(parts, ctx, live) {
  const out = [];
  parts.forEach((p, i) => {
    switch (p.type) {
      case 'text':
        if (p.text) out.push(markdownNode(p.text));
        break;
      case 'reasoning': {
        const stillThinking = live && i === parts.length - 1;
        out.push(thinkingBlock(p.text || '', ctx.reasoningSeconds, stillThinking));
        break;
      }
      case 'tool-call':
        out.push(toolCard(p, ctx.results.get(p.tool_call_id), ctx));
        break;
      case 'tool-result':
        if (!ctx.calls || !ctx.calls.has(p.tool_call_id)) {
          out.push(toolCard({ tool_call_id: p.tool_call_id, tool_name: p.tool_name, args: undefined }, p, ctx));
        }
        break;
      case 'source':
        out.push(sourceChip(p));
        break;
      case 'file':
        out.push(h('span', { class: 'chip file', text: p.name || p.media_type || 'file' }));
        break;
    }
  });
  return out;
}

function actionButton(label, iconName, onclick, extra = {}) {
  return h('button', { type: 'button', class: 'icon-btn', 'aria-label': label, title: label, onclick, ...extra }, icon(iconName));
}

// turnNote is the note under a turn: "Stopped" (with Continue on the
// latest), or a failed turn's error.
function turnNote(note, actions) {
  if (note.kind === 'failed') {
    return h('div', { class: 'msg-note failed', role: 'note' }, icon('alert'), h('span', { text: `This turn failed: ${note.text}` }));
  }
  return h('div', { class: 'msg-note stopped', role: 'note' }, icon('stop'), h('span', { text: 'Stopped' }),
    note.canContinue ? h('button', { type: 'button', class: 'btn small', onclick: () => actions.continue() }, 'Continue') : null);
}

// userMessage renders a user message with its hover actions, and its
// turn's note (null: none).
export function userMessage(m, actions, note = null) {
  const text = messageText(m);
  const bubble = h('div', { class: 'bubble' });
  setHTML(bubble, renderPlain(text));
  return h('div', { class: 'msg msg-user', dataset: { id: m.id } },
    text ? bubble : null,
    fileChips(m.content),
    h('div', { class: 'msg-actions' },
      actions.versions ? actions.versions(m) : null,
      h('span', { class: 'msg-time', text: formatTime(m.created_at) }),
      actionButton('Copy message', 'copy', (e) => actions.copy(text, e.currentTarget)),
      actions.edit ? actionButton('Edit message', 'edit', () => actions.edit(m)) : null,
      actions.fork ? actionButton('Fork from here', 'fork', () => actions.fork(m)) : null),
    note ? turnNote(note, actions) : null);
}

// editor is the inline editor of a user message.
export function userEditor(m, onSave, onCancel) {
  const ta = h('textarea', { class: 'edit-input', 'aria-label': 'Edit message', rows: 3 });
  ta.value = messageText(m);
  const save = () => {
    const v = ta.value.trim();
    if (v) onSave(v);
  };
  ta.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      save();
    } else if (e.key === 'Escape') {
      e.preventDefault();
      e.stopPropagation();
      onCancel();
    }
  });
  const node = h('div', { class: 'msg msg-user editing', dataset: { id: m.id } },
    h('div', { class: 'edit-box' }, ta,
      h('div', { class: 'edit-actions' },
        h('span', { class: 'edit-hint', text: 'A new version: the current one stays a click away.' }),
        h('button', { type: 'button', class: 'btn ghost', onclick: onCancel }, 'Cancel'),
        h('button', { type: 'button', class: 'btn primary', onclick: save }, 'Save & rerun'))));
  requestAnimationFrame(() => {
    ta.focus();
    ta.setSelectionRange(ta.value.length, ta.value.length);
    ta.style.height = Math.min(ta.scrollHeight + 2, 320) + 'px';
  });
  ta.addEventListener('input', () => {
    ta.style.height = 'auto';
    ta.style.height = Math.min(ta.scrollHeight + 2, 320) + 'px';
  });
  return node;
}

// assistantMessage renders committed assistant parts; extra: {stopped (the
// turn was stopped: this is its last reply), canContinue, canRegenerate
// (the latest reply of an idle chat)}.
export function assistantMessage(m, ctx, actions, extra = {}) {
  const text = messageText(m);
  return h('div', { class: 'msg msg-assistant' + (extra.stopped ? ' stopped' : ''), dataset: { id: m.id } },
    partsNodes(m.content || [], { ...ctx, reasoningSeconds: ctx.reasoningFor(m) }, false),
    extra.stopped ? turnNote({ kind: 'stopped', canContinue: extra.canContinue }, actions) : null,
    actionsRow(m, text, actions, extra));
}

// actionsRow is an assistant message's actions (none on a step without
// text, unless it has versions or is the one to regenerate).
function actionsRow(m, text, actions, extra) {
  const versions = actions.versions ? actions.versions(m) : null;
  if (!text && !extra.canRegenerate && !versions) return null;
  return h('div', { class: 'msg-actions' },
    versions,
    text ? actionButton('Copy message', 'copy', (e) => actions.copy(text, e.currentTarget)) : null,
    extra.canRegenerate ? actionButton('Regenerate', 'retry', () => actions.regenerate(m)) : null,
    actions.fork ? actionButton('Fork from here', 'fork', () => actions.fork(m)) : null);
}

// orphanResults renders a tool message whose calls are not on screen.
export function toolResults(m, ctx) {
  const nodes = (m.content || []).filter((p) => p.type === 'tool-result' && !ctx.calls.has(p.tool_call_id))
    .map((p) => toolCard({ tool_call_id: p.tool_call_id, tool_name: p.tool_name }, p, ctx));
  return nodes.length ? h('div', { class: 'msg msg-assistant', dataset: { id: m.id } }, nodes) : null;
}

// divider renders a compaction or clear boundary.
export function divider(m, kind, ctx) {
  const label = BOUNDARY_TOOLS[kind];
  let summary = '';
  if (kind === 'chat_summarized') {
    const res = ctx.results.get((m.content.find((p) => p.type === 'tool-call') || {}).tool_call_id);
    const v = res && parseJSON(res.result);
    if (v && typeof v.summary === 'string') summary = v.summary;
  }
  if (!summary) {
    return h('div', { class: 'divider', role: 'separator', 'aria-label': label, dataset: { id: m.id } },
      h('span', { text: label }));
  }
  return h('details', { class: 'divider', dataset: { id: m.id } },
    h('summary', { 'aria-label': `${label}: show summary` }, h('span', { text: label })),
    markdownNode(summary, 'divider-summary'));
}

// preview renders the streaming reply.
export function preview(p, ctx) {
  const seconds = p.reasoningStart != null && p.reasoningEnd != null ? (p.reasoningEnd - p.reasoningStart) / 1000 : null;
  const nodes = partsNodes(p.parts, { ...ctx, reasoningSeconds: seconds }, true);
  const last = p.parts[p.parts.length - 1];
  const el = h('div', { class: 'msg msg-assistant streaming', 'aria-busy': 'true' }, nodes);
  if (!last || last.type === 'text') {
    const mds = el.querySelectorAll('.md:not(.thinking-body)');
    const host = mds.length ? caretHost(mds[mds.length - 1]) : el;
    host.append(h('span', { class: 'caret', 'aria-hidden': 'true' }));
  }
  return el;
}

// caretHost finds where the streaming caret goes: the end of the innermost
// last block (paragraph, list item, heading, cell, or the code of a block).
function caretHost(root) {
  let node = root;
  for (;;) {
    const last = node.lastElementChild;
    if (!last) return node;
    if (last.matches('.codeblock')) return last.querySelector('code');
    if (!last.matches('p, li, h1, h2, h3, h4, h5, h6, blockquote, ul, ol, .table-wrap, table, tbody, tr, td')) return node;
    node = last;
  }
}

// olderBar is the top of a thread with older messages than those shown
// (older.js): "Load older messages" (the fallback of scrolling up, and
// the way in for keyboards), the loading indicator, or the load's error
// with a retry.
export function olderBar(o, onLoad) {
  if (o.loading) {
    return h('div', { class: 'older-bar', role: 'status' }, h('span', { class: 'spinner small' }), h('span', { text: 'Loading older messages…' }));
  }
  if (o.error) {
    return h('div', { class: 'older-bar failed', role: 'alert' }, h('span', { text: `Could not load older messages: ${o.error}` }),
      h('button', { type: 'button', class: 'btn small', onclick: onLoad }, 'Retry'));
  }
  return h('div', { class: 'older-bar' }, h('button', { type: 'button', class: 'btn small', onclick: onLoad }, 'Load older messages'));
}
