/**
 * `latchkey credential kubectl|git|docker` over their real protocols: a real
 * `latchkey serve`, one sign-in for an API with `latchkey login --device --audience` (and one for
 * no API, which every helper refuses), then kubectl's ExecCredential as kubectl parses it, git's
 * helper protocol driven by Debian's git (`git credential fill`), and docker's helper protocol
 * through the wrapper script docs/cli.md tells people to create. Without
 * git the git tests are skipped, unless LATCHKEY_REQUIRE_GIT=1 (as in .ci/run), where that fails.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { decodeJwt } from 'jose';
import { actOnDeviceCode, Browser, fetchTransport } from '../helpers/browser.js';
import { executable, runCli, spawnCli, startServerProcess, type CliResult, type ServerProcess } from '../helpers/process.js';

const gitAvailable = spawnSync('git', ['--version']).status === 0;
const gitRequired = process.env.LATCHKEY_REQUIRE_GIT === '1';

let dir: string;
let bin: string;
let server: ServerProcess;
let signedIn: Record<string, string>;
let signedOut: Record<string, string>;
let token: string;
const password = 'kim-password';
/** The API the default profile is signed in for (`latchkey login --audience`). */
const api = 'https://tools.example.com';
/** A profile signed in without --audience: its token is for the userinfo endpoint only. */
const userinfoOnly = 'userinfo-only';
/** A profile signed in for the management API (`{issuer}/api/v1`), as docs/management-api.md signs one in. */
const admin = 'admin';

/** Runs a program with only the given environment (and PATH with the `latchkey` shim first). */
function run(command: string, args: string[], env: Record<string, string>, input: string): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { env: { PATH: `${bin}:${process.env.PATH ?? ''}`, ...env }, stdio: 'pipe' });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer | string) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer | string) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.on('error', () => undefined); // a helper may exit before reading everything
    child.stdin.end(input);
  });
}

function writeScript(path: string, text: string): void {
  writeFileSync(path, text);
  chmodSync(path, 0o755);
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'latchkey-credential-'));
  // `latchkey` on PATH as an installed package puts it, so the configuration in docs/cli.md runs as written.
  bin = join(dir, 'bin');
  mkdirSync(bin);
  writeScript(join(bin, 'latchkey'), `#!/bin/sh\nexec '${process.execPath}' '${executable}' "$@"\n`);
  // The docker wrapper as docs/cli.md has it, for this test's API.
  writeScript(join(bin, 'docker-credential-latchkey'), `#!/bin/sh\nexec latchkey credential docker --host registry.example.com --audience ${api} "$@"\n`);

  const serverEnv = { LATCHKEY_DB: join(dir, 'server.db') };
  expect((await runCli(['users', 'add', 'kim', '--email', 'kim@example.com', '--password-stdin'], serverEnv, password)).code).toBe(0);
  expect((await runCli(['apis', 'add', api, '--name', 'Tools'], serverEnv)).code).toBe(0);
  server = await startServerProcess({ ...serverEnv, LATCHKEY_DEVICE_INTERVAL: '1' });
  signedIn = { HOME: join(dir, 'home'), LATCHKEY_HOME: join(dir, 'signed-in'), LATCHKEY_ISSUER: server.base };
  signedOut = { HOME: join(dir, 'home'), LATCHKEY_HOME: join(dir, 'signed-out'), LATCHKEY_ISSUER: server.base };
  mkdirSync(signedIn.HOME!);

  for (const args of [
    ['--audience', api],
    ['--profile', userinfoOnly],
    ['--profile', admin, '--audience', `${server.base}/api/v1`],
  ]) {
    const cli = spawnCli(['login', '--device', ...args], signedIn);
    const [, userCode] = await cli.waitForStderr(/enter the code\n\n {4}([A-Z]{4}-[A-Z]{4})/);
    await actOnDeviceCode(new Browser(fetchTransport(server.base)), `/activate?user_code=${userCode}`, { username: 'kim', password }, 'allow');
    expect(await cli.exit, cli.stderr()).toBe(0);
  }
  const printed = await runCli(['token'], signedIn);
  expect(printed.code, printed.stderr).toBe(0);
  token = printed.stdout.trim();
  expect(decodeJwt(token).aud).toBe(api);
}, 60_000);

afterAll(async () => {
  await server?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('latchkey credential kubectl', () => {
  interface ExecCredential {
    apiVersion: string;
    kind: string;
    status: { token: string; expirationTimestamp: string };
  }

  it('prints the ExecCredential kubectl asks for in KUBERNETES_EXEC_INFO, with the token of `latchkey token`', async () => {
    const execInfo = { apiVersion: 'client.authentication.k8s.io/v1', kind: 'ExecCredential', spec: { interactive: false } };
    const res = await runCli(['credential', 'kubectl'], { ...signedIn, KUBERNETES_EXEC_INFO: JSON.stringify(execInfo) });
    expect(res.code, res.stderr).toBe(0);
    const credential = JSON.parse(res.stdout) as ExecCredential;
    expect(Object.keys(credential).sort()).toEqual(['apiVersion', 'kind', 'status']);
    expect(credential.apiVersion).toBe('client.authentication.k8s.io/v1');
    expect(credential.kind).toBe('ExecCredential');
    expect(credential.status.token).toBe(token);
    expect(credential.status.expirationTimestamp).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/);
    const expires = Date.parse(credential.status.expirationTimestamp);
    expect(expires).toBeGreaterThan(Date.now() + 60_000);
    expect(expires).toBeLessThan(Date.now() + 24 * 3600_000);
  });

  it('answers v1beta1 when the kubeconfig asks for it, and refuses a version it does not know', async () => {
    const beta = await runCli(['credential', 'kubectl'], {
      ...signedIn,
      KUBERNETES_EXEC_INFO: JSON.stringify({ apiVersion: 'client.authentication.k8s.io/v1beta1', kind: 'ExecCredential', spec: { interactive: true } }),
    });
    expect(beta.code, beta.stderr).toBe(0);
    expect(JSON.parse(beta.stdout)).toMatchObject({ apiVersion: 'client.authentication.k8s.io/v1beta1', kind: 'ExecCredential', status: { token } });
    const alpha = await runCli(['credential', 'kubectl'], {
      ...signedIn,
      KUBERNETES_EXEC_INFO: JSON.stringify({ apiVersion: 'client.authentication.k8s.io/v1alpha1' }),
    });
    expect(alpha.code).toBe(2);
    expect(alpha.stdout).toBe('');
  });

  it('--audience: answers for the API the profile was signed in for', async () => {
    const res = await runCli(['credential', 'kubectl', '--audience', api], signedIn);
    expect(res.code, res.stderr).toBe(0);
    expect(JSON.parse(res.stdout)).toMatchObject({ kind: 'ExecCredential', status: { token } });
  });

  it('--audience: refuses a profile signed in for another audience, saying how to sign in for it', async () => {
    const res = await runCli(['credential', 'kubectl', '--audience', 'https://k8s.example.com'], signedIn);
    expect(res.code).toBe(6);
    expect(res.stdout).toBe('');
    expect(res.stderr).toContain('latchkey login --audience https://k8s.example.com --profile default');
    expect(res.stderr).not.toContain(token);
  });
});

(gitAvailable ? describe : describe.skip)("latchkey credential git (driven by Debian's git)", () => {
  const gitEnv = (env: Record<string, string>, home: string) => ({ ...env, HOME: home, GIT_CONFIG_NOSYSTEM: '1', GIT_TERMINAL_PROMPT: '0' });
  const helper = `!'${process.execPath}' '${executable}' credential git`;
  const fill = (env: Record<string, string>, input: string) =>
    run('git', ['-c', 'credential.helper=', '-c', `credential.helper=${helper}`, 'credential', 'fill'], gitEnv(env, signedIn.HOME!), input);

  it('git credential fill gets the access token as the password for an https remote', async () => {
    const res = await fill(signedIn, 'protocol=https\nhost=git.example.com\n\n');
    expect(res.code, res.stderr).toBe(0);
    const lines = res.stdout.trim().split('\n');
    expect(lines).toContain('protocol=https');
    expect(lines).toContain('host=git.example.com');
    expect(lines).toContain('username=oauth2');
    expect(lines).toContain(`password=${token}`);
  });

  it('keeps the username of the remote URL', async () => {
    const res = await fill(signedIn, 'url=https://kim@git.example.com/team/repo.git\n\n');
    expect(res.code, res.stderr).toBe(0);
    expect(res.stdout).toContain('username=kim\n');
    expect(res.stdout).toContain(`password=${token}\n`);
  });

  it('never hands the token out over plain http: git finds no credential and fails', async () => {
    const res = await fill(signedIn, 'protocol=http\nhost=git.example.com\n\n');
    expect(res.code).not.toBe(0);
    expect(res.stderr).toContain('terminal prompts disabled');
    expect(res.stdout + res.stderr).not.toContain(token);
  });

  it('--host: answers only for the hosts listed', async () => {
    const scoped = (host: string) =>
      run(
        'git',
        ['-c', 'credential.helper=', '-c', `credential.helper=${helper} --host git.example.com`, 'credential', 'fill'],
        gitEnv(signedIn, signedIn.HOME!),
        `protocol=https\nhost=${host}\n\n`,
      );
    expect((await scoped('git.example.com')).stdout).toContain(`password=${token}\n`);
    const other = await scoped('other.example.com');
    expect(other.code).not.toBe(0);
    expect(other.stdout + other.stderr).not.toContain(token);
  });

  it('the configuration docs/cli.md gives: the helper only for its host, and no other helper keeps the token', async () => {
    const home = join(dir, 'git-home');
    mkdirSync(home);
    const env = gitEnv(signedIn, home);
    const git = async (...args: string[]) => {
      const res = await run('git', args, env, '');
      expect(res.code, res.stderr).toBe(0);
    };
    // A plain-text helper configured for everything, as many people have.
    await git('config', '--global', 'credential.helper', 'store');
    // The two commands of docs/cli.md, for this test's profile and API.
    await git('config', '--global', '--replace-all', 'credential.https://git.example.com.helper', '');
    await git('config', '--global', '--add', 'credential.https://git.example.com.helper', `!latchkey credential git --audience ${api} --host git.example.com`);

    const filled = await run('git', ['credential', 'fill'], env, 'protocol=https\nhost=git.example.com\npath=team/repo.git\n\n');
    expect(filled.code, filled.stderr).toBe(0);
    expect(filled.stdout).toContain(`password=${token}\n`);
    // After a successful fetch git tells every helper to store the credential: "store" must not be among them.
    const approved = await run('git', ['credential', 'approve'], env, filled.stdout);
    expect(approved.code, approved.stderr).toBe(0);
    expect(existsSync(join(home, '.git-credentials')) ? readFileSync(join(home, '.git-credentials'), 'utf8') : '').not.toContain(token);

    // Another host is none of the helper's business.
    const other = await run('git', ['credential', 'fill'], env, 'protocol=https\nhost=other.example.com\n\n');
    expect(other.code).not.toBe(0);
    expect(other.stdout + other.stderr).not.toContain(token);
  });

  it('store and erase read their input and keep nothing', async () => {
    for (const action of ['store', 'erase']) {
      const res = await runCli(['credential', 'git', action], signedIn, `protocol=https\nhost=git.example.com\nusername=oauth2\npassword=${token}\n\n`);
      expect(res.code, res.stderr).toBe(0);
      expect(res.stdout).toBe('');
    }
  });

  it('not signed in: the helper exits 6 and says so; git then has no password', async () => {
    const direct = await runCli(['credential', 'git', 'get'], signedOut, 'protocol=https\nhost=git.example.com\n\n');
    expect(direct.code).toBe(6);
    expect(direct.stdout).toBe('');
    expect(direct.stderr).toContain('not signed in');
    const res = await fill(signedOut, 'protocol=https\nhost=git.example.com\n\n');
    expect(res.code).not.toBe(0);
    expect(res.stderr).toContain('latchkey: not signed in');
    expect(res.stdout).not.toContain('password=');
  });
});

describe('latchkey credential git, typed by a person', () => {
  it('answers at the blank line while stdin stays open, and exits', async () => {
    const child = spawn(process.execPath, [executable, 'credential', 'git', 'get'], { env: { PATH: process.env.PATH ?? '', ...signedIn }, stdio: 'pipe' });
    let stdout = '';
    child.stdout.on('data', (d: Buffer | string) => (stdout += d.toString()));
    const closed = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
    child.stdin.write('protocol=https\nhost=git.example.com\n\n');
    const outcome = await Promise.race([closed, new Promise<'still running'>((resolve) => setTimeout(() => resolve('still running'), 10_000))]);
    child.stdin.end();
    expect(outcome).toBe(0);
    const [, expiry] = stdout.match(/^username=oauth2\npassword=([^\n]+)\npassword_expiry_utc=(\d+)\n$/)?.slice(1) ?? [];
    expect(stdout.match(/^username=oauth2\npassword=([^\n]+)\n/)?.[1]).toBe(token);
    expect(Number(expiry) * 1000).toBeGreaterThan(Date.now() + 60_000);
  });
});

if (!gitAvailable && gitRequired) {
  describe('latchkey credential git', () => {
    it('has git (LATCHKEY_REQUIRE_GIT=1)', () => expect.fail('git is not installed'));
  });
}

describe('latchkey credential docker (through the docker-credential-latchkey wrapper)', () => {
  const docker = (action: string, env: Record<string, string>, input: string) => run('docker-credential-latchkey', [action], env, input);

  it('get: the JSON docker reads, with the access token as the secret', async () => {
    const res = await docker('get', signedIn, 'https://registry.example.com\n');
    expect(res.code, res.stderr).toBe(0);
    expect(JSON.parse(res.stdout)).toEqual({ ServerURL: 'https://registry.example.com', Username: 'oauth2', Secret: token });
    // Docker writes the bare host name for credHelpers entries, without a newline.
    const bare = await docker('get', signedIn, 'registry.example.com');
    expect(JSON.parse(bare.stdout)).toEqual({ ServerURL: 'registry.example.com', Username: 'oauth2', Secret: token });
  });

  it('get for a registry not listed with --host: "not found" as docker understands it, no token', async () => {
    for (const serverUrl of ['evil.example', 'https://index.docker.io/v1/', 'registry.example.com:5000', 'registry.example.com.evil.example']) {
      const res = await docker('get', signedIn, `${serverUrl}\n`);
      expect(res.code, serverUrl).toBe(1);
      expect(res.stdout.trim()).toBe('credentials not found in native keychain');
      expect(res.stdout + res.stderr).not.toContain(token);
    }
  });

  it('get without --host: refused with a message naming --host, no token', async () => {
    const res = await runCli(['credential', 'docker', '--audience', api, 'get'], signedIn, 'registry.example.com\n');
    expect(res.code).toBe(2);
    expect(res.stdout).toBe('');
    expect(res.stderr).toContain('needs --host REGISTRY');
    expect(res.stderr).not.toContain(token);
  });

  it('get for a plain-http registry: "not found" as docker understands it, no token', async () => {
    const res = await docker('get', signedIn, 'http://registry.example.com\n');
    expect(res.code).toBe(1);
    expect(res.stdout.trim()).toBe('credentials not found in native keychain');
    expect(res.stdout + res.stderr).not.toContain(token);
  });

  it('list prints {}; store and erase read their input and keep nothing', async () => {
    const list = await docker('list', signedIn, '');
    expect(list.code).toBe(0);
    expect(JSON.parse(list.stdout)).toEqual({});
    const store = await docker('store', signedIn, JSON.stringify({ ServerURL: 'registry.example.com', Username: 'u', Secret: 's' }));
    expect(store.code, store.stderr).toBe(0);
    expect(store.stdout).toBe('');
    const erase = await docker('erase', signedIn, 'registry.example.com\n');
    expect(erase.code, erase.stderr).toBe(0);
    expect(erase.stdout).toBe('');
    expect((await docker('frobnicate', signedIn, '')).code).toBe(2);
  });
});

describe('not signed in', () => {
  it('kubectl and docker exit 6 with a message on stderr and nothing on stdout', async () => {
    const kubectl = await runCli(['credential', 'kubectl'], signedOut);
    expect(kubectl.code).toBe(6);
    expect(kubectl.stdout).toBe('');
    expect(kubectl.stderr).toContain('not signed in: run "latchkey login"');
    const docker = await runCli(['credential', 'docker', '--host', 'registry.example.com', 'get'], signedOut, 'registry.example.com\n');
    expect(docker.code).toBe(6);
    expect(docker.stdout).toBe('');
    expect(docker.stderr).toContain('not signed in');
    const profile = await runCli(['credential', 'kubectl', '--profile', 'nobody'], signedIn);
    expect(profile.code).toBe(6);
    expect(profile.stdout).toBe('');
  });
});

describe('a profile signed in for the management API ({issuer}/api/v1)', () => {
  const refused = (res: CliResult) => {
    expect(res.code, res.stderr).toBe(6);
    expect(res.stdout).toBe('');
    expect(res.stderr).toContain(`the profile "${admin}" holds a token for the management API of ${server.base}, which a credential helper never hands out`);
    expect(res.stderr).toContain(`use "${admin}" only as LATCHKEY_PROFILE=${admin} latchkey … --server ${server.base}`);
  };

  it('no helper hands its token to a cluster, git host or registry, even asked for that audience', async () => {
    const management = `${server.base}/api/v1`;
    refused(await runCli(['credential', 'kubectl', '--profile', admin], signedIn));
    refused(await runCli(['credential', 'kubectl', '--profile', admin, '--audience', management], signedIn));
    refused(await runCli(['credential', 'git', '--profile', admin, 'get'], signedIn, 'protocol=https\nhost=git.example.com\n\n'));
    refused(await runCli(['credential', 'git', '--profile', admin, '--audience', management, 'get'], signedIn, 'protocol=https\nhost=git.example.com\n\n'));
    refused(await runCli(['credential', 'docker', '--profile', admin, '--host', 'registry.example.com', 'get'], signedIn, 'registry.example.com\n'));
  });
});

describe('a profile signed in without --audience (a token for the userinfo endpoint only)', () => {
  const refused = (res: CliResult) => {
    expect(res.code).toBe(6);
    expect(res.stdout).toBe('');
    expect(res.stderr).toContain(`latchkey login --audience <API> --profile ${userinfoOnly}`);
    expect(res.stderr).toContain('add "--audience <API>" to the helper\'s command');
  };

  it('each helper refuses to hand its token out, naming the flag to add', async () => {
    refused(await runCli(['credential', 'kubectl', '--profile', userinfoOnly], signedIn));
    refused(await runCli(['credential', 'git', '--profile', userinfoOnly, 'get'], signedIn, 'protocol=https\nhost=git.example.com\n\n'));
    refused(await runCli(['credential', 'docker', '--profile', userinfoOnly, '--host', 'registry.example.com', 'get'], signedIn, 'registry.example.com\n'));
  });

  it('--audience naming an API does not make it answer: the profile must have been signed in for it', async () => {
    const res = await runCli(['credential', 'kubectl', '--profile', userinfoOnly, '--audience', api], signedIn);
    expect(res.code).toBe(6);
    expect(res.stdout).toBe('');
    expect(res.stderr).toContain(`latchkey login --audience ${api} --profile ${userinfoOnly}`);
  });
});
