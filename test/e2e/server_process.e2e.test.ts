/**
 * The built executable, run as an operator and a device would: admin commands on a real
 * database file, `latchkey serve` as a child process, the device flow over HTTP with real
 * polling at the advertised interval, and clean shutdown.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { deviceGrantType } from '../helpers/app.js';
import { actOnDeviceCode, Browser, fetchTransport } from '../helpers/browser.js';
import { runCli, startServerProcess, type ServerProcess } from '../helpers/process.js';
import { waitFor } from '../helpers/wait.js';

let dir: string;
let env: Record<string, string>;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'latchkey-proc-'));
  env = { LATCHKEY_DB: join(dir, 'nested', 'latchkey.db') };
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('latchkey administration commands', () => {
  it('--help lists the commands; no command is a usage error', async () => {
    const help = await runCli(['--help'], env);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('users add');
    expect(help.stdout).toContain('clients add');
    expect(help.stdout).toContain('apis add');
    const none = await runCli([], env);
    expect(none.code).toBe(2);
    const unknown = await runCli(['frobnicate'], env);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('unknown command "frobnicate"');
    const sub = await runCli(['clients', 'add', '--help'], env);
    expect(sub.stdout).toContain('latchkey clients add <client_id>');
  });

  it('users add / list / disable / passwd on the database file (created with its folder)', async () => {
    const add = await runCli(['users', 'add', 'bob', '--email', 'bob@example.com', '--name', 'Bob Builder', '--password-stdin'], env, 'bob-password\n');
    expect(add.stderr).toContain('Created user bob');
    expect(add.code).toBe(0);
    expect(existsSync(env.LATCHKEY_DB!)).toBe(true);
    const dup = await runCli(['users', 'add', 'BOB', '--email', 'b@example.com', '--password-stdin'], env, 'whatever-pass');
    expect(dup.code).toBe(1);
    expect(dup.stderr).toBe('latchkey: user "BOB" already exists\n');
    const short = await runCli(['users', 'add', 'carol', '--email', 'c@example.com', '--password-stdin'], env, 'short');
    expect(short.code).toBe(2);
    expect(short.stderr).toContain('at least 8 characters');
    const noEmail = await runCli(['users', 'add', 'dave', '--password-stdin'], env, 'dave-password');
    expect(noEmail.code).toBe(2);
    expect(noEmail.stderr).toContain('--email is required');

    const generated = await runCli(['users', 'add', 'erin', '--email', 'erin@example.com'], env);
    expect(generated.code).toBe(0);
    expect(generated.stdout).toMatch(/^Password for erin \(shown only once\): [A-Za-z0-9]{20}\n$/);

    const list = JSON.parse((await runCli(['users', 'list', '--json'], env)).stdout);
    expect(list.map((u: { username: string }) => u.username)).toEqual(['bob', 'erin']);
    expect(list[0]).toMatchObject({ username: 'bob', email: 'bob@example.com', name: 'Bob Builder', disabled: false });
    expect(list[0].id).toMatch(/^[0-9a-f-]{36}$/);
    // No password hash of any kind is listed.
    expect(JSON.stringify(list)).not.toMatch(/argon2|scrypt/);

    expect((await runCli(['users', 'passwd', 'erin', '--password-stdin'], env, 'erin-new-password\n')).code).toBe(0);
    expect((await runCli(['users', 'disable', 'erin'], env)).code).toBe(0);
    expect((await runCli(['users', 'disable', 'nobody'], env)).code).toBe(1);
    const table = (await runCli(['users', 'list'], env)).stdout;
    expect(table.split('\n')[0]).toMatch(/^USERNAME\s+EMAIL\s+NAME\s+STATUS\s+CREATED\s+SOURCE\s+ROLES\s+LINKED$/);
    expect(table).toMatch(/erin\s+erin@example.com\s+disabled/);
  });

  it('clients add (public, confidential), list, remove; apis add, list, remove', async () => {
    // Four commands that do not depend on one another, at once.
    const [tv, web, bad, badGrant] = await Promise.all([
      runCli(['clients', 'add', 'tv', '--name', 'Living Room TV', '--grant-type', 'device_code', '--grant-type', 'refresh_token'], env),
      runCli(['clients', 'add', 'web', '--confidential', '--redirect-uri', 'https://app.example.com/cb', '--first-party'], env),
      runCli(['clients', 'add', 'x', '--redirect-uri', 'javascript:alert(1)'], env),
      runCli(['clients', 'add', 'y', '--grant-type', 'password'], env),
    ]);
    expect(tv.code).toBe(0);
    expect(tv.stdout).toBe('');
    expect(web.code).toBe(0);
    expect(web.stdout).toMatch(/^client_secret \(shown only once\): lk_cs_[A-Za-z0-9_-]{43}\n$/);
    expect(bad.code).toBe(2);
    expect(badGrant.code).toBe(2);
    expect(badGrant.stderr).toContain('unknown grant type "password"');
    const dup = await runCli(['clients', 'add', 'tv'], env);
    expect(dup.code).toBe(1);

    const clients = JSON.parse((await runCli(['clients', 'list', '--json'], env)).stdout);
    expect(clients.find((c: { client_id: string }) => c.client_id === 'web')).toMatchObject({
      type: 'confidential',
      redirect_uris: ['https://app.example.com/cb'],
      grant_types: ['authorization_code', 'refresh_token'],
      require_pkce: false, // PKCE is required of public clients; confidential ones may send it
      first_party: true,
    });
    expect(clients.find((c: { client_id: string }) => c.client_id === 'tv')).toMatchObject({
      type: 'public',
      grant_types: ['device_code', 'refresh_token'],
      require_pkce: true,
    });
    expect(JSON.stringify(clients)).not.toContain('lk_cs_');
    expect((await runCli(['clients', 'remove', 'web'], env)).code).toBe(0);
    expect((await runCli(['clients', 'remove', 'web'], env)).code).toBe(1);

    expect((await runCli(['apis', 'add', 'https://api.example.com', '--name', 'Example API'], env)).code).toBe(0);
    expect(JSON.parse((await runCli(['apis', 'list', '--json'], env)).stdout)).toMatchObject([{ identifier: 'https://api.example.com', name: 'Example API' }]);
    expect((await runCli(['apis', 'add', 'temp'], env)).code).toBe(0);
    expect((await runCli(['apis', 'remove', 'temp'], env)).code).toBe(0);
    // Twelve processes of the executable (this file is about the process), eight of them in a row:
    // 11.5 s at the slowest measured run on the shared 2-core machine, three times that.
  }, 35_000);

  it('a database that cannot be opened stops serve with one line naming LATCHKEY_DB', async () => {
    const res = await runCli(['serve'], { LATCHKEY_DB: dir });
    expect(res.code).toBe(3);
    expect(res.stderr.trim().split('\n')).toHaveLength(1);
    expect(res.stderr).toMatch(/^latchkey: LATCHKEY_DB: cannot open the database /);
  });

  it('bad configuration stops with one line naming the variable', async () => {
    const res = await runCli(['serve'], { ...env, PORT: 'eighty', LATCHKEY_DEVICE_INTERVAL: '0' });
    expect(res.code).toBe(3);
    expect(res.stderr.trim().split('\n')).toEqual(['latchkey: PORT must be a port number', 'latchkey: LATCHKEY_DEVICE_INTERVAL must be at least 1']);
  });
});

describe('latchkey serve', () => {
  let server: ServerProcess;

  it('creates the first user on an empty database; its generated password is shown to a person, never to a log', async () => {
    const fresh = { LATCHKEY_DB: join(dir, 'fresh', 'latchkey.db') };
    // Output read by a program (stderr not a terminal): JSON log lines, and the password is not among them.
    const logged = await startServerProcess(fresh);
    expect(await logged.stop()).toBe(0);
    const entry = logged
      .output()
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .find((line) => line.event === 'startup.first_user');
    expect(entry).toMatchObject({ username: 'admin', created: true });
    expect(String(entry?.msg)).toContain('shown only on a terminal');
    expect(statSync(fresh.LATCHKEY_DB).isFile()).toBe(true);
    // Output for a person: the password, at each start until it is used.
    const first = await startServerProcess({ ...fresh, LATCHKEY_LOG_FORMAT: 'text' });
    const password = first.output().match(/The first user "admin" has not signed in yet; its password: ([A-Za-z0-9]{20}) {2}\(shown at each start/)?.[1];
    expect(password).toBeDefined();
    expect(await first.stop()).toBe(0);
    expect(logged.output()).not.toContain(password);
    const second = await startServerProcess({ ...fresh, LATCHKEY_LOG_FORMAT: 'text' });
    expect(second.output()).toContain(`its password: ${password}`);
    expect(await second.stop()).toBe(0);
    const users = JSON.parse((await runCli(['users', 'list', '--json'], fresh)).stdout);
    expect(users.map((u: { username: string }) => u.username)).toEqual(['admin']);
  });

  it('runs the device flow with real polling, while admin commands work on the same database', async () => {
    // No grace for a retried refresh: the theft check below needs no waiting for it to pass.
    server = await startServerProcess({ ...env, LATCHKEY_DEVICE_INTERVAL: '1', LATCHKEY_REFRESH_REUSE_GRACE: '0' });
    // Registered while the server runs, used at once.
    expect((await runCli(['clients', 'add', 'kiosk', '--name', 'Lobby Kiosk', '--grant-type', 'device_code'], env)).code).toBe(0);

    const post = async (path: string, fields: Record<string, string>) => {
      const res = await fetch(server.base + path, { method: 'POST', body: new URLSearchParams(fields) });
      return { status: res.status, body: (await res.json()) as Record<string, string | number> };
    };
    const device = await post('/oauth/device/code', { client_id: 'kiosk', scope: 'openid profile' });
    expect(device.status).toBe(200);
    expect(device.body.verification_uri).toBe(`${server.base}/activate`);

    const browser = new Browser(fetchTransport(server.base));
    const approval = actOnDeviceCode(browser, `/activate?user_code=${device.body.user_code}`, { username: 'bob', password: 'bob-password' }, 'allow');

    // The device polls at the advertised interval, as RFC 8628 §3.5 asks.
    const answers: string[] = [];
    let tokens: Record<string, string | number> | undefined;
    for (let i = 0; i < 20 && !tokens; i++) {
      const res = await post('/oauth/token', { grant_type: deviceGrantType, device_code: String(device.body.device_code), client_id: 'kiosk' });
      if (res.status === 200) tokens = res.body;
      else answers.push(String(res.body.error));
      if (!tokens) await new Promise((r) => setTimeout(r, Number(device.body.interval) * 1000 + 50));
    }
    expect((await approval).status).toBe(200);
    expect(tokens).toMatchObject({ token_type: 'Bearer', scope: 'openid profile' });
    expect(tokens!.refresh_token).toBeUndefined(); // kiosk has no refresh_token grant
    expect(new Set(answers)).toEqual(new Set(['authorization_pending']));

    const ready = await fetch(`${server.base}/readyz`);
    expect(ready.status).toBe(200);
  });

  it('token lifecycle end to end: refresh, theft detection, key rotation by the CLI mid-flow, revocation', async () => {
    const post = async (path: string, fields: Record<string, string>) => {
      const res = await fetch(server.base + path, { method: 'POST', body: new URLSearchParams(fields) });
      return { status: res.status, body: (await res.json()) as Record<string, string> };
    };
    const signInWithDevice = async () => {
      const device = await post('/oauth/device/code', { client_id: 'latchkey-cli', scope: 'openid profile offline_access' });
      const browser = new Browser(fetchTransport(server.base));
      await actOnDeviceCode(browser, `/activate?user_code=${device.body.user_code}`, { username: 'bob', password: 'bob-password' }, 'allow');
      const tokens = await post('/oauth/token', { grant_type: deviceGrantType, device_code: device.body.device_code!, client_id: 'latchkey-cli' });
      expect(tokens.status).toBe(200);
      return tokens.body;
    };
    const refreshWith = (token: string) => post('/oauth/token', { grant_type: 'refresh_token', client_id: 'latchkey-cli', refresh_token: token });
    const userinfo = async (token: string) => (await fetch(`${server.base}/userinfo`, { headers: { authorization: `Bearer ${token}` } })).status;
    const kidOf = (jwt: string) => JSON.parse(Buffer.from(jwt.split('.')[0]!, 'base64url').toString()).kid as string;

    // Theft: a rotated token presented again (no grace window here), once its successor has been
    // used, revokes the family, newest token included.
    const stolen = await signInWithDevice();
    const rotated = await refreshWith(stolen.refresh_token!);
    expect(rotated.status).toBe(200);
    const onwards = await refreshWith(rotated.body.refresh_token!); // the rightful client rotates on
    expect(onwards.status).toBe(200);
    expect((await refreshWith(stolen.refresh_token!)).body.error).toBe('invalid_grant');
    expect((await refreshWith(onwards.body.refresh_token!)).body.error).toBe('invalid_grant');

    // Rotation in the middle of a session: the CLI rotates the key while the server runs.
    const before = await signInWithDevice();
    const rotate = await runCli(['keys', 'rotate'], env);
    expect(rotate.code).toBe(0);
    const newKid = rotate.stdout.trim();
    expect(kidOf(before.access_token!)).not.toBe(newKid);
    // The server looks at the keys once a second: wait until it publishes the new one.
    await waitFor(
      async () => ((await (await fetch(`${server.base}/.well-known/jwks.json`)).json()) as { keys: { kid: string }[] }).keys.some((k) => k.kid === newKid),
      {
        what: 'the server to publish the rotated key',
      },
    );
    const after = await refreshWith(before.refresh_token!);
    expect(after.status).toBe(200);
    expect(kidOf(after.body.access_token!)).toBe(newKid);
    const jwks = (await (await fetch(`${server.base}/.well-known/jwks.json`)).json()) as { keys: { kid: string }[] };
    expect(jwks.keys.map((k) => k.kid)).toEqual([newKid, kidOf(before.access_token!)]);
    expect(await userinfo(before.access_token!)).toBe(200); // signed before the rotation, still good
    expect(await userinfo(after.body.access_token!)).toBe(200);
    const keys = JSON.parse((await runCli(['keys', 'list', '--json'], env)).stdout) as { kid: string; status: string }[];
    expect(keys.map((k) => [k.kid, k.status]).slice(0, 2)).toEqual([
      [newKid, 'active'],
      [kidOf(before.access_token!), 'retired'],
    ]);

    // Sign-out from the CLI's point of view: revoke the refresh token; the family is dead.
    expect((await post('/oauth/revoke', { client_id: 'latchkey-cli', token: after.body.refresh_token! })).status).toBe(200);
    expect((await refreshWith(after.body.refresh_token!)).body.error).toBe('invalid_grant');
  });

  it('answers requests the HTTP parser refuses with an OAuth error body, and keeps serving', async () => {
    const { request } = await import('node:http');
    const raw = (headers: Record<string, string>) =>
      new Promise<{ status: number; body: string; headers: Record<string, string | string[] | undefined> }>((resolve, reject) => {
        const req = request(`${server.base}/healthz`, { headers }, (res) => {
          let body = '';
          res.on('data', (d: Buffer | string) => (body += d.toString()));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body, headers: res.headers }));
        });
        req.on('error', reject);
        req.end();
      });
    const huge = await raw({ 'x-filler': 'a'.repeat(20_000) });
    expect(huge.status).toBe(431);
    expect(JSON.parse(huge.body)).toEqual({ error: 'invalid_request', error_description: 'The request could not be parsed.' });
    expect(huge.headers['x-frame-options']).toBe('DENY');
    expect(huge.headers['content-security-policy']).toContain("default-src 'none'");
    const badUrl = await fetch(`${server.base}/%`);
    expect(badUrl.status).toBe(400);
    expect(((await badUrl.json()) as { error: string }).error).toBe('invalid_request');
    expect((await fetch(`${server.base}/healthz`)).status).toBe(200);
  });

  it('stops cleanly on SIGTERM', async () => {
    expect(await server.stop('SIGTERM')).toBe(0);
  });
});
