/**
 * Security notices through the pages and the admin commands, delivered to a real SMTP server on
 * loopback: a second factor added or removed, new recovery codes, a new password (on the account
 * page, with a reset link, by an administrator in the console or with `users passwd`), removed
 * factors (console, `users mfa-reset`), a new email (to the address before and the new one). Each
 * says what happened, when, from where and what to do, to the right address, and carries no
 * secret; without LATCHKEY_SMTP_URL nothing changes, and a mail server that is down or hangs never
 * holds up or fails the change.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { main } from '../../src/cli/main.js';
import { mailSettled } from '../../src/mail/after_answer.js';
import { addUser, testApp, type TestApp } from '../helpers/app.js';
import { Browser, inputValue, injectTransport, signIn } from '../helpers/browser.js';
import { acceptEnrolmentLink, enrollTotp, shownRecoveryCodes, usePasskeyForm } from '../helpers/mfa.js';
import { linkIn, startSmtpServer, type ReceivedMail, type TestSmtpServer } from '../helpers/smtp.js';
import { SoftAuthenticator } from '../helpers/soft_authenticator.js';

const issuer = 'http://localhost:8080';
const firefox = 'Mozilla/5.0 (X11; Linux x86_64; rv:140.0) Gecko/20100101 Firefox/140.0';

let t: TestApp | undefined;
let smtp: TestSmtpServer | undefined;
let dir: string | undefined;
let logLines: string[] = [];

afterEach(async () => {
  await t?.close();
  await smtp?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
  t = undefined;
  smtp = undefined;
  dir = undefined;
});

const app = () => t!;

async function setUp(options: { smtpUrl?: string | false; path?: string; userAgent?: string } = {}): Promise<Browser> {
  logLines = [];
  if (options.smtpUrl === undefined) smtp = await startSmtpServer();
  const url = options.smtpUrl === undefined ? smtp!.url : options.smtpUrl;
  t = await testApp(
    { LATCHKEY_ISSUER: issuer, ...(url === false ? {} : { LATCHKEY_SMTP_URL: url }) },
    { logLines, ...(options.path ? { path: options.path } : {}) },
  );
  await addUser(t.store, 'alice', 'alice-password');
  await addUser(t.store, 'root', 'root-password', { roles: ['admin'] });
  return new Browser(injectTransport(t.app), options.userAgent ?? firefox);
}

async function signInAs(browser: Browser, who = 'alice', returnTo = '/account/security') {
  const res = await signIn(browser, await browser.get(`/login?fresh=1&return_to=${encodeURIComponent(returnTo)}`), who, `${who}-password`);
  expect(res.status, res.body.slice(0, 300)).toBe(303);
}

/** Every mail the SMTP server took, once the mails started so far are settled. */
async function inbox(): Promise<ReceivedMail[]> {
  await mailSettled(app().app.services);
  return smtp!.mails;
}

/** The one mail to `address` whose subject has `subject`. */
async function theMail(address: string, subject: string): Promise<ReceivedMail> {
  const found = (await inbox()).filter((m) => m.envelopeTo.includes(address) && m.subject.includes(subject));
  expect(found, `one mail to ${address} about "${subject}" in: ${smtp!.mails.map((m) => `${m.envelopeTo.join(',')} ${m.subject}`).join(' | ')}`).toHaveLength(
    1,
  );
  return found[0]!;
}

/** When the notice says the change happened: the test clock's minute, in UTC. */
const nowText = () => `When: ${new Date(Math.floor(app().clock()) * 1000).toISOString().slice(0, 16).replace('T', ' ')} UTC`;

/** What no notice may carry: a prefixed Latchkey secret of any kind, nor any of the given values. */
function expectNoSecret(mail: ReceivedMail, ...secrets: string[]) {
  expect(mail.text).not.toMatch(/lk_[a-z]{2}_/);
  for (const secret of secrets) expect(mail.text).not.toContain(secret);
}

/** The common frame of a notice: to the right person, automatic, what to do if it was not them. */
function expectNotice(mail: ReceivedMail, to: string) {
  expect(mail.envelopeTo).toEqual([to]);
  expect(mail.headers.get('auto-submitted')).toBe('auto-generated');
  expect(mail.text).toContain(nowText());
  expect(mail.text).toContain(`This is an automatic security notice from Latchkey (${issuer}).`);
}

describe('second factors', () => {
  it('an authenticator app set up: a notice to the account’s address — what, when, from where (address and browser), what to do — and neither the app’s secret nor a recovery code', async () => {
    const browser = await setUp();
    await signInAs(browser);
    const { secret, page } = await enrollTotp(app(), browser);
    const codes = shownRecoveryCodes(page.body);
    expect(codes).toHaveLength(10);
    const mail = await theMail('alice@example.com', 'A second factor was added to your Latchkey account');
    expectNotice(mail, 'alice@example.com');
    expect(mail.text).toContain('An authenticator app was set up as a second factor of your Latchkey account "alice".');
    expect(mail.text).toContain('From: 127.0.0.1 (Firefox on Linux)');
    expect(mail.text).toContain(`choose a new password: ${issuer}/login/forgot`);
    expect(mail.text).toContain('ask your administrator to remove the second factors you did not add');
    expectNoSecret(mail, secret, secret.replace(/(.{4})/g, '$1 ').trim(), ...codes, ...browser.cookies.values());
    // One mail for the whole enrolment (the first recovery codes come with the factor).
    expect(await inbox()).toHaveLength(1);
  });

  it('a passkey added and removed, the app removed, new recovery codes: one notice each, none with a secret', async () => {
    const browser = await setUp();
    await signInAs(browser);
    const authenticator = new SoftAuthenticator(issuer);
    const overview = await browser.get('/account/security');
    const registered = await usePasskeyForm(browser, overview, '/account/security/passkeys', (options) => authenticator.register(options as never), {
      name: 'Work laptop',
    });
    expect(registered.status, registered.body.slice(0, 300)).toBe(200);
    const added = await theMail('alice@example.com', 'A second factor was added');
    expect(added.text).toContain('A passkey was added to your Latchkey account "alice".');
    const credentialId = authenticator.credentials[0]!.id.toString('base64url');
    expectNoSecret(added, credentialId, ...shownRecoveryCodes(registered.body));

    const { secret } = await enrollTotp(app(), browser);
    const withApp = await browser.get('/account/security');
    const csrf = inputValue(withApp.body, 'csrf_token')!;
    expect((await browser.post('/account/security/totp/remove', { csrf_token: csrf })).status).toBe(303);
    const removedApp = await theMail('alice@example.com', 'A second factor was removed');
    expectNotice(removedApp, 'alice@example.com');
    expect(removedApp.text).toContain('The authenticator app was removed from your Latchkey account "alice".');
    expect(removedApp.text).toContain(`check your second factors, and remove any you do not know: ${issuer}/account/security`);
    expectNoSecret(removedApp, secret);

    const fresh = await browser.post('/account/security/recovery-codes', { csrf_token: csrf });
    expect(fresh.status).toBe(200);
    const newCodes = shownRecoveryCodes(fresh.body);
    const codesMail = await theMail('alice@example.com', 'New recovery codes');
    expect(codesMail.text).toContain('New recovery codes were made for your Latchkey account "alice". The old ones no longer work.');
    expectNoSecret(codesMail, ...newCodes);

    const [passkey] = await app().store.listPasskeys((await app().store.findUserByUsername('alice'))!.id);
    expect((await browser.post('/account/security/passkeys/remove', { csrf_token: csrf, id: passkey!.id })).status).toBe(303);
    const removedPasskey = (await inbox()).filter((m) => m.subject.includes('A second factor was removed'));
    expect(removedPasskey).toHaveLength(2);
    expect(removedPasskey[1]!.text).toContain('A passkey was removed from your Latchkey account "alice".');
    expectNoSecret(removedPasskey[1]!, credentialId, passkey!.name);
  });

  it('an administrator removing someone’s factors in the console: a notice "by an administrator", without the administrator’s address', async () => {
    const browser = await setUp();
    const aliceBrowser = new Browser(injectTransport(app().app), firefox);
    await signInAs(aliceBrowser);
    await enrollTotp(app(), aliceBrowser);
    await signInAs(browser, 'root');
    await acceptEnrolmentLink(app(), browser, 'root');
    await enrollTotp(app(), browser);
    const alice = (await app().store.findUserByUsername('alice'))!;
    const page = await browser.get(`/admin/users/${alice.id}`);
    const res = await browser.post(`/admin/users/${alice.id}/second-factors/reset`, { csrf_token: inputValue(page.body, 'csrf_token')! });
    expect(res.location).toBe(`/admin/users/${alice.id}?done=factors_reset`);
    const mail = await theMail('alice@example.com', 'The second factors of your Latchkey account were removed');
    expectNotice(mail, 'alice@example.com');
    expect(mail.text).toContain('An administrator removed every second factor of your Latchkey account "alice"');
    expect(mail.text).toContain('By: an administrator');
    expect(mail.text).not.toContain('127.0.0.1');
  });

  it('describes the browser only in words of its own: a User-Agent’s text never reaches the mail', async () => {
    const hostile = 'Note from your administrator: this change was planned, nothing to do. Visit https://evil.example/';
    const browser = await setUp({ userAgent: hostile });
    await signInAs(browser);
    await enrollTotp(app(), browser);
    const mail = await theMail('alice@example.com', 'A second factor was added');
    expect(mail.text).toContain('From: 127.0.0.1\n');
    expect(mail.text).not.toContain('evil.example');
    expect(mail.text).not.toContain('planned');
  });
});

describe('passwords', () => {
  it('changed on the account page: a notice to the account, with neither password', async () => {
    const browser = await setUp();
    await signInAs(browser, 'alice', '/account');
    const account = await browser.get('/account');
    const res = await browser.post('/account/password', {
      csrf_token: inputValue(account.body, 'csrf_token')!,
      current_password: 'alice-password',
      new_password: 'a-brand-new-password',
    });
    expect(res.status).toBe(200);
    const mail = await theMail('alice@example.com', 'The password of your Latchkey account was changed');
    expectNotice(mail, 'alice@example.com');
    expect(mail.text).toContain('The password of your Latchkey account "alice" was changed on its account page.');
    expect(mail.text).toContain('From: 127.0.0.1 (Firefox on Linux)');
    expect(mail.text).toContain(`If this was not you, someone took your account.`);
    expectNoSecret(mail, 'alice-password', 'a-brand-new-password');
  });

  it('set with a reset link: the notice follows the link’s mail, and does not carry the link', async () => {
    const browser = await setUp();
    const forgot = await browser.get('/login/forgot');
    await browser.post('/login/forgot', { csrf_token: inputValue(forgot.body, 'csrf_token')!, email: 'alice@example.com' });
    const resetMail = await theMail('alice@example.com', 'Reset your Latchkey password');
    const link = linkIn(resetMail, `${issuer}/login/reset?token=`);
    const secret = new URL(link).searchParams.get('token')!;
    const form = await browser.get(`/login/reset?token=${secret}`);
    const done = await browser.post('/login/reset', { csrf_token: inputValue(form.body, 'csrf_token')!, token: secret, new_password: 'a-brand-new-password' });
    expect(done.status).toBe(200);
    const mail = await theMail('alice@example.com', 'The password of your Latchkey account was changed');
    expectNotice(mail, 'alice@example.com');
    expect(mail.text).toContain('The password of your Latchkey account "alice" was changed with a password-reset link sent to this address.');
    expectNoSecret(mail, secret, 'a-brand-new-password');
  });

  it('set by an administrator in the console: a notice "by an administrator", with no password', async () => {
    const browser = await setUp();
    await signInAs(browser, 'root');
    await acceptEnrolmentLink(app(), browser, 'root');
    await enrollTotp(app(), browser);
    const alice = (await app().store.findUserByUsername('alice'))!;
    const page = await browser.get(`/admin/users/${alice.id}`);
    const res = await browser.post(`/admin/users/${alice.id}/password`, { csrf_token: inputValue(page.body, 'csrf_token')!, new_password: 'set-by-the-admin' });
    expect(res.location).toBe(`/admin/users/${alice.id}?done=password`);
    const mail = await theMail('alice@example.com', 'The password of your Latchkey account was changed');
    expect(mail.text).toContain('An administrator set a new password for your Latchkey account "alice". Every sign-in of yours has ended.');
    expect(mail.text).toContain('By: an administrator');
    expectNoSecret(mail, 'set-by-the-admin');
  });
});

describe('email', () => {
  it('changed on the account page: a notice to the address before (with the new one) and to the new address; the verification mail too', async () => {
    const browser = await setUp();
    await signInAs(browser, 'alice', '/account');
    const account = await browser.get('/account');
    const res = await browser.post('/account/profile', {
      csrf_token: inputValue(account.body, 'csrf_token')!,
      name: 'Alice',
      email: 'alice@new.example',
      current_password: 'alice-password',
    });
    expect(res.status).toBe(200);
    const before = await theMail('alice@example.com', 'The email address of your Latchkey account was changed');
    expectNotice(before, 'alice@example.com');
    expect(before.text).toContain('The email address of your Latchkey account "alice" was changed from alice@example.com to the new address below.');
    expect(before.text).toContain('New address: alice@new.example');
    expect(before.text).toContain('From: 127.0.0.1 (Firefox on Linux)');
    expect(before.text).toContain('Tell your administrator at once');
    expectNoSecret(before, 'alice-password');
    const after = await theMail('alice@new.example', 'This address is now the email of a Latchkey account');
    expectNotice(after, 'alice@new.example');
    expect(after.text).toContain('This address (alice@new.example) was set as the email address of the Latchkey account "alice".');
    expect(after.text.startsWith('Hello,\n')).toBe(true);
    const verification = await theMail('alice@new.example', 'Confirm your email address');
    expectNoSecret(after, linkIn(verification, `${issuer}/account/verify-email?token=`));
    expect(await inbox()).toHaveLength(3);
  });

  it('an unchanged email (another case) sends nothing', async () => {
    const browser = await setUp();
    await signInAs(browser, 'alice', '/account');
    const account = await browser.get('/account');
    expect(
      (
        await browser.post('/account/profile', {
          csrf_token: inputValue(account.body, 'csrf_token')!,
          name: 'Alice',
          email: 'ALICE@example.com',
          current_password: '',
        })
      ).status,
    ).toBe(200);
    expect(await inbox()).toEqual([]);
  });
});

describe('without mail, or with a mail server that fails', () => {
  it('without LATCHKEY_SMTP_URL every change works as before and nothing is sent', async () => {
    const browser = await setUp({ smtpUrl: false });
    expect(app().app.services.mailer).toBeUndefined();
    await signInAs(browser);
    const { page } = await enrollTotp(app(), browser);
    expect(page.status).toBe(200);
    const csrf = inputValue((await browser.get('/account/security')).body, 'csrf_token')!;
    expect((await browser.post('/account/security/recovery-codes', { csrf_token: csrf })).status).toBe(200);
    expect((await browser.post('/account/security/totp/remove', { csrf_token: csrf })).status).toBe(303);
    const account = await browser.get('/account');
    const accountCsrf = inputValue(account.body, 'csrf_token')!;
    expect(
      (await browser.post('/account/password', { csrf_token: accountCsrf, current_password: 'alice-password', new_password: 'a-brand-new-password' })).status,
    ).toBe(200);
    const again = await browser.get('/account');
    const profile = await browser.post('/account/profile', {
      csrf_token: inputValue(again.body, 'csrf_token')!,
      name: 'Alice',
      email: 'alice@new.example',
      current_password: 'a-brand-new-password',
    });
    expect(profile.status).toBe(200);
    expect((await app().store.findUserByUsername('alice'))!.email).toBe('alice@new.example');
    await mailSettled(app().app.services);
    expect(logLines.filter((l) => l.includes('security notice'))).toEqual([]);
  });

  it('a mail server that is down: the change is made and answered as ever; a warning names the failure, never the address', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const { port } = closed.address() as AddressInfo;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const browser = await setUp({ smtpUrl: `smtp://127.0.0.1:${port}` });
    await signInAs(browser, 'alice', '/account');
    const account = await browser.get('/account');
    const res = await browser.post('/account/password', {
      csrf_token: inputValue(account.body, 'csrf_token')!,
      current_password: 'alice-password',
      new_password: 'a-brand-new-password',
    });
    expect(res.status).toBe(200);
    expect(res.body).toContain('Your password was changed');
    await mailSettled(app().app.services);
    const warnings = logLines.filter((l) => l.includes('security notice not sent'));
    expect(warnings).toHaveLength(1);
    expect(JSON.parse(warnings[0]!)).toMatchObject({ notice: 'password_changed', mailError: expect.stringMatching(/^E[A-Z]+$/) });
    for (const line of logLines) expect(line).not.toContain('alice@example.com');
  });

  it('a mail server that never answers does not hold up the answer: the mail is tried after it', async () => {
    const sockets: Socket[] = [];
    let connected: () => void = () => undefined;
    const connection = new Promise<void>((resolve) => (connected = resolve));
    const silent: Server = createServer((socket) => {
      sockets.push(socket);
      connected();
    });
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    try {
      const browser = await setUp({ smtpUrl: `smtp://127.0.0.1:${(silent.address() as AddressInfo).port}` });
      await signInAs(browser, 'alice', '/account');
      const account = await browser.get('/account');
      const res = await browser.post('/account/password', {
        csrf_token: inputValue(account.body, 'csrf_token')!,
        current_password: 'alice-password',
        new_password: 'a-brand-new-password',
      });
      // Answered while the mail server has not even greeted.
      expect(res.status).toBe(200);
      await connection;
      for (const socket of sockets) socket.destroy();
      await mailSettled(app().app.services);
      expect(logLines.some((l) => l.includes('security notice not sent'))).toBe(true);
    } finally {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => silent.close(() => resolve()));
    }
  });
});

describe('the admin commands', () => {
  /** Runs `latchkey <args>` through the executable's entry point, in this process, on the test's database. */
  async function latchkey(args: string[], input = ''): Promise<{ code: number; stdout: string; stderr: string }> {
    const stdout = new PassThrough();
    const stderr = new PassThrough();
    const stdin = new PassThrough();
    stdin.end(input);
    let out = '';
    let err = '';
    stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
    const env = { LATCHKEY_DB: join(dir!, 'latchkey.db'), LATCHKEY_ISSUER: issuer, LATCHKEY_SMTP_URL: smtp!.url };
    const code = await main(args, { stdout, stderr, stdin, env });
    return { code, stdout: out, stderr: err };
  }

  it('users passwd, users mfa-reset and users update --email tell the person, "by an administrator"; the change stands', async () => {
    dir = mkdtempSync(join(tmpdir(), 'latchkey-notices-'));
    const browser = await setUp({ path: join(dir, 'latchkey.db') });
    await signInAs(browser);
    await enrollTotp(app(), browser);
    await inbox();
    smtp!.mails.length = 0;

    const passwd = await latchkey(['users', 'passwd', 'alice', '--password-stdin'], 'typed-by-the-operator');
    expect(passwd.code, passwd.stderr).toBe(0);
    expect(passwd.stderr).toContain('Sent a security notice to alice@example.com');
    const password = await theMail('alice@example.com', 'The password of your Latchkey account was changed');
    expect(password.text).toContain('An administrator set a new password for your Latchkey account "alice".');
    expect(password.text).toContain('By: an administrator');
    expectNoSecret(password, 'typed-by-the-operator');

    const reset = await latchkey(['users', 'mfa-reset', 'alice']);
    expect(reset.code, reset.stderr).toBe(0);
    const factors = await theMail('alice@example.com', 'The second factors of your Latchkey account were removed');
    expect(factors.text).toContain('An administrator removed every second factor');
    // Nothing removed, nothing told.
    expect((await latchkey(['users', 'mfa-reset', 'alice'])).stderr).not.toContain('security notice');

    const update = await latchkey(['users', 'update', 'alice', '--email', 'alice@new.example']);
    expect(update.code, update.stderr).toBe(0);
    const before = await theMail('alice@example.com', 'The email address of your Latchkey account was changed');
    expect(before.text).toContain('New address: alice@new.example');
    await theMail('alice@new.example', 'This address is now the email of a Latchkey account');
    expect(smtp!.mails).toHaveLength(4);
  });
});
