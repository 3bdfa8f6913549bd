/// <reference lib="dom" />
/**
 * Security notices as a person receives them: Latchkey on a real socket and a SQLite file, a real
 * SMTP server on loopback (smtp-server) as the person's inbox, and the person in Chromium
 * (playwright-core, a virtual WebAuthn authenticator for passkeys) changing their own account on
 * its pages. One change each: a second factor added, one removed, new recovery codes, a new
 * password, a new email address — each mailed to the right address with its subject and the
 * sentence that says what happened, and no secret of the change in it (NIST SP 800-63B §6.1.2).
 *
 * WebAuthn needs a secure context, so the issuer is http://localhost:<port>. Chromium must be at
 * /usr/bin/chromium; without it these tests are skipped on a developer machine, but CI sets
 * LATCHKEY_REQUIRE_BROWSER=1, so there they can only pass.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { mailSettled } from '../../src/mail/after_answer.js';
import { totpCodeAt } from '../../src/mfa/totp.js';
import { addUser, testApp, type TestApp } from '../helpers/app.js';
import { freePort } from '../helpers/process.js';
import { startSmtpServer, type ReceivedMail, type TestSmtpServer } from '../helpers/smtp.js';

const executablePath = '/usr/bin/chromium';
const run = existsSync(executablePath) || process.env.LATCHKEY_REQUIRE_BROWSER === '1';

/** How long a step in the browser may take on a busy two-core machine before it counts as failed. */
const step = { timeout: 15_000 };

let t: TestApp;
let smtp: TestSmtpServer;
let base: string;
let dir: string;
let browser: Browser;

beforeAll(async () => {
  if (!run) return;
  dir = mkdtempSync(join(tmpdir(), 'latchkey-notices-'));
  smtp = await startSmtpServer();
  const port = await freePort();
  // localhost, not 127.0.0.1: WebAuthn runs only in a secure context, and http://localhost is one.
  base = `http://localhost:${port}`;
  t = await testApp(
    { LATCHKEY_ISSUER: base, LATCHKEY_SMTP_URL: smtp.url, LATCHKEY_MAIL_FROM: 'Latchkey <no-reply@example.com>' },
    { path: join(dir, 'latchkey.db') },
  );
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
  await smtp?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** A person of their own for each test (so that one test's mails are not another's), signed in on /account/security in a browser of their own. */
async function personSignedIn(username: string): Promise<{ context: BrowserContext; page: Page; email: string }> {
  const email = `${username}@example.com`;
  await addUser(t.store, username, `${username}-password`, { email, emailVerified: true });
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  await page.goto(`${base}/login?return_to=${encodeURIComponent('/account/security')}`);
  await page.getByLabel('Username').fill(username);
  await page.getByLabel('Password').fill(`${username}-password`);
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  await page.waitForURL(`${base}/account/security`, step);
  return { context, page, email };
}

/** Every mail to `address`, once the mails the server started so far are delivered (they go after the answer). */
async function mailsTo(address: string): Promise<ReceivedMail[]> {
  await mailSettled(t.app.services);
  return smtp.mails.filter((m) => m.envelopeTo.includes(address));
}

/** The one mail to `address` with this subject: to that address alone, from the server's sender. */
async function theNotice(address: string, subject: string): Promise<ReceivedMail> {
  const found = (await mailsTo(address)).filter((m) => m.subject === subject);
  expect(found, `one mail "${subject}" to ${address}, in: ${smtp.mails.map((m) => `${m.envelopeTo.join(',')} ${m.subject}`).join(' | ')}`).toHaveLength(1);
  const mail = found[0]!;
  expect(mail.envelopeTo).toEqual([address]);
  expect(mail.to).toBe(address);
  expect(mail.fromAddress).toBe('no-reply@example.com');
  expect(mail.text).toContain(`This is an automatic security notice from Latchkey (${base}).`);
  return mail;
}

/** The codes of a "Save your recovery codes" page. */
async function shownRecoveryCodes(page: Page): Promise<string[]> {
  await page.getByRole('heading', { name: 'Save your recovery codes' }).waitFor(step);
  return page.getByRole('list', { name: 'Recovery codes' }).locator('li code').allTextContents();
}

/** Sets up an authenticator app from the secret shown as text, as a person without a camera does; its secret and first recovery codes. */
async function setUpAuthenticatorApp(page: Page): Promise<{ secret: string; codes: string[] }> {
  await page.getByRole('link', { name: 'Set up an authenticator app' }).click();
  await page.getByRole('heading', { name: 'Set up an authenticator app' }).waitFor(step);
  const secret = ((await page.locator('code.secret#totp-secret').textContent()) ?? '').replace(/\s/g, '');
  expect(secret).toMatch(/^[A-Z2-7]{32}$/);
  await page.getByLabel('Code from the app').fill(totpCodeAt(secret, t.clock()));
  await page.getByRole('button', { name: 'Turn on' }).click();
  const codes = await shownRecoveryCodes(page);
  await page.getByRole('link', { name: 'I have saved them — continue' }).click();
  await page.waitForURL(`${base}/account/security`, step);
  return { secret, codes };
}

describe.skipIf(!run)('security notices, mailed to a real inbox, for changes made on the pages', () => {
  it('a second factor added: "A second factor was added", saying which, without its secret or the recovery codes', async () => {
    const { context, page, email } = await personSignedIn('ann');
    const { secret, codes } = await setUpAuthenticatorApp(page);
    const mail = await theNotice(email, 'A second factor was added to your Latchkey account');
    expect(mail.text).toContain('An authenticator app was set up as a second factor of your Latchkey account "ann".');
    expect(mail.text).toContain(`choose a new password: ${base}/login/forgot`);
    expect(mail.text).not.toContain(secret);
    for (const code of codes) expect(mail.text).not.toContain(code);
    // One mail for the whole set-up: the first recovery codes come with the factor.
    expect(await mailsTo(email)).toHaveLength(1);
    await context.close();
  });

  it('a second factor removed: a passkey added and then removed, each told in a mail of its own', async () => {
    const { context, page, email } = await personSignedIn('ben');
    const cdp = await context.newCDPSession(page);
    await cdp.send('WebAuthn.enable');
    await cdp.send('WebAuthn.addVirtualAuthenticator', {
      options: {
        protocol: 'ctap2',
        transport: 'internal',
        hasResidentKey: true,
        hasUserVerification: true,
        isUserVerified: true,
        automaticPresenceSimulation: true,
      },
    });
    await page.getByLabel('Name for the new passkey').fill('Work laptop');
    const add = page.locator('form[data-passkey] [data-passkey-start]');
    await add.waitFor({ state: 'visible', ...step });
    await add.click();
    await shownRecoveryCodes(page);
    await page.getByRole('link', { name: 'I have saved them — continue' }).click();
    await page.waitForURL(`${base}/account/security`, step);
    const added = await theNotice(email, 'A second factor was added to your Latchkey account');
    expect(added.text).toContain('A passkey was added to your Latchkey account "ben".');

    await page.getByRole('button', { name: 'Remove passkey Work laptop' }).click();
    await page.getByText('Sign in with your fingerprint, face or screen lock').waitFor(step);
    const removed = await theNotice(email, 'A second factor was removed from your Latchkey account');
    expect(removed.text).toContain('A passkey was removed from your Latchkey account "ben".');
    expect(removed.text).toContain(`check your second factors, and remove any you do not know: ${base}/account/security`);
    expect(removed.text).not.toContain('Work laptop'); // a name the person typed is not repeated
    await context.close();
  });

  it('new recovery codes: "New recovery codes", saying the old ones no longer work, without the codes', async () => {
    const { context, page, email } = await personSignedIn('cal');
    await setUpAuthenticatorApp(page);
    await page.getByRole('button', { name: 'Make new recovery codes' }).click();
    const codes = await shownRecoveryCodes(page);
    expect(codes).toHaveLength(10);
    const mail = await theNotice(email, 'New recovery codes for your Latchkey account');
    expect(mail.text).toContain('New recovery codes were made for your Latchkey account "cal". The old ones no longer work.');
    for (const code of codes) expect(mail.text).not.toContain(code);
    await context.close();
  });

  it('a new password: "The password … was changed", saying where, without either password', async () => {
    const { context, page, email } = await personSignedIn('dee');
    await page.goto(`${base}/account`);
    await page.locator('#current_password').fill('dee-password');
    await page.locator('#new_password').fill('dee-new-password-2');
    await page.getByRole('button', { name: 'Change password' }).click();
    await page.getByRole('status').filter({ hasText: 'password' }).first().waitFor(step);
    const mail = await theNotice(email, 'The password of your Latchkey account was changed');
    expect(mail.text).toContain('The password of your Latchkey account "dee" was changed on its account page.');
    expect(mail.text).toContain('If this was not you, someone took your account.');
    expect(mail.text).not.toMatch(/dee-password|dee-new-password-2/);
    await context.close();
  });

  it('a new email address: a notice to the address before (naming the new one) and one to the new address', async () => {
    const { context, page, email } = await personSignedIn('eve');
    await page.goto(`${base}/account`);
    await page.locator('#email').fill('eve@new.example');
    await page.locator('#profile_current_password').fill('eve-password');
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByText('We sent a link to your new address').waitFor(step);
    const before = await theNotice(email, 'The email address of your Latchkey account was changed');
    expect(before.text).toContain(`The email address of your Latchkey account "eve" was changed from ${email} to the new address below.`);
    expect(before.text).toContain('New address: eve@new.example');
    const after = await theNotice('eve@new.example', 'This address is now the email of a Latchkey account');
    expect(after.text).toContain('This address (eve@new.example) was set as the email address of the Latchkey account "eve".');
    expect(before.text + after.text).not.toContain('eve-password');
    await context.close();
  });
});
