import { test } from 'node:test';
import assert from 'node:assert/strict';

import { cronFor, describe, isScheduled, learnAuthors } from '../static/js/schedule.js';

test('cronFor turns presets into five-field cron', () => {
  assert.equal(cronFor('hourly', ''), '0 * * * *');
  assert.equal(cronFor('daily', '09:30'), '30 9 * * *');
  assert.equal(cronFor('weekdays', '17:05'), '5 17 * * 1-5');
  assert.equal(cronFor('daily', '24:00'), null);
  assert.equal(cronFor('weekdays', ''), null);
});

test('describe reads presets back', () => {
  assert.equal(describe({ cron: '30 9 * * *', timezone: 'UTC' }), 'daily at 09:30 (UTC)');
  assert.equal(describe({ cron: '5 17 * * 1-5', timezone: 'Europe/Paris' }), 'weekdays at 17:05 (Europe/Paris)');
  assert.equal(describe({ cron: '0 * * * *', timezone: 'UTC' }), 'hourly');
  assert.equal(describe({ every: '2h' }), 'every 2h');
  assert.equal(describe({ cron: '*/5 1 * * 0', timezone: 'UTC' }), 'cron */5 1 * * 0 (UTC)');
});

test('learnAuthors: one read names the schedules among the authors, and is not repeated', async () => {
  const sched = '11111111-1111-4111-8111-111111111111';
  const person = '22222222-2222-4222-8222-222222222222';
  let reads = 0, changes = 0;
  const read = async () => { reads++; return [{ id: sched }]; };
  assert.equal(isScheduled(sched), false);
  await learnAuthors([person, sched, null], () => changes++, read);
  assert.equal(isScheduled(sched), true);
  assert.equal(isScheduled(person), false);
  assert.equal(reads, 1);
  assert.equal(changes, 1);
  // Authors already looked up are not read again.
  assert.equal(learnAuthors([person, sched], () => changes++, read), null);
  assert.equal(reads, 1);
  // A failed read is retried at the next call.
  const other = '33333333-3333-4333-8333-333333333333';
  await learnAuthors([other], () => changes++, async () => { throw new Error('offline'); });
  await learnAuthors([other], () => changes++, async () => { reads++; return [{ id: other }]; });
  assert.equal(isScheduled(other), true);
  assert.equal(reads, 2);
  assert.equal(changes, 2);
});
