/**
 * `keys`, `sessions` and `connectors` commands through the management API (`--server URL`), as an
 * operator runs them from a laptop: a person with the admin role signs in for `{issuer}/api/v1`,
 * and each command is run against the database and through the server over a real socket, the
 * outputs compared. The connector is checked against a real upstream: a second Latchkey.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { actOnDeviceCode, Browser, fetchTransport, signIn as signInBrowser } from '../helpers/browser.js';
import { freePort, runMain, spawnCli, startServerProcess, type ServerProcess } from '../helpers/process.js';

let dir: string;
let server: ServerProcess;
let upstream: ServerProcess;
let serverEnv: Record<string, string>;
let upstreamEnv: Record<string, string>;

/** A person's own machine: a home of its own for the credentials file. */
function laptop(name: string): Record<string, string> {
  return { HOME: join(dir, name), LATCHKEY_HOME: join(dir, name, '.latchkey'), LATCHKEY_ISSUER: server.base };
}

async function signIn(env: Record<string, string>, username: string): Promise<void> {
  const login = spawnCli(['login', '--device', '--audience', `${server.base}/api/v1`], env);
  const [, userCode] = await login.waitForStderr(/enter the code\n\n {4}([A-Z]{4}-[A-Z]{4})/);
  await actOnDeviceCode(new Browser(fetchTransport(server.base)), `/activate?user_code=${userCode}`, { username, password: `${username}-password` }, 'allow');
  expect(await login.exit, login.stderr()).toBe(0);
}

// The admin commands run through the executable's entry point in this process (runMain): what is
// compared is what they say and do on the database and through the API, over the real socket to
// the real server processes; a process start for each was most of this file's time.

/** Runs a command on the database and through the server; both must succeed (or fail) alike. */
async function both(args: string[], code = 0, stdin?: string) {
  const local = await runMain(args, serverEnv, stdin);
  const remote = await runMain(['--server', server.base, ...args], laptop('erin'), stdin);
  expect(local.code, local.stderr).toBe(code);
  expect(remote.code, remote.stderr).toBe(code);
  return { local, remote };
}

/** The command's own lines on stderr (the database command also logs its audit line there). */
function said(stderr: string): string[] {
  return stderr.split('\n').filter((line) => line !== '' && !line.startsWith('{'));
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'latchkey-management-remote-ops-'));
  serverEnv = { LATCHKEY_DB: join(dir, 'server.db'), LATCHKEY_UPSTREAM_TIMEOUT: '5' };
  upstreamEnv = { LATCHKEY_DB: join(dir, 'upstream.db') };
  for (const name of ['erin', 'frank']) {
    const added = await runMain(['users', 'add', name, '--email', `${name}@example.com`, '--password-stdin'], serverEnv, `${name}-password`);
    expect(added.code, added.stderr).toBe(0);
  }
  expect((await runMain(['users', 'grant', 'erin', 'admin'], serverEnv)).code).toBe(0);
  [server, upstream] = await Promise.all([startServerProcess({ ...serverEnv, LATCHKEY_DEVICE_INTERVAL: '1' }), startServerProcess(upstreamEnv)]);
  serverEnv.LATCHKEY_ISSUER = server.base;
  upstreamEnv.LATCHKEY_ISSUER = upstream.base;
  await signIn(laptop('erin'), 'erin');
}, 90_000);

afterAll(async () => {
  await Promise.all([server?.stop(), upstream?.stop()]);
  rmSync(dir, { recursive: true, force: true });
});

describe('keys through --server', () => {
  it('keys list prints the same table and JSON; keys rotate prints the new kids as on the database', async () => {
    for (const extra of [[], ['--json']]) {
      const { local, remote } = await both(['keys', 'list', ...extra]);
      expect(remote.stdout).toBe(local.stdout);
    }
    const { local, remote } = await both(['keys', 'rotate']);
    const kids = (out: string) => out.trim().split('\n');
    expect(kids(remote.stdout).length).toBe(kids(local.stdout).length);
    const shape = (stderr: string, stdout: string) => said(stderr).map((line) => kids(stdout).reduce((l, kid, i) => l.replaceAll(kid, `<kid${i}>`), line));
    expect(shape(remote.stderr, remote.stdout)).toEqual(shape(local.stderr, local.stdout));
    const listed = JSON.parse((await both(['keys', 'list', '--json'])).remote.stdout) as Array<{ kid: string; status: string }>;
    // The key each rotation printed first is the server's active access-token key now or just before.
    expect(listed.find((k) => k.kid === kids(local.stdout)[0])?.status).toBe('retired');
    expect(listed.find((k) => k.kid === kids(remote.stdout)[0])?.status).toBe('active');
    const again = await both(['keys', 'list']);
    expect(again.remote.stdout).toBe(again.local.stdout);
  });
});

describe('sessions through --server', () => {
  it('sessions list prints the same rows and device names (all, and --user); an unknown person fails alike', async () => {
    const browser = new Browser(fetchTransport(server.base), 'Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0');
    const login = await browser.get('/login?return_to=%2Faccount');
    expect((await signInBrowser(browser, login, 'frank', 'frank-password')).status).toBe(303);
    for (const extra of [[], ['--json'], ['--user', 'frank'], ['--user', 'erin', '--json']]) {
      const { local, remote } = await both(['sessions', 'list', ...extra]);
      expect(remote.stdout).toBe(local.stdout);
    }
    expect((await both(['sessions', 'list', '--json'])).local.stdout).toContain('Firefox on Linux');
    const unknown = await both(['sessions', 'list', '--user', 'nobody'], 1);
    expect(unknown.remote.stdout).toBe('');
    expect(unknown.remote.stderr).toContain('nobody');
  });

  it('sessions revoke ends a browser session and an app sign-in as on the database; an unknown id fails alike', async () => {
    // Four sign-ins of frank: two browsers, two devices; one of each ended each way.
    for (let i = 0; i < 2; i++) {
      const browser = new Browser(fetchTransport(server.base));
      expect((await signInBrowser(browser, await browser.get('/login'), 'frank', 'frank-password')).status).toBe(303);
      await signIn(laptop(`frank-${i}`), 'frank');
    }
    const rows = JSON.parse((await runMain(['sessions', 'list', '--user', 'frank', '--json'], serverEnv)).stdout) as Array<{ id: string; kind: string }>;
    const browsers = rows.filter((r) => r.kind === 'browser').map((r) => r.id);
    const apps = rows.filter((r) => r.kind === 'app').map((r) => r.id);
    expect(apps.length).toBeGreaterThanOrEqual(2);
    for (const ids of [browsers, apps]) {
      const local = await runMain(['sessions', 'revoke', ids[0]!], serverEnv);
      const remote = await runMain(['--server', server.base, 'sessions', 'revoke', ids[1]!], laptop('erin'));
      expect([local.code, remote.code], local.stderr + remote.stderr).toEqual([0, 0]);
      expect(said(remote.stderr).map((l) => l.replace(ids[1]!, '<id>'))).toEqual(said(local.stderr).map((l) => l.replace(ids[0]!, '<id>')));
    }
    const left = (await runMain(['sessions', 'list', '--user', 'frank', '--json'], serverEnv)).stdout;
    for (const id of [...browsers.slice(0, 2), ...apps.slice(0, 2)]) expect(left).not.toContain(id);
    const unknown = await both(['sessions', 'revoke', 'no-such-sign-in'], 1);
    expect(unknown.remote.stderr).toContain('no-such-sign-in');
  });
});

describe('connectors through --server', () => {
  async function upstreamClient(id: string): Promise<string> {
    const client = await runMain(
      ['clients', 'add', id, '--confidential', '--first-party', '--redirect-uri', `${server.base}/connectors/${id}/callback`],
      upstreamEnv,
    );
    expect(client.code, client.stderr).toBe(0);
    return client.stdout.match(/lk_cs_\S+/)![0];
  }

  const addArgs = (id: string) => [
    'connectors',
    'add',
    id,
    '--type',
    'oidc',
    '--issuer',
    upstream.base,
    '--client-id',
    id,
    '--client-secret-stdin',
    '--name',
    'Company',
  ];

  it('connectors add checks the upstream from the server and prints the same lines; list, test and remove print the same', async () => {
    const [localSecret, remoteSecret] = await Promise.all([upstreamClient('company-db'), upstreamClient('company-api')]);
    const local = await runMain(addArgs('company-db'), serverEnv, `${localSecret}\n`);
    const remote = await runMain(['--server', server.base, ...addArgs('company-api')], laptop('erin'), `${remoteSecret}\n`);
    expect(local.code, local.stderr).toBe(0);
    expect(remote.code, remote.stderr).toBe(0);
    expect(remote.stdout.replace('company-api', 'company-db')).toBe(local.stdout);
    expect(remote.stdout).toBe(`redirect_uri: ${server.base}/connectors/company-api/callback\n`);
    expect(said(remote.stderr).map((l) => l.replaceAll('company-api', 'company-db'))).toEqual(said(local.stderr));
    expect(said(remote.stderr)).toContain('Added connector company-api (oidc: Company)');
    expect(remote.stderr).toMatch(/ok +discovery document: /);
    expect(remote.stderr + remote.stdout).not.toContain(remoteSecret);

    for (const extra of [[], ['--json']]) {
      const listed = await both(['connectors', 'list', ...extra]);
      expect(listed.remote.stdout).toBe(listed.local.stdout);
    }
    expect((await both(['connectors', 'list', '--json'])).remote.stdout).not.toContain(remoteSecret);

    const tested = await both(['connectors', 'test', 'company-api']);
    expect(tested.remote.stdout).toBe(tested.local.stdout);
    expect(tested.remote.stdout).toContain('Connector company-api works');

    const removedLocal = await runMain(['connectors', 'remove', 'company-db'], serverEnv);
    const removedRemote = await runMain(['--server', server.base, 'connectors', 'remove', 'company-api'], laptop('erin'));
    expect([removedLocal.code, removedRemote.code]).toEqual([0, 0]);
    expect(said(removedRemote.stderr).map((l) => l.replace('company-api', 'company-db'))).toEqual(said(removedLocal.stderr));
    expect((await runMain(['connectors', 'list', '--json'], serverEnv)).stdout).toBe('[]\n');
    await both(['connectors', 'remove', 'company-api'], 1);
  });

  it('a check the upstream fails: refused through the server as on the database, naming the cause, nothing added; --no-check adds it and test fails alike', async () => {
    await upstreamClient('wrong-secret');
    const args = addArgs('wrong-secret');
    const { local, remote } = await both(args, 1, 'lk_cs_not-the-secret\n');
    for (const out of [local.stderr, remote.stderr]) {
      expect(out).toContain('connector wrong-secret not added: the token endpoint');
      expect(out).toContain('refused the client (invalid_client)');
      expect(out).not.toContain('not-the-secret');
    }
    expect(remote.stderr).toContain('/check: client credentials: the token endpoint');
    expect((await runMain(['connectors', 'list', '--json'], serverEnv)).stdout).toBe('[]\n');
    const port = await freePort();
    const unchecked = await runMain(
      ['--server', server.base, 'connectors', 'add', 'nowhere', '--type', 'oidc', '--issuer', `http://127.0.0.1:${port}`, '--client-id', 'x', '--no-check'],
      laptop('erin'),
    );
    expect(unchecked.code, unchecked.stderr).toBe(0);
    const tested = await both(['connectors', 'test', 'nowhere'], 1);
    expect(tested.remote.stdout).toBe(tested.local.stdout);
    expect(tested.remote.stdout).toMatch(/FAILED +discovery document: /);
    expect((await runMain(['connectors', 'remove', 'nowhere'], serverEnv)).code).toBe(0);
  });
});
