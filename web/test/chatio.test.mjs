import { test } from 'node:test';
import assert from 'node:assert/strict';

import { exportFileName, importSummary } from '../static/js/chatio.js';

test('exportFileName reads Content-Disposition, else a default by format', () => {
  assert.equal(exportFileName('attachment; filename="chat-weather-2026-12-04.json"', 'json'), 'chat-weather-2026-12-04.json');
  assert.equal(exportFileName('attachment; filename=chat-x-2026-12-04.md', 'markdown'), 'chat-x-2026-12-04.md');
  assert.equal(exportFileName("attachment; filename*=UTF-8''chat-%C3%A9.md", 'markdown'), 'chat-é.md');
  assert.equal(exportFileName('', 'markdown'), 'chat.md');
  assert.equal(exportFileName(null, 'json'), 'chat.json');
});

test('importSummary tells a new import from an earlier one', () => {
  assert.equal(importSummary(201, { title: 'Trip' }), 'Imported “Trip”.');
  assert.equal(importSummary(200, { title: 'Trip' }), 'This export was imported before: opened “Trip”.');
  assert.equal(importSummary(201, {}), 'Imported the chat.');
});
