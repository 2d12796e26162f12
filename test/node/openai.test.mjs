// The npm `openai` client (7.55.0) drives chatd's OpenAI-compatible API
// unchanged: a background response whose stream is cut and resumed with
// starting_after yields exactly the response's text, sequence numbers
// strictly increasing.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { load, missing, startChatd } from './openai-harness.mjs';

const skip = missing();

test('openai npm client: background response, stream cut and resumed', { skip: skip ?? false, timeout: 120000 }, async (t) => {
  const { default: OpenAI } = await load('openai');
  const chatd = await startChatd();
  t.after(chatd.stop);
  const client = new OpenAI({ baseURL: chatd.base + '/v1', apiKey: chatd.token, maxRetries: 0 });

  const models = await client.models.list();
  assert.ok(models.data.some((m) => m.id === 'demo'));

  const created = await client.responses.create({ model: 'demo', input: 'Tell me about durable streams', background: true });
  assert.equal(created.object, 'response');
  assert.ok(['queued', 'in_progress'].includes(created.status), created.status);

  const seqs = [];
  let text = '';
  let deltas = 0;
  const first = await client.responses.retrieve(created.id, { stream: true });
  for await (const event of first) {
    seqs.push(event.sequence_number);
    if (event.type === 'response.output_text.delta') {
      text += event.delta;
      if (++deltas === 5) break; // cut the stream mid-text
    }
  }
  assert.equal(deltas, 5, 'the stream was cut while the text streamed');

  let final = null;
  const rest = await client.responses.retrieve(created.id, { stream: true, starting_after: seqs.at(-1) });
  for await (const event of rest) {
    seqs.push(event.sequence_number);
    if (event.type === 'response.output_text.delta') text += event.delta;
    if (event.type === 'response.completed') final = event.response;
  }
  for (let i = 1; i < seqs.length; i++) assert.ok(seqs[i] > seqs[i - 1], `sequence numbers ${seqs}`);
  assert.ok(final, 'the resumed stream ends with response.completed');

  const got = await client.responses.retrieve(created.id);
  assert.equal(got.status, 'completed');
  assert.equal(got.object, 'response');
  assert.ok(got.output_text.length > 0);
  assert.equal(text, got.output_text, 'no gap, no duplicate');

  // Errors come in OpenAI's shape through the client's error classes.
  await assert.rejects(client.responses.retrieve('resp_nope'), (err) => err instanceof OpenAI.NotFoundError);
  await assert.rejects(client.responses.create({ model: 'demo', input: 'x', store: false }),
    (err) => err instanceof OpenAI.BadRequestError && err.param === 'store');
});
