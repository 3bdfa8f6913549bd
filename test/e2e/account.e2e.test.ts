/// <reference lib="dom" />
/**
 * /account and RP-Initiated Logout in a real browser: playwright-core driving Debian's
 * Chromium against the app on a real socket. Devices play their part over HTTP (fetch) with a
 * software name of their own, and are approved in the browser (/activate, sign in, Allow); then
 * "Devices and apps" on /account shows where each came from, and its "Sign out" button, "Sign out
 * everywhere" and a password change end what they say (the device's next refresh is
 * invalid_grant, the other browsers are back at the sign-in page). RP-Initiated Logout asks
 * first, then sends the browser back to the client's own little server with its state — the
 * confirmation form may end there (CSP form-action), and the browser says nothing against it.
 *
 * axe-core checks /account (with several sign-ins and a consent) and the logout confirmation (no
 * serious or critical violation), no request leaves for another host, and with
 * LATCHKEY_SCREENSHOTS=1 (npm run screenshots) both pages are written to docs/screenshots/ at
 * phone and desktop sizes. Chromium must be at /usr/bin/chromium; without it these tests are
 * skipped on a developer machine, but CI sets LATCHKEY_REQUIRE_BROWSER=1, so there they can only pass.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { addApi, addClient, addUser, deviceGrantType, testApp, type TestApp } from '../helpers/app.js';
import { freePort } from '../helpers/process.js';

const executablePath = '/usr/bin/chromium';
const run = existsSync(executablePath) || process.env.LATCHKEY_REQUIRE_BROWSER === '1';
const screenshots = process.env.LATCHKEY_SCREENSHOTS === '1';
const screenshotDir = fileURLToPath(new URL('../../docs/screenshots/', import.meta.url));
const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

const phone = { viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true, deviceScaleFactor: 2 };
const desktop = { viewport: { width: 1280, height: 800 } };

/** How long a step in the browser may take on a busy two-core machine before it counts as failed. */
const step = { timeout: 15_000 };

let t: TestApp;
let base: string;
let dir: string;
let browser: Browser;
let rp: Server;
let rpPort: number;
let rpOrigin: string;
const rpHits: string[] = [];

beforeAll(async () => {
  if (!run) return;
  dir = mkdtempSync(join(tmpdir(), 'latchkey-account-'));
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  t = await testApp({ LATCHKEY_ISSUER: base }, { path: join(dir, 'latchkey.db') });
  // One person per test: a password change or "Sign out everywhere" touches nobody else.
  for (const name of ['erin', 'finn', 'grace', 'hana', 'ivy']) await addUser(t.store, name, `${name}-password`);
  await addApi(t.store, 'https://api.example.com', 'Photo Library');
  // Devices: the Device Code grant and refresh tokens (the defaults of addClient).
  await addClient(t.store, 'tv', { name: 'Living Room TV' });
  await addClient(t.store, 'speaker', { name: 'Kitchen Speaker' });
  rpPort = await freePort();
  rpOrigin = `http://127.0.0.1:${rpPort}`;
  // A third-party web application (asks for consent) that keeps a refresh token.
  await addClient(t.store, 'photos', {
    name: 'Photo Editor',
    redirectUris: [`${rpOrigin}/cb`],
    grantTypes: ['authorization_code', 'refresh_token'],
    requirePkce: false,
  });
  // A web application that sends people to /logout and wants them back afterwards.
  await addClient(t.store, 'notes', {
    name: 'Team Notes',
    redirectUris: [`${rpOrigin}/cb`],
    grantTypes: ['authorization_code'],
    firstParty: true,
    postLogoutRedirectUris: [`${rpOrigin}/signed-out`],
  });
  await t.app.listen({ port, host: '127.0.0.1' });
  rp = createServer((req, res) => {
    rpHits.push(req.url ?? '');
    res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><title>Client</title><h1>Back at the application</h1>');
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

interface Opened {
  context: BrowserContext;
  page: Page;
  outside: string[];
  /** What the browser printed as errors (a CSP refusal among them). */
  errors: string[];
}

async function newPage(size: typeof phone | typeof desktop): Promise<Opened> {
  const context = await browser.newContext(size);
  context.setDefaultTimeout(step.timeout);
  const page = await context.newPage();
  const outside: string[] = [];
  // No request may leave for any host but this server (and the test's client app).
  page.on('request', (request) => {
    const url = new URL(request.url());
    if (url.protocol !== 'data:' && url.origin !== base && url.origin !== rpOrigin) outside.push(request.url());
  });
  const errors: string[] = [];
  page.on('console', (message) => {
    if (message.type() === 'error') errors.push(message.text());
  });
  return { context, page, outside, errors };
}

/** axe-core on the current page: no serious or critical violation (each with the markup it is about). */
async function expectAccessible(page: Page) {
  await page.evaluate(axeSource);
  const violations = await page.evaluate(async () => {
    const result = await (
      window as unknown as { axe: { run: () => Promise<{ violations: { id: string; impact: string; help: string; nodes: { html: string }[] }[] }> } }
    ).axe.run();
    return result.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map((n) => n.html) }));
  });
  // Soft: the test goes on (and captures the other pages) and fails at its end, with every finding.
  expect
    .soft(
      violations.filter((v) => v.impact === 'serious' || v.impact === 'critical'),
      `axe-core on ${page.url()}`,
    )
    .toEqual([]);
}

async function capture(page: Page, name: string, size: 'phone' | 'desktop') {
  if (!screenshots) return;
  mkdirSync(screenshotDir, { recursive: true });
  await page.screenshot({ path: join(screenshotDir, `${name}-${size}.png`), fullPage: true });
}

async function fillSignIn(page: Page, username: string) {
  await page.getByRole('heading', { name: 'Sign in', exact: true }).waitFor();
  await page.getByLabel('Username').fill(username);
  await page.getByLabel('Password').fill(`${username}-password`);
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
}

/** Signs in on the sign-in page and lands on /account. */
async function signInToAccount(page: Page, username: string) {
  await page.goto(`${base}/login?return_to=${encodeURIComponent('/account')}`);
  await fillSignIn(page, username);
  await page.waitForURL(`${base}/account`, step);
  await page.getByRole('heading', { name: 'Your account' }).waitFor();
}

/** POST a form to this server over HTTP, as a device or an application does. */
async function post(path: string, fields: Record<string, string>, userAgent = 'latchkey-e2e') {
  const res = await fetch(`${base}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', 'user-agent': userAgent },
    body: new URLSearchParams(fields),
  });
  return { status: res.status, body: (await res.json()) as Record<string, string> };
}

interface DeviceTokens {
  access_token: string;
  refresh_token: string;
  scope: string;
}

/**
 * A device asks for a code over HTTP (as `software`, its User-Agent), the person approves it on
 * `page` (/activate, type the code, sign in as `username` unless signed in already, Allow — the
 * page names the device as `shown`), and the device, polling, gets its tokens.
 */
async function approveDevice(page: Page, clientId: string, clientName: string, software: string, shown: string, username?: string): Promise<DeviceTokens> {
  const started = await post(
    '/oauth/device/code',
    { client_id: clientId, scope: 'openid profile offline_access', audience: 'https://api.example.com' },
    software,
  );
  expect(started.status).toBe(200);
  const device = started.body as { device_code: string; user_code: string; interval: string };
  const poll = () => post('/oauth/token', { grant_type: deviceGrantType, client_id: clientId, device_code: device.device_code }, software);
  expect((await poll()).body.error).toBe('authorization_pending');

  await page.goto(`${base}/activate`);
  await page.getByLabel('Code').fill(device.user_code);
  await page.getByRole('button', { name: 'Continue' }).click();
  if (username !== undefined) await fillSignIn(page, username);
  await page.getByRole('heading', { name: `Allow ${clientName} to access your account?` }).waitFor();
  expect(await page.locator('.user-code').textContent()).toBe(device.user_code);
  // Where the request came from: the device named as people know it, never its raw User-Agent.
  expect(await page.locator('.origin dd.software').textContent()).toBe(shown);
  await page.getByRole('button', { name: 'Allow' }).click();
  await page.getByRole('heading', { name: "You're all set" }).waitFor();

  t.clock.advance(Number(device.interval) + 1); // the device waits its interval before polling again
  const tokens = await poll();
  expect(tokens.status, JSON.stringify(tokens.body)).toBe(200);
  expect(tokens.body.refresh_token).toMatch(/\S/);
  return tokens.body as unknown as DeviceTokens;
}

const refresh = (clientId: string, refreshToken: string) =>
  post('/oauth/token', { grant_type: 'refresh_token', client_id: clientId, refresh_token: refreshToken });

const userinfo = async (accessToken: string) => (await fetch(`${base}/userinfo`, { headers: { authorization: `Bearer ${accessToken}` } })).status;

/** The entries of "Devices and apps". */
const signIns = (page: Page) => page.getByRole('region', { name: 'Devices and apps' }).locator('ul.sign-ins > li');

/** Visiting /account without a session ends at the sign-in page. */
async function expectSignedOut(page: Page) {
  await page.goto(`${base}/account`);
  await page.waitForURL(`${base}/login?return_to=%2Faccount`, step);
  await page.getByRole('heading', { name: 'Sign in', exact: true }).waitFor();
}

const cspErrors = (errors: string[]) => errors.filter((e) => /Content Security Policy|form-action/i.test(e));

describe.skipIf(!run)('/account and sign-out in a real browser', () => {
  it("A device flow, then revoke from /account in a real browser: the device's next refresh is invalid_grant", async () => {
    const { context, page, outside, errors } = await newPage(desktop);
    const software = 'latchkey/0.2.0 (Linux; x64)';
    const tv = await approveDevice(page, 'tv', 'Living Room TV', software, 'latchkey 0.2 on Linux', 'erin');
    // The device's sign-in works: a refresh (which rotates the token) answers.
    const rotated = await refresh('tv', tv.refresh_token);
    expect(rotated.status, JSON.stringify(rotated.body)).toBe(200);
    const refreshToken = rotated.body.refresh_token!;

    await page.goto(`${base}/account`);
    await page.getByRole('heading', { name: 'Your account' }).waitFor();
    await expect.poll(() => signIns(page).count()).toBe(2); // this browser and the TV
    const entry = signIns(page).filter({ hasText: 'Living Room TV' });
    expect(await entry.count()).toBe(1);
    const text = (await entry.textContent()) ?? '';
    // Where it was approved from, as the confirmation page showed it: the device's address and software.
    expect(text).toContain('From 127.0.0.1');
    expect(text).toContain('latchkey 0.2 on Linux');
    expect(text).not.toContain(software);
    expect(text).toContain('(device or app)');
    expect(await signIns(page).filter({ hasText: 'This browser' }).count()).toBe(1);

    const button = entry.getByRole('button', { name: /^Sign out Living Room TV/ });
    expect(await button.textContent()).toBe('Sign out');
    expect(await button.getAttribute('name')).toBe('revoke');
    const [family] = await t.store.listRefreshFamilies((await t.store.findUserByUsername('erin'))!.id, Math.floor(t.clock()));
    expect(await button.getAttribute('value')).toBe(family!.familyId);
    await button.click();
    await page.getByRole('status').filter({ hasText: 'That device or app was signed out.' }).waitFor();
    expect(page.url()).toBe(`${base}/account/revoke`);
    await expect.poll(() => signIns(page).count()).toBe(1);
    expect(await signIns(page).first().textContent()).toContain('This browser');
    expect(await page.getByText('Living Room TV').count()).toBe(0);

    const after = await refresh('tv', refreshToken);
    expect(after.status).toBe(400);
    expect(after.body.error).toBe('invalid_grant');
    // The browser itself is still signed in.
    await page.goto(`${base}/account`);
    await page.getByRole('heading', { name: 'Your account' }).waitFor();
    expect(outside).toEqual([]);
    expect(cspErrors(errors)).toEqual([]);
    await context.close();
  });

  it('Sign out everywhere ends every family and session', async () => {
    const first = await newPage(desktop);
    const second = await newPage(phone);
    await signInToAccount(first.page, 'finn');
    // The second browser signs in on the way to approving a device.
    const speaker = await approveDevice(second.page, 'speaker', 'Kitchen Speaker', 'KitchenSpeaker/1.0 (Linux; armv7l)', 'KitchenSpeaker 1.0 on Linux', 'finn');
    expect(await userinfo(speaker.access_token)).toBe(200);
    await second.page.goto(`${base}/account`);
    await second.page.getByRole('heading', { name: 'Your account' }).waitFor();

    await first.page.goto(`${base}/account`);
    await expect.poll(() => signIns(first.page).count()).toBe(3); // two browsers and the speaker
    expect(await signIns(first.page).filter({ hasText: 'This browser' }).count()).toBe(1);
    expect(await signIns(first.page).filter({ hasText: 'A browser' }).count()).toBe(1);
    expect(await signIns(first.page).filter({ hasText: 'Kitchen Speaker' }).count()).toBe(1);
    await first.page.getByRole('button', { name: 'Sign out everywhere' }).click();
    await first.page.getByRole('heading', { name: "You're signed out" }).waitFor();
    await first.page.getByRole('status').filter({ hasText: 'signed out everywhere' }).waitFor();

    await expectSignedOut(first.page);
    await expectSignedOut(second.page);
    const after = await refresh('speaker', speaker.refresh_token);
    expect(after.status).toBe(400);
    expect(after.body.error).toBe('invalid_grant');
    // Its access token, issued before, is refused too.
    expect(await userinfo(speaker.access_token)).toBe(401);
    for (const opened of [first, second]) {
      expect(opened.outside).toEqual([]);
      await opened.context.close();
    }
  });

  it('a new password on /account ends the other sign-ins; this browser stays signed in', async () => {
    const here = await newPage(desktop);
    const elsewhere = await newPage(phone);
    await signInToAccount(here.page, 'grace');
    await signInToAccount(elsewhere.page, 'grace');
    await here.page.reload();
    await expect.poll(() => signIns(here.page).count()).toBe(2);

    const password = here.page.getByRole('region', { name: 'Password' });
    await password.getByLabel('Current password').fill('grace-password');
    await password.getByLabel('New password').fill('a-brand-new-password');
    expect(await password.getByLabel('Keep my other devices and apps signed in').isChecked()).toBe(false);
    await password.getByRole('button', { name: 'Change password' }).click();
    await here.page.getByRole('status').filter({ hasText: 'Your password was changed, and every other sign-in has ended.' }).waitFor();
    await expect.poll(() => signIns(here.page).count()).toBe(1);
    expect(await signIns(here.page).first().textContent()).toContain('This browser');

    // This browser is still signed in, the other one is not.
    await here.page.goto(`${base}/account`);
    await here.page.getByRole('heading', { name: 'Your account' }).waitFor();
    expect(here.page.url()).toBe(`${base}/account`);
    await expectSignedOut(elsewhere.page);
    // There the old password no longer works and the new one does.
    await fillSignIn(elsewhere.page, 'grace');
    await elsewhere.page.getByRole('alert').waitFor();
    expect(elsewhere.page.url()).not.toBe(`${base}/account`);
    await elsewhere.page.getByLabel('Username').fill('grace');
    await elsewhere.page.getByLabel('Password').fill('a-brand-new-password');
    await elsewhere.page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await elsewhere.page.waitForURL(`${base}/account`, step);
    for (const opened of [here, elsewhere]) {
      expect(opened.outside).toEqual([]);
      await opened.context.close();
    }
  });

  it('RP-Initiated Logout: asks first, then signs out and lands on the application with its state', async () => {
    const { context, page, outside, errors } = await newPage(desktop);
    await signInToAccount(page, 'hana');
    const postLogout = `${rpOrigin}/signed-out`;

    // An address not registered for the application: refused on a page, never followed, still signed in.
    const unregistered = new URLSearchParams({ client_id: 'notes', post_logout_redirect_uri: `${rpOrigin}/elsewhere`, state: 'x' });
    await page.goto(`${base}/logout?${unregistered}`);
    await page.getByRole('heading', { name: 'This sign-out request cannot be used' }).waitFor();
    expect(page.url().startsWith(`${base}/logout?`)).toBe(true);
    expect(rpHits.filter((h) => h.startsWith('/elsewhere'))).toEqual([]);

    const query = new URLSearchParams({ client_id: 'notes', post_logout_redirect_uri: postLogout, state: 'lo-17' });
    const response = await page.goto(`${base}/logout?${query}`);
    await page.getByRole('heading', { name: 'Sign out?' }).waitFor();
    expect(await page.locator('p.lead').textContent()).toBe('Team Notes asks to sign you out. You are signed in as hana.');
    // The form may end, by redirect, at the application's registered address, and nowhere else.
    const csp = (await response!.allHeaders())['content-security-policy'] ?? '';
    expect(csp).toMatch(new RegExp(`form-action 'self' ${rpOrigin.replace(/[.]/g, '\\.')}(;|$)`));
    // Asking did not sign anyone out.
    expect((await context.cookies()).map((c) => c.name)).toContain('latchkey_session');

    await page.getByRole('button', { name: 'Sign out', exact: true }).click();
    await page
      .waitForURL((url) => url.href.startsWith(`${postLogout}?`), step)
      .catch(async (err: unknown) => {
        await page.waitForEvent('console', { timeout: 2_000 }).catch(() => undefined); // the console message of a refused navigation comes after it
        throw new Error(`not back at Team Notes: at ${page.url()}; the browser said: ${JSON.stringify(errors)}`, { cause: err });
      });
    expect(new URL(page.url()).searchParams.get('state')).toBe('lo-17');
    await page.getByRole('heading', { name: 'Back at the application' }).waitFor();
    expect(rpHits).toContain('/signed-out?state=lo-17');
    expect(cspErrors(errors)).toEqual([]);

    await expectSignedOut(page);
    expect(outside).toEqual([]);
    await context.close();
  });

  it('/account with several sign-ins and a consent, and the logout confirmation: accessible, captured; Withdraw access ends the application', async () => {
    // Seen from a first browser: a device approved, and a third-party application allowed.
    const setup = await newPage(desktop);
    await signInToAccount(setup.page, 'ivy');
    const tv = await approveDevice(setup.page, 'tv', 'Living Room TV', 'latchkey/0.2.0 (Darwin; arm64)', 'latchkey 0.2 on macOS');
    const authorize = new URLSearchParams({
      response_type: 'code',
      client_id: 'photos',
      redirect_uri: `${rpOrigin}/cb`,
      scope: 'openid profile offline_access',
      audience: 'https://api.example.com',
      state: 'st-17',
    });
    await setup.page.goto(`${base}/authorize?${authorize}`);
    await setup.page.getByRole('heading', { name: 'Allow Photo Editor to access your account?' }).waitFor();
    await setup.page.getByRole('button', { name: 'Allow' }).click();
    await setup.page.waitForURL((url) => url.href.startsWith(`${rpOrigin}/cb?`), step);
    const code = new URL(setup.page.url()).searchParams.get('code')!;
    const photos = await post(
      '/oauth/token',
      { grant_type: 'authorization_code', client_id: 'photos', code, redirect_uri: `${rpOrigin}/cb` },
      'PhotoEditor/3.1',
    );
    expect(photos.status, JSON.stringify(photos.body)).toBe(200);
    expect(photos.body.refresh_token).toMatch(/\S/);
    expect(setup.outside).toEqual([]);

    for (const [sizeName, size] of [
      ['phone', phone],
      ['desktop', desktop],
    ] as const) {
      const { context, page, outside, errors } = await newPage(size);
      await signInToAccount(page, 'ivy');
      // This browser, the set-up browser (and, on the desktop, the phone), the TV and Photo Editor.
      await expect.poll(() => signIns(page).count()).toBe(sizeName === 'phone' ? 4 : 5);
      expect(await signIns(page).filter({ hasText: 'Photo Editor' }).count()).toBe(1);
      expect(await signIns(page).filter({ hasText: 'Living Room TV' }).count()).toBe(1);
      // Each device named as people know it: our command line, this Chromium, the application's library.
      expect(await signIns(page).filter({ hasText: 'Living Room TV' }).locator('.software').textContent()).toBe('latchkey 0.2 on macOS');
      expect(await signIns(page).filter({ hasText: 'Photo Editor' }).locator('.software').textContent()).toBe('Chrome on Linux');
      expect(await signIns(page).filter({ hasText: 'This browser' }).locator('.software').textContent()).toBe('Chrome on Linux');
      // Each entry a few short lines, even on a phone: no raw User-Agent stretches one out.
      for (const entry of await signIns(page).all()) expect(await entry.evaluate((li) => li.getBoundingClientRect().height)).toBeLessThan(200);
      const consents = page.getByRole('region', { name: 'Applications you allowed' });
      expect(await consents.locator('ul.consents > li').count()).toBe(1);
      expect(await consents.locator('ul.consents > li').textContent()).toContain('Photo Editor');
      await expectAccessible(page);
      await capture(page, 'account', sizeName);

      const query = new URLSearchParams({ client_id: 'notes', post_logout_redirect_uri: `${rpOrigin}/signed-out`, state: 's' });
      await page.goto(`${base}/logout?${query}`);
      await page.getByRole('heading', { name: 'Sign out?' }).waitFor();
      await expectAccessible(page);
      await capture(page, 'logout-confirm', sizeName);
      // "Stay signed in" changes nothing.
      await page.getByRole('button', { name: 'Stay signed in' }).click();
      await page.getByRole('heading', { name: "You're still signed in" }).waitFor();
      await page.goto(`${base}/account`);
      await page.getByRole('heading', { name: 'Your account' }).waitFor();

      if (sizeName === 'desktop') {
        await consents.getByRole('button', { name: 'Withdraw access of Photo Editor' }).click();
        await page.getByRole('status').filter({ hasText: 'Access withdrawn' }).waitFor();
        await consents.getByText('None.').waitFor();
        expect(await signIns(page).filter({ hasText: 'Photo Editor' }).count()).toBe(0);
        const after = await refresh('photos', photos.body.refresh_token!);
        expect(after.body.error).toBe('invalid_grant');
        // The device was not that application: it still refreshes.
        expect((await refresh('tv', tv.refresh_token)).status).toBe(200);
        await expectAccessible(page);
      }
      expect(outside).toEqual([]);
      expect(cspErrors(errors)).toEqual([]);
      await context.close();
    }
    await setup.context.close();
  }, 60_000);
});
