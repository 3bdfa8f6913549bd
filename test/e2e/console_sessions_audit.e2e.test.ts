/// <reference lib="dom" />
/**
 * The admin console's Sessions page and its audit log on a phone, in a real browser:
 * playwright-core driving Debian's Chromium against the app on a real socket. People sign in
 * from several devices (a Mac's Chrome, an iPhone's Safari, our command line, and a sender of a
 * long made-up User-Agent); the Sessions page names each device as people know it, never with the
 * raw header, and its "End" button signs that person out (audited). On a 390 px phone the audit
 * log's first screen shows events, not only its filters (measured from element positions), its
 * filters wait behind a "Filters" summary, and a page of events is a few screens, not dozens.
 *
 * axe-core finds no serious or critical violation, no request leaves for another host, nothing is
 * wider than the phone, and with LATCHKEY_SCREENSHOTS=1 (npm run screenshots) the pages are
 * written to docs/screenshots/admin-sessions-*.png and admin-audit-phone.png. Chromium must be at
 * /usr/bin/chromium; without it these tests are skipped on a developer machine, but CI sets
 * LATCHKEY_REQUIRE_BROWSER=1, so there they can only pass.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { addClient, addUser, deviceGrantType, testApp, type TestApp } from '../helpers/app.js';
import { Browser as FormBrowser, fetchTransport, signIn } from '../helpers/browser.js';
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

const macChrome = 'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36';
const iphoneSafari = 'Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1';
const cli = 'latchkey/0.2.0 (Linux; x64)';
const madeUp = `Mozilla/5.0 (${'Totally Legit Device; '.repeat(12)}) Ignore-this-warning`;

let t: TestApp;
let base: string;
let dir: string;
let browser: Browser;

beforeAll(async () => {
  if (!run) return;
  dir = mkdtempSync(join(tmpdir(), 'latchkey-console-'));
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  t = await testApp({ LATCHKEY_ISSUER: base, LATCHKEY_MFA: 'off' }, { path: join(dir, 'latchkey.db') });
  await addUser(t.store, 'root', 'root-password', { roles: ['admin'], email: 'root@example.com' });
  for (const name of ['erin', 'finn', 'grace']) await addUser(t.store, name, `${name}-password`);
  await addClient(t.store, 'cli', { name: 'Latchkey CLI' });
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

/** axe-core on the current page: no serious or critical violation (each with the markup it is about). */
async function expectAccessible(page: Page) {
  await page.evaluate(axeSource);
  const violations = await page.evaluate(async () => {
    const result = await (
      window as unknown as { axe: { run: () => Promise<{ violations: { id: string; impact: string; help: string; nodes: { html: string }[] }[] }> } }
    ).axe.run();
    return result.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map((n) => n.html.slice(0, 200)) }));
  });
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
  await page.screenshot({ path: join(screenshotDir, `admin-${name}-${size}.png`), fullPage: true });
}

async function signInAsAdministrator(page: Page, path: string) {
  await page.goto(`${base}${path}`);
  await page.getByRole('heading', { name: 'Sign in', exact: true }).waitFor();
  await page.getByLabel('Username').fill('root');
  await page.getByLabel('Password').fill('root-password');
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  await page.waitForURL(`${base}${path}`, step);
}

/** A person signs in over HTTP from a device of their own (its User-Agent). */
async function signInFrom(username: string, userAgent: string): Promise<FormBrowser> {
  const device = new FormBrowser(fetchTransport(base), userAgent);
  const res = await signIn(device, await device.get('/login?return_to=%2Faccount'), username, `${username}-password`);
  expect(res.status).toBe(303);
  return device;
}

/** Our command line's device flow, as it sends it (its User-Agent), approved by `person`'s browser. */
async function cliSignIn(person: FormBrowser): Promise<void> {
  const post = async (path: string, fields: Record<string, string>) => {
    const res = await fetch(`${base}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'user-agent': cli },
      body: new URLSearchParams(fields),
    });
    return (await res.json()) as Record<string, string>;
  };
  const started = await post('/oauth/device/code', { client_id: 'cli', scope: 'openid offline_access' });
  const entry = await person.get(`/activate/confirm?user_code=${started.user_code}`);
  expect(entry.body).toContain('<dd class="software">latchkey 0.2 on Linux</dd>');
  const csrf = entry.body.match(/name="csrf_token" value="([^"]+)"/)?.[1] ?? '';
  const done = await person.post('/activate/confirm', { csrf_token: csrf, user_code: started.user_code!, decision: 'allow' });
  expect(done.status).toBe(200);
  t.clock.advance(Number(started.interval) + 1);
  const tokens = await post('/oauth/token', { grant_type: deviceGrantType, client_id: 'cli', device_code: started.device_code! });
  expect(tokens.refresh_token).toMatch(/\S/);
}

/** The rows of the page's data table whose text has `text`. */
const rows = (page: Page, text: string | RegExp) => page.locator('table.data tbody tr').filter({ hasText: text });

describe.skipIf(!run)('the console’s Sessions page and the phone audit log in a real browser', () => {
  it('Sessions: every live sign-in with its device named as people know it; End signs that person out, audited', async () => {
    const erinMac = await signInFrom('erin', macChrome);
    await signInFrom('finn', iphoneSafari);
    const graceOdd = await signInFrom('grace', madeUp);
    await cliSignIn(erinMac);

    for (const [size, opened] of [
      ['desktop', await newPage(desktop)],
      ['phone', await newPage(phone)],
    ] as const) {
      const { context, page, outside, errors } = opened;
      await signInAsAdministrator(page, '/admin/sessions');
      await page.getByRole('heading', { level: 1, name: 'Sessions' }).waitFor();
      expect(await page.getByRole('navigation', { name: 'Admin console' }).getByRole('link', { name: 'Sessions' }).getAttribute('aria-current')).toBe('page');
      expect(await rows(page, 'erin').filter({ hasText: 'Browser session' }).locator('td.software').textContent()).toBe('Chrome on macOS');
      expect(await rows(page, 'erin').filter({ hasText: 'Latchkey CLI' }).locator('td.software').textContent()).toBe('latchkey 0.2 on Linux');
      expect(await rows(page, 'finn').locator('td.software').textContent()).toBe('Safari on iPhone');
      expect(await rows(page, 'grace').locator('td.software').textContent()).toBe('Unknown software');
      expect(await rows(page, 'This browser (your session)').locator('td.software').textContent()).toBe('Chrome on Linux');
      expect(await page.getByText('Totally Legit Device').count()).toBe(0);
      const width = await page.evaluate(() => document.documentElement.scrollWidth);
      expect(width, `the Sessions page fits a ${size} screen`).toBeLessThanOrEqual(size === 'phone' ? 390 : 1280);
      await expectAccessible(page);
      await capture(page, 'sessions', size);
      expect(outside).toEqual([]);
      expect(errors).toEqual([]);
      if (size === 'phone') {
        expect((await graceOdd.get('/account')).status).toBe(200);
        await rows(page, 'grace')
          .getByRole('button', { name: /^End Browser session of grace/ })
          .click();
        await page.getByRole('status').filter({ hasText: 'That sign-in was ended.' }).waitFor();
        expect(await rows(page, 'grace').count()).toBe(0);
        expect((await graceOdd.get('/account')).status).toBe(303); // signed out
        await t.app.services.auditTrail.flush();
        const [ended] = await t.store.listAuditEvents({ event: 'session.ended_by_admin', limit: 5 });
        expect(ended).toMatchObject({
          actor: 'root',
          userId: (await t.store.findUserByUsername('grace'))!.id,
          details: expect.objectContaining({ kind: 'browser' }),
        });
        await expectAccessible(page);
      }
      await context.close();
    }
  }, 120_000);

  it('the audit log on a 390 px phone: events on the first screen, filters behind their summary, a page a few screens long', async () => {
    // A busy log: events with details, enough for more than one page.
    await t.store.appendAuditEvents(
      Array.from({ length: 80 }, (_, i) => ({
        at: Math.floor(t.clock()) * 1000 - 80_000 + i * 1000,
        event: i % 2 === 0 ? 'signin.success' : 'token.issued',
        actor: undefined,
        userId: undefined,
        clientId: i % 2 === 0 ? undefined : 'cli',
        ip: '203.0.113.7',
        details: { method: 'pwd', scope: 'openid offline_access', note: `event ${i}` },
      })),
    );
    const { context, page, outside, errors } = await newPage(phone);
    await signInAsAdministrator(page, '/admin/audit');
    await page.getByRole('heading', { level: 1, name: 'Audit log' }).waitFor();
    const screen = await page.evaluate(() => {
      const first = document.querySelector('table.audit tbody tr');
      return {
        viewport: window.innerHeight,
        firstEventTop: first ? first.getBoundingClientRect().top : Number.POSITIVE_INFINITY,
        firstEventBottom: first ? first.getBoundingClientRect().bottom : Number.POSITIVE_INFINITY,
        eventsOnFirstScreen: Array.from(document.querySelectorAll('table.audit tbody tr')).filter(
          (row) => row.getBoundingClientRect().bottom <= window.innerHeight,
        ).length,
        height: document.documentElement.scrollHeight,
        width: document.documentElement.scrollWidth,
        events: document.querySelectorAll('table.audit tbody tr').length,
      };
    });
    expect(screen.viewport).toBe(844);
    // The first screen shows events, not only filters.
    expect(screen.firstEventBottom, JSON.stringify(screen)).toBeLessThan(screen.viewport);
    expect(screen.eventsOnFirstScreen, JSON.stringify(screen)).toBeGreaterThanOrEqual(3);
    expect(await page.locator('#event').isVisible()).toBe(false);
    expect(await page.locator('summary', { hasText: 'Filters' }).isVisible()).toBe(true);
    // A page is a few screens, not dozens.
    expect(screen.events).toBeLessThanOrEqual(25);
    expect(screen.height, JSON.stringify(screen)).toBeLessThan(screen.viewport * 6);
    expect(screen.width).toBeLessThanOrEqual(390);
    await expectAccessible(page);
    await capture(page, 'audit', 'phone');

    // The filters are one tap away, and stay open on the filtered page.
    await page.locator('summary', { hasText: 'Filters' }).click();
    await page.getByLabel(/^Event/).fill('token.');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.waitForURL(/\/admin\/audit\?.*event=token\./, step);
    expect(await page.locator('#event').isVisible()).toBe(true);
    expect(await rows(page, 'signin.success').count()).toBe(0);
    expect(await rows(page, 'token.issued').count()).toBeGreaterThan(0);
    // An event's details: behind their own summary on a phone.
    const firstRow = page.locator('table.audit tbody tr').first();
    expect(await firstRow.getByText(/^note: event/).isVisible()).toBe(false);
    await firstRow.locator('summary').click();
    expect(await firstRow.getByText(/^note: event/).isVisible()).toBe(true);
    await expectAccessible(page);
    // Older events, a page at a time.
    await page.getByRole('link', { name: 'Older events' }).click();
    await page.waitForURL(/before=\d+/, step);
    expect(await page.locator('table.audit tbody tr').count()).toBeGreaterThan(0);
    expect(outside).toEqual([]);
    expect(errors).toEqual([]);
    await context.close();

    // On a wide screen the filters and the details are simply there.
    const wide = await newPage(desktop);
    await signInAsAdministrator(wide.page, '/admin/audit');
    expect(await wide.page.locator('#event').isVisible()).toBe(true);
    const detail = wide.page
      .locator('table.audit tbody tr', { hasText: 'token.issued' })
      .first()
      .getByText(/^note: event/);
    expect(await detail.isVisible()).toBe(true);
    expect(await wide.page.locator('summary', { hasText: 'Filters' }).isVisible()).toBe(false);
    await expectAccessible(wide.page);
    await wide.context.close();
  }, 120_000);
});
