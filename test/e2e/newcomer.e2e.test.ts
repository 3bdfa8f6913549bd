/// <reference lib="dom" />
/**
 * A newcomer's first sign-in, scripted from what the terminal prints and nothing else. It starts
 * from this checkout's built `dist/cli/main.js`: CI runs the suite in a fresh clone after `npm ci`
 * (.ci/run), which is the "fresh clone, npm install" part of the path. Then, as a person would:
 * `latchkey serve --demo`, read its walk-through for the issuer, the client and the demo person's
 * password; run the printed `latchkey login --device …` and confirm the device in Chromium (open the
 * printed address, sign in, Allow); `latchkey status` shows the profile; an administrator ends the
 * sign-in with the printed admin command; `latchkey login --device` with no --issuer goes back to
 * the issuer the profile holds; `latchkey logout`. The CLI keeps its profiles in a HOME of its own.
 * Stopping the demo deletes its database and key, and it never touched LATCHKEY_DB.
 *
 * Chromium must be at /usr/bin/chromium; without it this test is skipped on a developer machine,
 * but CI sets LATCHKEY_REQUIRE_BROWSER=1, so there it can only pass.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { executable, freePort, runCli, spawnCli } from '../helpers/process.js';
import { waitFor } from '../helpers/wait.js';

const executablePath = '/usr/bin/chromium';
const run = existsSync(executablePath) || process.env.LATCHKEY_REQUIRE_BROWSER === '1';

/** How long a step in the browser may take on a busy two-core machine before it counts as failed. */
const step = { timeout: 15_000 };

let dir: string;
let browser: Browser;

beforeAll(async () => {
  if (!run) return;
  dir = mkdtempSync(join(tmpdir(), 'latchkey-newcomer-'));
  browser = await chromium.launch({
    executablePath,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run'],
  });
}, 60_000);

afterAll(async () => {
  if (!run) return;
  await browser?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** The words of a command line as a POSIX shell splits them (double quotes only: all the walk-through uses). */
function shellWords(line: string): string[] {
  return [...line.matchAll(/"([^"]*)"|(\S+)/g)].map((match) => match[1] ?? match[2]!);
}

/** Starts `latchkey serve --demo` and resolves once its walk-through is printed. */
async function startDemo(env: Record<string, string>) {
  const child = spawn(process.execPath, [executable, 'serve', '--demo'], { env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  await waitFor(() => stdout.includes('Press Ctrl-C to stop') || child.exitCode !== null, { what: 'the demo to print its walk-through', timeout: 60_000 });
  expect(child.exitCode, stderr).toBeNull();
  return {
    stdout: () => stdout,
    stderr: () => stderr,
    stop: async () => {
      if (child.exitCode === null) child.kill('SIGINT');
      return exited;
    },
  };
}

/** The person's part in Chromium: open the printed address, sign in, check the code, Allow. */
async function confirmDevice(verificationUrl: string, userCode: string, username: string, password: string) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  try {
    const page = await context.newPage();
    await page.goto(verificationUrl);
    expect(await page.getByLabel('Code').inputValue()).toBe(userCode);
    await page.getByRole('button', { name: 'Continue' }).click(step);
    await page.getByLabel('Username').fill(username, step);
    await page.getByLabel('Password').fill(password);
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await page.getByRole('heading', { name: 'Allow Demo CLI to access your account?' }).waitFor(step);
    // The pages say it is the demo.
    expect(await page.title()).toContain('Latchkey demo');
    await page.getByRole('button', { name: 'Allow' }).click();
    await page.getByRole('heading', { name: "You're all set" }).waitFor(step);
  } finally {
    await context.close();
  }
}

/** What `latchkey login --device` prints for the person: the address to open (with the code) and the code. */
async function devicePrompt(cli: ReturnType<typeof spawnCli>) {
  const [, url, code] = await cli.waitForStderr(/or open (http\S+\/activate\?user_code=(\S+))\n/, 30_000);
  return { url: url!, code: decodeURIComponent(code!) };
}

describe.skipIf(!run)('a newcomer, from the checkout to a first sign-in', () => {
  it('serve --demo, the printed login --device confirmed in Chromium, status, the sign-in ended, login again at the stored issuer, logout', async () => {
    const port = await freePort();
    const configured = join(dir, 'configured', 'latchkey.db');
    // A configured database the demo must leave alone; a short poll interval so the CLI notices the approval quickly.
    const demo = await startDemo({ PORT: String(port), LATCHKEY_DB: configured, LATCHKEY_DEVICE_INTERVAL: '1' });
    let demoFolder: string | undefined;
    const clis: ReturnType<typeof spawnCli>[] = [];
    try {
      const out = demo.stdout();
      // Loopback only, and it says so.
      expect(out).toContain(`Latchkey is listening on http://127.0.0.1:${port} (issuer http://localhost:${port}) — a DEMO`);
      expect(out).toContain('Not used by the demo: LATCHKEY_DB');
      expect(out).toMatch(/client {2}demo-web .*client_secret lk_cs_[\w-]{43}\)$/m);
      const issuer = `http://localhost:${port}`;

      // Everything the person needs comes from the walk-through.
      const loginLine = /^\s+npx latchkey (login --device .*)$/m.exec(out)?.[1];
      expect(loginLine).toBeDefined();
      const loginArgs = shellWords(loginLine!);
      expect(loginArgs.slice(0, 4)).toEqual(['login', '--device', '--issuer', issuer]);
      expect(loginArgs).toContain('--client-id');
      const [, username, password] = /sign in as (\S+) with password (\S+), and press Allow/.exec(out)!;
      const [, databasePath, adminArgs] = /^\s+LATCHKEY_DB=(\S+) npx latchkey (users revoke-tokens \S+)$/m.exec(out)!;
      demoFolder = dirname(databasePath!);
      expect(existsSync(databasePath!)).toBe(true);

      const home = join(dir, 'home');
      // The person's own machine: their HOME and XDG folders, no LATCHKEY_* settings.
      const cliEnv = { HOME: home, XDG_CONFIG_HOME: join(home, '.config'), XDG_CACHE_HOME: join(home, '.cache') };
      const credentials = () =>
        JSON.parse(readFileSync(join(home, '.latchkey', 'credentials.json'), 'utf8')) as {
          profiles: Record<string, { issuer: string; client_id: string; audience?: string; refresh_token?: string }>;
        };

      // 1. The printed login command, confirmed in the browser.
      const login = spawnCli(loginArgs, cliEnv);
      clis.push(login);
      const first = await devicePrompt(login);
      expect(first.url.startsWith(`${issuer}/activate?`)).toBe(true);
      await confirmDevice(first.url, first.code, username!, password!);
      expect(await login.exit, login.stderr()).toBe(0);
      expect(login.stderr()).toContain(`Signed in to ${issuer} as ${username}.`);
      const clientId = loginArgs[loginArgs.indexOf('--client-id') + 1]!;
      expect(credentials().profiles.default).toMatchObject({ issuer, client_id: clientId });

      // 2. status shows the stored sign-in.
      const status = await runCli(['status'], cliEnv);
      expect(status.code, status.stderr).toBe(0);
      expect(status.stdout).toContain('default');
      expect(status.stdout).toContain(issuer);
      expect(status.stdout).toContain(username);

      // 3. An administrator ends every sign-in of the person, with the printed admin command.
      const ended = await runCli(shellWords(adminArgs!), { LATCHKEY_DB: databasePath! });
      expect(ended.code, ended.stderr).toBe(0);
      const whoami = await runCli(['whoami'], cliEnv);
      expect(whoami.code).toBe(6);
      // The hint names the issuer the profile is on (it is not the default one).
      expect(whoami.stderr).toContain('latchkey login');
      expect(whoami.stderr).toContain(`--issuer ${issuer}`);

      // 4. Signing in again with no --issuer (nor --client-id) goes back to the profile's issuer and client.
      const again = spawnCli(['login', '--device'], cliEnv);
      clis.push(again);
      const second = await devicePrompt(again);
      expect(second.url.startsWith(`${issuer}/activate?`)).toBe(true);
      await confirmDevice(second.url, second.code, username!, password!);
      expect(await again.exit, again.stderr()).toBe(0);
      expect(again.stderr()).toContain(`Signed in to ${issuer} as ${username}.`);
      const restored = credentials().profiles.default!;
      expect(restored).toMatchObject({ issuer, client_id: clientId, audience: loginArgs[loginArgs.indexOf('--audience') + 1] });
      expect(restored.refresh_token).toMatch(/^lk_rt_/);

      // 5. logout revokes and forgets it.
      const logout = await runCli(['logout'], cliEnv);
      expect(logout.code, logout.stderr).toBe(0);
      expect(credentials().profiles.default).toBeUndefined();
      const revoked = await fetch(`http://127.0.0.1:${port}/oauth/token`, {
        method: 'POST',
        body: new URLSearchParams({ grant_type: 'refresh_token', client_id: clientId, refresh_token: restored.refresh_token! }),
      });
      expect(((await revoked.json()) as { error: string }).error).toBe('invalid_grant');

      // The password was shown in the walk-through (the list of people and step 2), and nowhere else.
      expect(demo.stdout().split(password!)).toHaveLength(3);
      expect(demo.stderr()).not.toContain(password!);
    } finally {
      for (const cli of clis) if (cli.child.exitCode === null) cli.child.kill();
      expect(await demo.stop()).toBe(0);
    }
    // The demo's database and key went with it; the configured database was never made.
    expect(demoFolder && existsSync(demoFolder)).toBe(false);
    expect(existsSync(configured)).toBe(false);
    expect(existsSync(dirname(configured))).toBe(false);
  }, 180_000);

  it('serve --demo refuses to listen beyond this machine', async () => {
    const res = await runCli(['serve', '--demo'], { HOST: '0.0.0.0', PORT: String(await freePort()) });
    expect(res.code).toBe(2);
    expect(res.stderr).toBe(
      'latchkey: serve --demo listens on this machine only (HOST=0.0.0.0 is not a loopback address): unset HOST, or run without --demo\n',
    );
  });
});
