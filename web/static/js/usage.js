// Usage: the page at /usage (what the signed-in user's chats spent, per
// day as a small SVG chart and per model, with their budget; admins also
// see everyone), and the budget notice above the composer when a budget is
// nearly or wholly spent. The pure helpers are exported for node --test.

import { h } from './dom.js';
import { api } from './api.js';
import { toast } from './widgets.js';

const SVG = 'http://www.w3.org/2000/svg';
const LIMIT_NAMES = {
  tokens_per_day: 'daily token', tokens_per_month: 'monthly token',
  cost_per_day: 'daily cost', cost_per_month: 'monthly cost',
};

// formatTokens writes a count the short way: 950, 12.3k, 4.5M.
export function formatTokens(n) {
  n = Number(n) || 0;
  if (n >= 1e6) return `${+(n / 1e6).toFixed(1)}M`;
  if (n >= 1e4) return `${+(n / 1e3).toFixed(1)}k`;
  return String(n);
}

// formatCost writes a cost with at most four decimals ("" for none).
export function formatCost(c) {
  c = Number(c) || 0;
  return c ? String(+c.toFixed(4)) : '0';
}

// monthDays lists the UTC days (YYYY-MM-DD) from from up to to.
export function monthDays(from, to) {
  const out = [];
  for (let d = new Date(from); d < new Date(to); d = new Date(d.getTime() + 86400000)) {
    out.push(d.toISOString().slice(0, 10));
  }
  return out;
}

// bars lays out one bar per day: input and output tokens stacked, heights
// scaled to the tallest day within height; days without usage are 0.
export function bars(rows, days, height) {
  const byDay = new Map(rows.map((r) => [r.day, r]));
  const max = Math.max(1, ...rows.map((r) => (r.input_tokens || 0) + (r.output_tokens || 0)));
  return days.map((day) => {
    const r = byDay.get(day) || {};
    const input = r.input_tokens || 0;
    const output = r.output_tokens || 0;
    return { day, input, output, inputH: (input / max) * height, outputH: (output / max) * height };
  });
}

// budgetNotice is the composer's line for a budget state: null when
// nothing is near, else { level: 'near' | 'over', text }.
export function budgetNotice(state) {
  if (!state) return null;
  const limit = state.exceeded || state.near;
  if (!limit) return null;
  const name = LIMIT_NAMES[limit] || limit;
  const when = state.resets_at ? new Date(state.resets_at).toUTCString().replace(' GMT', ' UTC') : '';
  if (state.exceeded) {
    return { level: 'over', text: `Your ${name} budget is spent: new messages are refused until it resets${when ? ` (${when})` : ''}.` };
  }
  return { level: 'near', text: `You have used over 80% of your ${name} budget${when ? `; it resets ${when}` : ''}.` };
}

function chart(rows, days) {
  const height = 120;
  const w = 14;
  const gap = 4;
  const svg = document.createElementNS(SVG, 'svg');
  const width = days.length * (w + gap);
  svg.setAttribute('viewBox', `0 0 ${width} ${height + 16}`);
  svg.setAttribute('class', 'usage-chart');
  svg.setAttribute('role', 'img');
  svg.setAttribute('aria-label', 'Tokens per day: input and output');
  bars(rows, days, height).forEach((b, i) => {
    const x = i * (w + gap);
    const add = (cls, y, hgt, title) => {
      const r = document.createElementNS(SVG, 'rect');
      r.setAttribute('class', cls);
      r.setAttribute('x', x);
      r.setAttribute('y', y);
      r.setAttribute('width', w);
      r.setAttribute('height', Math.max(0, hgt));
      r.setAttribute('data-day', b.day);
      const t = document.createElementNS(SVG, 'title');
      t.textContent = title;
      r.append(t);
      svg.append(r);
    };
    if (b.input || b.output) {
      add('bar-input', height - b.inputH, b.inputH, `${b.day}: ${b.input} input tokens`);
      add('bar-output', height - b.inputH - b.outputH, b.outputH, `${b.day}: ${b.output} output tokens`);
    }
    if (i % 7 === 0) {
      const t = document.createElementNS(SVG, 'text');
      t.setAttribute('x', x);
      t.setAttribute('y', height + 12);
      t.setAttribute('class', 'chart-label');
      t.textContent = b.day.slice(5);
      svg.append(t);
    }
  });
  return svg;
}

function table(label, head, rows) {
  return h('table', { class: 'usage-table', 'aria-label': label },
    h('thead', {}, h('tr', {}, ...head.map((c) => h('th', { text: c })))),
    h('tbody', {}, ...rows.map((r) => h('tr', {}, ...r.map((c) => h('td', { text: c }))))));
}

const numbers = (r) => [formatTokens(r.input_tokens), formatTokens(r.output_tokens), formatTokens(r.cached_tokens), formatTokens(r.reasoning_tokens), formatCost(r.cost)];
const COLUMNS = ['Input', 'Output', 'Cached', 'Reasoning', 'Cost'];

export class UsageView {
  constructor(app) {
    this.app = app;
    this.body = h('div', { class: 'usage-page' }, h('p', { class: 'muted', text: 'Loading…' }));
    this.el = h('section', { class: 'chat-view usage-view', 'aria-label': 'Usage' },
      h('header', { class: 'chat-header' }, app.sidebarButton(), h('h1', { class: 'chat-title-h', text: 'Usage' })),
      h('div', { class: 'scroller' }, this.body));
    document.title = 'Usage · chatd';
  }

  mounted() { this.load(); }

  destroy() {}

  async load() {
    try {
      const [days, models] = await Promise.all([
        api('GET', '/users/me/usage?group_by=day'), api('GET', '/users/me/usage?group_by=model')]);
      const parts = [
        h('p', { class: 'usage-total', text: `This month: ${formatTokens(days.total.input_tokens)} input and ${formatTokens(days.total.output_tokens)} output tokens, cost ${formatCost(days.total.cost)}.` }),
        this.budget(days.budget),
        h('h2', { text: 'Per day' }),
        h('p', { class: 'usage-legend muted' }, h('span', { class: 'swatch input' }), 'input tokens ',
          h('span', { class: 'swatch output' }), 'output tokens'),
        chart(days.rows, monthDays(days.from, days.to)),
        h('h2', { text: 'Per model' }),
        models.rows.length ? table('Per model', ['Model', ...COLUMNS], models.rows.map((r) => [r.model, ...numbers(r)]))
          : h('p', { class: 'muted', text: 'Nothing used this month.' }),
      ];
      if (this.app.me && this.app.me.admin) {
        const all = await api('GET', '/usage?group_by=user');
        parts.push(h('h2', { text: 'Everyone' }),
          table('Everyone', ['User', ...COLUMNS], all.rows.map((r) => [r.username || r.user_id, ...numbers(r)])));
      }
      this.body.replaceChildren(...parts);
    } catch (e) {
      toast('Could not load usage', 'error', e && e.message);
    }
  }

  budget(state) {
    if (!state) return null;
    const b = state.budget || {};
    const limits = Object.entries(LIMIT_NAMES).filter(([k]) => b[k] != null)
      .map(([k, name]) => `${name}: ${k.startsWith('cost') ? formatCost(b[k]) : formatTokens(b[k])}`);
    const notice = budgetNotice(state);
    return h('div', { class: 'usage-budget' },
      h('p', { text: limits.length ? `Budget (${state.override ? 'set for you' : 'default'}): ${limits.join(', ')}.` : 'No budget applies to you.' }),
      notice && h('p', { class: `budget-notice ${notice.level}`, text: notice.text }));
  }
}

// mountBudgetNotice puts the budget notice above a composer when the
// signed-in user's budget is nearly or wholly spent, replacing the one
// shown (the chat view calls it again when a turn ends). Failures are
// quiet: the composer works without it.
export async function mountBudgetNotice(composerWrap) {
  try {
    const r = await api('GET', '/users/me/usage?group_by=day', undefined, { quiet401: true });
    const notice = budgetNotice(r && r.budget);
    const old = composerWrap.querySelector(':scope > .budget-notice');
    if (old) old.remove();
    if (!notice) return;
    composerWrap.prepend(h('p', { class: `budget-notice ${notice.level}`, role: 'status', text: notice.text }));
  } catch {
    // no notice
  }
}
