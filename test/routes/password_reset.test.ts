/**
 * "Forgot your password?" and email verification through app.inject, with a real SMTP server on
 * loopback where a mail matters: the pages (labelled, CSRF-protected), what happens without
 * LATCHKEY_SMTP_URL, and the abuse cases — forged forms, garbage and huge links, a mail server
 * that is down or refuses the credentials (never a 5xx, never the link or the password in a log).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createServer, type AddressInfo } from 'node:net';
import { mailSettled } from '../../src/mail/after_answer.js';
import { addUser, form, testApp, type TestApp } from '../helpers/app.js';
import { Browser, inputValue, injectTransport, signIn, type BrowserResponse } from '../helpers/browser.js';
import { linkIn, startSmtpServer, type TestSmtpServer } from '../helpers/smtp.js';

let t: TestApp | undefined;
let smtp: TestSmtpServer | undefined;
let logLines: string[] = [];

afterEach(async () => {
  await t?.close();
  await smtp?.close();
  t = undefined;
  smtp = undefined;
});

async function setUp(options: { smtp?: boolean; env?: Record<string, string> } = {}): Promise<Browser> {
  logLines = [];
  if (options.smtp !== false) smtp = await startSmtpServer();
  t = await testApp({ ...(smtp ? { LATCHKEY_SMTP_URL: smtp.url } : {}), ...options.env }, { logLines });
  await addUser(t.store, 'alice', 'alice-password');
  return new Browser(injectTransport(t.app));
}

const app = () => t!;
const wellFormedResetLink = `lk_pr_${'A'.repeat(43)}`;

async function forgot(browser: Browser, email: string, csrf?: string): Promise<BrowserResponse> {
  const token = csrf ?? inputValue((await browser.get('/login/forgot')).body, 'csrf_token') ?? '';
  const res = await browser.post('/login/forgot', { csrf_token: token, email });
  await mailSettled(app().app.services);
  return res;
}

/** A port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe('without LATCHKEY_SMTP_URL', () => {
  it('the sign-in page offers no reset, /login/forgot says it is not available (404), and no verification can be sent', async () => {
    const browser = await setUp({ smtp: false });
    const login = await browser.get('/login');
    expect(login.status).toBe(200);
    expect(login.body).not.toContain('/login/forgot');
    expect(login.body).not.toContain('Forgot your password?');
    for (const res of [await browser.get('/login/forgot'), await browser.post('/login/forgot', { email: 'alice@example.com' })]) {
      expect(res.status).toBe(404);
      expect(res.body).toContain('Password reset is not available');
      expect(res.body).toContain('Ask your administrator to set a new password for you.');
    }
    expect(app().app.services.mailer).toBeUndefined();
    expect(await signIn(browser, await browser.get('/login?return_to=%2Faccount'), 'alice', 'alice-password')).toMatchObject({ status: 303 });
    const csrf = inputValue((await browser.get('/account')).body, 'csrf_token')!;
    const verify = await browser.post('/account/verify-email', { csrf_token: csrf });
    expect(verify.status).toBe(404);
    expect(verify.body).toContain('Email verification is not available');
  });
});

describe('the pages', () => {
  it('/login/forgot: one labelled email field, a CSRF token, the security headers; the sign-in page links to it', async () => {
    const browser = await setUp();
    expect((await browser.get('/login')).body).toContain('<a href="/login/forgot">Forgot your password?</a>');
    const page = await browser.get('/login/forgot');
    expect(page.status).toBe(200);
    expect(page.headers['cache-control']).toBe('no-store');
    expect(page.headers['referrer-policy']).toBe('no-referrer');
    expect(page.headers['content-security-policy']).toContain("form-action 'self'");
    expect(page.body).toContain('<label for="email">Email</label>');
    expect(page.body).toMatch(/<input id="email" name="email" type="email"[^>]*autocomplete="email"/);
    expect(page.body).toContain('<form method="post" action="/login/forgot"');
    expect(inputValue(page.body, 'csrf_token')).toMatch(/^\d+\.[A-Za-z0-9_-]{43}$/);
  });

  it('/login/reset?token=…: a labelled new-password field, the link in a hidden field, a CSRF token; opening it spends nothing', async () => {
    const browser = await setUp();
    await forgot(browser, 'alice@example.com');
    const link = linkIn(smtp!.mails[0]!, 'http://latchkey.test/login/reset?token=');
    const secret = new URL(link).searchParams.get('token')!;
    const path = `/login/reset?token=${secret}`;
    for (let i = 0; i < 3; i++) expect((await browser.get(path)).status).toBe(200);
    const page = await browser.get(path);
    expect(page.body).toContain('<label for="new_password">New password</label>');
    expect(page.body).toMatch(/<input id="new_password" name="new_password" type="password" autocomplete="new-password"/);
    expect(inputValue(page.body, 'token')).toBe(secret);
    expect(inputValue(page.body, 'csrf_token')).toMatch(/^\d+\.[A-Za-z0-9_-]{43}$/);
    expect(page.headers['referrer-policy']).toBe('no-referrer');
    const rows = app().store.db.prepare('SELECT used_at FROM email_tokens').all();
    expect(rows).toEqual([{ used_at: null }]);
  });

  it('an empty or malformed address shows the form again with the reason (400), and counts nothing', async () => {
    const browser = await setUp({ env: { LATCHKEY_RATE_LIMIT_PASSWORD_RESET: '1/900' } });
    for (const email of ['', '   ', 'alice', 'two words@example.com', 'a@b\u0000c']) {
      const res = await forgot(browser, email);
      expect(res.status).toBe(400);
      expect(res.body).toContain('Enter the email address of your account.');
      expect(res.body).toContain('aria-invalid="true"');
    }
    expect((await forgot(browser, 'alice@example.com')).status).toBe(200);
    expect(smtp!.mails).toHaveLength(1);
  });
});

describe('CSRF', () => {
  it("/login/forgot refuses a missing, forged or other form's token with 403, and sends nothing", async () => {
    const browser = await setUp();
    const loginToken = inputValue((await browser.get('/login')).body, 'csrf_token')!;
    const forged = `${Math.floor(app().clock())}.${'x'.repeat(43)}`;
    for (const token of ['', forged, loginToken]) {
      const res = await forgot(browser, 'alice@example.com', token);
      expect(res.status).toBe(403);
      expect(res.body).toContain('This form has expired');
    }
    // Another browser's token (no cookie of its own).
    const stranger = new Browser(injectTransport(app().app));
    const strangersToken = inputValue((await stranger.get('/login/forgot')).body, 'csrf_token')!;
    expect((await forgot(browser, 'alice@example.com', strangersToken)).status).toBe(403);
    const bare = await app().app.inject({ method: 'POST', url: '/login/forgot', ...form({ email: 'alice@example.com' }) });
    expect(bare.statusCode).toBe(403);
    await mailSettled(app().app.services);
    expect(smtp!.mails).toEqual([]);
  });

  it('/login/reset refuses a missing or forged token, or the form of another link, and the link stays unspent', async () => {
    const browser = await setUp();
    await forgot(browser, 'alice@example.com');
    await forgot(browser, 'alice@example.com');
    const [first, second] = smtp!.mails.map((m) => new URL(linkIn(m, 'http://latchkey.test/login/reset?token=')).searchParams.get('token')!);
    const firstForm = await browser.get(`/login/reset?token=${first}`);
    const secondForm = await browser.get(`/login/reset?token=${second}`);
    const attempts = [
      { csrf_token: '', token: first!, new_password: 'new-password-1' },
      { csrf_token: `${Math.floor(app().clock())}.${'x'.repeat(43)}`, token: first!, new_password: 'new-password-1' },
      // The CSRF token of the second link's form does not carry the first link.
      { csrf_token: inputValue(secondForm.body, 'csrf_token')!, token: first!, new_password: 'new-password-1' },
    ];
    for (const fields of attempts) {
      const res = await browser.post('/login/reset', fields);
      expect(res.status).toBe(403);
    }
    expect(app().store.db.prepare('SELECT count(*) AS n FROM email_tokens WHERE used_at IS NOT NULL').get()).toEqual({ n: 0 });
    const ok = await browser.post('/login/reset', { csrf_token: inputValue(firstForm.body, 'csrf_token')!, token: first!, new_password: 'new-password-1' });
    expect(ok.status).toBe(200);
  });

  it("POST /account/verify-email needs a sign-in and the account page's token", async () => {
    const browser = await setUp();
    const signedOut = await browser.post('/account/verify-email', { csrf_token: '' });
    expect(signedOut.status).toBe(303);
    expect(signedOut.location).toBe('/login?return_to=%2Faccount');
    await addUser(app().store, 'bob', 'bob-password', { emailVerified: false });
    expect((await signIn(browser, await browser.get('/login?return_to=%2Faccount'), 'bob', 'bob-password')).status).toBe(303);
    const forgotToken = inputValue((await browser.get('/login/forgot')).body, 'csrf_token')!;
    for (const token of ['', forgotToken, `${Math.floor(app().clock())}.${'x'.repeat(43)}`]) {
      expect((await browser.post('/account/verify-email', { csrf_token: token })).status).toBe(403);
    }
    await mailSettled(app().app.services);
    expect(smtp!.mails).toEqual([]);
  });
});

describe('garbage and huge links', () => {
  const garbage = [
    '',
    'garbage',
    'lk_pr_',
    `lk_pr_${'A'.repeat(42)}`,
    `lk_pr_${'A'.repeat(44)}`,
    `lk_ev_${'A'.repeat(43)}`,
    `lk_pr_${'A'.repeat(42)}%00`,
    `lk_pr_${'A'.repeat(42)}%C3%A9`,
    `lk_pr_${'A'.repeat(42)}+`,
    '%FF%FE',
    'x'.repeat(1025),
    'x'.repeat(8000),
  ];

  it('GET /login/reset and GET /account/verify-email: 4xx, never 5xx', async () => {
    const browser = await setUp();
    for (const token of garbage) {
      for (const path of ['/login/reset', '/account/verify-email']) {
        const res = await browser.get(`${path}?token=${token}`);
        expect({ path, token: token.slice(0, 60), status: res.status >= 400 && res.status < 500 }).toEqual({ path, token: token.slice(0, 60), status: true });
      }
    }
    for (const path of ['/login/reset', '/account/verify-email', '/login/reset?token=a&token=b']) {
      const res = await browser.get(path);
      expect(res.status).toBe(400);
    }
    // Well-formed but unknown: the reset form shows (nothing is looked up on opening), the verification fails.
    expect((await browser.get(`/login/reset?token=${wellFormedResetLink}`)).status).toBe(200);
    const unknownVerification = await browser.get(`/account/verify-email?token=lk_ev_${'B'.repeat(43)}`);
    expect(unknownVerification.status).toBe(400);
    expect(unknownVerification.body).toContain('This link has expired or was used');
  });

  it('POST /login/reset: garbage or unknown links → the friendly 400 page; huge fields → 4xx; never 5xx', async () => {
    const browser = await setUp();
    const page = await browser.get(`/login/reset?token=${wellFormedResetLink}`);
    const csrf = inputValue(page.body, 'csrf_token')!;
    const unknown = await browser.post('/login/reset', { csrf_token: csrf, token: wellFormedResetLink, new_password: 'new-password-1' });
    expect(unknown.status).toBe(400);
    expect(unknown.body).toContain('This link has expired or was used');
    for (const token of garbage.map(decodeURIComponentSafe)) {
      const res = await browser.post('/login/reset', { csrf_token: csrf, token, new_password: 'new-password-1' });
      expect(res.status >= 400 && res.status < 500).toBe(true);
    }
    const huge = await browser.post('/login/reset', { csrf_token: csrf, token: wellFormedResetLink, new_password: 'p'.repeat(5000) });
    expect(huge.status).toBe(400);
    const tooLarge = await browser.post('/login/reset', { csrf_token: csrf, token: 'x'.repeat(70_000), new_password: 'x' });
    expect(tooLarge.status).toBe(413);
    const hugeEmail = await browser.post('/login/forgot', { csrf_token: csrf, email: `${'a'.repeat(2000)}@example.com` });
    expect(hugeEmail.status).toBe(400);
    expect(logLines.filter((l) => JSON.parse(l).level >= 50)).toEqual([]);
  });

  it('a new password that is too short is refused before the link is spent', async () => {
    const browser = await setUp();
    await forgot(browser, 'alice@example.com');
    const secret = new URL(linkIn(smtp!.mails[0]!, 'http://latchkey.test/login/reset?token=')).searchParams.get('token')!;
    const page = await browser.get(`/login/reset?token=${secret}`);
    const short = await browser.post('/login/reset', { csrf_token: inputValue(page.body, 'csrf_token')!, token: secret, new_password: 'short' });
    expect(short.status).toBe(400);
    expect(short.body).toContain('The new password must be 8 to 1024 characters.');
    expect(inputValue(short.body, 'token')).toBe(secret);
    const ok = await browser.post('/login/reset', { csrf_token: inputValue(short.body, 'csrf_token')!, token: secret, new_password: 'long-enough-now' });
    expect(ok.status).toBe(200);
  });
});

function decodeURIComponentSafe(value: string): string {
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}

describe('a mail server that fails', () => {
  it('down: the same page and status as ever, no 5xx, and a log line that names no link, address or password', async () => {
    const port = await closedPort();
    const browser = await setUp({ smtp: false, env: { LATCHKEY_SMTP_URL: `smtp://mailer:smtp-secret-42@127.0.0.1:${port}` } });
    const res = await forgot(browser, 'alice@example.com');
    expect(res.status).toBe(200);
    expect(res.body).toContain('If an account uses that address, we sent a link');
    const failure = logLines.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l.msg === 'mail not sent');
    expect(failure).toMatchObject({ purpose: 'password_reset', level: 40 });
    expect(String(failure?.mailError)).toMatch(/^E[A-Z]+$/);
    const requested = logLines.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l.event === 'password_reset.requested');
    expect(requested).toMatchObject({ outcome: 'mail_failed' });
    const everything = logLines.join('\n');
    for (const text of ['smtp-secret-42', 'lk_pr_', 'alice@example.com']) expect({ text, logged: everything.includes(text) }).toEqual({ text, logged: false });
  });

  it('refusing the credentials: the verification page says the mail could not be sent (503, not 500); the password is in no log line', async () => {
    smtp = await startSmtpServer({ user: 'mailer', password: 'the-right-one' });
    const browser = await setUp({ smtp: false, env: { LATCHKEY_SMTP_URL: `smtp://mailer:wrong-smtp-password@127.0.0.1:${smtp.port}` } });
    await addUser(app().store, 'bob', 'bob-password', { emailVerified: false });
    expect((await signIn(browser, await browser.get('/login?return_to=%2Faccount'), 'bob', 'bob-password')).status).toBe(303);
    const csrf = inputValue((await browser.get('/account')).body, 'csrf_token')!;
    const res = await browser.post('/account/verify-email', { csrf_token: csrf });
    expect(res.status).toBe(503);
    expect(res.body).toContain('We could not send the email');
    expect(smtp.authFailures).toBeGreaterThan(0);
    expect(smtp.mails).toEqual([]);
    const failure = logLines.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l.msg === 'mail not sent');
    expect(failure).toMatchObject({ purpose: 'email_verification', mailError: 'EAUTH', smtpReply: 535 });
    const everything = logLines.join('\n');
    for (const text of ['wrong-smtp-password', 'the-right-one', 'lk_ev_']) expect({ text, logged: everything.includes(text) }).toEqual({ text, logged: false });
  });
});
