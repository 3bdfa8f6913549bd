/// <reference lib="dom" />
/**
 * Second factors in a real browser: playwright-core driving Debian's Chromium with a
 * virtual WebAuthn authenticator (Chrome DevTools Protocol) that keeps resident credentials and
 * verifies its user. A passkey is registered on /account/security, signs in without a username
 * and as the step after a password (each through a whole Authorization Code flow, the tokens'
 * amr and acr checked), is renamed and removed, and is added again on the way when a client asks
 * for a second factor; an authenticator app is set up by typing the code of the secret shown as
 * text; an administrator's first passkey is refused with a password alone and added through an
 * enrolment link. The flows end at a first-party web application on a name of its own (notes.example, mapped
 * to 127.0.0.1), so each page's form must be allowed to end there (CSP form-action). axe-core
 * checks every page (no serious or critical violation), no request leaves for another host (the
 * WebAuthn browser library is served by Latchkey itself), and with LATCHKEY_SCREENSHOTS=1
 * (npm run screenshots) the pages are written to docs/screenshots/ at both sizes.
 *
 * WebAuthn needs a secure context, so the server's issuer is http://localhost:<port> (the relying
 * party is then `localhost`). Chromium must be at /usr/bin/chromium; without it these tests are
 * skipped on a developer machine, but CI sets LATCHKEY_REQUIRE_BROWSER=1, so there they can only pass.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { decodeJwt } from 'jose';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { createEnrolmentLink } from '../../src/mfa/enrolment_link.js';
import { totpCodeAt } from '../../src/mfa/totp.js';
import type { UserRecord } from '../../src/store/store.js';
import { addClient, addUser, form, pkcePair, testApp, type TestApp } from '../helpers/app.js';
import { freePort } from '../helpers/process.js';

const executablePath = '/usr/bin/chromium';
const run = existsSync(executablePath) || process.env.LATCHKEY_REQUIRE_BROWSER === '1';
const screenshots = process.env.LATCHKEY_SCREENSHOTS === '1';
const screenshotDir = fileURLToPath(new URL('../../docs/screenshots/', import.meta.url));
const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

const phone = { viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true, deviceScaleFactor: 2 };
const desktop = { viewport: { width: 1280, height: 800 } };

/** A credential as a virtual authenticator holds it (CDP WebAuthn.Credential; binary fields in base64). */
interface VirtualCredential {
  credentialId: string;
  isResidentCredential: boolean;
  rpId?: string;
  privateKey: string;
  userHandle?: string;
  signCount: number;
}

/** How long a step in the browser may take on a busy two-core machine before it counts as failed. */
const step = { timeout: 15_000 };

let t: TestApp;
let base: string;
let dir: string;
let browser: Browser;
let rp: Server;
let rpPort: number;
let redirectUri: string;
let erin: UserRecord;
let finn: UserRecord;
let grace: UserRecord;
/** Erin's passkey as her authenticator holds it (private key, counter), carried from test to test. */
let erinsPasskey: VirtualCredential | undefined;

beforeAll(async () => {
  if (!run) return;
  dir = mkdtempSync(join(tmpdir(), 'latchkey-passkeys-'));
  const port = await freePort();
  // localhost, not 127.0.0.1: WebAuthn runs only in a secure context, and http://localhost is one.
  base = `http://localhost:${port}`;
  t = await testApp({ LATCHKEY_ISSUER: base }, { path: join(dir, 'latchkey.db') });
  erin = await addUser(t.store, 'erin', 'erin-password');
  finn = await addUser(t.store, 'finn', 'finn-password');
  grace = await addUser(t.store, 'grace', 'grace-password');
  rpPort = await freePort();
  // A first-party web application (no consent page, and not on a loopback address, which would
  // ask to confirm first): each sign-in page's own form ends at the application.
  redirectUri = `http://notes.example:${rpPort}/cb`;
  await addClient(t.store, 'notes', { name: 'Team Notes', redirectUris: [redirectUri], grantTypes: ['authorization_code'], firstParty: true });
  await t.app.listen({ port, host: '127.0.0.1' });
  rp = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><title>Team Notes</title><h1>Team Notes</h1>');
  }).listen(rpPort, '127.0.0.1');
  browser = await chromium.launch({
    executablePath,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--no-first-run',
      '--host-resolver-rules=MAP notes.example 127.0.0.1',
    ],
  });
}, 60_000);

afterAll(async () => {
  if (!run) return;
  await browser?.close();
  rp?.close();
  await t?.close();
  rmSync(dir, { recursive: true, force: true });
});

const consoleErrors = new WeakMap<Page, string[]>();

async function newPage(size: typeof phone | typeof desktop): Promise<{ context: BrowserContext; page: Page; outside: string[]; requested: string[] }> {
  const context = await browser.newContext(size);
  const page = await context.newPage();
  const outside: string[] = [];
  const requested: string[] = [];
  // No request may leave for any host but this server (and the test's client app).
  page.on('request', (request) => {
    requested.push(request.url());
    const url = new URL(request.url());
    if (url.protocol !== 'data:' && url.origin !== base && url.origin !== new URL(redirectUri).origin) outside.push(request.url());
  });
  // What the browser refused (a CSP violation, a failed fetch), to say why a flow stopped.
  const errors: string[] = [];
  consoleErrors.set(page, errors);
  page.on('console', (message) => {
    if (message.type() === 'error') errors.push(message.text());
  });
  return { context, page, outside, requested };
}

/**
 * A virtual platform authenticator on this page (a phone's or laptop's screen lock): resident
 * keys, user verification that succeeds, presence confirmed at once. Given a credential, it holds
 * that passkey already (the same person's device, in a browser with no cookies).
 */
async function addAuthenticator(context: BrowserContext, page: Page, credential?: VirtualCredential) {
  const cdp = await context.newCDPSession(page);
  await cdp.send('WebAuthn.enable');
  const { authenticatorId } = await cdp.send('WebAuthn.addVirtualAuthenticator', {
    options: {
      protocol: 'ctap2',
      transport: 'internal',
      hasResidentKey: true,
      hasUserVerification: true,
      isUserVerified: true,
      automaticPresenceSimulation: true,
    },
  });
  if (credential) await cdp.send('WebAuthn.addCredential', { authenticatorId, credential });
  return { credentials: async (): Promise<VirtualCredential[]> => (await cdp.send('WebAuthn.getCredentials', { authenticatorId })).credentials };
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

async function signInWithPassword(page: Page, username: string, password: string) {
  await page.getByLabel('Username').fill(username);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
}

/** The passkey button of a page, once its script has shown it (it is hidden without one). */
async function passkeyButton(page: Page, name: string) {
  const button = page.locator('form[data-passkey] [data-passkey-start]');
  await button.waitFor({ state: 'visible', ...step });
  expect(await button.textContent()).toBe(name);
  return button;
}

/** A new Authorization Code request of Team Notes, with PKCE. */
function authorizeUrl(extra: Record<string, string> = {}) {
  const { verifier, challenge } = pkcePair();
  const query = new URLSearchParams({
    response_type: 'code',
    client_id: 'notes',
    redirect_uri: redirectUri,
    scope: 'openid profile',
    state: 'st-16',
    code_challenge: challenge,
    code_challenge_method: 'S256',
    ...extra,
  });
  return { url: `${base}/authorize?${query}`, verifier };
}

/** Back at Team Notes with a code: redeemed as the application would, the id_token's claims returned. */
async function tokensAtApplication(page: Page, verifier: string) {
  await page
    .waitForURL((url) => url.href.startsWith(`${redirectUri}?`), step)
    .catch(async (err: unknown) => {
      await page.waitForEvent('console', { timeout: 2_000 }).catch(() => undefined); // the console message of a refused navigation comes after it
      throw new Error(`not back at Team Notes: at ${new URL(page.url()).pathname}; the browser said: ${JSON.stringify(consoleErrors.get(page) ?? [])}`, {
        cause: err,
      });
    });
  const callback = new URL(page.url());
  expect(callback.searchParams.get('state')).toBe('st-16');
  expect(callback.searchParams.get('iss')).toBe(base);
  const code = callback.searchParams.get('code');
  expect(code).toMatch(/^lk_ac_/);
  const res = await t.app.inject({
    method: 'POST',
    url: '/oauth/token',
    ...form({ grant_type: 'authorization_code', client_id: 'notes', code: code!, redirect_uri: redirectUri, code_verifier: verifier }),
  });
  expect(res.statusCode, res.body).toBe(200);
  return decodeJwt(res.json<{ id_token: string }>().id_token);
}

const passkeyItems = (page: Page) => page.locator('ul.passkeys > li');
const base64ToBase64url = (value: string) => Buffer.from(value, 'base64').toString('base64url');

/** The codes of a "Save your recovery codes" page. */
async function shownRecoveryCodes(page: Page): Promise<string[]> {
  await page.getByRole('heading', { name: 'Save your recovery codes' }).waitFor(step);
  return page.getByRole('list', { name: 'Recovery codes' }).locator('li code').allTextContents();
}

/** On /account/security/totp: the secret shown as text (what a person types into an app without a camera). */
async function shownTotpSecret(page: Page): Promise<string> {
  await page.getByRole('heading', { name: 'Set up an authenticator app' }).waitFor(step);
  const secret = ((await page.locator('code.secret#totp-secret').textContent()) ?? '').replace(/\s/g, '');
  expect(secret).toMatch(/^[A-Z2-7]{32}$/);
  return secret;
}

describe.skipIf(!run)('second factors in a real browser', () => {
  it('registers a passkey on /account/security: a resident credential for localhost, listed, ten recovery codes first', async () => {
    const { context, page, outside, requested } = await newPage(desktop);
    const authenticator = await addAuthenticator(context, page);
    await page.goto(`${base}/login?return_to=${encodeURIComponent('/account/security')}`);
    await signInWithPassword(page, 'erin', 'erin-password');
    await page.waitForURL(`${base}/account/security`, step);
    await page.getByRole('heading', { name: 'Sign-in security' }).waitFor();
    expect(await passkeyItems(page).count()).toBe(0);
    await page.getByLabel('Name for the new passkey').fill('Work laptop');
    await (await passkeyButton(page, 'Add a passkey')).click();
    // Her first second factor: the recovery codes come at once, shown once.
    const codes = await shownRecoveryCodes(page);
    expect(codes).toHaveLength(10);
    expect(await t.store.countRecoveryCodes(erin.id)).toBe(10);
    await page.getByRole('link', { name: 'I have saved them — continue' }).click();
    await page.waitForURL(`${base}/account/security`, step);
    await expect.poll(() => passkeyItems(page).count()).toBe(1);
    expect(await page.getByLabel('Name', { exact: true }).inputValue()).toBe('Work laptop');
    expect(await passkeyItems(page).textContent()).toMatch(/Added \d{4}-\d{2}-\d{2}/);

    const credentials = await authenticator.credentials();
    expect(credentials).toHaveLength(1);
    const credential = credentials[0]!;
    expect(credential.isResidentCredential).toBe(true);
    expect(credential.rpId).toBe('localhost');
    expect(Buffer.from(credential.userHandle ?? '', 'base64').toString('utf8')).toBe(erin.id);
    const stored = await t.store.listPasskeys(erin.id);
    expect(stored.map((p) => ({ id: p.id, name: p.name }))).toEqual([{ id: base64ToBase64url(credential.credentialId), name: 'Work laptop' }]);
    erinsPasskey = credential;

    // The WebAuthn library came from this server, like everything else.
    expect(requested).toContain(`${base}/assets/simplewebauthn-browser.js`);
    expect(requested).toContain(`${base}/assets/passkey.js`);
    expect(outside).toEqual([]);
    await context.close();
  });

  it('signs in with the passkey alone, no username typed, in a browser with no cookies: the tokens say hwk+user, multi-factor', async () => {
    expect(erinsPasskey, 'the passkey registered by the previous test').toBeDefined();
    const { context, page, outside } = await newPage(phone);
    const authenticator = await addAuthenticator(context, page, erinsPasskey);
    const { url, verifier } = authorizeUrl();
    await page.goto(url);
    await page.getByText('Sign in to continue to').waitFor(step);
    const before = erinsPasskey!.signCount;
    await (await passkeyButton(page, 'Sign in with a passkey')).click();
    let claims: Awaited<ReturnType<typeof tokensAtApplication>>;
    try {
      claims = await tokensAtApplication(page, verifier);
    } finally {
      [erinsPasskey] = await authenticator.credentials();
    }
    expect(claims.sub).toBe(erin.id);
    expect(claims.amr).toEqual(['hwk', 'user']);
    expect(claims.acr).toBe('urn:latchkey:mfa');
    // The authenticator counted the use, and the server took the new count.
    expect(erinsPasskey!.signCount).toBeGreaterThan(before);
    const [stored] = await t.store.listPasskeys(erin.id);
    expect(stored!.counter).toBe(erinsPasskey!.signCount);
    expect(stored!.lastUsedAt).toBe(Math.floor(t.clock()));
    expect(outside).toEqual([]);
    await context.close();
  });

  it('password, then the passkey as the second step: the tokens say pwd+hwk+user, multi-factor', async () => {
    expect(erinsPasskey, 'the passkey registered by the first test').toBeDefined();
    const { context, page, outside } = await newPage(desktop);
    const authenticator = await addAuthenticator(context, page, erinsPasskey);
    const { url, verifier } = authorizeUrl();
    await page.goto(url);
    await signInWithPassword(page, 'erin', 'erin-password');
    await page.waitForURL((u) => u.pathname === '/login/second-factor', step);
    await page.getByRole('heading', { name: 'Confirm it’s you' }).waitFor();
    // The password alone opened nothing: no session cookie yet.
    expect((await context.cookies()).map((c) => c.name)).not.toContain('latchkey_session');
    await (await passkeyButton(page, 'Use a passkey')).click();
    let claims: Awaited<ReturnType<typeof tokensAtApplication>>;
    try {
      claims = await tokensAtApplication(page, verifier);
    } finally {
      // The key counted this use whatever happened next: the next test starts from that count.
      [erinsPasskey] = await authenticator.credentials();
    }
    expect(claims.sub).toBe(erin.id);
    expect(claims.amr).toEqual(['pwd', 'hwk', 'user']);
    expect(claims.acr).toBe('urn:latchkey:mfa');
    expect(outside).toEqual([]);
    await context.close();
  });

  it('renames and removes the passkey on /account/security; a removed passkey signs nobody in', async () => {
    expect(erinsPasskey, 'the passkey registered by the first test').toBeDefined();
    const { context, page, outside } = await newPage(desktop);
    await addAuthenticator(context, page, erinsPasskey);
    await page.goto(`${base}/login?return_to=${encodeURIComponent('/account/security')}`);
    await (await passkeyButton(page, 'Sign in with a passkey')).click();
    await page.waitForURL(`${base}/account/security`, step);
    await expect.poll(() => passkeyItems(page).count()).toBe(1);

    await page.getByLabel('Name', { exact: true }).fill('YubiKey 5C');
    await page.getByRole('button', { name: 'Rename' }).click();
    await page.getByRole('button', { name: 'Remove passkey YubiKey 5C' }).waitFor(step);
    expect(await page.getByLabel('Name', { exact: true }).inputValue()).toBe('YubiKey 5C');
    expect((await t.store.listPasskeys(erin.id)).map((p) => p.name)).toEqual(['YubiKey 5C']);

    // Her last factor, but second factors are optional here: it may go.
    await page.getByRole('button', { name: 'Remove passkey YubiKey 5C' }).click();
    await expect.poll(() => passkeyItems(page).count()).toBe(0);
    await page.getByText('Sign in with your fingerprint, face or screen lock').waitFor(step);
    expect(await t.store.listPasskeys(erin.id)).toEqual([]);

    // Her authenticator still holds the key, but the server no longer knows it.
    await context.clearCookies();
    await page.goto(`${base}/login?return_to=${encodeURIComponent('/account/security')}`);
    await (await passkeyButton(page, 'Sign in with a passkey')).click();
    await page.getByRole('heading', { name: 'That passkey could not be used' }).waitFor(step);
    expect((await context.cookies()).map((c) => c.name)).not.toContain('latchkey_session');
    expect(outside).toEqual([]);
    await context.close();
  });

  it('a client asks for a second factor she no longer has: she adds a passkey on the way, and the sign-in ends at the client', async () => {
    // Erin removed her passkey above; her recovery codes are left, but they are no factor of their own.
    expect(await t.store.listPasskeys(erin.id)).toEqual([]);
    expect(await t.store.countRecoveryCodes(erin.id)).toBeGreaterThan(0);
    const { context, page, outside } = await newPage(phone);
    const authenticator = await addAuthenticator(context, page);
    const { url, verifier } = authorizeUrl({ acr_values: 'urn:latchkey:mfa' });
    await page.goto(url);
    await signInWithPassword(page, 'erin', 'erin-password');
    await page.waitForURL((u) => u.pathname === '/account/security', step);
    await page.getByRole('alert').filter({ hasText: 'To continue, set up a second factor' }).waitFor();
    await page.getByLabel('Name for the new passkey').fill('Phone');
    await (await passkeyButton(page, 'Add a passkey')).click();
    // Not her first factor ever (no new recovery codes): straight on to the application.
    const claims = await tokensAtApplication(page, verifier);
    expect(claims.sub).toBe(erin.id);
    expect(claims.amr).toEqual(['pwd', 'hwk', 'user']);
    expect(claims.acr).toBe('urn:latchkey:mfa');
    expect(await authenticator.credentials()).toHaveLength(1);
    expect((await t.store.listPasskeys(erin.id)).map((p) => p.name)).toEqual(['Phone']);
    expect(outside).toEqual([]);
    await context.close();
  });

  it('sets up an authenticator app from the secret shown as text; ten recovery codes; the next sign-in asks for its code', async () => {
    const { context, page, outside } = await newPage(desktop);
    await page.goto(`${base}/login?return_to=${encodeURIComponent('/account/security')}`);
    await signInWithPassword(page, 'finn', 'finn-password');
    await page.waitForURL(`${base}/account/security`, step);
    await page.getByRole('link', { name: 'Set up an authenticator app' }).click();
    const secret = await shownTotpSecret(page);
    expect(await page.getByRole('img', { name: 'QR code of the authenticator set-up address' }).locator('svg').count()).toBe(1);

    // A wrong code first (one that is none of the three the server accepts now): nothing turns on.
    const now = t.clock();
    const accepted = new Set([-30, 0, 30].map((d) => totpCodeAt(secret, now + d)));
    const wrong = ['000000', '111111', '222222', '333333'].find((c) => !accepted.has(c))!;
    await page.getByLabel('Code from the app').fill(wrong);
    await page.getByRole('button', { name: 'Turn on' }).click();
    await page.getByRole('alert').filter({ hasText: 'That code isn’t right' }).waitFor(step);
    expect(await page.getByLabel('Code from the app').getAttribute('aria-invalid')).toBe('true');
    expect(await t.store.findTotp(finn.id)).toBeUndefined();
    expect(await shownTotpSecret(page)).toBe(secret); // the same set-up, to try again

    await page.getByLabel('Code from the app').fill(totpCodeAt(secret, t.clock()));
    await page.getByRole('button', { name: 'Turn on' }).click();
    const codes = await shownRecoveryCodes(page);
    expect(codes).toHaveLength(10);
    expect(new Set(codes).size).toBe(10);
    for (const code of codes) expect(code).toMatch(/^[a-z2-9]{5}-[a-z2-9]{5}$/);
    expect(await t.store.findTotp(finn.id)).toBeDefined();
    expect(await t.store.countRecoveryCodes(finn.id)).toBe(10);
    await page.getByRole('link', { name: 'I have saved them — continue' }).click();
    await page.waitForURL(`${base}/account/security`, step);
    await page.getByText('On since').waitFor(step);
    await page.getByText('10 of 10 unused').waitFor();

    // Signed out and back, half a minute later: the password, then the app's code.
    await page.goto(`${base}/logout`);
    await page.getByRole('heading', { name: "You're signed out" }).waitFor(step);
    t.clock.advance(30);
    const { url, verifier } = authorizeUrl();
    await page.goto(url);
    await signInWithPassword(page, 'finn', 'finn-password');
    await page.waitForURL((u) => u.pathname === '/login/second-factor', step);
    await page.getByLabel('Code from your authenticator app').fill(totpCodeAt(secret, t.clock()));
    await page.getByRole('button', { name: 'Verify' }).click();
    const claims = await tokensAtApplication(page, verifier);
    expect(claims.sub).toBe(finn.id);
    expect(claims.amr).toEqual(['pwd', 'otp']);
    expect(claims.acr).toBe('urn:latchkey:mfa');
    expect(outside).toEqual([]);
    await context.close();
  });

  it('the second-factor pages at both sizes: accessible, and captured for the docs', async () => {
    for (const [sizeName, size] of [
      ['phone', phone],
      ['desktop', desktop],
    ] as const) {
      // Grace starts with no second factor at each size.
      await t.store.removeTotp(grace.id);
      for (const p of await t.store.listPasskeys(grace.id)) await t.store.removePasskey(grace.id, p.id);
      await t.store.replaceRecoveryCodes(grace.id, [], Math.floor(t.clock()));

      const { context, page, outside } = await newPage(size);
      const authenticator = await addAuthenticator(context, page);
      await page.goto(`${base}/login?return_to=${encodeURIComponent('/account/security')}`);
      await passkeyButton(page, 'Sign in with a passkey');
      await expectAccessible(page);
      await signInWithPassword(page, 'grace', 'grace-password');
      await page.waitForURL(`${base}/account/security`, step);
      await passkeyButton(page, 'Add a passkey');
      await expectAccessible(page);

      await page.getByRole('link', { name: 'Set up an authenticator app' }).click();
      const secret = await shownTotpSecret(page);
      await expectAccessible(page);
      await capture(page, 'totp-setup', sizeName);
      await page.getByLabel('Code from the app').fill(totpCodeAt(secret, t.clock()));
      await page.getByRole('button', { name: 'Turn on' }).click();
      expect(await shownRecoveryCodes(page)).toHaveLength(10);
      await expectAccessible(page);
      await capture(page, 'recovery-codes', sizeName);
      await page.getByRole('link', { name: 'I have saved them — continue' }).click();
      await page.waitForURL(`${base}/account/security`, step);

      // A passkey too (not her first factor: no new recovery codes, straight back to the list).
      await page.getByLabel('Name for the new passkey').fill(sizeName === 'phone' ? 'Phone' : 'Laptop');
      await (await passkeyButton(page, 'Add a passkey')).click();
      await expect.poll(() => passkeyItems(page).count(), step).toBe(1);
      expect(page.url()).toBe(`${base}/account/security`);
      expect(await authenticator.credentials()).toHaveLength(1);
      await page.getByText('On since').waitFor();
      await page.getByText('10 of 10 unused').waitFor();
      await expectAccessible(page);
      await capture(page, 'account-security', sizeName);

      // The second step offers both: the app's code, or the passkey.
      await page.goto(`${base}/logout`);
      await page.getByRole('heading', { name: "You're signed out" }).waitFor(step);
      await page.goto(`${base}/login?return_to=${encodeURIComponent('/account/security')}`);
      await signInWithPassword(page, 'grace', 'grace-password');
      await page.waitForURL((u) => u.pathname === '/login/second-factor', step);
      await page.getByLabel('Code from your authenticator app').waitFor();
      await passkeyButton(page, 'Use a passkey');
      await expectAccessible(page);
      await capture(page, 'second-factor', sizeName);
      await (await passkeyButton(page, 'Use a passkey')).click();
      await page.waitForURL(`${base}/account/security`, step);
      await page.getByRole('heading', { name: 'Sign-in security' }).waitFor();
      expect(outside).toEqual([]);
      await context.close();
    }
  }, 90_000);

  it('an administrator’s first passkey: no way to add one with the password alone; through the enrolment link an operator made, it is added', async () => {
    const hana = await addUser(t.store, 'hana', 'hana-password', { roles: ['admin'] });
    const { context, page, outside } = await newPage(desktop);
    const authenticator = await addAuthenticator(context, page);
    await page.goto(`${base}/login?return_to=${encodeURIComponent('/account/security')}`);
    await signInWithPassword(page, 'hana', 'hana-password');
    await page.waitForURL(`${base}/account/security`, step);
    await page.getByRole('heading', { name: 'Your first second factor needs an enrolment link' }).waitFor(step);
    await page.getByText('latchkey users mfa-enroll hana').waitFor();
    expect(await page.locator('form[data-passkey]').count()).toBe(0);
    await expectAccessible(page);
    // The server refuses the ceremony too, whatever the page shows: the options answer 403.
    const refused = await page.evaluate(
      async (csrf) => {
        const res = await fetch('/account/security/passkeys/options', {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: new URLSearchParams({ csrf_token: csrf }).toString(),
        });
        return res.status;
      },
      (await page.locator('input[name="csrf_token"]').first().getAttribute('value')) ?? '',
    );
    expect(refused).toBe(403);

    const { link } = await createEnrolmentLink(t.store, base, hana, Math.floor(t.clock()));
    await page.goto(link);
    await page.getByRole('heading', { name: 'Set up your second factor' }).waitFor(step);
    await expectAccessible(page);
    await page.getByRole('button', { name: 'Continue' }).click();
    await page.waitForURL(`${base}/account/security`, step);
    await page.getByRole('status').filter({ hasText: 'Your enrolment link was accepted' }).waitFor();
    await page.getByLabel('Name for the new passkey').fill('Admin laptop');
    await (await passkeyButton(page, 'Add a passkey')).click();
    expect(await shownRecoveryCodes(page)).toHaveLength(10);
    expect((await t.store.listPasskeys(hana.id)).map((p) => p.name)).toEqual(['Admin laptop']);
    expect(await authenticator.credentials()).toHaveLength(1);
    expect(outside).toEqual([]);
    await context.close();
  });
});
