/**
 * Hardening, driven as an operator and an attacker would: the built
 * `latchkey` executable on a real database file beside a running `latchkey serve`, tokens obtained
 * through the real device flow, and the raw files on disk.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { deviceGrantType } from '../helpers/app.js';
import { actOnDeviceCode, Browser, fetchTransport } from '../helpers/browser.js';
import { runCli, startServerProcess, type ServerProcess } from '../helpers/process.js';
import { waitFor } from '../helpers/wait.js';

let dir: string;
let env: Record<string, string>;
let server: ServerProcess;
const password = 'alice-password-1';

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'latchkey-hardening-'));
  env = { LATCHKEY_DB: join(dir, 'latchkey.db'), LATCHKEY_DEVICE_INTERVAL: '1' };
  expect((await runCli(['users', 'add', 'alice', '--email', 'alice@example.com', '--password-stdin'], env, password)).code).toBe(0);
  expect((await runCli(['clients', 'add', 'tv', '--grant-type', 'device_code', '--grant-type', 'refresh_token'], env)).code).toBe(0);
  server = await startServerProcess(env);
});
afterAll(async () => {
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A sign-in through the device flow, as a TV and its owner would do it. */
async function deviceSignIn(clientId = 'tv', extra: Record<string, string> = {}): Promise<{ access_token: string; refresh_token: string }> {
  const post = (path: string, fields: Record<string, string>) =>
    fetch(`${server.base}${path}`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(fields) });
  const start = await (await post('/oauth/device/code', { client_id: clientId, scope: 'openid offline_access', ...extra })).json();
  await actOnDeviceCode(
    new Browser(fetchTransport(server.base)),
    new URL(start.verification_uri_complete).pathname + new URL(start.verification_uri_complete).search,
    { username: 'alice', password },
    'allow',
  );
  for (;;) {
    const res = await post('/oauth/token', { grant_type: deviceGrantType, client_id: clientId, device_code: start.device_code, ...extra });
    const body = await res.json();
    if (res.status === 200) return body;
    if (body.error !== 'authorization_pending' && body.error !== 'slow_down') throw new Error(JSON.stringify(body));
    await sleep(1100); // a device waits its interval between polls (RFC 8628 §3.5)
  }
}
const userinfo = (token: string) => fetch(`${server.base}/userinfo`, { headers: { authorization: `Bearer ${token}` } });
const refresh = (clientId: string, token: string) =>
  fetch(`${server.base}/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'refresh_token', client_id: clientId, refresh_token: token }),
  });
/** The next whole second (the clock passing is the point): tokens issued in the second of a revocation are refused too. */
const nextSecond = () => sleep(1000 - (Date.now() % 1000) + 20);

describe('ending what a person holds', () => {
  it('users passwd: the old refresh token stops refreshing and the old access token is refused at once', async () => {
    const tokens = await deviceSignIn();
    expect((await userinfo(tokens.access_token)).status).toBe(200);
    const passwd = await runCli(['users', 'passwd', 'alice', '--password-stdin'], env, password);
    expect(passwd.code).toBe(0);
    expect(passwd.stderr).toContain('sessions, refresh tokens and access tokens have ended');
    expect(passwd.stderr).toContain('"event":"user.password_changed"');
    expect((await userinfo(tokens.access_token)).status).toBe(401);
    const refreshed = await refresh('tv', tokens.refresh_token);
    expect(refreshed.status).toBe(400);
    expect((await refreshed.json()).error).toBe('invalid_grant');
  });

  it('users revoke-tokens, disable and enable', async () => {
    await nextSecond();
    const tokens = await deviceSignIn();
    expect((await userinfo(tokens.access_token)).status).toBe(200);
    const revoked = await runCli(['users', 'revoke-tokens', 'alice'], env);
    expect(revoked.code).toBe(0);
    expect(revoked.stderr).toContain('Ended every sign-in of alice');
    expect((await userinfo(tokens.access_token)).status).toBe(401);
    expect((await runCli(['users', 'revoke-tokens', 'nobody'], env)).code).toBe(1);

    await nextSecond();
    const again = await deviceSignIn();
    expect((await runCli(['users', 'disable', 'alice'], env)).code).toBe(0);
    const enabled = await runCli(['users', 'enable', 'alice'], env);
    expect(enabled.code).toBe(0);
    expect(enabled.stderr).toContain('Enabled user alice');
    expect((await userinfo(again.access_token)).status).toBe(401); // enabling brings no old token back
    expect((await runCli(['users', 'enable', 'nobody'], env)).code).toBe(1);
    await nextSecond();
    expect((await userinfo((await deviceSignIn()).access_token)).status).toBe(200);
    // Three device sign-ins, three waits for the next second and five admin processes: 17.4 s at
    // its slowest measured (two test files at once on the shared 2-core machine), three times that.
  }, 60_000);

  it('clients remove: its access tokens stop at once, and a client added again under the same id inherits none', async () => {
    expect((await runCli(['clients', 'add', 'kiosk', '--grant-type', 'device_code'], env)).code).toBe(0);
    const tokens = await deviceSignIn('kiosk');
    expect((await userinfo(tokens.access_token)).status).toBe(200);
    expect((await runCli(['clients', 'remove', 'kiosk'], env)).code).toBe(0);
    expect((await userinfo(tokens.access_token)).status).toBe(401);
    expect((await runCli(['clients', 'add', 'kiosk', '--grant-type', 'device_code'], env)).code).toBe(0);
    expect((await userinfo(tokens.access_token)).status).toBe(401);
  });
});

describe('introspection clients of an API', () => {
  it("apis add/update --introspection-client, and only those clients (or the token's own) learn about a token", async () => {
    const rs = await runCli(['clients', 'add', 'photos-api', '--confidential', '--grant-type', 'device_code'], env);
    const rsSecret = rs.stdout.match(/lk_cs_\S+/)![0];
    const nosy = await runCli(['clients', 'add', 'nosy', '--confidential', '--grant-type', 'device_code'], env);
    const nosySecret = nosy.stdout.match(/lk_cs_\S+/)![0];
    expect((await runCli(['apis', 'add', 'https://photos.example.com', '--introspection-client', 'tv'], env)).stderr).toContain('client "tv" is public');
    expect((await runCli(['apis', 'add', 'https://photos.example.com', '--introspection-client', 'ghost'], env)).stderr).toContain('no client "ghost"');
    expect((await runCli(['apis', 'add', 'https://photos.example.com', '--introspection-client', 'photos-api'], env)).code).toBe(0);
    const listed = JSON.parse((await runCli(['apis', 'list', '--json'], env)).stdout);
    expect(listed).toContainEqual(expect.objectContaining({ identifier: 'https://photos.example.com', introspection_clients: ['photos-api'] }));

    await nextSecond();
    const tokens = await deviceSignIn('tv', { audience: 'https://photos.example.com' });
    const introspect = async (clientId: string, secret: string) =>
      (
        await fetch(`${server.base}/oauth/introspect`, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: new URLSearchParams({ token: tokens.access_token, client_id: clientId, client_secret: secret }),
        })
      ).json();
    expect(await introspect('photos-api', rsSecret)).toMatchObject({ active: true, aud: 'https://photos.example.com' });
    expect(await introspect('nosy', nosySecret)).toEqual({ active: false });
    expect((await runCli(['apis', 'update', 'https://photos.example.com', '--introspection-client', 'nosy'], env)).code).toBe(0);
    expect(await introspect('nosy', nosySecret)).toMatchObject({ active: true });
    expect(await introspect('photos-api', rsSecret)).toEqual({ active: false });
    expect((await runCli(['apis', 'update', 'https://photos.example.com', '--no-introspection-clients'], env)).code).toBe(0);
    expect(await introspect('nosy', nosySecret)).toEqual({ active: false });
  });
});

describe('server secrets at rest', () => {
  it('the database holds no private key or HMAC key in the clear; the key file beside it is 0600', () => {
    const db = new Database(env.LATCHKEY_DB, { readonly: true });
    try {
      const keys = db.prepare('SELECT private_key_pem FROM signing_keys').all() as Array<{ private_key_pem: string }>;
      const secrets = db.prepare('SELECT value FROM server_secrets').all() as Array<{ value: string }>;
      expect(keys.length).toBeGreaterThan(0);
      for (const value of [...keys.map((k) => k.private_key_pem), ...secrets.map((s) => s.value)]) expect(value).toMatch(/^lk1\./);
    } finally {
      db.close();
    }
    expect(statSync(`${env.LATCHKEY_DB}.key`).mode & 0o777).toBe(0o600);
  });

  it('secret-key rotate re-encrypts under a new key while the server runs; keys rotate and signing go on', async () => {
    const before = readFileSync(`${env.LATCHKEY_DB}.key`, 'utf8');
    const rotated = await runCli(['secret-key', 'rotate'], env);
    expect(rotated.code).toBe(0);
    const keyId = rotated.stderr.match(/New secret key (\S+)/)![1]!;
    const after = readFileSync(`${env.LATCHKEY_DB}.key`, 'utf8');
    expect(after).not.toBe(before);
    expect(after.trim().split('\n')).toHaveLength(1);
    const db = new Database(env.LATCHKEY_DB, { readonly: true });
    const values = (db.prepare('SELECT private_key_pem AS v FROM signing_keys UNION ALL SELECT value FROM server_secrets').all() as Array<{ v: string }>).map(
      (r) => r.v,
    );
    db.close();
    for (const value of values) expect(value.split('.')[1]).toBe(keyId);

    // A new signing key, sealed under the new secret key: the running server must open it.
    const kid = (await runCli(['keys', 'rotate'], env)).stdout.trim().split('\n')[0]!;
    // The server looks at the keys once a second: wait until it publishes the new one first.
    await waitFor(async () => (await (await fetch(`${server.base}/.well-known/jwks.json`)).json()).keys[0].kid === kid, {
      what: 'the server to publish the rotated key',
    });
    await nextSecond();
    const tokens = await deviceSignIn();
    expect(JSON.parse(Buffer.from(tokens.access_token.split('.')[0]!, 'base64url').toString()).kid).toBe(kid);
    expect((await userinfo(tokens.access_token)).status).toBe(200);
  });

  it('a copy of the database without its key file cannot be served (no new secrets are made up)', async () => {
    const stolen = join(dir, 'stolen');
    mkdirSync(stolen);
    copyFileSync(env.LATCHKEY_DB!, join(stolen, 'latchkey.db'));
    const res = await runCli(['serve'], { LATCHKEY_DB: join(stolen, 'latchkey.db'), PORT: '0' });
    expect(res.code).toBe(3);
    expect(res.stderr).toMatch(/secret key file .* is missing, but the database's secrets are encrypted/);
    expect(existsSync(join(stolen, 'latchkey.db.key'))).toBe(false);
    const wrongKey = await runCli(['serve'], { LATCHKEY_DB: join(stolen, 'latchkey.db'), PORT: '0', LATCHKEY_SECRET_KEY: 'A'.repeat(43) });
    expect(wrongKey.code).toBe(3);
    expect(wrongKey.stderr).toMatch(/^latchkey: LATCHKEY_SECRET_KEY: .*not among the configured keys/);
  });

  it('with LATCHKEY_SECRET_KEY: generate, rotate by listing the new key first', async () => {
    const home = join(dir, 'env-keyed');
    mkdirSync(home);
    const first = (await runCli(['secret-key', 'generate'], {})).stdout.trim();
    expect(first).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const keyed = { LATCHKEY_DB: join(home, 'latchkey.db'), LATCHKEY_SECRET_KEY: first };
    expect((await runCli(['keys', 'rotate'], keyed)).code).toBe(0);
    expect(existsSync(join(home, 'latchkey.db.key'))).toBe(false);
    const second = (await runCli(['secret-key', 'generate'], {})).stdout.trim();
    const both = { ...keyed, LATCHKEY_SECRET_KEY: `${second},${first}` };
    const rotated = await runCli(['secret-key', 'rotate'], both);
    expect(rotated.code).toBe(0);
    expect(rotated.stderr).toMatch(/Re-encrypted \d+ stored secrets? with key/);
    expect((await runCli(['keys', 'rotate'], { ...keyed, LATCHKEY_SECRET_KEY: second })).code).toBe(0);
    const oldKeyOnly = await runCli(['serve'], { ...keyed, PORT: '0' }); // the old key alone no longer opens them
    expect(oldKeyOnly.code).toBe(3);
    expect(oldKeyOnly.stderr).toContain('not among the configured keys');
  });
});

describe('file modes', () => {
  it('a database made readable by others is warned about at start, and its -wal/-shm are 0600', async () => {
    const loose = join(dir, 'loose');
    mkdirSync(loose);
    const path = join(loose, 'latchkey.db');
    expect((await runCli(['users', 'add', 'zed', '--email', 'zed@example.com', '--password-stdin'], { LATCHKEY_DB: path }, 'zed-password')).code).toBe(0);
    chmodSync(path, 0o644);
    const looseServer = await startServerProcess({ LATCHKEY_DB: path, LATCHKEY_LOG_LEVEL: 'warn' });
    try {
      const warning = `the database file ${path} can be read by other users (mode 0644): run chmod 600 ${path}`;
      await waitFor(() => looseServer.output().includes(warning), { what: 'the warning about the database file mode' });
      for (const side of [`${path}-wal`, `${path}-shm`]) {
        expect(existsSync(side)).toBe(true);
        expect(statSync(side).mode & 0o777).toBe(0o600);
      }
    } finally {
      await looseServer.stop();
    }
  });
});

describe('anonymous /authorize floods', () => {
  it('2,000 anonymous authorization requests with long state and nonce leave the database as it was', async () => {
    const size = () => [env.LATCHKEY_DB!, `${env.LATCHKEY_DB}-wal`].filter(existsSync).reduce((n, f) => n + statSync(f).size, 0);
    const rows = () => {
      const db = new Database(env.LATCHKEY_DB, { readonly: true });
      try {
        return (db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all() as Array<{ name: string }>).map(
          ({ name }) => (db.prepare(`SELECT count(*) AS n FROM "${name}"`).get() as { n: number }).n,
        );
      } finally {
        db.close();
      }
    };
    const before = rows();
    const sizeBefore = size();
    const query = new URLSearchParams({
      response_type: 'code',
      client_id: 'latchkey-cli',
      redirect_uri: 'http://127.0.0.1:1/callback',
      scope: 'openid',
      state: 's'.repeat(1024),
      nonce: 'n'.repeat(256),
      code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
      code_challenge_method: 'S256',
    });
    for (let batch = 0; batch < 20; batch++) {
      const statuses = await Promise.all(
        Array.from({ length: 100 }, async () => (await fetch(`${server.base}/authorize?${query}`, { redirect: 'manual' })).status),
      );
      expect(new Set(statuses)).toEqual(new Set([303]));
    }
    expect(rows()).toEqual(before);
    expect(size()).toBeLessThanOrEqual(sizeBefore + 64 * 1024);
  });
});
