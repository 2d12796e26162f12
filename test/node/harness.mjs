// Shared harness of the Node tests: starts chatd binaries (CHATD_BIN) the
// way an operator would, on a temporary SQLite file or on a fresh schema of
// CHATD_TEST_POSTGRES_DSN, and gets tokens with `chatd token create`.
// The official npm clients come from CHATD_TEST_NODE_MODULES. Under
// CI=true a missing binary, module directory or Postgres fails the test
// instead of skipping it.
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { randomBytes } from 'node:crypto';

const CI = process.env.CI === 'true';

// need returns a reason to skip the test when a requirement is missing
// (and throws under CI, where nothing may be skipped).
export function need({ postgres = false } = {}) {
  const missing = [];
  if (!process.env.CHATD_BIN || !existsSync(process.env.CHATD_BIN)) missing.push('CHATD_BIN (a built chatd binary)');
  if (!process.env.CHATD_TEST_NODE_MODULES || !existsSync(process.env.CHATD_TEST_NODE_MODULES)) {
    missing.push('CHATD_TEST_NODE_MODULES (the npm clients, see .ci/run)');
  }
  if (postgres && !process.env.CHATD_TEST_POSTGRES_DSN) missing.push('CHATD_TEST_POSTGRES_DSN');
  if (missing.length === 0) return undefined;
  const reason = `missing ${missing.join(', ')}`;
  if (CI) throw new Error(reason);
  return reason;
}

// importModule imports an npm package installed in CHATD_TEST_NODE_MODULES
// through its ESM entry (package.json "exports" "." import, else main).
export async function importModule(name) {
  const dir = join(process.env.CHATD_TEST_NODE_MODULES, name);
  const pkg = JSON.parse((await import('node:fs')).readFileSync(join(dir, 'package.json'), 'utf8'));
  const dot = pkg.exports?.['.'];
  const entry = (typeof dot === 'string' ? dot : dot?.import?.default ?? dot?.import ?? dot?.default) ?? pkg.main ?? 'index.js';
  return import(pathToFileURL(join(dir, entry)).href);
}

async function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

// freshPostgres makes a new schema in the test database and returns a DSN
// whose connections use it, and a function that drops it.
export function freshPostgres() {
  const dsn = process.env.CHATD_TEST_POSTGRES_DSN;
  const schema = 'node_' + randomBytes(6).toString('hex');
  const psql = (sql) => execFileSync('psql', [dsn, '-qc', sql], {
    env: { ...process.env, PGOPTIONS: '-c client_min_messages=warning' }, stdio: ['ignore', 'ignore', 'inherit'],
  });
  psql(`CREATE SCHEMA ${schema}`);
  return { db: `${dsn} search_path=${schema}`, drop: () => psql(`DROP SCHEMA ${schema} CASCADE`) };
}

// Chatd is one running chatd process.
export class Chatd {
  constructor({ url, db, adminToken, proc, env }) {
    Object.assign(this, { url, db, adminToken, proc, env });
    this.logs = '';
  }

  // token creates (or reuses) a user and returns a new API token for it,
  // as an operator does: `chatd token create --user NAME`.
  token(user) {
    const out = execFileSync(process.env.CHATD_BIN, ['token', 'create', '--user', user], {
      env: { ...process.env, ...this.env }, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'],
    });
    return out.trim().split('\n')[0].trim();
  }

  async stop() {
    if (this.proc.exitCode !== null) return;
    const exited = new Promise((resolve) => this.proc.once('exit', resolve));
    this.proc.kill('SIGTERM');
    const timer = setTimeout(() => this.proc.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(timer);
  }
}

// startChatd runs `chatd serve` on db (a SQLite path by default, in a new
// temporary directory) and waits until /healthz answers.
export async function startChatd({ db, env = {}, adminToken = 'admin-' + randomBytes(12).toString('hex') } = {}) {
  let dir;
  if (!db) {
    dir = mkdtempSync(join(tmpdir(), 'chatd-node-'));
    db = join(dir, 'chatd.db');
  }
  const port = await freePort();
  const fullEnv = { CHATD_DB: db, CHATD_ADDR: `127.0.0.1:${port}`, CHATD_BOOTSTRAP_TOKEN: adminToken, ...env };
  const proc = spawn(process.env.CHATD_BIN, ['serve'], { env: { ...process.env, ...fullEnv }, stdio: ['ignore', 'pipe', 'pipe'] });
  const c = new Chatd({ url: `http://127.0.0.1:${port}`, db, adminToken, proc, env: fullEnv });
  proc.stdout.on('data', (b) => { c.logs += b; });
  proc.stderr.on('data', (b) => { c.logs += b; });
  if (dir) proc.once('exit', () => rmSync(dir, { recursive: true, force: true }));
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`chatd exited (${proc.exitCode}):\n${c.logs}`);
    try {
      const res = await fetch(`${c.url}/healthz`);
      if (res.ok) return c;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      await c.stop();
      throw new Error(`chatd did not become healthy:\n${c.logs}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}
