// The official AI SDK client (npm `ai`, AbstractChat + DefaultChatTransport,
// no React) against a real chatd: the UI message stream of
// /api/v2/ai-sdk/chat, resume included (docs/API.md, "AI SDK UI message
// stream"). Run by .ci/run: node --test test/node/
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { need, importModule, startChatd, freshPostgres } from './harness.mjs';

let ai;

// State is a minimal ChatState (what @ai-sdk/react keeps in React state).
class State {
  constructor(messages = []) {
    this.status = 'ready';
    this.error = undefined;
    this.messages = messages;
  }
  pushMessage(m) { this.messages = this.messages.concat(m); }
  popMessage() { this.messages = this.messages.slice(0, -1); }
  replaceMessage(i, m) { this.messages = [...this.messages.slice(0, i), m, ...this.messages.slice(i + 1)]; }
  snapshot(x) { return structuredClone(x); }
}

// newChat is an AbstractChat on chatd's AI SDK route; finished() resolves
// with the next onFinish.
function newChat(server, { id, token, body, fetch, messages, ...init }) {
  const transport = new ai.DefaultChatTransport({
    api: `${server.url}/api/v2/ai-sdk/chat`, headers: { Authorization: `Bearer ${token}` }, body, fetch,
  });
  const waiters = [];
  const chat = new (class extends ai.AbstractChat {})({
    id, transport, state: new State(messages), ...init,
    onFinish: (f) => { const w = waiters.shift(); if (w) w(f); },
  });
  chat.finished = () => new Promise((resolve) => waiters.push(resolve));
  return chat;
}

const text = (m) => m.parts.filter((p) => p.type === 'text').map((p) => p.text).join('');
const chatdMeta = (m) => m.metadata?.chatd;

async function history(server, token, id) {
  const res = await fetch(`${server.url}/api/v2/ai-sdk/chat/${id}/messages`, { headers: { Authorization: `Bearer ${token}` } });
  assert.equal(res.status, 200);
  return res.json();
}

async function resumeStatus(server, token, id) {
  const res = await fetch(`${server.url}/api/v2/ai-sdk/chat/${id}/stream`, { headers: { Authorization: `Bearer ${token}` } });
  await res.body?.cancel();
  return res.status;
}

// cuttingFetch is a fetch whose first POST answer breaks like a dropped
// connection once the reply's text has begun.
function cuttingFetch() {
  let cut = false;
  return async (url, init) => {
    const res = await fetch(url, init);
    if (cut || init?.method !== 'POST') return res;
    cut = true;
    const reader = res.body.getReader();
    const decoder = new TextDecoder();
    let seen = '';
    let breakNext = false;
    const body = new ReadableStream({
      async pull(ctrl) {
        // Broken on the read after the one that brought the text, so the
        // client has taken what came before.
        if (breakNext) {
          await reader.cancel();
          ctrl.error(new TypeError('network error'));
          return;
        }
        const { done, value } = await reader.read();
        if (done) { ctrl.close(); return; }
        ctrl.enqueue(value);
        seen += decoder.decode(value, { stream: true });
        breakNext = (seen.match(/"text-delta"/g) ?? []).length >= 3;
      },
    }, { highWaterMark: 0 });
    return new Response(body, { status: res.status, headers: res.headers });
  };
}

const longPrompt = 'Please repeat after me: ' + Array.from({ length: 300 }, (_, i) => `word${i}`).join(' ');

describe('AI SDK UI message stream', { skip: need() }, () => {
  let server, alice, bob;
  before(async () => {
    ai = await importModule('ai');
    server = await startChatd({ env: { CHATD_BUILTIN_TOOLS: 'true' } });
    alice = server.token('alice');
    bob = server.token('bob');
  });
  after(async () => { await server?.stop(); });

  test('plain turn, then 204 when idle', async () => {
    const chat = newChat(server, { id: 'plainTurn01', token: alice });
    await chat.sendMessage({ text: 'hello from node' });
    assert.equal(chat.status, 'ready', String(chat.error));
    assert.equal(chat.messages.length, 2);
    const reply = chat.messages[1];
    assert.equal(reply.role, 'assistant');
    assert.match(text(reply), /hello from node/);
    assert.match(chatdMeta(reply).chat_id, /^[0-9a-f-]{36}$/);
    assert.equal(reply.parts.filter((p) => p.type === 'step-start').length, 1);
    // The stored history is the same reply.
    const h = await history(server, alice, 'plainTurn01');
    assert.equal(h.length, 2);
    assert.equal(text(h[1]), text(reply));
    assert.equal(h[1].id, reply.id);
    // Nothing runs: 204, and resumeStream changes nothing.
    assert.equal(await resumeStatus(server, alice, 'plainTurn01'), 204);
    await chat.resumeStream();
    assert.equal(chat.status, 'ready');
    assert.equal(chat.messages.length, 2);
  });

  test('server tool', async () => {
    const chat = newChat(server, { id: 'serverTool01', token: alice, body: { title: 'server tool' } });
    await chat.sendMessage({ text: '/tool current_time {}' });
    assert.equal(chat.status, 'ready', String(chat.error));
    const reply = chat.messages[1];
    const call = reply.parts.find((p) => p.type === 'dynamic-tool');
    assert.ok(call, JSON.stringify(reply.parts));
    assert.equal(call.toolName, 'current_time');
    assert.equal(call.state, 'output-available');
    assert.ok(call.output);
    assert.equal(reply.parts.filter((p) => p.type === 'step-start').length, 2, 'the call, then the answer');
    assert.ok(text(reply).length > 0);
  });

  test('tool approval round trip', async () => {
    const chat = newChat(server, {
      id: 'approval01', token: alice, body: { tool_approval: 'always', title: 'approval' },
      sendAutomaticallyWhen: ai.lastAssistantMessageIsCompleteWithApprovalResponses,
    });
    await chat.sendMessage({ text: '/tool current_time {}' });
    let call = chat.messages[1].parts.find((p) => p.type === 'dynamic-tool');
    assert.equal(call?.state, 'approval-requested', JSON.stringify(chat.messages[1].parts));
    const done = chat.finished();
    await chat.addToolApprovalResponse({ id: call.approval.id, approved: true });
    const f = await done;
    assert.equal(f.isError, false, String(chat.error));
    call = chat.messages[1].parts.find((p) => p.type === 'dynamic-tool');
    assert.equal(call.state, 'output-available');
    assert.equal(chat.messages.length, 2, 'one assistant message for the whole turn');
    const h = await history(server, alice, 'approval01');
    assert.equal(h[1].parts.find((p) => p.type === 'dynamic-tool').state, 'output-available');
  });

  test('client tool round trip with addToolOutput', async () => {
    let calls = 0;
    const chat = newChat(server, {
      id: 'clientTool01', token: alice,
      body: { title: 'client tool', tools: [{ name: 'get_weather', description: 'The weather in a city', input_schema: { type: 'object', properties: { city: { type: 'string' } } } }] },
      sendAutomaticallyWhen: ai.lastAssistantMessageIsCompleteWithToolCalls,
      onToolCall: ({ toolCall }) => {
        calls++;
        void chat.addToolOutput({ tool: toolCall.toolName, toolCallId: toolCall.toolCallId, output: { city: toolCall.input.city, sky: 'clear-skies' } });
      },
    });
    const first = chat.finished();
    const second = chat.finished();
    await chat.sendMessage({ text: '/tool get_weather {"city":"Paris"}' });
    assert.equal((await first).finishReason, 'tool-calls');
    // addToolOutput makes the chat send again by itself; that turn ends it.
    const f = await second;
    assert.equal(f.isError, false, String(chat.error));
    assert.equal(f.finishReason, 'stop');
    assert.equal(calls, 1);
    const part = chat.messages[1].parts.find((p) => p.type === 'tool-get_weather');
    assert.ok(part, JSON.stringify(chat.messages[1].parts));
    assert.equal(part.state, 'output-available');
    assert.deepEqual(part.input, { city: 'Paris' });
    const h = await history(server, alice, 'clientTool01');
    const stored = h[1].parts.find((p) => p.type === 'tool-get_weather');
    assert.deepEqual(stored.output, { city: 'Paris', sky: 'clear-skies' });
    assert.match(text(h[1]), /clear-skies/);
  });

  test('edit and regenerate', async () => {
    const chat = newChat(server, { id: 'editRegen01', token: alice, body: { title: 'edit' } });
    await chat.sendMessage({ text: 'first version' });
    await chat.sendMessage({ text: 'second message' });
    assert.equal(chat.messages.length, 4);
    await chat.sendMessage({ text: 'edited version', messageId: chat.messages[0].id });
    assert.equal(chat.status, 'ready', String(chat.error));
    assert.equal(chat.messages.length, 2);
    assert.match(text(chat.messages[1]), /edited version/);
    let h = await history(server, alice, 'editRegen01');
    assert.deepEqual(h.map((m) => text(m).includes('version') || m.role), [true, true]);
    const before = chatdMeta(chat.messages[1]).reply_message_ids;
    await chat.regenerate();
    assert.equal(chat.status, 'ready', String(chat.error));
    assert.equal(chat.messages.length, 2);
    assert.notDeepEqual(chatdMeta(chat.messages[1]).reply_message_ids, before, 'a new reply');
    h = await history(server, alice, 'editRegen01');
    assert.equal(h.length, 2);
    assert.match(text(h[0]), /edited version/);
  });

  test('a resent message id starts no second turn', async () => {
    const message = { id: 'fixed-message-1', role: 'user', parts: [{ type: 'text', text: 'only once please' }] };
    const one = newChat(server, { id: 'resend01', token: alice, body: { title: 'resend' } });
    await one.sendMessage(message);
    const two = newChat(server, { id: 'resend01', token: alice, body: { title: 'resend' } });
    await two.sendMessage(message);
    assert.equal(two.status, 'ready', String(two.error));
    assert.equal(text(two.messages[1]), text(one.messages[1]));
    assert.deepEqual(chatdMeta(two.messages[1]).reply_message_ids, chatdMeta(one.messages[1]).reply_message_ids);
    assert.equal((await history(server, alice, 'resend01')).length, 2);
  });

  test('a cut connection, then resumeStream gives the stored reply once', async () => {
    const chat = newChat(server, { id: 'resume01', token: alice, fetch: cuttingFetch(), body: { title: 'resume' } });
    await chat.sendMessage({ text: longPrompt });
    assert.equal(chat.status, 'error', 'the connection broke mid-reply');
    const partial = text(chat.messages[1]);
    assert.ok(partial.length > 0);
    await chat.resumeStream();
    assert.equal(chat.status, 'ready', String(chat.error));
    assert.equal(chat.messages.length, 2);
    const h = await history(server, alice, 'resume01');
    assert.equal(text(chat.messages[1]), text(h[1]), 'the stored reply, exactly once');
    assert.ok(text(h[1]).startsWith(partial));
    assert.equal(chat.messages[1].parts.filter((p) => p.type === 'step-start').length, 1);
  });

  test('two users with the same client chat id are kept apart', async () => {
    const a = newChat(server, { id: 'sameId01', token: alice, body: { title: 'a' } });
    await a.sendMessage({ text: 'secret of alice' });
    assert.deepEqual(await history(server, bob, 'sameId01'), []);
    const b = newChat(server, { id: 'sameId01', token: bob, body: { title: 'b' } });
    await b.sendMessage({ text: 'note of bob' });
    assert.notEqual(chatdMeta(b.messages[1]).chat_id, chatdMeta(a.messages[1]).chat_id);
    const hb = await history(server, bob, 'sameId01');
    assert.equal(hb.length, 2);
    assert.ok(!JSON.stringify(hb).includes('secret of alice'));
  });
});

describe('AI SDK resume on a second replica (PostgreSQL)', { skip: need({ postgres: true }) }, () => {
  let pg, one, two, alice;
  before(async () => {
    ai = await importModule('ai');
    pg = freshPostgres();
    // Replicas share the admin token and the key that seals provider keys.
    const adminToken = 'admin-replicas-token';
    const env = { CHATD_SECRET_KEY: 'node-test-secret-key-0123456789abcdef' };
    one = await startChatd({ db: pg.db, adminToken, env });
    two = await startChatd({ db: pg.db, adminToken, env });
    alice = one.token('alice');
  });
  after(async () => {
    await one?.stop();
    await two?.stop();
    pg?.drop();
  });

  test('a reply cut on one replica is resumed from the other', async () => {
    const chat = newChat(one, { id: 'replicas01', token: alice, fetch: cuttingFetch(), body: { title: 'replicas' } });
    await chat.sendMessage({ text: longPrompt });
    assert.equal(chat.status, 'error');
    // The same chat, resumed through the other replica.
    const other = newChat(two, { id: 'replicas01', token: alice, messages: chat.messages });
    await other.resumeStream();
    assert.equal(other.status, 'ready', String(other.error));
    const h = await history(two, alice, 'replicas01');
    assert.equal(h.length, 2);
    assert.equal(text(other.messages[1]), text(h[1]));
    assert.equal(other.messages.length, 2);
  });
});
