/**
 * An operator's first hour with the built executable, on a real terminal (a pseudo-terminal made
 * by util-linux `script`) and a real socket: a first start on a port that is taken, the start that
 * works and shows the first user's password, the sign-in with it on the /login form, the admin
 * commands from a second terminal — sentences only, and addresses on the server's issuer.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SqliteStore } from '../../src/store/sqlite/sqlite_store.js';
import { Browser, fetchTransport, signIn } from '../helpers/browser.js';
import { executable, freePort, runCli } from '../helpers/process.js';
import { waitFor } from '../helpers/wait.js';

interface OnTerminal {
  child: ChildProcess;
  /** Everything the terminal showed (stdout and stderr together, as a person sees them). */
  output(): string;
  exit: Promise<number | null>;
  /** The latchkey process itself (script's child): it gets the signals a person's Ctrl-C would send. */
  latchkeyPid(): number | undefined;
}

const quoted = (word: string) => `'${word.replace(/'/g, `'\\''`)}'`;

/** Runs the executable with stdin, stdout and stderr on a pseudo-terminal, as in a person's shell. */
function onTerminal(args: string[], env: Record<string, string>): OnTerminal {
  const command = ['exec', process.execPath, executable, ...args].map(quoted).join(' ');
  const child = spawn('script', ['--quiet', '--return', '--flush', '--command', command, '/dev/null'], {
    env: { PATH: process.env.PATH ?? '', TERM: 'dumb', ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr.on('data', (d: Buffer) => (output += d.toString()));
  const exit = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  return {
    child,
    output: () => output.replace(/\r\n/g, '\n'),
    exit,
    latchkeyPid() {
      try {
        const [pid] = readFileSync(`/proc/${child.pid}/task/${child.pid}/children`, 'utf8').split(' ').filter(Boolean);
        return pid === undefined ? undefined : Number(pid);
      } catch {
        return undefined;
      }
    },
  };
}

async function stop(server: OnTerminal): Promise<number | null> {
  const pid = await waitFor(() => server.latchkeyPid(), { what: 'the latchkey process under script' });
  process.kill(pid, 'SIGTERM');
  return server.exit;
}

/** What a terminal shows a person may hold sentences, never a log line. */
const jsonLine = /^\s*\{.*"(level|event)"/m;

let dir: string;
let env: Record<string, string>;
let port: number;
let base: string;
let server: OnTerminal | undefined;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'latchkey-operator-'));
  port = await freePort();
  base = `http://127.0.0.1:${port}`;
  env = { LATCHKEY_DB: join(dir, 'latchkey.db'), PORT: String(port), LATCHKEY_ISSUER: base, LATCHKEY_LOG_LEVEL: 'warn' };
});

afterAll(async () => {
  if (server) await stop(server);
  rmSync(dir, { recursive: true, force: true });
});

describe.runIf(process.platform === 'linux')("an operator's first hour", () => {
  it('a first start on a port in use exits non-zero naming the port; the next start shows the first password, and the admin signs in with it at /login', async () => {
    const held: Server = createServer();
    await new Promise<void>((resolve) => held.listen(port, '127.0.0.1', resolve));
    try {
      const taken = await runCli(['serve'], env);
      expect(taken.code).toBe(1);
      expect(taken.stderr).toContain(`latchkey: PORT: port ${port} on 127.0.0.1 is already in use`);
      expect(taken.stderr).not.toMatch(/password/i);
    } finally {
      await new Promise((resolve) => held.close(resolve));
    }

    server = onTerminal(['serve'], env);
    await waitFor(() => server!.output().includes('Next, in another terminal:'), { what: 'the start banner' });
    const shown = server.output();
    // The failed start made the user: this start still shows its password.
    const password = shown.match(
      /^The first user "admin" has not signed in yet; its password: ([A-Za-z0-9]{20}) {2}\(shown at each start until admin signs in or the password is changed\)$/m,
    )?.[1];
    expect(password, shown).toBeDefined();
    expect(shown).toContain(`Latchkey is listening on ${base}`);
    expect(shown).not.toMatch(jsonLine);

    const browser = new Browser(fetchTransport(base));
    const wrong = await signIn(browser, await browser.get('/login'), 'admin', 'not the password');
    expect(wrong.status).toBe(401);
    const signedIn = await signIn(browser, await browser.get('/login'), 'admin', password!);
    expect(signedIn.status).toBe(303);
    const account = await browser.follow(signedIn);
    expect(account.status).toBe(200);
    expect(account.body).toContain('admin');

    // Signed in once: the next start no longer shows it, and no longer keeps it.
    expect(await stop(server)).toBe(0);
    server = onTerminal(['serve'], env);
    await waitFor(() => server!.output().includes('Next, in another terminal:'), { what: 'the start banner' });
    expect(server.output()).not.toContain(password);
    expect(server.output()).not.toContain('has not signed in yet');
  }, 60_000);

  it('admin commands on a terminal print sentences, not JSON log lines; the stored audit trail keeps each event', async () => {
    const add = onTerminal(['clients', 'add', 'tv', '--name', 'Living Room TV', '--grant-type', 'device_code'], env);
    expect(await add.exit, add.output()).toBe(0);
    expect(add.output()).toContain('Registered client tv (public; grants: device_code)');
    const rotate = onTerminal(['keys', 'rotate'], env);
    expect(await rotate.exit, rotate.output()).toBe(0);
    for (const run of [add, rotate]) expect(run.output()).not.toMatch(jsonLine);

    const store = new SqliteStore({ path: env.LATCHKEY_DB! });
    try {
      expect(await store.listAuditEvents({ event: 'client.created', limit: 5 })).toMatchObject([{ actor: 'cli', clientId: 'tv' }]);
      expect((await store.listAuditEvents({ event: 'key.rotated', actor: 'cli', limit: 5 })).length).toBeGreaterThan(0);
    } finally {
      await store.close();
    }
    // A program reading the output (stderr not a terminal) still gets the event as a JSON line.
    const piped = await runCli(['apis', 'add', 'https://api.example.com'], env);
    expect(piped.code).toBe(0);
    expect(JSON.parse(piped.stderr.split('\n').find((line) => line.startsWith('{'))!)).toMatchObject({ source: 'cli', event: 'api.created' });
  }, 60_000);

  it("admin commands run without the server's LATCHKEY_ISSUER print addresses on the issuer the server runs with, and say when theirs differs", async () => {
    const { LATCHKEY_ISSUER: _theServers, ...secondTerminal } = env;
    const link = await runCli(['users', 'mfa-enroll', 'admin'], secondTerminal);
    expect(link.code, link.stderr).toBe(0);
    expect(link.stdout).toMatch(new RegExp(`^${base}/account/security/enrol\\?code=lk_fe_`));
    expect(link.stderr).not.toContain('note:');
    const token = await runCli(['clients', 'registration-token'], secondTerminal);
    expect(token.stderr).toContain(`Initial access token for POST ${base}/oauth/register`);

    const other = await runCli(['clients', 'registration-token'], { ...secondTerminal, LATCHKEY_ISSUER: 'https://id.example.com' });
    expect(other.stderr).toContain(
      `note: LATCHKEY_ISSUER is https://id.example.com, but the server last started with issuer ${base}: the address below is on LATCHKEY_ISSUER`,
    );
    expect(other.stderr).toContain('Initial access token for POST https://id.example.com/oauth/register');
  }, 60_000);
});
