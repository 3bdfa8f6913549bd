/**
 * The admin commands through the management API (`--server URL`), as an operator runs them from a
 * laptop: a person with the admin role signs in with the device flow for the built-in API
 * `{issuer}/api/v1` and runs `users list` and `clients add` against a real server over a real
 * socket, with the same output as on the database; a person without the role is refused plainly.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { actOnDeviceCode, Browser, fetchTransport } from '../helpers/browser.js';
import { runCli, spawnCli, startServerProcess, type ServerProcess } from '../helpers/process.js';

let dir: string;
let server: ServerProcess;
let serverEnv: Record<string, string>;

/** A person's own machine: a home of its own for the credentials file. */
function laptop(name: string): Record<string, string> {
  return { HOME: join(dir, name), LATCHKEY_HOME: join(dir, name, '.latchkey'), LATCHKEY_ISSUER: server.base };
}

/** `audience` null: a sign-in for no API (the userinfo endpoint only). */
async function signIn(env: Record<string, string>, username: string, extra: string[] = [], audience: string | null = `${server.base}/api/v1`): Promise<void> {
  const login = spawnCli(['login', '--device', ...(audience === null ? [] : ['--audience', audience]), ...extra], env);
  const [, userCode] = await login.waitForStderr(/enter the code\n\n {4}([A-Z]{4}-[A-Z]{4})/);
  await actOnDeviceCode(new Browser(fetchTransport(server.base)), `/activate?user_code=${userCode}`, { username, password: `${username}-password` }, 'allow');
  expect(await login.exit, login.stderr()).toBe(0);
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'latchkey-management-remote-'));
  serverEnv = { LATCHKEY_DB: join(dir, 'server.db') };
  for (const name of ['erin', 'frank']) {
    const added = await runCli(['users', 'add', name, '--email', `${name}@example.com`, '--password-stdin'], serverEnv, `${name}-password`);
    expect(added.code, added.stderr).toBe(0);
  }
  expect((await runCli(['users', 'grant', 'erin', 'admin'], serverEnv)).code).toBe(0);
  server = await startServerProcess({ ...serverEnv, LATCHKEY_DEVICE_INTERVAL: '1' });
}, 60_000);

afterAll(async () => {
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('latchkey --server URL', () => {
  it('a person with the admin role signs in for {issuer}/api/v1 and runs users list remotely with the same output as on the database', async () => {
    const erin = laptop('erin');
    await signIn(erin, 'erin');
    for (const extra of [[], ['--json']]) {
      const local = await runCli(['users', 'list', ...extra], serverEnv);
      expect(local.code, local.stderr).toBe(0);
      const remote = await runCli(['--server', server.base, 'users', 'list', ...extra], erin);
      expect(remote.code, remote.stderr).toBe(0);
      expect(remote.stdout).toBe(local.stdout);
    }
    expect((await runCli(['users', 'list'], { ...erin, LATCHKEY_SERVER: server.base })).stdout).toContain('erin@example.com');
  });

  it('clients add remotely registers the client as the database command does, its secret printed once', async () => {
    const erin = laptop('erin');
    const remote = await runCli(
      ['--server', server.base, 'clients', 'add', 'preview-app', '--confidential', '--grant-type', 'client_credentials', '--name', 'Preview'],
      erin,
    );
    expect(remote.code, remote.stderr).toBe(0);
    const local = await runCli(['clients', 'add', 'local-app', '--confidential', '--grant-type', 'client_credentials', '--name', 'Preview'], serverEnv);
    expect(local.code, local.stderr).toBe(0);
    // The database command also logs its audit line on stderr; the server logs the remote one itself.
    const registered = (stderr: string) => stderr.split('\n').filter((line) => line.startsWith('Registered client'));
    expect(registered(remote.stderr.replace('preview-app', 'local-app'))).toEqual(registered(local.stderr));
    expect(registered(local.stderr)).toEqual(['Registered client local-app (confidential; grants: client_credentials)']);
    expect(remote.stdout).toMatch(/^client_secret \(shown only once\): \S+\n$/);
    expect(local.stdout).toMatch(/^client_secret \(shown only once\): \S+\n$/);
    const listed = await runCli(['clients', 'list', '--json'], serverEnv);
    expect(JSON.parse(listed.stdout)).toEqual(expect.arrayContaining([expect.objectContaining({ client_id: 'preview-app', name: 'Preview' })]));
  });

  it('with a DPoP-bound sign-in the calls carry a proof and are answered', async () => {
    const erin = laptop('erin-dpop');
    await signIn(erin, 'erin', ['--dpop']);
    const remote = await runCli(['--server', server.base, 'users', 'list'], erin);
    expect(remote.code, remote.stderr).toBe(0);
    expect(remote.stdout).toBe((await runCli(['users', 'list'], serverEnv)).stdout);
  });

  // A token goes only to the issuer it came from, for the audience it names.
  it('LATCHKEY_PROFILE naming a sign-in made at another server, or for another audience: refused before anything is sent (exit 6)', async () => {
    const erin = laptop('erin-profiles');
    await signIn(erin, 'erin', ['--profile', 'admin']);
    await signIn(erin, 'erin', ['--profile', 'plain'], null);
    // Another server, as a mistyped or planted --server would have it: it records what reaches it.
    const seen: string[] = [];
    const other = createServer((req, res) => {
      seen.push(`${req.method ?? ''} ${req.url ?? ''} ${req.headers.authorization ?? '(no authorization)'}`);
      res.writeHead(401, { 'content-type': 'application/problem+json' }).end('{"status":401,"detail":"who are you"}');
    });
    await new Promise<void>((resolve) => other.listen(0, '127.0.0.1', resolve));
    const elsewhere = `http://127.0.0.1:${(other.address() as AddressInfo).port}`;
    try {
      const sent = await runCli(['--server', elsewhere, 'users', 'list'], { ...erin, LATCHKEY_PROFILE: 'admin' });
      expect(sent.code, sent.stderr).toBe(6);
      expect(sent.stdout).toBe('');
      expect(sent.stderr).toContain(
        `the profile "admin" (LATCHKEY_PROFILE) was signed in at ${server.base} for ${server.base}/api/v1, not for the management API of ${elsewhere}: its token goes only to the issuer it came from, for the audience it names.`,
      );
      expect(sent.stderr).toContain(`"latchkey login --profile <name> --issuer ${elsewhere} --audience ${elsewhere}/api/v1"`);
      expect(seen).toEqual([]);
    } finally {
      other.close();
    }
    const plain = await runCli(['--server', server.base, 'users', 'list'], { ...erin, LATCHKEY_PROFILE: 'plain' });
    expect(plain.code).toBe(6);
    expect(plain.stderr).toContain(
      `the profile "plain" (LATCHKEY_PROFILE) was signed in at ${server.base} for ${server.base}/userinfo, not for the management API of ${server.base}`,
    );
    // The right profile still works.
    const admin = await runCli(['--server', server.base, 'users', 'list'], { ...erin, LATCHKEY_PROFILE: 'admin' });
    expect(admin.code, admin.stderr).toBe(0);
  });

  it('a person without the admin role is refused plainly, and nothing is changed', async () => {
    const frank = laptop('frank');
    await signIn(frank, 'frank');
    const list = await runCli(['--server', server.base, 'users', 'list'], frank);
    expect(list.code).toBe(1);
    expect(list.stdout).toBe('');
    expect(list.stderr).toContain('read:users');
    expect(list.stderr).toContain('admin role');
    const add = await runCli(['--server', server.base, 'clients', 'add', 'sneaky'], frank);
    expect(add.code).toBe(1);
    expect(add.stderr).toContain('write:clients');
    expect((await runCli(['clients', 'list'], serverEnv)).stdout).not.toContain('sneaky');
  });

  it('without a sign-in for the API, or for a command that cannot work remotely yet, it says what to do', async () => {
    const nobody = await runCli(['--server', server.base, 'users', 'list'], laptop('nobody'));
    expect(nobody.code).toBe(6);
    expect(nobody.stderr).toContain(`latchkey login --issuer ${server.base} --audience ${server.base}/api/v1`);
    const notYet = await runCli(['--server', server.base, 'secret-key', 'rotate'], laptop('erin'));
    expect(notYet.code).toBe(2);
    expect(notYet.stderr).toContain('does not work with --server');
    const plainHttp = await runCli(['--server', 'http://login.example.com', 'users', 'list'], laptop('erin'));
    expect(plainHttp.code).toBe(2);
    expect(plainHttp.stderr).toContain('https');
    // The built-in API keeps its scopes: every automation and the admin role depend on them.
    const narrowed = await runCli(['apis', 'update', `${server.base}/api/v1`, '--scope', 'read:users'], serverEnv);
    expect(narrowed.code).toBe(1);
    expect(narrowed.stderr).toContain('is built in (the management API)');
    expect((await runCli(['apis', 'remove', `${server.base}/api/v1`], serverEnv)).code).toBe(1);
  });
});
