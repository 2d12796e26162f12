// A minimal harness for the OpenAI client tests: start `chatd serve` from
// CHATD_BIN on a temporary database with a known admin token, and load the
// npm clients from CHATD_TEST_NODE_MODULES. Outside CI a missing binary or
// missing modules skip the test; under CI=true they fail it.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { randomBytes } from 'node:crypto';

// missing returns why the test cannot run (or null); it throws under CI.
export function missing() {
  let why = null;
  if (!process.env.CHATD_BIN) why = 'CHATD_BIN is not set (build cmd/chatd and point it there)';
  else if (!process.env.CHATD_TEST_NODE_MODULES) why = 'CHATD_TEST_NODE_MODULES is not set';
  if (why && process.env.CI === 'true') throw new Error(why);
  return why;
}

// load imports an npm package from CHATD_TEST_NODE_MODULES.
export async function load(name) {
  const require = createRequire(path.join(process.env.CHATD_TEST_NODE_MODULES, 'index.js'));
  return import(pathToFileURL(require.resolve(name)).href);
}

// startChatd starts a chatd on a free port and returns its base URL, the
// admin token and stop().
export async function startChatd(env = {}) {
  const dir = mkdtempSync(path.join(tmpdir(), 'chatd-node-'));
  const token = 'chatd_' + randomBytes(24).toString('base64url');
  const proc = spawn(process.env.CHATD_BIN, ['serve'], {
    env: {
      ...process.env, CHATD_ADDR: '127.0.0.1:0', CHATD_DB: path.join(dir, 'chatd.db'),
      CHATD_BOOTSTRAP_TOKEN: token, CHATD_LOG_FORMAT: 'text', ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let log = '';
  const base = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('chatd did not start:\n' + log)), 30000);
    const onData = (chunk) => {
      log += chunk;
      const m = /msg="chatd serving" addr=(http:\/\/\S+)/.exec(log);
      if (m) { clearTimeout(timer); resolve(m[1]); }
    };
    proc.stdout.on('data', onData);
    proc.stderr.on('data', onData);
    proc.on('exit', (code) => { clearTimeout(timer); reject(new Error(`chatd exited with ${code}:\n${log}`)); });
  });
  const stop = async () => {
    if (proc.exitCode === null) {
      const exited = new Promise((resolve) => proc.once('exit', resolve));
      proc.kill('SIGTERM');
      await exited;
    }
    rmSync(dir, { recursive: true, force: true });
  };
  return { base, token, stop };
}
