import { test } from 'node:test';
import assert from 'node:assert/strict';

import { cronFor, describe } from '../static/js/schedule.js';

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
