/**
 * Password reset and email verification end to end: Latchkey on a real socket and a SQLite file,
 * a real SMTP server on loopback (smtp-server) as the person's inbox, and the person's browser
 * (pages with a cookie jar). The link is read out of the mail's text as a person would click it.
 * The clock is injected, so expiry needs no sleeping.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Page } from 'playwright-core';
import { sha256 } from '../../src/crypto/secrets.js';
import { mailSettled } from '../../src/mail/after_answer.js';
import { addClient, addUser, testApp, type TestApp } from '../helpers/app.js';
import { Browser, fetchTransport, inputValue, signIn, type BrowserResponse } from '../helpers/browser.js';
import { refresh, tokensFor } from '../helpers/flows.js';
import { linkIn, startSmtpServer, type TestSmtpServer } from '../helpers/smtp.js';

const issuer = 'http://latchkey.test';
const smtpUser = 'latchkey-mailer';
const smtpPassword = 'smtp-pass-7f3a9c';

let t: TestApp;
let smtp: TestSmtpServer;
let base: string;
let dir: string;
let logLines: string[];

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'latchkey-reset-'));
  smtp = await startSmtpServer({ user: smtpUser, password: smtpPassword });
  logLines = [];
  t = await testApp({ LATCHKEY_SMTP_URL: smtp.url }, { path: join(dir, 'latchkey.db'), logLines });
  base = await t.app.listen({ port: 0, host: '127.0.0.1' });
});

afterEach(async () => {
  await t.close();
  await smtp.close();
  rmSync(dir, { recursive: true, force: true });
});

/** The path of an absolute link the mail gave (it names the configured issuer; the browser talks to the socket). */
const pathOf = (link: string) => {
  const url = new URL(link);
  return url.pathname + url.search;
};

async function askForReset(browser: Browser, email: string): Promise<BrowserResponse> {
  const page = await browser.get('/login/forgot');
  expect(page.status).toBe(200);
  const res = await browser.post('/login/forgot', { csrf_token: inputValue(page.body, 'csrf_token') ?? '', email });
  await mailSettled(t.app.services);
  return res;
}

async function setNewPassword(browser: Browser, link: string, password: string): Promise<BrowserResponse> {
  const form = await browser.get(pathOf(link));
  expect(form.status).toBe(200);
  return browser.post('/login/reset', {
    csrf_token: inputValue(form.body, 'csrf_token') ?? '',
    token: inputValue(form.body, 'token') ?? '',
    new_password: password,
  });
}

async function signInWith(username: string, password: string): Promise<{ browser: Browser; res: BrowserResponse }> {
  const browser = new Browser(fetchTransport(base));
  const res = await signIn(browser, await browser.get('/login?return_to=%2Faccount'), username, password);
  return { browser, res };
}

const events = (name: string) => logLines.map((line) => JSON.parse(line) as Record<string, unknown>).filter((line) => line.event === name);

describe('password reset by email', () => {
  it('the mail arrives (to, from, subject, link); the link works once; the old password stops working, the new one works; every other sign-in ended', async () => {
    const alice = await addUser(t.store, 'alice', 'alice-old-password');
    await addClient(t.store, 'tv', { name: 'Living Room TV' });
    // Alice is signed in on a browser and a TV.
    const { browser: otherBrowser, res: signedIn } = await signInWith('alice', 'alice-old-password');
    expect(signedIn.status).toBe(303);
    expect((await otherBrowser.get('/account')).status).toBe(200);
    const tv = await tokensFor(t, alice, 'tv');

    const browser = new Browser(fetchTransport(base));
    const login = await browser.get('/login');
    expect(login.body).toContain('<a href="/login/forgot">Forgot your password?</a>');
    const asked = await askForReset(browser, 'ALICE@Example.com');
    expect(asked.status).toBe(200);
    expect(asked.body).toContain('If an account uses that address, we sent a link');

    expect(smtp.mails).toHaveLength(1);
    const mail = smtp.mails[0]!;
    expect(mail.to).toBe('alice@example.com');
    expect(mail.envelopeTo).toEqual(['alice@example.com']);
    expect([mail.fromName, mail.fromAddress]).toEqual(['Latchkey', 'no-reply@latchkey.test']);
    expect(mail.envelopeFrom).toBe('no-reply@latchkey.test');
    expect(mail.subject).toBe('Reset your Latchkey password');
    expect(mail.headers.get('auto-submitted')).toBe('auto-generated');
    expect(mail.authenticatedAs).toBe(smtpUser);
    expect(mail.text).toContain('account "alice"');
    expect(mail.text).toContain('within 30 minutes');
    const link = linkIn(mail, `${issuer}/login/reset?token=`);
    expect(link).toMatch(/^http:\/\/latchkey\.test\/login\/reset\?token=lk_pr_[A-Za-z0-9_-]{43}$/);
    const secret = new URL(link).searchParams.get('token')!;

    // Opening the link spends nothing (mail scanners open links): twice, and the form still works.
    expect((await browser.get(pathOf(link))).status).toBe(200);
    const done = await setNewPassword(browser, link, 'alice-new-password');
    expect(done.status).toBe(200);
    expect(done.body).toContain('Your password was changed');
    expect(done.body).toContain('<a class="button" href="/login">Sign in</a>');

    // A second use: the friendly page, and nothing changes.
    const again = await setNewPassword(browser, link, 'someone-elses-password');
    expect(again.status).toBe(400);
    expect(again.body).toContain('This link has expired or was used');

    expect((await signInWith('alice', 'alice-old-password')).res.status).toBe(401);
    expect((await signInWith('alice', 'someone-elses-password')).res.status).toBe(401);
    expect((await signInWith('alice', 'alice-new-password')).res.status).toBe(303);

    // The other browser is signed out, and the TV's refresh token is dead.
    const otherAccount = await otherBrowser.get('/account');
    expect(otherAccount.status).toBe(303);
    expect(otherAccount.location).toMatch(/^\/login/);
    const refreshed = await refresh(t, 'tv', tv.refresh_token!);
    expect(refreshed.statusCode).toBe(400);
    expect(refreshed.json().error).toBe('invalid_grant');

    // Stored as a digest only; audited; the secret and the mail server's password are in no log line.
    const rows = t.store.db.prepare('SELECT * FROM email_tokens').all() as Array<Record<string, unknown>>;
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ token_hash: sha256(secret), purpose: 'password_reset', email: 'alice@example.com', user_id: alice.id });
    expect(JSON.stringify(rows)).not.toContain(secret);
    expect(events('password_reset.requested')).toEqual([expect.objectContaining({ userId: alice.id, outcome: 'sent', ip: '127.0.0.1' })]);
    expect(events('user.password_reset')).toEqual([expect.objectContaining({ userId: alice.id })]);
    const everything = logLines.join('\n');
    for (const text of [secret, secret.slice(6), smtpPassword, 'alice-new-password', 'alice-old-password', 'ALICE@Example.com']) {
      expect({ text, logged: everything.includes(text) }).toEqual({ text, logged: false });
    }
  });

  it('an unknown address gets the same page, byte for byte, and no mail', async () => {
    await addUser(t.store, 'alice', 'alice-password');
    const browser = new Browser(fetchTransport(base));
    const known = await askForReset(browser, 'alice@example.com');
    const unknown = await askForReset(browser, 'nobody@example.com');
    expect(smtp.mails.map((m) => m.to)).toEqual(['alice@example.com']);
    expect(unknown.status).toBe(known.status);
    expect(unknown.body).toBe(known.body);
    // Every answer has its own date and request id, which tell nothing about the address.
    const headersOf = (res: BrowserResponse) => Object.entries(res.headers).filter(([name]) => !['date', 'keep-alive', 'x-request-id'].includes(name));
    expect(unknown.headers['x-request-id']).not.toBe(known.headers['x-request-id']);
    expect(headersOf(unknown)).toEqual(headersOf(known));
    expect(events('password_reset.requested').map((e) => e.outcome)).toEqual(['sent', 'no_account']);
    expect(logLines.join('\n')).not.toContain('nobody@example.com');
  });

  it('an account made by an upstream (no password here) and a disabled account get no mail, and the same page', async () => {
    await addUser(t.store, 'alice', 'alice-password');
    await addUser(t.store, 'carol', 'unused', { passwordHash: 'upstream', email: 'carol@example.com' });
    await addUser(t.store, 'dave', 'dave-password', { disabled: true });
    const browser = new Browser(fetchTransport(base));
    const known = await askForReset(browser, 'alice@example.com');
    const upstream = await askForReset(browser, 'carol@example.com');
    const disabled = await askForReset(browser, 'dave@example.com');
    expect(smtp.mails.map((m) => m.to)).toEqual(['alice@example.com']);
    expect([upstream.status, disabled.status]).toEqual([200, 200]);
    expect(upstream.body).toBe(known.body);
    expect(disabled.body).toBe(known.body);
    expect(events('password_reset.requested').map((e) => e.outcome)).toEqual(['sent', 'no_local_password', 'disabled']);
  });

  it('limits: past 5 requests in 15 minutes one address gets 429, whatever it typed; past 3 unused links in an hour an account gets no more mail', async () => {
    await addUser(t.store, 'alice', 'alice-password');
    const browser = new Browser(fetchTransport(base));
    const first = await askForReset(browser, 'alice@example.com');
    for (let i = 0; i < 3; i++) expect((await askForReset(browser, 'alice@example.com')).body).toBe(first.body);
    // Four requests, three mails: the fourth found the account's limit reached, and said nothing of it.
    expect(smtp.mails).toHaveLength(3);
    expect(events('password_reset.requested').map((e) => e.outcome)).toEqual(['sent', 'sent', 'sent', 'limited']);
    expect((await askForReset(browser, 'nobody@example.com')).status).toBe(200);

    const limited = await askForReset(browser, 'someone-else@example.com');
    expect(limited.status).toBe(429);
    expect(limited.headers['retry-after']).toBe('900');
    expect(limited.body).toContain('Too many attempts');
    expect(smtp.mails).toHaveLength(3);

    // A new window for the address; the account's hour is not over yet.
    t.clock.advance(15 * 60);
    expect((await askForReset(browser, 'alice@example.com')).status).toBe(200);
    expect(smtp.mails).toHaveLength(3);
    // An hour after the first links, one more goes out.
    t.clock.advance(46 * 60);
    expect((await askForReset(browser, 'alice@example.com')).status).toBe(200);
    expect(smtp.mails).toHaveLength(4);
  });

  it('a link older than 30 minutes fails, and the password stays', async () => {
    await addUser(t.store, 'alice', 'alice-password');
    const browser = new Browser(fetchTransport(base));
    await askForReset(browser, 'alice@example.com');
    const link = linkIn(smtp.mails[0]!, `${issuer}/login/reset?token=`);
    const form = await browser.get(pathOf(link));
    t.clock.advance(30 * 60);
    const late = await browser.post('/login/reset', {
      csrf_token: inputValue(form.body, 'csrf_token') ?? '',
      token: inputValue(form.body, 'token') ?? '',
      new_password: 'alice-new-password',
    });
    expect(late.status).toBe(400);
    expect(late.body).toContain('This link has expired or was used');
    expect((await signInWith('alice', 'alice-password')).res.status).toBe(303);
    expect((await signInWith('alice', 'alice-new-password')).res.status).toBe(401);
  });

  it('a link sent before the account was signed out everywhere (or its address changed) no longer works', async () => {
    const alice = await addUser(t.store, 'alice', 'alice-password');
    const browser = new Browser(fetchTransport(base));
    await askForReset(browser, 'alice@example.com');
    const beforeRevocation = linkIn(smtp.mails[0]!, `${issuer}/login/reset?token=`);
    t.clock.advance(60);
    await t.store.revokeUserTokens('alice', Math.floor(t.clock()));
    expect((await setNewPassword(browser, beforeRevocation, 'alice-new-password')).status).toBe(400);

    t.clock.advance(60);
    await askForReset(browser, 'alice@example.com');
    const toOldAddress = linkIn(smtp.mails[1]!, `${issuer}/login/reset?token=`);
    await t.store.updateUserProfile(alice.id, { name: undefined, email: 'alice@new.example' }, Math.floor(t.clock()));
    expect((await setNewPassword(browser, toOldAddress, 'alice-new-password')).status).toBe(400);
    expect((await signInWith('alice', 'alice-password')).res.status).toBe(303);
  });
});

describe('email verification by email', () => {
  async function askForVerification(browser: Browser): Promise<BrowserResponse> {
    const account = await browser.get('/account');
    expect(account.status).toBe(200);
    const res = await browser.post('/account/verify-email', { csrf_token: inputValue(account.body, 'csrf_token') ?? '' });
    await mailSettled(t.app.services);
    return res;
  }

  it('the link verifies the address once; after the address changes, an older link verifies nothing', async () => {
    const bob = await addUser(t.store, 'bob', 'bob-password', { emailVerified: false });
    const { browser } = await signInWith('bob', 'bob-password');

    const sent = await askForVerification(browser);
    expect(sent.status).toBe(200);
    expect(sent.body).toContain('We sent a link to <strong>bob@example.com</strong>');
    expect(smtp.mails).toHaveLength(1);
    expect(smtp.mails[0]).toMatchObject({ to: 'bob@example.com', subject: 'Confirm your email address for Latchkey' });
    const link = linkIn(smtp.mails[0]!, `${issuer}/account/verify-email?token=`);
    expect(link).toMatch(/\?token=lk_ev_[A-Za-z0-9_-]{43}$/);

    // Opened on another device (no sign-in needed: the link itself proves the mailbox).
    const phone = new Browser(fetchTransport(base));
    const verified = await phone.get(pathOf(link));
    expect(verified.status).toBe(200);
    expect(verified.body).toContain('Your email is verified');
    expect((await t.store.findUserById(bob.id))?.emailVerified).toBe(true);
    const twice = await phone.get(pathOf(link));
    expect(twice.status).toBe(400);
    expect(twice.body).toContain('This link has expired or was used');
    expect(events('user.email_verified')).toEqual([expect.objectContaining({ userId: bob.id })]);

    // A link for the old address, then the address changes: the link verifies nothing.
    await t.store.updateUserProfile(bob.id, { name: undefined, email: 'bob@new.example' }, Math.floor(t.clock()));
    const fresh = await t.store.findUserById(bob.id);
    expect(fresh?.emailVerified).toBe(false);
    await t.store.updateUserProfile(bob.id, { name: undefined, email: 'bob@example.com' }, Math.floor(t.clock()));
    await askForVerification(browser);
    const oldAddressLink = linkIn(smtp.mails[1]!, `${issuer}/account/verify-email?token=`);
    await t.store.updateUserProfile(bob.id, { name: undefined, email: 'bob@new.example' }, Math.floor(t.clock()));
    const stale = await phone.get(pathOf(oldAddressLink));
    expect(stale.status).toBe(400);
    expect(stale.body).toContain('Your email changed');
    expect((await t.store.findUserById(bob.id))?.emailVerified).toBe(false);

    // A link to the new address verifies it.
    await askForVerification(browser);
    expect(smtp.mails[2]?.to).toBe('bob@new.example');
    expect((await phone.get(pathOf(linkIn(smtp.mails[2]!, `${issuer}/account/verify-email?token=`)))).status).toBe(200);
    expect((await t.store.findUserById(bob.id))?.emailVerified).toBe(true);
    const everything = logLines.join('\n');
    for (const mail of smtp.mails) expect(everything).not.toContain(new URL(linkIn(mail, issuer)).searchParams.get('token')!);
  });

  it('changing the email on /account sends a link to the new address; the page offers one while unverified', async () => {
    const carol = await addUser(t.store, 'carol', 'carol-password', { email: 'carol@example.com', emailVerified: true });
    const { browser } = await signInWith('carol', 'carol-password');
    const page = await browser.get('/account');
    expect(page.body).not.toContain('Send a verification link');
    const saved = await browser.post('/account/profile', {
      csrf_token: inputValue(page.body, 'csrf_token')!,
      name: 'Carol',
      email: 'carol@new.example',
      current_password: 'carol-password',
    });
    expect(saved.status).toBe(200);
    expect(saved.body).toContain('We sent a link to your new address');
    expect(saved.body).toContain('Send a verification link');
    await mailSettled(t.app.services);
    const verification = smtp.mails.filter((m) => m.subject.startsWith('Confirm your email address'));
    expect(verification.map((m) => m.to)).toEqual(['carol@new.example']);
    // Besides, the change is told to the address before and to the new one (security notices).
    expect(
      smtp.mails
        .filter((m) => m !== verification[0])
        .map((m) => m.to)
        .sort(),
    ).toEqual(['carol@example.com', 'carol@new.example']);
    const link = linkIn(verification[0]!, `${issuer}/account/verify-email?token=`);
    expect((await browser.get(pathOf(link))).status).toBe(200);
    expect(await t.store.findUserById(carol.id)).toMatchObject({ email: 'carol@new.example', emailVerified: true });
  });

  it('past 3 unused links in an hour the account is told to use one of them (429), and no mail goes out', async () => {
    await addUser(t.store, 'bob', 'bob-password', { emailVerified: false });
    const { browser } = await signInWith('bob', 'bob-password');
    for (let i = 0; i < 3; i++) expect((await askForVerification(browser)).status).toBe(200);
    const limited = await askForVerification(browser);
    expect(limited.status).toBe(429);
    expect(limited.body).toContain('We sent you several links already');
    expect(smtp.mails).toHaveLength(3);
  });
});

describe('in a real browser (Chromium, when installed)', () => {
  const executablePath = '/usr/bin/chromium';
  const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
  const screenshotDir = fileURLToPath(new URL('../../docs/screenshots/', import.meta.url));

  /** axe-core on the current page: no serious or critical violation; a screenshot with LATCHKEY_SCREENSHOTS=1. */
  async function check(page: Page, name: string) {
    await page.evaluate(axeSource);
    const violations = await page.evaluate(async () => {
      const result = await (window as unknown as { axe: { run: () => Promise<{ violations: { id: string; impact: string; help: string }[] }> } }).axe.run();
      return result.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help }));
    });
    expect({ name, violations: violations.filter((v) => v.impact === 'serious' || v.impact === 'critical') }).toEqual({ name, violations: [] });
    if (process.env.LATCHKEY_SCREENSHOTS === '1') {
      mkdirSync(screenshotDir, { recursive: true });
      await page.screenshot({ path: join(screenshotDir, `${name}-phone.png`), fullPage: true });
    }
  }

  it.skipIf(!existsSync(executablePath) && process.env.LATCHKEY_REQUIRE_BROWSER !== '1')(
    'a person resets their password from the sign-in page by labels and roles alone; every page passes axe',
    async () => {
      await addUser(t.store, 'erin', 'erin-old-password');
      const browser = await chromium.launch({ executablePath, args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--no-first-run'] });
      try {
        const context = await browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true, deviceScaleFactor: 2 });
        const page = await context.newPage();
        await page.goto(`${base}/login`);
        await page.getByRole('link', { name: 'Forgot your password?' }).click();
        await expect.poll(() => page.url()).toBe(`${base}/login/forgot`);
        await check(page, 'forgot-password');
        await page.getByLabel('Email', { exact: true }).fill('erin@example.com');
        await page.getByRole('button', { name: 'Send link' }).click();
        await page.getByRole('heading', { name: 'Check your email' }).waitFor();
        await check(page, 'forgot-password-sent');
        await mailSettled(t.app.services);
        const link = linkIn(smtp.mails[0]!, `${issuer}/login/reset?token=`);
        await page.goto(base + pathOf(link));
        await check(page, 'reset-password');
        await page.getByLabel('New password', { exact: true }).fill('erin-new-password');
        await page.getByRole('button', { name: 'Change password' }).click();
        await page.getByRole('heading', { name: 'Your password was changed' }).waitFor();
        await check(page, 'reset-password-done');
        await page.getByRole('link', { name: 'Sign in' }).click();
        await page.getByLabel('Username').fill('erin');
        await page.getByLabel('Password', { exact: true }).fill('erin-new-password');
        await page.getByRole('button', { name: 'Sign in' }).click();
        await page.waitForURL(`${base}/activate`);
      } finally {
        await browser.close();
      }
    },
    60_000,
  );
});
