import test from 'node:test';
import assert from 'node:assert/strict';

// usage.js imports the DOM helpers, which only touch the DOM when called.
const { formatTokens, formatCost, monthDays, bars, budgetNotice } = await import('../static/js/usage.js');

test('formatTokens and formatCost', () => {
  assert.equal(formatTokens(950), '950');
  assert.equal(formatTokens(12345), '12.3k');
  assert.equal(formatTokens(4_500_000), '4.5M');
  assert.equal(formatCost(0), '0');
  assert.equal(formatCost(1.234567), '1.2346');
});

test('monthDays lists the UTC days of a window', () => {
  const days = monthDays('2026-02-01T00:00:00Z', '2026-03-01T00:00:00Z');
  assert.equal(days.length, 28);
  assert.equal(days[0], '2026-02-01');
  assert.equal(days[27], '2026-02-28');
});

test('bars scale to the tallest day and fill the gaps', () => {
  const out = bars([{ day: '2026-02-02', input_tokens: 30, output_tokens: 10 }, { day: '2026-02-03', input_tokens: 10 }],
    ['2026-02-01', '2026-02-02', '2026-02-03'], 100);
  assert.deepEqual(out.map((b) => [b.day, b.inputH, b.outputH]), [
    ['2026-02-01', 0, 0], ['2026-02-02', 75, 25], ['2026-02-03', 25, 0]]);
});

test('budgetNotice: none, near, over', () => {
  assert.equal(budgetNotice(null), null);
  assert.equal(budgetNotice({ budget: {} }), null);
  const near = budgetNotice({ near: 'tokens_per_day', resets_at: '2026-02-02T00:00:00Z' });
  assert.equal(near.level, 'near');
  assert.match(near.text, /80% of your daily token budget/);
  const over = budgetNotice({ exceeded: 'cost_per_month', near: 'tokens_per_day', resets_at: '2026-03-01T00:00:00Z' });
  assert.equal(over.level, 'over');
  assert.match(over.text, /monthly cost budget is spent/);
  assert.match(over.text, /Sun, 01 Mar 2026 00:00:00 UTC/);
});
