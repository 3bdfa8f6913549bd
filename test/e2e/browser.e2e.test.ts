/// <reference lib="dom" />
/**
 * The pages in a real browser: playwright-core driving Debian's Chromium, axe-core checking
 * accessibility (no serious or critical violation), a phone-sized device flow, a desktop
 * Authorization Code flow, and keyboard-only use. With LATCHKEY_SCREENSHOTS=1 (npm run screenshots)
 * every page is also written to docs/screenshots/ at both sizes.
 *
 * Chromium must be at /usr/bin/chromium (.ci/run installs it). Without it these tests are skipped
 * on a developer machine, but CI sets LATCHKEY_REQUIRE_BROWSER=1, so there they can only pass.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { addApi, addClient, addUser, deviceGrantType, form, testApp, type TestApp } from '../helpers/app.js';
import { freePort, runCli, spawnCli, startServerProcess } from '../helpers/process.js';
import { startFakeOidcProvider } from '../helpers/upstreams.js';
import { connectorSecretContext } from '../../src/connectors/runtime.js';

const executablePath = '/usr/bin/chromium';
const run = existsSync(executablePath) || process.env.LATCHKEY_REQUIRE_BROWSER === '1';
const screenshots = process.env.LATCHKEY_SCREENSHOTS === '1';
const screenshotDir = fileURLToPath(new URL('../../docs/screenshots/', import.meta.url));
const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

const phone = { viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true, deviceScaleFactor: 2 };
const desktop = { viewport: { width: 1280, height: 800 } };

let t: TestApp;
let base: string;
let dir: string;
let browser: Browser;
let rp: Server;
let rpPort: number;
const rpHits: string[] = [];

beforeAll(async () => {
  if (!run) return;
  dir = mkdtempSync(join(tmpdir(), 'latchkey-browser-'));
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  t = await testApp({ LATCHKEY_ISSUER: base }, { path: join(dir, 'latchkey.db') });
  await addUser(t.store, 'erin', 'erin-password');
  await addApi(t.store, 'https://api.example.com', 'Photo Library');
  await addClient(t.store, 'tv', { name: 'Living Room TV' });
  rpPort = await freePort();
  await addClient(t.store, 'photos', {
    name: 'Photo Editor',
    redirectUris: [`http://127.0.0.1:${rpPort}/cb`],
    grantTypes: ['authorization_code'],
    requirePkce: false,
  });
  await t.app.listen({ port, host: '127.0.0.1' });
  rp = createServer((req, res) => {
    rpHits.push(req.url ?? '');
    res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><title>Photo Editor</title><h1>Photo Editor</h1>');
  }).listen(rpPort, '127.0.0.1');
  browser = await chromium.launch({
    executablePath,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run'],
  });
}, 60_000);

afterAll(async () => {
  if (!run) return;
  await browser?.close();
  rp?.close();
  await t?.close();
  rmSync(dir, { recursive: true, force: true });
});

async function newPage(size: typeof phone | typeof desktop): Promise<{ context: BrowserContext; page: Page; outside: string[] }> {
  const context = await browser.newContext(size);
  const page = await context.newPage();
  const outside: string[] = [];
  // No request may leave for any host but this server (and the test's client app).
  page.on('request', (request) => {
    const url = new URL(request.url());
    if (url.protocol !== 'data:' && url.origin !== base && url.port !== String(rpPort)) outside.push(request.url());
  });
  return { context, page, outside };
}

/** axe-core on the current page: no serious or critical violation. */
async function expectAccessible(page: Page) {
  await page.evaluate(axeSource);
  const violations = await page.evaluate(async () => {
    const result = await (window as unknown as { axe: { run: () => Promise<{ violations: { id: string; impact: string; help: string }[] }> } }).axe.run();
    return result.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help }));
  });
  expect(violations.filter((v) => v.impact === 'serious' || v.impact === 'critical')).toEqual([]);
}

async function capture(page: Page, name: string, size: 'phone' | 'desktop') {
  if (!screenshots) return;
  mkdirSync(screenshotDir, { recursive: true });
  await page.screenshot({ path: join(screenshotDir, `${name}-${size}.png`), fullPage: true });
}

async function requestDeviceCode() {
  const res = await t.app.inject({
    method: 'POST',
    url: '/oauth/device/code',
    headers: { ...form({}).headers, 'user-agent': 'LivingRoomTV/4.2 (Tizen 7.0)' },
    payload: form({ client_id: 'tv', scope: 'openid email profile offline_access', audience: 'https://api.example.com' }).payload,
  });
  return res.json<{ device_code: string; user_code: string; verification_uri_complete: string }>();
}

const poll = (deviceCode: string) =>
  t.app.inject({ method: 'POST', url: '/oauth/token', ...form({ grant_type: deviceGrantType, client_id: 'tv', device_code: deviceCode }) });

async function signInOnPage(page: Page) {
  await page.getByLabel('Username').fill('erin');
  await page.getByLabel('Password').fill('erin-password');
  await page.getByRole('button', { name: 'Sign in' }).click();
}

describe.skipIf(!run)('pages in a real browser', () => {
  it('device flow on a phone: the code typed in lower case without the dash, sign in, Allow', async () => {
    const device = await requestDeviceCode();
    const { context, page, outside } = await newPage(phone);
    await page.goto(`${base}/activate`);
    await expectAccessible(page);
    await capture(page, 'activate', 'phone');
    await page.getByLabel('Code').fill(device.user_code.replace('-', '').toLowerCase());
    await page.getByRole('button', { name: 'Continue' }).click();
    await expect.poll(() => page.url()).toContain('/login');
    await expectAccessible(page);
    await capture(page, 'login', 'phone');
    await signInOnPage(page);
    await page.getByRole('heading', { name: 'Allow Living Room TV to access your account?' }).waitFor();
    expect(await page.locator('.user-code').textContent()).toBe(device.user_code);
    expect(await page.locator('.user-code').evaluate((el) => getComputedStyle(el).fontFamily)).toMatch(/mono/i);
    // The device's software named as people know it, not its raw User-Agent.
    expect(await page.locator('.origin dd.software').textContent()).toBe('LivingRoomTV 4.2 on Tizen');
    await expectAccessible(page);
    await capture(page, 'device-confirm', 'phone');
    await page.getByRole('button', { name: 'Allow' }).click();
    await page.getByRole('heading', { name: "You're all set" }).waitFor();
    await expectAccessible(page);
    await capture(page, 'device-approved', 'phone');
    expect((await poll(device.device_code)).statusCode).toBe(200);
    expect(outside).toEqual([]);
    await context.close();
  });

  it('device flow on a phone: the code arrives pre-filled from verification_uri_complete', async () => {
    const device = await requestDeviceCode();
    const { context, page } = await newPage(phone);
    await page.goto(device.verification_uri_complete);
    expect(await page.getByLabel('Code').inputValue()).toBe(device.user_code);
    await page.getByRole('button', { name: 'Continue' }).click();
    await signInOnPage(page);
    await page.getByRole('button', { name: 'Allow' }).click();
    await page.getByRole('heading', { name: "You're all set" }).waitFor();
    expect((await poll(device.device_code)).statusCode).toBe(200);
    await context.close();
  });

  it('device flow on a phone: a wrong code says so, and Deny tells the device', async () => {
    const device = await requestDeviceCode();
    const { context, page } = await newPage(phone);
    await page.goto(`${base}/activate`);
    await page.getByLabel('Code').fill('BCDF-GHJK');
    await page.getByRole('button', { name: 'Continue' }).click();
    await page.getByRole('alert').filter({ hasText: 'That code isn’t right' }).waitFor();
    expect(await page.getByLabel('Code').getAttribute('aria-invalid')).toBe('true');
    await expectAccessible(page);
    await capture(page, 'activate-wrong-code', 'phone');
    await page.getByLabel('Code').fill(device.user_code);
    await page.getByRole('button', { name: 'Continue' }).click();
    await signInOnPage(page);
    await page.getByRole('button', { name: 'Deny' }).click();
    await page.getByRole('heading', { name: 'Request denied' }).waitFor();
    await capture(page, 'device-denied', 'phone');
    expect((await poll(device.device_code)).json().error).toBe('access_denied');
    await context.close();
  });

  it('Authorization Code flow on a desktop: sign in, consent, back to the application', async () => {
    const { context, page, outside } = await newPage(desktop);
    const query = new URLSearchParams({
      response_type: 'code',
      client_id: 'photos',
      redirect_uri: `http://127.0.0.1:${rpPort}/cb`,
      scope: 'openid email profile',
      audience: 'https://api.example.com',
      state: 'st-9',
    });
    await page.goto(`${base}/authorize?${query}`);
    await page.getByText('Sign in to continue to').waitFor();
    await expectAccessible(page);
    await capture(page, 'login', 'desktop');
    await signInOnPage(page);
    await page.getByRole('heading', { name: 'Allow Photo Editor to access your account?' }).waitFor();
    await expectAccessible(page);
    await capture(page, 'consent', 'desktop');
    await page.getByRole('button', { name: 'Allow' }).click();
    await page.waitForURL(new RegExp(`^http://127\\.0\\.0\\.1:${rpPort}/cb\\?`));
    const callback = new URL(page.url());
    expect(callback.searchParams.get('code')).toMatch(/^lk_ac_/);
    expect(callback.searchParams.get('state')).toBe('st-9');
    expect(callback.searchParams.get('iss')).toBe(base);
    expect(outside).toEqual([]);
    await context.close();
  });

  it('keyboard only: sign in and allow a device without touching the mouse', async () => {
    const device = await requestDeviceCode();
    const { context, page } = await newPage(desktop);
    await page.goto(device.verification_uri_complete);
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('user_code');
    await page.keyboard.press('Enter'); // the pre-filled code field has focus; Enter submits
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('username');
    await page.keyboard.type('erin');
    await page.keyboard.press('Tab');
    await page.keyboard.type('erin-password');
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: /Allow Living Room TV/ }).waitFor();
    await capture(page, 'device-confirm', 'desktop');
    // Tab to Allow: Deny comes first, so a stray Enter never approves.
    let focused = '';
    for (let i = 0; i < 20 && focused !== 'allow'; i++) {
      await page.keyboard.press('Tab');
      focused = await page.evaluate(() => (document.activeElement as HTMLButtonElement | null)?.value ?? '');
      if (focused === 'deny') expect(await page.evaluate(() => getComputedStyle(document.activeElement!).outlineStyle)).not.toBe('none');
    }
    expect(focused).toBe('allow');
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: "You're all set" }).waitFor();
    expect((await poll(device.device_code)).statusCode).toBe(200);
    await context.close();
  });

  it('the remaining pages at both sizes: accessible, and captured for the docs', async () => {
    for (const [sizeName, size] of [
      ['phone', phone],
      ['desktop', desktop],
    ] as const) {
      const { context, page } = await newPage(size);
      await page.goto(`${base}/login`);
      await signInOnPage(page);
      // The loopback confirmation of a native app (RFC 8252 §8.6).
      const q = new URLSearchParams({
        response_type: 'code',
        client_id: 'latchkey-cli',
        redirect_uri: 'http://127.0.0.1:1/callback',
        scope: 'openid',
        state: 's',
        code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
        code_challenge_method: 'S256',
      });
      await page.goto(`${base}/authorize?${q}`);
      await page.getByRole('heading', { name: 'Continue to Latchkey CLI?' }).waitFor();
      await expectAccessible(page);
      await capture(page, 'loopback-confirm', sizeName);
      await page.goto(`${base}/nowhere`);
      await page.getByRole('heading', { name: 'Page not found' }).waitFor();
      await expectAccessible(page);
      await capture(page, 'not-found', sizeName);
      await page.goto(`${base}/logout`);
      await page.getByRole('heading', { name: "You're signed out" }).waitFor();
      await expectAccessible(page);
      await capture(page, 'signed-out', sizeName);
      if (sizeName === 'desktop') {
        await page.goto(`${base}/activate`);
        await capture(page, 'activate', 'desktop');
        const device = await requestDeviceCode();
        await page.goto(device.verification_uri_complete);
        await page.getByRole('button', { name: 'Continue' }).click();
        await signInOnPage(page);
        await page.getByRole('button', { name: 'Allow' }).click();
        await page.getByRole('heading', { name: "You're all set" }).waitFor();
        await capture(page, 'device-approved', 'desktop');
        await page.goto(`${base}/activate`);
        await page.getByLabel('Code').fill('BCDF-GHJK');
        await page.getByRole('button', { name: 'Continue' }).click();
        await page.getByRole('alert').waitFor();
        await capture(page, 'activate-wrong-code', 'desktop');
        const denied = await requestDeviceCode();
        await page.goto(denied.verification_uri_complete);
        await page.getByRole('button', { name: 'Continue' }).click();
        await page.getByRole('button', { name: 'Deny' }).click();
        await page.getByRole('heading', { name: 'Request denied' }).waitFor();
        await expectAccessible(page);
        await capture(page, 'device-denied', 'desktop');
      } else {
        const q2 = new URLSearchParams({
          response_type: 'code',
          client_id: 'photos',
          redirect_uri: `http://127.0.0.1:${rpPort}/cb`,
          scope: 'openid email',
          state: 's',
        });
        await page.goto(`${base}/authorize?${q2}`);
        await signInOnPage(page);
        await page.getByRole('heading', { name: /Allow Photo Editor/ }).waitFor();
        await capture(page, 'consent', 'phone');
      }
      await context.close();
    }
  }, 60_000);

  it('the product name and accent colour follow the configuration', async () => {
    const themed = await testApp({ LATCHKEY_ISSUER: base, LATCHKEY_PRODUCT_NAME: 'Acme Sign-in', LATCHKEY_ACCENT_COLOR: '#ffcc00' });
    try {
      const port = await freePort();
      const themedBase = await themed.app.listen({ port, host: '127.0.0.1' });
      const { context, page } = await newPage(desktop);
      await page.goto(`${themedBase}/login`);
      expect(await page.title()).toBe('Sign in · Acme Sign-in');
      await page.getByText('Acme Sign-in').first().waitFor();
      const button = page.getByRole('button', { name: 'Sign in' });
      expect(await button.evaluate((el) => getComputedStyle(el).backgroundColor)).toBe('rgb(255, 204, 0)');
      expect(await button.evaluate((el) => getComputedStyle(el).color)).toBe('rgb(0, 0, 0)'); // contrast on yellow
      await expectAccessible(page);
      await context.close();
    } finally {
      await themed.close();
    }
  });

  it('sign-in with an upstream identity provider: the buttons, accessible, and a whole sign-in through one', async () => {
    const idp = await startFakeOidcProvider({
      sub: 'fern-1',
      email: 'fern@acme.example',
      email_verified: true,
      name: 'Fern Federated',
      preferred_username: 'fern',
    });
    const seal = (id: string, secret: string) => t.app.services.secretBox.seal(connectorSecretContext(id), secret);
    await t.store.createConnector({
      id: 'acme',
      type: 'oidc',
      name: 'Acme SSO',
      config: { issuer: idp.base, clientId: idp.clientId },
      secret: seal('acme', idp.clientSecret),
      createdAt: 1,
    });
    await t.store.createConnector({
      id: 'github',
      type: 'github',
      name: 'GitHub',
      config: { clientId: 'x', apiUrl: 'https://api.github.com' },
      secret: seal('github', 'y'),
      createdAt: 1,
    });
    try {
      for (const [sizeName, size] of [
        ['phone', phone],
        ['desktop', desktop],
      ] as const) {
        const { context, page } = await newPage(size);
        await page.goto(`${base}/login`);
        await page.getByRole('button', { name: 'Sign in with Acme SSO' }).waitFor();
        await page.getByRole('button', { name: 'Sign in with GitHub' }).waitFor();
        await expectAccessible(page);
        await capture(page, 'login-connectors', sizeName);
        if (sizeName === 'desktop') {
          await page.getByRole('button', { name: 'Sign in with Acme SSO' }).click();
          // The stand-in upstream answers at once; the person is back, signed in, at the code entry.
          await page.waitForURL(`${base}/activate`);
          await page.getByText('Signed in as').waitFor();
          expect(await page.textContent('body')).toContain('fern');
        }
        await context.close();
      }
    } finally {
      await t.store.removeConnector('acme');
      await t.store.removeConnector('github');
      await idp.close();
    }
  }, 60_000);
});

describe.skipIf(!run)('latchkey login in a real browser', () => {
  it('the browser command is given a page file; Chromium opens it, signs in, and the CLI stores the tokens; Back does not cancel', async () => {
    const serverEnv = { LATCHKEY_DB: join(dir, 'cli-login.db') };
    expect((await runCli(['users', 'add', 'erin', '--email', 'erin@example.com', '--password-stdin'], serverEnv, 'erin-password')).code).toBe(0);
    const server = await startServerProcess(serverEnv);
    // $BROWSER: records the one argument it is given, which the test then opens in Chromium.
    const calls = join(dir, 'opener.calls');
    const opener = join(dir, 'opener');
    writeFileSync(
      opener,
      `#!${process.execPath}\nrequire('node:fs').appendFileSync(${JSON.stringify(calls)}, JSON.stringify(process.argv.slice(2)) + '\\n');\n`,
      { mode: 0o755 },
    );
    const home = join(dir, 'cli-home');
    const cli = spawnCli(['login', '--issuer', server.base], { HOME: home, BROWSER: opener });
    const context = await browser.newContext(desktop);
    try {
      await cli.waitForStderr(/Opening your browser/);
      await expect.poll(() => (existsSync(calls) ? readFileSync(calls, 'utf8') : '')).toMatch(/\n$/);
      const argv = JSON.parse(readFileSync(calls, 'utf8')) as string[];
      expect(argv).toHaveLength(1);
      expect(argv[0]).toMatch(/^file:\/\/\//);
      const page = await context.newPage();
      await page.goto(argv[0]!);
      // The page posted itself to the CLI, which sent the browser on to the sign-in.
      await page.getByLabel('Username').waitFor();
      expect(page.url().startsWith(`${server.base}/login`)).toBe(true);
      // Back and Forward again: the page's secret is not posted a second time (which would cancel).
      await page.goBack();
      await page.goForward();
      await page.getByLabel('Username').waitFor();
      expect(cli.child.exitCode).toBeNull();
      await signInOnPage(page);
      // The one-click confirmation for a loopback redirect (RFC 8252 §8.6).
      await page.getByRole('heading', { name: 'Continue to Latchkey CLI?' }).waitFor();
      await page.getByRole('button', { name: 'Continue' }).click();
      await page.getByRole('heading', { name: 'Signed in — you can close this tab' }).waitFor();
      expect(await cli.exit).toBe(0);
      expect(cli.stderr()).toContain(`Signed in to ${server.base} as erin.`);
      const stored = JSON.parse(readFileSync(join(home, '.latchkey', 'credentials.json'), 'utf8')) as {
        profiles: Record<string, { issuer: string; refresh_token?: string }>;
      };
      expect(stored.profiles.default?.issuer).toBe(server.base);
      expect(stored.profiles.default?.refresh_token).toMatch(/^lk_rt_/);
      expect(existsSync(fileURLToPath(argv[0]!))).toBe(false);
      expect(readdirSync(join(home, '.latchkey')).filter((name) => name.startsWith('login-'))).toEqual([]);
    } finally {
      await context.close();
      if (cli.child.exitCode === null) cli.child.kill();
      await server.stop();
    }
  }, 60_000);
});
