/**
 * Every `users *` and `roles *` command on the database and through the management API
 * (`--server URL`), against a real server over a real socket: a person with the admin role signs
 * in for `{issuer}/api/v1`, and each command run both ways prints the same thing and exits with the
 * same code. The database run acts on one person or role and the remote run on its twin, so the
 * outputs are compared with the twin's name put back; generated secrets (a password, an enrolment
 * link) and the audit lines the database command writes itself are what is set aside.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { actOnDeviceCode, Browser, fetchTransport } from '../helpers/browser.js';
import { runMain, spawnCli, startServerProcess, type CliResult, type ServerProcess } from '../helpers/process.js';

let dir: string;
let server: ServerProcess;
let serverEnv: Record<string, string>;
let erin: Record<string, string>;

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

/** What a run says, for comparing: the twin's name put back, secrets and times set aside, the database command's own audit lines left out. */
function said(result: CliResult, twin: string, name: string): { code: number | null; stdout: string; stderr: string } {
  const normal = (text: string) =>
    text
      .replaceAll(twin, name)
      .replace(/\(shown only once\): \S+/g, '(shown only once): <secret>')
      .replace(/code=lk_fe_[A-Za-z0-9_-]+/g, 'code=<secret>')
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

// The admin commands run through the executable's entry point in this process (runMain): what is
// compared is what they say and do on the database and through the API, over the real socket to
// the real server process; a process start for each was most of this file's time.

/**
 * Runs the command on the database for `name`, and through --server for `twin`, and checks both
 * say the same. Refusals are compared by exit code (the server words its own problem details).
 */
async function both(args: (who: string) => string[], name: string, twin: string, input?: string) {
  // The twins are separate objects (a refusal changes nothing): the two sides run at once.
  const [local, remote] = await Promise.all([runMain(args(name), serverEnv, input), runMain(['--server', server.base, ...args(twin)], erin, input)]);
  const [l, r] = [said(local, twin, name), said(remote, twin, name)];
  expect(r.code, `${args(twin).join(' ')}: ${remote.stderr}`).toBe(l.code);
  if (l.code === 0) expect(r).toEqual(l);
  return { local, remote };
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'latchkey-management-remote-people-'));
  serverEnv = { LATCHKEY_DB: join(dir, 'server.db') };
  const added = await runMain(['users', 'add', 'erin', '--email', 'erin@example.com', '--password-stdin'], serverEnv, 'erin-password');
  expect(added.code, added.stderr).toBe(0);
  expect((await runMain(['users', 'grant', 'erin', 'admin'], serverEnv)).code).toBe(0);
  server = await startServerProcess({ ...serverEnv, LATCHKEY_DEVICE_INTERVAL: '1' });
  erin = laptop('erin');
  await signIn(erin, 'erin');
}, 60_000);

afterAll(async () => {
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('users * through --server', () => {
  it('add, update, disable, enable, passwd, revoke-tokens, grant, revoke, mfa-enroll, mfa-reset: the same output and exit codes as on the database', async () => {
    const add = await both(
      (who) => [
        'users',
        'add',
        who,
        '--email',
        `${who}@example.com`,
        '--name',
        `${who} Example`,
        '--given-name',
        'Lou',
        '--locale',
        'fr-CA',
        '--password-stdin',
      ],
      'lou',
      'rae',
      'a long enough password',
    );
    expect(add.local.stderr).toContain('Created user lou');
    const generated = await both((who) => ['users', 'add', `${who}2`, '--email', `${who}2@example.com`], 'lou', 'rae');
    expect(generated.remote.stdout).toMatch(/^Password for rae2 \(shown only once\): \S{20}\n$/);
    // The password made on the laptop works at the server.
    const password = generated.remote.stdout.split(': ')[1]?.trim() ?? '';
    expect((await runMain(['users', 'passwd', 'rae2', '--password-stdin'], serverEnv, password)).code).toBe(0);

    const update = await both((who) => ['users', 'update', who, '--nickname', 'Lulu', '--clear', 'locale', '--street-address', '1 Main St'], 'lou', 'rae');
    expect(update.remote.stderr).toContain('Updated rae: nickname, locale, address');
    const same = await both((who) => ['users', 'update', who, '--nickname', 'Lulu'], 'lou', 'rae');
    expect(same.remote.stderr).toContain('Nothing changed');
    await both((who) => ['users', 'update', who, '--email', 'not-an-email'], 'lou', 'rae');

    await both((who) => ['users', 'disable', who], 'lou', 'rae');
    await both((who) => ['users', 'enable', who], 'lou', 'rae');
    const passwd = await both((who) => ['users', 'passwd', who, '--password-stdin'], 'lou', 'rae', 'another long password');
    expect(passwd.remote.stderr).toContain('Changed the password of rae');
    const passwdGenerated = await both((who) => ['users', 'passwd', who], 'lou', 'rae');
    expect(passwdGenerated.remote.stdout).toMatch(/^New password for rae \(shown only once\): \S{20}\n$/);
    await both((who) => ['users', 'revoke-tokens', who], 'lou', 'rae');

    expect((await runMain(['roles', 'add', 'editor'], serverEnv)).code).toBe(0);
    await both((who) => ['users', 'grant', who, 'editor'], 'lou', 'rae');
    await both((who) => ['users', 'revoke', who, 'editor'], 'lou', 'rae');
    await both((who) => ['users', 'revoke', who, 'editor'], 'lou', 'rae');
    await both((who) => ['users', 'grant', who, 'no-such-role'], 'lou', 'rae');

    const enrol = await both((who) => ['users', 'mfa-enroll', who, '--expires-in', '3600'], 'lou', 'rae');
    expect(enrol.remote.stdout).toMatch(new RegExp(`^${server.base}/account/security/enrol\\?code=lk_fe_\\S+\\n$`));
    expect(enrol.remote.stderr).toContain(`If ${server.base} is not the server's public address`);
    await both((who) => ['users', 'mfa-enroll', who, '--cancel'], 'lou', 'rae');
    await both((who) => ['users', 'mfa-enroll', who, '--expires-in', '5'], 'lou', 'rae');
    await both((who) => ['users', 'mfa-reset', who], 'lou', 'rae');
    await both((who) => ['users', 'unlink', who, 'nowhere'], 'lou', 'rae');

    // Not found, and bad input, exit as on the database.
    for (const args of [
      ['users', 'disable', 'nobody'],
      ['users', 'passwd', 'nobody', '--password-stdin'],
      ['users', 'mfa-reset', 'nobody'],
      ['users', 'add', 'bad name!', '--email', 'x@example.com'],
    ]) {
      const local = await runMain(args, serverEnv, 'a long enough password');
      const remote = await runMain(['--server', server.base, ...args], erin, 'a long enough password');
      expect([remote.code, args.join(' ')]).toEqual([local.code, args.join(' ')]);
      expect(local.code).not.toBe(0);
    }

    // Both people, as the server keeps them, are the same but for their names.
    const listed = JSON.parse((await runMain(['users', 'list', '--json'], serverEnv)).stdout) as Array<Record<string, unknown>>;
    const strip = (u: Record<string, unknown> | undefined) => ({
      ...u,
      id: undefined,
      username: undefined,
      email: undefined,
      name: undefined,
      created_at: undefined,
      updated_at: undefined,
    });
    expect(strip(listed.find((u) => u.username === 'rae'))).toEqual(strip(listed.find((u) => u.username === 'lou')));
    const remoteList = await runMain(['--server', server.base, 'users', 'list'], erin);
    expect(remoteList.stdout).toBe((await runMain(['users', 'list'], serverEnv)).stdout);
  }, 180_000);
});

describe('roles * through --server', () => {
  it('add, update, list and remove: the same output and exit codes as on the database; admin cannot be removed', async () => {
    const permission = `${server.base}/api/v1:read:users`;
    const add = await both(
      (who) => ['roles', 'add', who, '--permission', permission, '--group', 'staff', '--description', 'Reads people'],
      'lou-role',
      'rae-role',
    );
    expect(add.remote.stderr).toContain(`Created role rae-role with ${permission}`);
    await both((who) => ['roles', 'add', who], 'lou-role', 'rae-role');
    await both((who) => ['roles', 'add', `${who}-bad`, '--permission', `${server.base}/api/v1:read:nothing`], 'lou-role', 'rae-role');
    await both((who) => ['roles', 'update', who, '--no-groups', '--description', ''], 'lou-role', 'rae-role');
    await both((who) => ['roles', 'update', who], 'lou-role', 'rae-role');
    await both((who) => ['roles', 'update', `${who}-none`, '--no-groups'], 'lou-role', 'rae-role');

    for (const extra of [[], ['--json']]) {
      const local = await runMain(['roles', 'list', ...extra], serverEnv);
      const remote = await runMain(['--server', server.base, 'roles', 'list', ...extra], erin);
      expect(remote.code, remote.stderr).toBe(0);
      expect(remote.stdout).toBe(local.stdout);
      expect(remote.stdout).toContain('rae-role');
    }

    await both((who) => ['roles', 'remove', who], 'lou-role', 'rae-role');
    await both((who) => ['roles', 'remove', who], 'lou-role', 'rae-role');
    const admin = await both(() => ['roles', 'remove', 'admin'], 'x', 'x');
    expect(admin.remote.code).toBe(1);
    expect(admin.remote.stderr).toBe(admin.local.stderr);
  }, 120_000);
});
