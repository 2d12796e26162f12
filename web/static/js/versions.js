// Message versions (issue 32): the ‹ n/m › switcher under a message with
// siblings, and the calls behind it (switch branch, regenerate a reply,
// fork a chat from a message). versionInfo is pure and unit-tested
// (web/test/versions.test.mjs); the rest builds nodes and calls the API.
import { h } from './dom.js';
import { api } from './api.js';
import { toast } from './widgets.js';

// versionInfo places message m among its versions: {index (1-based),
// count, prev, next (sibling ids, null at the ends)}, or null when m has
// no other version.
export function versionInfo(m) {
  const ids = (m && Array.isArray(m.sibling_ids)) ? m.sibling_ids : [];
  if (ids.length < 2) return null;
  const i = ids.indexOf(m.id);
  if (i < 0) return null;
  return { index: i + 1, count: ids.length, prev: i > 0 ? ids[i - 1] : null, next: i < ids.length - 1 ? ids[i + 1] : null };
}

// firstReplies maps each user message id to the first assistant reply
// after it (msgs in id order: the active branch), the message a
// regenerate of the turn names.
export function firstReplies(msgs) {
  const out = new Map();
  let turn = null;
  for (const m of msgs) {
    if (m.role === 'user') turn = m.visibility === 'model' ? turn : m.id;
    else if (m.role === 'assistant' && turn != null && !m.compressed && !out.has(turn)) out.set(turn, m.id);
  }
  return out;
}

// switcher is the ‹ n/m › control of message m; onSwitch(id) shows the
// version id. Both buttons are real buttons (Tab reaches them, Enter and
// Space press them), disabled at the ends.
export function switcher(m, onSwitch, busy = false) {
  const v = versionInfo(m);
  if (!v) return null;
  const btn = (label, text, target) => h('button', {
    type: 'button', class: 'icon-btn version-btn', 'aria-label': label, title: label, text,
    disabled: target == null || busy ? true : null,
    onclick: () => { if (target != null) onSwitch(target, label); },
  });
  return h('span', { class: 'versions', role: 'group', 'aria-label': `Version ${v.index} of ${v.count}` },
    btn('Previous version', '‹', v.prev),
    h('span', { class: 'version-count', text: `${v.index}/${v.count}` }),
    btn('Next version', '›', v.next));
}

// refocus puts the focus back on the switcher of message id once it is
// shown (the switch renders the other version as a new node): on the
// button labelled label, else its other one. It reports whether it could.
export function refocus(root, id, label) {
  const msg = root.querySelector(`[data-id="${Number(id)}"]`);
  const btn = msg && (msg.querySelector(`.versions button[aria-label="${label}"]:not(:disabled)`) ||
    msg.querySelector('.versions button:not(:disabled)'));
  if (btn) btn.focus();
  return !!btn;
}

// switchBranch makes the branch through messageID active; the stream
// brings the new branch (a history reset) to this tab and every other.
// It reports whether the switch was made.
export async function switchBranch(chatId, messageID) {
  try {
    await api('POST', `/chats/${chatId}/branch`, { message_id: messageID });
    return true;
  } catch (e) {
    toast('Could not show that version', 'error', e.message);
    return false;
  }
}

// regenerate asks for a new version of reply messageID.
export async function regenerate(chatId, messageID, fields = {}) {
  try {
    await api('POST', `/chats/${chatId}/messages/${messageID}/regenerate`, fields);
  } catch (e) {
    toast('Could not regenerate', 'error', e.message);
  }
}

// fork creates a chat from the branch up to messageID and returns it
// (null when it failed).
export async function fork(chatId, messageID) {
  try {
    return await api('POST', `/chats/${chatId}/fork`, { message_id: messageID });
  } catch (e) {
    toast('Could not fork the chat', 'error', e.message);
    return null;
  }
}
