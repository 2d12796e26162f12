// Schedules of a chat: the "Schedule" dialog of the chat menu. It lists
// the chat's schedules (next run, run history, pause, delete) and adds one
// from a preset (hourly, daily at, weekdays at) or an interval. Pure
// helpers (cronFor, describe) are exported for node tests.

import { h, icon, formatTime } from './dom.js';
import { api } from './api.js';
import { toast } from './widgets.js';

// cronFor turns a preset and a time of day ("HH:MM") into a five-field
// cron expression; null when the time is not valid.
export function cronFor(preset, time) {
  if (preset === 'hourly') return '0 * * * *';
  const m = /^([01]?\d|2[0-3]):([0-5]\d)$/.exec(time || '');
  if (!m) return null;
  const [hh, mm] = [Number(m[1]), Number(m[2])];
  if (preset === 'daily') return `${mm} ${hh} * * *`;
  if (preset === 'weekdays') return `${mm} ${hh} * * 1-5`;
  return null;
}

// describe says when a schedule runs, in words where it is a preset.
export function describe(s) {
  if (s.every) return `every ${s.every}`;
  if (s.at) return `once at ${s.at}`;
  const c = /^(\d+) (\d+) \* \* (\*|1-5)$/.exec(s.cron || '');
  if (s.cron === '0 * * * *') return 'hourly';
  if (c) {
    const t = `${c[2].padStart(2, '0')}:${c[1].padStart(2, '0')}`;
    return `${c[3] === '*' ? 'daily' : 'weekdays'} at ${t} (${s.timezone})`;
  }
  return `cron ${s.cron} (${s.timezone})`;
}

function errorText(e) { return e && e.message ? e.message : String(e); }

function localZone() {
  try { return Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC'; } catch { return 'UTC'; }
}

// scheduleDialog opens the chat's schedules.
export function scheduleDialog(chat) {
  const list = h('ul', { class: 'schedule-list', 'aria-label': 'Schedules' });
  const history = h('div', { class: 'schedule-runs', 'aria-live': 'polite' });
  const prompt = h('textarea', { class: 'text-input', id: 'schedule-prompt', rows: 2, 'aria-label': 'Prompt', placeholder: 'What to ask each time' });
  const preset = h('select', { class: 'text-input', id: 'schedule-preset', 'aria-label': 'When' },
    h('option', { value: 'daily', text: 'Daily at' }), h('option', { value: 'weekdays', text: 'Weekdays at' }),
    h('option', { value: 'hourly', text: 'Hourly' }), h('option', { value: 'every', text: 'Every (interval)' }));
  const time = h('input', { class: 'text-input', id: 'schedule-time', type: 'time', value: '09:00', 'aria-label': 'Time of day' });
  const every = h('input', { class: 'text-input mono', id: 'schedule-every', type: 'text', value: '1h', hidden: true, 'aria-label': 'Interval (Go duration)' });
  const newChat = h('input', { type: 'checkbox', id: 'schedule-new-chat' });
  const err = h('p', { class: 'form-error', role: 'alert' });
  preset.addEventListener('change', () => {
    time.hidden = preset.value === 'hourly' || preset.value === 'every';
    every.hidden = preset.value !== 'every';
  });

  const load = async () => {
    try {
      const schedules = await api('GET', `/chats/${chat.id}/schedules`);
      list.replaceChildren(...schedules.map(row));
      if (!schedules.length) list.replaceChildren(h('li', { class: 'muted', text: 'No schedules yet.' }));
    } catch (e) {
      err.textContent = errorText(e);
    }
  };
  const row = (s) => {
    const text = (s.content.find((p) => p.type === 'text') || {}).text || '';
    const next = s.next_run_at ? `next ${formatTime(new Date(s.next_run_at))}` : 'no next run';
    const state = s.paused ? `paused (${s.paused.replace('_', ' ')})` : (s.enabled ? next : 'off');
    const runs = h('button', { type: 'button', class: 'btn ghost schedule-history', onclick: () => showRuns(s) }, 'History');
    const toggle = h('button', { type: 'button', class: 'btn ghost schedule-toggle', onclick: () => change(() => api('PATCH', `/chats/${chat.id}/schedules/${s.id}`, { enabled: !s.enabled })) }, s.enabled ? 'Pause' : 'Resume');
    const del = h('button', { type: 'button', class: 'icon-btn schedule-delete', 'aria-label': 'Delete schedule', onclick: () => change(() => api('DELETE', `/chats/${chat.id}/schedules/${s.id}`)) }, icon('trash'));
    return h('li', { class: 'schedule', dataset: { id: s.id } },
      h('div', {}, h('strong', { class: 'schedule-when', text: describe(s) }), h('span', { class: 'muted schedule-next', text: ` · ${state}` })),
      h('div', { class: 'muted', text: text }), h('div', { class: 'row-end' }, runs, toggle, del));
  };
  const change = async (fn) => {
    err.textContent = '';
    try { await fn(); await load(); } catch (e) { err.textContent = errorText(e); }
  };
  const showRuns = async (s) => {
    try {
      const runs = await api('GET', `/chats/${chat.id}/schedules/${s.id}/runs?limit=20`);
      history.replaceChildren(h('h3', { text: `Runs of “${describe(s)}”` }),
        runs.length ? h('ul', {}, runs.map((r) => h('li', { class: `schedule-run ${r.status}` },
          `${formatTime(new Date(r.due_at))}: ${r.status}`, r.detail ? h('span', { class: 'muted', text: ` (${r.detail})` }) : null)))
          : h('p', { class: 'muted', text: 'No runs yet.' }));
    } catch (e) {
      err.textContent = errorText(e);
    }
  };
  const create = async () => {
    err.textContent = '';
    const body = { content: [{ type: 'text', text: prompt.value.trim() }], timezone: localZone(), new_chat: newChat.checked };
    if (!body.content[0].text) { err.textContent = 'Write the prompt to send.'; return; }
    if (preset.value === 'every') body.every = every.value.trim();
    else {
      body.cron = cronFor(preset.value, time.value);
      if (!body.cron) { err.textContent = 'Pick a time of day.'; return; }
    }
    try {
      await api('POST', `/chats/${chat.id}/schedules`, body);
      prompt.value = '';
      toast('Schedule added');
      await load();
    } catch (e) {
      err.textContent = errorText(e);
    }
  };

  const d = h('dialog', { class: 'dialog schedule-dialog', 'aria-labelledby': 'schedule-title' },
    h('h2', { id: 'schedule-title', text: 'Schedule' }),
    h('p', { class: 'muted', text: 'Send a prompt to this chat on a timetable. Each run is queued if the chat is busy.' }),
    list, history,
    h('form', { class: 'schedule-form', onsubmit: (e) => { e.preventDefault(); create(); } },
      prompt, h('div', { class: 'row' }, preset, time, every),
      h('label', { class: 'check' }, newChat, ' Start a new chat each time'),
      err,
      h('div', { class: 'dialog-actions' },
        h('button', { type: 'button', class: 'btn ghost', onclick: () => d.close() }, 'Close'),
        h('button', { type: 'submit', class: 'btn primary' }, icon('clock'), 'Add schedule'))));
  d.addEventListener('close', () => d.remove());
  document.body.append(d);
  d.showModal();
  prompt.focus();
  load();
  return d;
}

// A prompt a schedule sent carries the schedule's id as its author
// (created_by). The thread asks authorOf for each user message's author;
// ids it has not seen are looked up in one read of the caller's schedules
// (GET /schedules), after which onChange re-renders what became known.
const scheduleIds = new Set();
const checked = new Set();
let reading = null;

// isScheduled reports whether a message's author is a known schedule.
export function isScheduled(authorId) { return !!authorId && scheduleIds.has(authorId); }

// learnAuthors looks up the authors not seen yet (at most one read at a
// time; authors met during a read are looked up at the next call).
export function learnAuthors(authorIds, onChange, read = () => api('GET', '/schedules')) {
  if (reading) return reading;
  const unknown = authorIds.filter((id) => id && !scheduleIds.has(id) && !checked.has(id));
  if (!unknown.length) return null;
  for (const id of unknown) checked.add(id);
  reading = Promise.resolve().then(read).then((list) => {
    for (const s of list || []) scheduleIds.add(s.id);
    if (unknown.some((id) => scheduleIds.has(id))) onChange();
  }).catch(() => {
    for (const id of unknown) checked.delete(id); // asked again later
  }).finally(() => { reading = null; });
  return reading;
}
