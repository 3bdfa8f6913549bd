/**
 * The secret key and the signing keys, handled as operators get them wrong: a key file that does
 * not belong to the database, and a signing key written in the clear into a database whose secrets
 * are sealed (what an older `latchkey keys rotate` does). The admin commands change nothing, file
 * or row, with a wrong key; the running server stops signing (503, /readyz 503) rather than
 * answering 500 or signing with an untrusted key; a restart refuses the key by name; the operator's
 * own `latchkey secret-key rotate` encrypts it, and then all is well.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { generateSigningKey } from '../../src/crypto/keys.js';
import { generateSecretKeyText, secretKeyOf } from '../../src/crypto/secret_box.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite_store.js';
import { deviceGrantType } from '../helpers/app.js';
import { actOnDeviceCode, Browser, fetchTransport } from '../helpers/browser.js';
import { freePort, runCli, startServerProcess, type ServerProcess } from '../helpers/process.js';
import { waitFor } from '../helpers/wait.js';

let dir: string;
let env: Record<string, string>;
afterEach(() => rmSync(dir, { recursive: true, force: true }));

async function setUp(): Promise<string> {
  dir = mkdtempSync(join(tmpdir(), 'latchkey-keys-'));
  const db = join(dir, 'latchkey.db');
  env = { LATCHKEY_DB: db, LATCHKEY_ISSUER: 'http://keys.latchkey.test', LATCHKEY_DEVICE_INTERVAL: '1' };
  expect((await runCli(['users', 'add', 'carol', '--email', 'carol@example.com', '--password-stdin'], env, 'carol-password\n')).code).toBe(0);
  expect((await runCli(['clients', 'add', 'tv', '--grant-type', 'device_code', '--grant-type', 'refresh_token'], env)).code).toBe(0);
  const server = await startServerProcess(env);
  await server.stop();
  return db;
}

/** Everything the database holds about keys and secrets, to compare before and after. */
function keyRows(db: string): unknown {
  const handle = new Database(db, { readonly: true });
  try {
    return {
      signingKeys: handle.prepare('SELECT kid, private_key_pem, retired_at FROM signing_keys ORDER BY kid').all(),
      serverSecrets: handle.prepare('SELECT name, value FROM server_secrets ORDER BY name').all(),
      users: handle.prepare('SELECT username FROM users ORDER BY username').all(),
    };
  } finally {
    handle.close();
  }
}

async function deviceTokens(server: ServerProcess): Promise<{ status: number; body: Record<string, string> }> {
  const post = async (path: string, fields: Record<string, string>) => {
    const res = await fetch(server.base + path, { method: 'POST', body: new URLSearchParams(fields) });
    return { status: res.status, body: (await res.json()) as Record<string, string> };
  };
  const device = await post('/oauth/device/code', { client_id: 'tv', scope: 'openid offline_access' });
  await actOnDeviceCode(
    new Browser(fetchTransport(server.base)),
    `/activate?user_code=${device.body.user_code}`,
    { username: 'carol', password: 'carol-password' },
    'allow',
  );
  return post('/oauth/token', { grant_type: deviceGrantType, client_id: 'tv', device_code: device.body.device_code! });
}

describe('a key file that does not belong to the database', () => {
  it('every admin command refuses it and changes nothing, file or row; with the right file back, the server starts and signs', async () => {
    const db = await setUp();
    const keyFile = `${db}.key`;
    const right = readFileSync(keyFile);
    const wrongKey = generateSecretKeyText();
    writeFileSync(keyFile, `${wrongKey}\n`, { mode: 0o600 });
    const before = keyRows(db);
    const refusal = new RegExp(
      `^latchkey: LATCHKEY_SECRET_KEY: the database's secrets are encrypted with secret key [A-Za-z0-9_-]{8}, which is not among the configured keys \\(${secretKeyOf(Buffer.from(wrongKey, 'base64url')).id}\\): the configured key does not belong to this database\\. .*nothing was changed\\n$`,
    );

    for (const args of [
      ['secret-key', 'rotate'],
      ['keys', 'rotate'],
      ['users', 'add', 'dave', '--email', 'dave@example.com', '--password-stdin'],
    ]) {
      const run = await runCli(args, env, 'dave-password\n');
      expect({ args, code: run.code }).toEqual({ args, code: 3 });
      expect(run.stderr).toMatch(refusal);
      expect(readFileSync(keyFile, 'utf8')).toBe(`${wrongKey}\n`);
      expect(keyRows(db)).toEqual(before);
    }
    const serve = await runCli(['serve'], { ...env, PORT: String(await freePort()) });
    expect(serve.code).toBe(3);
    expect(serve.stderr).toMatch(refusal);

    writeFileSync(keyFile, right, { mode: 0o600 });
    const server = await startServerProcess(env);
    try {
      expect((await deviceTokens(server)).status).toBe(200);
    } finally {
      await server.stop();
    }
  }, 60_000);
});

describe('a signing key written in the clear into a database whose secrets are sealed', () => {
  it('the running server stops signing with a clear 503 and /readyz 503; a restart refuses it by name; secret-key rotate encrypts it', async () => {
    const db = await setUp();
    const server = await startServerProcess(env);
    let kid: string;
    try {
      expect((await deviceTokens(server)).status).toBe(200);
      expect((await fetch(`${server.base}/readyz`)).status).toBe(200);

      // What an older `latchkey keys rotate` does: a new active key, its private key as PEM.
      const store = new SqliteStore({ path: db });
      try {
        const key = generateSigningKey('RS256');
        kid = key.kid;
        await store.rotateSigningKeys([{ ...key, createdAt: Math.floor(Date.now() / 1000) }], Math.floor(Date.now() / 1000));
      } finally {
        await store.close();
      }
      // The server looks at the keys once a second: wait until it has seen this one.
      await waitFor(async () => (await fetch(`${server.base}/readyz`)).status === 503, { what: 'the server to see the key stored in the clear' });
      const refused = await deviceTokens(server);
      expect({ status: refused.status, error: refused.body.error }).toEqual({ status: 503, error: 'temporarily_unavailable' });
      const ready = await fetch(`${server.base}/readyz`);
      expect({ status: ready.status, body: await ready.json() }).toEqual({ status: 503, body: { status: 'unavailable', reason: 'signing' } });
      const jwks = (await (await fetch(`${server.base}/.well-known/jwks.json`)).json()) as { keys: { kid: string }[] };
      expect(jwks.keys.map((k) => k.kid)).not.toContain(kid);
      expect(server.output()).toContain('"event":"signing.unavailable"');
    } finally {
      await server.stop();
    }

    const serve = await runCli(['serve'], { ...env, PORT: String(await freePort()) });
    expect(serve.code).toBe(3);
    expect(serve.stderr).toContain(`signing_key:${kid} is stored in the clear in a database whose secrets are encrypted`);
    expect(serve.stderr).toContain('run "latchkey secret-key rotate" to encrypt it');

    const rotate = await runCli(['secret-key', 'rotate'], env);
    expect(rotate.code, rotate.stderr).toBe(0);
    const again = await startServerProcess(env);
    try {
      const tokens = await deviceTokens(again);
      expect(tokens.status).toBe(200);
      expect(JSON.parse(Buffer.from(tokens.body.access_token!.split('.')[0]!, 'base64url').toString()).kid).toBe(kid);
      expect((await fetch(`${again.base}/readyz`)).status).toBe(200);
    } finally {
      await again.stop();
    }
  }, 60_000);
});
