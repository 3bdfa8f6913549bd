/**
 * Every `clients *` and `apis *` admin command through the management API (`--server URL`) over a
 * real socket, against a real server process: each is run on the database and through --server on
 * twin objects (local-… and remote-…), and the outputs and exit codes are compared, normalising
 * only the twin's name and what is generated (secrets, tokens, times). The commands that need the
 * server's own machine are refused with their reason.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { actOnDeviceCode, Browser, fetchTransport } from '../helpers/browser.js';
import { runCli, runMain, spawnCli, startServerProcess, type CliResult, type ServerProcess } from '../helpers/process.js';

let dir: string;
let server: ServerProcess;
let serverEnv: Record<string, string>;
let erin: Record<string, string>;
const reports = 'https://reports.example.com';

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

// The commands run through the executable's entry point in this process (runMain): what is
// compared is what each command says and does on the database and through the API, over the real
// socket to the real server process; forty process starts in a row were most of this file's time.
async function local(args: string[]): Promise<CliResult> {
  return runMain(args, serverEnv);
}

async function remote(args: string[]): Promise<CliResult> {
  return runMain(['--server', server.base, ...args], erin);
}

/** What a person reads: stdout and stderr without the database command's own audit lines (the server logs the remote one). */
function said(result: CliResult, twin = ''): { code: number | null; stdout: string; stderr: string } {
  const normal = (text: string) =>
    text
      .replaceAll(twin === '' ? '\u0000' : `remote-${twin}`, `local-${twin}`)
      .replace(/lk_[a-z]+_[A-Za-z0-9_-]+/g, '<secret>')
      .replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ/g, '<time>');
  return {
    code: result.code,
    stdout: normal(result.stdout),
    stderr: normal(
      result.stderr
        .split('\n')
        .filter((line) => !line.startsWith('{'))
        .join('\n'),
    ),
  };
}

/** The same command on the database (on local-<twin>) and through --server (on remote-<twin>): the same output and exit code. */
async function sameEitherWay(twin: string, args: (name: string) => string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  // The twins are separate objects: the two sides run at once.
  const [onDatabase, throughApi] = await Promise.all([local(args(`local-${twin}`)), remote(args(`remote-${twin}`))]);
  expect(said(throughApi, twin), throughApi.stderr).toEqual(said(onDatabase, twin));
  return said(onDatabase, twin);
}

/** A client's line of `clients list --json`, without what differs between twins. */
async function listed(clientId: string): Promise<Record<string, unknown> | undefined> {
  const all = JSON.parse((await local(['clients', 'list', '--json'])).stdout) as Array<Record<string, unknown>>;
  const found = all.find((c) => c.client_id === clientId);
  if (!found) return undefined;
  const { client_id: _id, name: _name, created_at: _created, previous_secret_expires_at: _until, ...rest } = found;
  return rest;
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'latchkey-management-remote-clients-'));
  serverEnv = { LATCHKEY_DB: join(dir, 'server.db') };
  const added = await runCli(['users', 'add', 'erin', '--email', 'erin@example.com', '--password-stdin'], serverEnv, 'erin-password');
  expect(added.code, added.stderr).toBe(0);
  expect((await local(['users', 'grant', 'erin', 'admin'])).code).toBe(0);
  expect((await local(['apis', 'add', reports, '--scope', 'read:reports', '--scope', 'write:reports'])).code).toBe(0);
  for (const side of ['local', 'remote']) {
    expect((await local(['clients', 'add', `${side}-bot`, '--confidential', '--grant-type', 'client_credentials'])).code).toBe(0);
    expect((await local(['clients', 'add', `${side}-spa`, '--redirect-uri', 'https://spa.example.com/cb'])).code).toBe(0);
  }
  // A client declared in a configuration file: managed, so changes elsewhere are refused.
  writeFileSync(join(dir, 'latchkey.yaml'), 'clients:\n  - client_id: managed-app\n');
  const applied = await local(['config', 'apply', '-f', join(dir, 'latchkey.yaml')]);
  expect(applied.code, applied.stderr).toBe(0);
  server = await startServerProcess({ ...serverEnv, LATCHKEY_DEVICE_INTERVAL: '1' });
  erin = laptop('erin');
  await signIn(erin, 'erin');
}, 90_000);

afterAll(async () => {
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('clients commands with --server', () => {
  it('clients grant, grant --remove, rotate-secret, disable and enable print the same and change the same', async () => {
    expect(await sameEitherWay('bot', (id) => ['clients', 'grant', id, reports, '--scope', 'read:reports'])).toMatchObject({
      code: 0,
      stderr: `local-bot may ask ${reports} for: read:reports\n`,
    });
    // The warning of a client that cannot use client_credentials comes from either side too.
    expect((await sameEitherWay('spa', (id) => ['clients', 'grant', id, reports, '--scope', 'write:reports'])).stderr).toContain(
      'warning: local-spa is not registered for the client_credentials grant',
    );
    expect(await listed('remote-bot')).toEqual(await listed('local-bot'));
    expect(await sameEitherWay('spa', (id) => ['clients', 'grant', id, reports, '--remove'])).toMatchObject({ code: 0 });
    expect(await listed('remote-spa')).toMatchObject({ api_grants: [] });

    const rotated = await sameEitherWay('bot', (id) => ['clients', 'rotate-secret', id, '--keep-old-for', '60']);
    expect(rotated).toMatchObject({ code: 0, stdout: 'client_secret (shown only once): <secret>\n' });
    expect((await listed('remote-bot'))?.authentication).toBe('client_secret');
    expect(await sameEitherWay('bot', (id) => ['clients', 'rotate-secret', id, '--client-secret-jwt'])).toMatchObject({ code: 0 });

    expect(await sameEitherWay('bot', (id) => ['clients', 'disable', id])).toMatchObject({ code: 0, stderr: 'Disabled client local-bot\n' });
    expect(await listed('remote-bot')).toEqual(await listed('local-bot'));
    expect((await listed('remote-bot'))?.disabled).toBe(true);
    expect(await sameEitherWay('bot', (id) => ['clients', 'enable', id])).toMatchObject({ code: 0, stderr: 'Enabled client local-bot\n' });
    expect((await listed('remote-bot'))?.disabled).toBe(false);
  });

  it('clients list prints the same table and JSON from the database and through the API', async () => {
    for (const extra of [[], ['--json']]) {
      const onDatabase = await local(['clients', 'list', ...extra]);
      expect(onDatabase.code, onDatabase.stderr).toBe(0);
      const throughApi = await remote(['clients', 'list', ...extra]);
      expect(throughApi.code, throughApi.stderr).toBe(0);
      expect(throughApi.stdout).toBe(onDatabase.stdout);
    }
  });

  it('refusals exit with the same code either way: unknown client or API, undeclared scope, managed client, built-in client, bad input', async () => {
    const refusals: string[][] = [
      ['clients', 'remove', 'ghost'],
      ['clients', 'disable', 'ghost'],
      ['clients', 'rotate-secret', 'ghost'],
      ['clients', 'rotate-secret', 'local-spa'],
      ['clients', 'grant', 'ghost', reports, '--scope', 'read:reports'],
      ['clients', 'grant', 'local-bot', 'https://nope.example.com', '--scope', 'read:reports'],
      ['clients', 'grant', 'local-bot', reports, '--scope', 'delete:reports'],
      ['clients', 'grant', 'local-bot', reports, '--scope', 'bad scope'],
      ['clients', 'grant', 'local-bot', reports],
      ['clients', 'rotate-secret', 'local-bot', '--keep-old-for', 'soon'],
      ['clients', 'registration-token', '--expires-in', '0'],
      ['clients', 'remove', 'managed-app'],
      ['clients', 'disable', 'managed-app'],
      ['clients', 'grant', 'managed-app', reports, '--scope', 'read:reports'],
      ['clients', 'remove', 'latchkey-cli'],
      ['clients', 'disable', 'latchkey-cli'],
    ];
    for (const args of refusals) {
      // A refusal changes nothing: the two sides run at once.
      const [onDatabase, throughApi] = await Promise.all([local(args), remote(args)]);
      expect([args.join(' '), throughApi.code], throughApi.stderr).toEqual([args.join(' '), onDatabase.code]);
      expect(onDatabase.code, args.join(' ')).not.toBe(0);
      expect(throughApi.stdout).toBe(onDatabase.stdout);
    }
    // A managed object names its file either way.
    expect((await remote(['clients', 'remove', 'managed-app'])).stderr).toContain('latchkey.yaml');
    expect(await listed('managed-app')).toBeDefined();
  });

  it('clients registration-token through the API prints a token, once, that registers one client', async () => {
    const onDatabase = said(await local(['clients', 'registration-token', '--expires-in', '600']));
    const throughApi = await remote(['clients', 'registration-token', '--expires-in', '600']);
    expect(said(throughApi).code).toBe(0);
    expect(said(throughApi).stdout).toBe(onDatabase.stdout);
    expect(said(throughApi).stderr).toBe(`Initial access token for POST ${server.base}/oauth/register (one registration, until <time>; shown only once):\n`);
    const register = async () =>
      fetch(`${server.base}/oauth/register`, {
        method: 'POST',
        headers: { authorization: `Bearer ${throughApi.stdout.trim()}`, 'content-type': 'application/json' },
        body: JSON.stringify({ client_name: 'Dynamic', redirect_uris: ['https://dyn.example.com/cb'] }),
      });
    expect((await register()).status).toBe(201);
    expect((await register()).status).not.toBe(201);
  });

  it('clients remove removes the same either way', async () => {
    expect(await sameEitherWay('spa', (id) => ['clients', 'remove', id])).toEqual({ code: 0, stdout: '', stderr: 'Removed client local-spa\n' });
    expect(await listed('remote-spa')).toBeUndefined();
    expect(await listed('local-spa')).toBeUndefined();
  });
});

describe('apis commands with --server', () => {
  it('apis add, update, list and remove print the same and change the same', async () => {
    const api = (side: string) => `https://${side}-inventory.example.com`;
    const twin = (args: (identifier: string) => string[]) => sameEitherWay('inventory', (name) => args(api(name.replace(/-inventory$/, ''))));
    expect(await twin((id) => ['apis', 'add', id, '--name', 'Inventory', '--scope', 'read:stock', '--introspection-client', 'local-bot'])).toMatchObject({
      code: 0,
      stderr: `Registered API ${api('local')}\n`,
    });
    expect(await twin((id) => ['apis', 'update', id, '--scope', 'read:stock', '--scope', 'write:stock', '--no-introspection-clients'])).toMatchObject({
      code: 0,
      stderr: `Updated API ${api('local')}\n`,
    });
    for (const extra of [[], ['--json']]) {
      const onDatabase = await local(['apis', 'list', ...extra]);
      const throughApi = await remote(['apis', 'list', ...extra]);
      expect(throughApi.code, throughApi.stderr).toBe(0);
      expect(throughApi.stdout).toBe(onDatabase.stdout);
      expect(onDatabase.stdout).toContain('write:stock');
    }
    const refusals: string[][] = [
      ['apis', 'add', reports],
      ['apis', 'add', 'has space'],
      ['apis', 'add', 'https://x.example.com', '--introspection-client', 'ghost'],
      ['apis', 'add', 'https://x.example.com', '--introspection-client', 'local-spa'],
      ['apis', 'update', 'https://nope.example.com', '--name', 'x'],
      ['apis', 'update', `${server.base}/api/v1`, '--scope', 'read:users'],
      ['apis', 'remove', `${server.base}/api/v1`],
      ['apis', 'remove', 'https://nope.example.com'],
    ];
    for (const args of refusals) {
      const [onDatabase, throughApi] = await Promise.all([local(args), remote(args)]);
      expect([args.join(' '), throughApi.code], throughApi.stderr).toEqual([args.join(' '), onDatabase.code]);
      expect(onDatabase.code, args.join(' ')).not.toBe(0);
    }
    expect(await twin((id) => ['apis', 'remove', id])).toEqual({ code: 0, stdout: '', stderr: `Removed API ${api('local')}\n` });
    expect((await local(['apis', 'list'])).stdout).not.toContain('inventory');
  });
});

describe('commands that need the server machine, with --server', () => {
  it('are refused with their reason and exit 2, touching nothing; config schema needs neither and just works', async () => {
    const reasons: Array<[string[], string]> = [
      [['serve'], 'runs the server itself'],
      [['config', 'apply', '-f', join(dir, 'latchkey.yaml')], 'one database transaction'],
      [['config', 'export'], 'one consistent snapshot'],
      [['config', 'show'], 'the machine it runs on'],
      [['secret-key', 'generate'], "the server's own environment"],
      [['secret-key', 'rotate'], 're-seals the secrets stored in the database'],
    ];
    for (const [args, reason] of reasons) {
      const refused = await remote(args);
      expect(refused.code, args.join(' ')).toBe(2);
      expect(refused.stdout).toBe('');
      expect(refused.stderr).toContain(`"latchkey ${args.slice(0, 2).join(' ').replace(/ -f$/, '')}" does not work with --server`);
      expect(refused.stderr).toContain(reason);
      expect(refused.stderr).not.toContain(' yet');
    }
    const schema = await remote(['config', 'schema']);
    expect(schema.code, schema.stderr).toBe(0);
    expect(schema.stdout).toBe((await local(['config', 'schema'])).stdout);
  });
});
