/// <reference lib="dom" />
/**
 * The admin console (/admin) in a real browser: playwright-core driving Debian's
 * Chromium against the app on a real socket. An administrator signs in with a password, is sent
 * to add a second factor first (LATCHKEY_MFA=optional: the console wants two), pastes the one-time
 * enrolment link an operator made (an administrator's first factor needs one), sets up an
 * authenticator app, and lands in the console; there they register a confidential machine client
 * (its secret shown once), give it a machine grant, create a role from an API's scopes, create a
 * user and give them the role, rotate the signing keys (the JWKS then publishes the new kid), and
 * read the audit log filtered by event, where each of those actions names them as its actor. A
 * person without the admin role gets the 403 page.
 *
 * axe-core checks every console page (no violation at all), no request leaves for another host,
 * nothing on a phone-sized screen is wider than the screen, and with LATCHKEY_SCREENSHOTS=1
 * (npm run screenshots) the pages are written to docs/screenshots/admin-*.png at desktop size,
 * and the users list at phone size. Chromium must be at /usr/bin/chromium; without it these tests
 * are skipped on a developer machine, but CI sets LATCHKEY_REQUIRE_BROWSER=1, so there they can only pass.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { addApi, addUser, testApp, type TestApp } from '../helpers/app.js';
import { freePort } from '../helpers/process.js';
import { sha256 } from '../../src/crypto/secrets.js';
import { createEnrolmentLink } from '../../src/mfa/enrolment_link.js';
import { totpCodeAt } from '../../src/mfa/totp.js';
import { totpSecretContext } from '../../src/mfa/totp_secret.js';

const executablePath = '/usr/bin/chromium';
const run = existsSync(executablePath) || process.env.LATCHKEY_REQUIRE_BROWSER === '1';
const screenshots = process.env.LATCHKEY_SCREENSHOTS === '1';
const screenshotDir = fileURLToPath(new URL('../../docs/screenshots/', import.meta.url));
const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

const phone = { viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true, deviceScaleFactor: 2 };
const desktop = { viewport: { width: 1280, height: 800 } };

/** How long a step in the browser may take on a busy two-core machine before it counts as failed. */
const step = { timeout: 15_000 };

const reportsApi = 'https://reports.example.com';

let t: TestApp;
let base: string;
let dir: string;
let browser: Browser;

beforeAll(async () => {
  if (!run) return;
  dir = mkdtempSync(join(tmpdir(), 'latchkey-admin-'));
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  // LATCHKEY_MFA=optional (the default): the console still asks its administrators for two factors.
  t = await testApp({ LATCHKEY_ISSUER: base }, { path: join(dir, 'latchkey.db') });
  await addUser(t.store, 'root', 'root-password', { roles: ['admin'], email: 'root@example.com' });
  await addUser(t.store, 'erin', 'erin-password');
  for (const name of ['frank', 'grace', 'heidi']) await addUser(t.store, name, `${name}-password`, { source: name === 'heidi' ? 'corp' : 'local' });
  await addApi(t.store, reportsApi, 'Reports', [], ['read:reports', 'write:reports', 'share:reports']);
  await t.store.createConnector({
    id: 'corp',
    type: 'oidc',
    name: 'Corp SSO',
    config: { issuer: 'https://sso.corp.example', clientId: 'latchkey', scope: 'openid email profile' },
    secret: undefined,
    createdAt: 1_800_000_000,
  });
  await t.app.listen({ port, host: '127.0.0.1' });
  browser = await chromium.launch({
    executablePath,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run'],
  });
}, 60_000);

afterAll(async () => {
  if (!run) return;
  await browser?.close();
  await t?.close();
  rmSync(dir, { recursive: true, force: true });
});

interface Opened {
  context: BrowserContext;
  page: Page;
  outside: string[];
  errors: string[];
}

async function newPage(size: typeof phone | typeof desktop): Promise<Opened> {
  const context = await browser.newContext(size);
  context.setDefaultTimeout(step.timeout);
  const page = await context.newPage();
  const outside: string[] = [];
  page.on('request', (request) => {
    const url = new URL(request.url());
    if (url.protocol !== 'data:' && url.origin !== base) outside.push(request.url());
  });
  const errors: string[] = [];
  page.on('console', (message) => {
    if (message.type() === 'error') errors.push(message.text());
  });
  return { context, page, outside, errors };
}

/** axe-core on the current page: no violation of any impact (each reported with the markup it is about). */
async function expectAccessible(page: Page) {
  await page.evaluate(axeSource);
  const violations = await page.evaluate(async () => {
    const result = await (
      window as unknown as { axe: { run: () => Promise<{ violations: { id: string; impact: string; help: string; nodes: { html: string }[] }[] }> } }
    ).axe.run();
    return result.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map((n) => n.html.slice(0, 200)) }));
  });
  // Soft: the test goes on (and captures the other pages) and fails at its end, with every finding.
  expect.soft(violations, `axe-core on ${page.url()}`).toEqual([]);
}

async function capture(page: Page, name: string, size: 'phone' | 'desktop') {
  if (!screenshots) return;
  mkdirSync(screenshotDir, { recursive: true });
  await page.screenshot({ path: join(screenshotDir, `admin-${name}-${size}.png`), fullPage: true });
}

async function fillSignIn(page: Page, username: string) {
  await page.getByRole('heading', { name: 'Sign in', exact: true }).waitFor();
  await page.getByLabel('Username').fill(username);
  await page.getByLabel('Password').fill(`${username}-password`);
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
}

/** The console's own navigation bar. */
const nav = (page: Page) => page.getByRole('navigation', { name: 'Admin console' });

async function openSection(page: Page, label: string, heading = label) {
  await nav(page).getByRole('link', { name: label, exact: true }).click();
  await page.getByRole('heading', { level: 1, name: heading }).waitFor();
  expect(await nav(page).getByRole('link', { name: label, exact: true }).getAttribute('aria-current')).toBe('page');
}

/** Signs `root` in, through the second factor the console asks for, and lands on /admin. */
async function signInAsAdministrator(page: Page, withNewFactor: boolean) {
  await page.goto(`${base}/admin`);
  await page.waitForURL(`${base}/login?return_to=%2Fadmin`, step);
  await fillSignIn(page, 'root');
  if (withNewFactor) {
    // A password alone is not enough here: the step-up sends a person without a factor to set one
    // up, and an administrator's first factor needs a one-time link from another administrator.
    await page.getByRole('alert').filter({ hasText: 'a password alone cannot add its first second factor' }).waitFor();
    await expectAccessible(page);
    const root = (await t.store.findUserByUsername('root'))!;
    const { link } = await createEnrolmentLink(t.store, base, root, Math.floor(t.clock()));
    await page.getByLabel('Enrolment link or code').fill(link);
    await page.getByRole('button', { name: 'Use the link' }).click();
    await page.getByRole('status').filter({ hasText: 'Your enrolment link was accepted' }).waitFor();
    await page.getByRole('link', { name: 'Set up an authenticator app' }).click();
    const secret = ((await page.locator('#totp-secret').textContent()) ?? '').replace(/\s/g, '');
    await page.getByLabel('Code from the app').fill(totpCodeAt(secret, t.clock()));
    await page.getByRole('button', { name: 'Turn on' }).click();
    await page.getByRole('heading', { name: 'Save your recovery codes' }).waitFor();
    await page.getByRole('link', { name: 'I have saved them — continue' }).click();
  }
  await page.waitForURL(`${base}/admin`, step);
  await page.getByRole('heading', { level: 1, name: 'Admin console' }).waitFor();
}

/** The rows of the page's data table whose text has `text`. */
const rows = (page: Page, text: string | RegExp) => page.locator('table.data tbody tr').filter({ hasText: text });

describe.skipIf(!run)('the admin console in a real browser', () => {
  it('an administrator (two factors) manages clients, roles, users and keys, and reads it all back in the audit log', async () => {
    const { context, page, outside, errors } = await newPage(desktop);
    await signInAsAdministrator(page, true);
    await expectAccessible(page);

    // Clients: register a confidential machine client; its secret is on the answer, once.
    await openSection(page, 'Clients');
    await page.getByLabel('client_id').fill('reports-bot');
    await page.getByLabel(/^Name/).fill('Reports Bot');
    await page.getByLabel(/Client Credentials/).check();
    await page.getByLabel(/Authorization Code/).uncheck();
    await page.getByLabel(/Refresh tokens/).uncheck();
    await page.getByLabel(/^Confidential/).check();
    await expectAccessible(page);
    await page.getByRole('button', { name: 'Register client' }).click();
    await page.getByRole('heading', { level: 1, name: 'Client reports-bot registered' }).waitFor();
    const secret = ((await page.locator('#client-secret').textContent()) ?? '').trim();
    expect(secret).toMatch(/^\S{30,}$/);
    expect(page.url()).toBe(`${base}/admin/clients`); // the answer to the form: no secret in any address
    expect((await t.store.findClient('reports-bot'))!.secretHash).toBe(sha256(secret));
    await expectAccessible(page);
    await page.getByRole('link', { name: 'I have copied it: go to the client' }).click();
    await page.getByRole('heading', { level: 1, name: /Reports Bot/ }).waitFor();
    expect(await page.content()).not.toContain(secret);
    // A machine grant: some of the API's declared scopes.
    const grants = page.getByRole('region', { name: 'Machine grants' });
    await grants.getByRole('checkbox', { name: 'read:reports' }).check();
    await grants.getByRole('button', { name: 'Save grant for Reports' }).click();
    await page.getByRole('status').filter({ hasText: 'The machine grant was saved.' }).waitFor();
    expect(await t.store.findClientGrant('reports-bot', reportsApi)).toMatchObject({ scopes: ['read:reports'] });
    await expectAccessible(page);
    await capture(page, 'client', 'desktop');
    await openSection(page, 'Clients');
    expect(await rows(page, 'reports-bot').textContent()).toContain('Confidential');
    await expectAccessible(page);
    await capture(page, 'clients', 'desktop');

    // Roles: one made of the API's scopes.
    await openSection(page, 'Roles');
    const create = page.getByRole('region', { name: 'Create a role' });
    await create.getByLabel('Name').fill('report-reader');
    await create.getByLabel(/^Description/).fill('Reads and shares reports');
    await create.getByRole('checkbox', { name: 'read:reports of Reports' }).check();
    await create.getByRole('checkbox', { name: 'share:reports of Reports' }).check();
    await create.getByRole('button', { name: 'Create role' }).click();
    await page.getByRole('status').filter({ hasText: 'The role was created.' }).waitFor();
    expect((await t.store.findRole('report-reader'))!.permissions).toEqual([
      { api: reportsApi, scope: 'read:reports' },
      { api: reportsApi, scope: 'share:reports' },
    ]);
    await expectAccessible(page);
    await openSection(page, 'Roles');
    expect(await rows(page, 'report-reader').textContent()).toContain('Reads and shares reports');
    await expectAccessible(page);
    await capture(page, 'roles', 'desktop');

    // Users: create one, then give them the role.
    await openSection(page, 'Users');
    const newUser = page.getByRole('region', { name: 'Create a user' });
    await newUser.getByLabel('Username').fill('dana');
    await newUser.getByLabel('Email').fill('dana@example.com');
    await newUser.getByLabel(/^Full name/).fill('Dana Scully');
    await newUser.getByLabel('Initial password').fill('dana-first-password');
    await newUser.getByRole('button', { name: 'Create user' }).click();
    await page.getByRole('heading', { level: 1, name: 'dana' }).waitFor();
    await page.getByRole('status').filter({ hasText: 'The user was created.' }).waitFor();
    const roles = page.getByRole('region', { name: 'Roles' });
    await roles.getByLabel('Grant a role').selectOption('report-reader');
    await roles.getByRole('button', { name: 'Grant' }).click();
    await page.getByRole('status').filter({ hasText: 'The role was granted.' }).waitFor();
    await roles.getByRole('link', { name: 'report-reader' }).waitFor();
    expect((await t.store.findUserByUsername('dana'))!.roles).toEqual(['report-reader']);
    await expectAccessible(page);
    await capture(page, 'user', 'desktop');
    await openSection(page, 'Users');
    expect(await rows(page, 'dana').textContent()).toContain('report-reader');
    await page.getByRole('searchbox', { name: 'Search by username, name or email' }).fill('scully');
    await page.getByRole('button', { name: 'Search' }).click();
    await page.getByText('1 of 7 users match.').waitFor();
    await openSection(page, 'Users');
    await expectAccessible(page);
    await capture(page, 'users', 'desktop');

    // Signing keys: rotate; the JWKS publishes the new keys at once.
    await openSection(page, 'Signing keys');
    const before = new Set((await t.store.listSigningKeys()).map((k) => k.kid));
    await page.getByRole('button', { name: 'Rotate now' }).click();
    await page.getByRole('status').filter({ hasText: 'New signing keys are active' }).waitFor();
    const activeRows = rows(page, 'Active');
    expect(await activeRows.count()).toBeGreaterThan(0);
    const newKids = (await activeRows.locator('td[data-label="kid"]').allTextContents()).map((kid) => kid.trim());
    for (const kid of newKids) expect(before.has(kid)).toBe(false);
    const jwks = (await (await fetch(`${base}/.well-known/jwks.json`)).json()) as { keys: { kid: string }[] };
    for (const kid of newKids) expect(jwks.keys.map((k) => k.kid)).toContain(kid);
    await expectAccessible(page);
    await capture(page, 'keys', 'desktop');

    // The audit log, filtered by event: each action, with root as its actor.
    await openSection(page, 'Audit log');
    const filterBy = async (event: string) => {
      await page.getByLabel(/^Event/).fill(event);
      await page.getByRole('button', { name: 'Filter' }).click();
      await page.waitForURL((url) => url.searchParams.get('event') === event, step);
    };
    await filterBy('user.');
    expect(await rows(page, 'user.created').filter({ hasText: 'dana' }).locator('td[data-label="Actor"]').textContent()).toBe('root');
    expect(await rows(page, 'user.role_granted').filter({ hasText: 'dana' }).locator('td[data-label="Actor"]').textContent()).toBe('root');
    expect(await rows(page, 'user.').count()).toBe(await page.locator('table.data tbody tr').count());
    await expectAccessible(page);
    await filterBy('client.');
    expect(await rows(page, 'client.created').filter({ hasText: 'reports-bot' }).locator('td[data-label="Actor"]').textContent()).toBe('root');
    expect(await rows(page, 'client.grant_saved').filter({ hasText: 'reports-bot' }).locator('td[data-label="Actor"]').textContent()).toBe('root');
    await filterBy('role.created');
    expect(await rows(page, 'report-reader').locator('td[data-label="Actor"]').textContent()).toBe('root');
    await filterBy('key.rotated');
    for (const kid of newKids) expect(await rows(page, kid).locator('td[data-label="Actor"]').textContent()).toBe('root');
    // The secret was never written anywhere the console shows.
    await page.getByRole('link', { name: 'Clear filters' }).click();
    await page.waitForURL(`${base}/admin/audit`, step);
    expect(await page.content()).not.toContain(secret);
    await expectAccessible(page);
    await capture(page, 'audit', 'desktop');

    // The other pages of the console, checked too.
    for (const [label, heading] of [
      ['Overview', 'Admin console'],
      ['APIs', 'APIs'],
      ['Connectors', 'Connectors'],
    ] as const) {
      await openSection(page, label, heading);
      await expectAccessible(page);
    }
    await page.goto(`${base}/admin/apis/edit?identifier=${encodeURIComponent(reportsApi)}`);
    await page.getByRole('heading', { level: 1, name: 'Reports' }).waitFor();
    await expectAccessible(page);
    await page.goto(`${base}/admin/roles/admin`);
    await expectAccessible(page);

    expect(outside).toEqual([]);
    expect(errors).toEqual([]);
    await context.close();
  }, 120_000);

  it('on a phone: the console fits the screen; a person without the admin role gets the 403 page', async () => {
    const { context, page, outside, errors } = await newPage(phone);
    // root's factor was set up above: the second step asks for a code.
    await page.goto(`${base}/admin/users`);
    await fillSignIn(page, 'root');
    const codeField = page.getByLabel('Code from your authenticator app');
    await codeField.waitFor();
    const root = (await t.store.findUserByUsername('root'))!;
    const totp = await t.store.findTotp(root.id);
    expect(totp).toBeDefined();
    t.clock.advance(30); // the next code (the one used at set-up is spent)
    await codeField.fill(totpCodeAt(t.app.services.secretBox.open(totpSecretContext(root.id), totp!.secret), t.clock()));
    await page.getByRole('button', { name: 'Verify' }).click();
    await page.waitForURL(`${base}/admin/users`, step);
    await page.getByRole('heading', { level: 1, name: 'Users' }).waitFor();
    for (const path of [
      '/admin/users',
      '/admin/audit',
      `/admin/users/${(await t.store.findUserByUsername('dana'))!.id}`,
      '/admin/clients/reports-bot',
      '/admin/roles',
      '/admin/keys',
    ]) {
      await page.goto(`${base}${path}`);
      await page.getByRole('heading', { level: 1 }).waitFor();
      const width = await page.evaluate(() => document.documentElement.scrollWidth);
      expect(width, `${path} fits a 390 px screen`).toBeLessThanOrEqual(390);
      await expectAccessible(page);
    }
    await page.goto(`${base}/admin/users`);
    await capture(page, 'users', 'phone');
    expect(outside).toEqual([]);
    expect(errors).toEqual([]);
    await context.close();

    const other = await newPage(desktop);
    await other.page.goto(`${base}/admin`);
    await fillSignIn(other.page, 'erin');
    await other.page.getByRole('heading', { name: 'Administrators only' }).waitFor();
    const response = await other.page.goto(`${base}/admin/clients`);
    expect(response!.status()).toBe(403);
    await other.page.getByRole('heading', { name: 'Administrators only' }).waitFor();
    expect(await other.page.getByRole('navigation', { name: 'Admin console' }).count()).toBe(0);
    await expectAccessible(other.page);
    expect(other.outside).toEqual([]);
    await other.context.close();
  }, 120_000);
});
