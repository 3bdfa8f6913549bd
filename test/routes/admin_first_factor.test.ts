/**
 * The first second factor of an account holding the `admin` role, through the pages with
 * app.inject and a manual clock: with a password alone neither an authenticator app nor a passkey
 * can be added (on /account/security, nor at a LATCHKEY_MFA=required sign-in), and the page says
 * what to do; the sanctioned ways — a one-time enrolment link from `latchkey users mfa-enroll` or
 * from another administrator in the console — work once, for their account, in the browser that
 * accepted them; a fresh server's first administrator gets in that way; people without the role
 * keep setting up their first factor themselves.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { decodeJwt } from 'jose';
import { main } from '../../src/cli/main.js';
import { sha256 } from '../../src/crypto/secrets.js';
import { createEnrolmentLink } from '../../src/mfa/enrolment_link.js';
import { totpCodeAt } from '../../src/mfa/totp.js';
import { addClient, addUser, form, pkcePair, testApp, type TestApp } from '../helpers/app.js';
import { Browser, decodeEntities, inputValue, injectTransport, signIn, type BrowserResponse } from '../helpers/browser.js';
import { acceptEnrolmentLink, enrollTotp, shownRecoveryCodes, shownSecret, usePasskeyForm } from '../helpers/mfa.js';
import { SoftAuthenticator } from '../helpers/soft_authenticator.js';

const issuer = 'http://localhost:8080';
let t: TestApp;
let dir: string | undefined;

afterEach(async () => {
  await t?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

async function setUp(env: Record<string, string> = {}, path?: string) {
  t = await testApp({ LATCHKEY_ISSUER: issuer, ...env }, path ? { path } : {});
  await addUser(t.store, 'root', 'root-password', { roles: ['admin'] });
  await addUser(t.store, 'alice', 'alice-password');
  await addClient(t.store, 'web', { redirectUris: ['https://app.example.com/cb'], grantTypes: ['authorization_code'], firstParty: true });
  return new Browser(injectTransport(t.app));
}

const newBrowser = () => new Browser(injectTransport(t.app));
const text = (res: BrowserResponse) => decodeEntities(res.body.replace(/<[^>]+>/g, ' ').replace(/\s+/g, ' '));
const now = () => Math.floor(t.clock());
const userId = async (name: string) => (await t.store.findUserByUsername(name))!.id;

async function signInAs(browser: Browser, who = 'root', returnTo = '/account/security') {
  const res = await signIn(browser, await browser.get(`/login?fresh=1&return_to=${encodeURIComponent(returnTo)}`), who, `${who}-password`);
  expect(res.status, res.body.slice(0, 300)).toBe(303);
  return res;
}

/** No factor of any kind stored for `who`. */
async function expectNoFactor(who: string) {
  const id = await userId(who);
  expect(await t.store.findTotp(id)).toBeUndefined();
  expect(await t.store.listPasskeys(id)).toEqual([]);
  expect(await t.store.countRecoveryCodes(id)).toBe(0);
}

async function refusals(): Promise<number> {
  await t.app.services.auditTrail.flush();
  return (await t.store.listAuditEvents({ event: 'second_factor.enrolment_refused', limit: 100 })).length;
}

/** Registers a passkey from the security page's own form. */
async function registerPasskey(browser: Browser, authenticator: SoftAuthenticator, returnTo?: string) {
  const overview = await browser.get(`/account/security${returnTo ? `?return_to=${encodeURIComponent(returnTo)}` : ''}`);
  return usePasskeyForm(browser, overview, '/account/security/passkeys', (options) => authenticator.register(options as never), { name: 'Laptop' });
}

describe('an administrator with only a password', () => {
  it('cannot set up an authenticator app or a passkey on /account/security; the page says to ask for latchkey users mfa-enroll', async () => {
    const browser = await setUp();
    await signInAs(browser);
    const overview = await browser.get('/account/security');
    expect(overview.status).toBe(200);
    expect(text(overview)).toContain('Your first second factor needs an enrolment link');
    expect(text(overview)).toContain('Ask an administrator to run latchkey users mfa-enroll root');
    expect(overview.body).toContain('name="code"');
    expect(overview.body).not.toContain('Set up an authenticator app</a>');
    expect(overview.body).not.toContain('action="/account/security/passkeys"');

    const totpPage = await browser.get('/account/security/totp');
    expect(totpPage.status).toBe(403);
    expect(text(totpPage)).toContain('Ask an administrator for an enrolment link');
    expect(text(totpPage)).toContain('Ask an administrator to run `latchkey users mfa-enroll root`');
    expect(totpPage.body).not.toContain('totp-secret');

    const options = await browser.post('/account/security/passkeys/options', { csrf_token: inputValue(overview.body, 'csrf_token')! });
    expect(options.status).toBe(403);
    expect(JSON.parse(options.body)).toMatchObject({ error: 'access_denied', error_description: expect.stringContaining('latchkey users mfa-enroll root') });
    expect(options.body).not.toContain('challenge');
    await expectNoFactor('root');
    expect(await refusals()).toBe(2);
  });

  it('cannot finish a set-up begun before holding the role: the app’s code and the passkey’s answer are refused at the end', async () => {
    const browser = await setUp();
    await signInAs(browser, 'alice');
    const setup = await browser.get('/account/security/totp');
    const secret = shownSecret(setup.body);
    const overview = await browser.get('/account/security');
    const csrf = inputValue(overview.body, 'csrf_token')!;
    const authenticator = new SoftAuthenticator(issuer);
    const options = JSON.parse((await browser.post('/account/security/passkeys/options', { csrf_token: csrf })).body);
    // An administrator grants alice the role meanwhile: she has no factor, so her first needs a link now.
    await t.store.grantRole(await userId('alice'), 'admin', now());
    const totp = await browser.post('/account/security/totp', {
      csrf_token: inputValue(setup.body, 'csrf_token')!,
      setup: inputValue(setup.body, 'setup')!,
      otp: totpCodeAt(secret, t.clock()),
    });
    expect(totp.status).toBe(403);
    expect(text(totp)).toContain('latchkey users mfa-enroll alice');
    const passkey = await browser.post('/account/security/passkeys', {
      csrf_token: csrf,
      credential: JSON.stringify(authenticator.register(options)),
      name: 'Laptop',
    });
    expect(passkey.status).toBe(403);
    await expectNoFactor('alice');
  });

  it('LATCHKEY_MFA=required: the sign-in stops at setting up a factor, which a password cannot do; the enrolment link pasted there lets them on, with pwd+otp', async () => {
    const browser = await setUp({ LATCHKEY_MFA: 'required' });
    const { verifier, challenge } = pkcePair();
    const query = new URLSearchParams({
      response_type: 'code',
      client_id: 'web',
      redirect_uri: 'https://app.example.com/cb',
      scope: 'openid',
      state: 's1',
      code_challenge: challenge,
      code_challenge_method: 'S256',
    });
    const toLogin = await browser.get(`/authorize?${query}`);
    const afterPassword = await signIn(browser, await browser.get(toLogin.location!), 'root', 'root-password');
    const toStepUp = await browser.get(afterPassword.location!);
    expect(toStepUp.location).toMatch(/^\/login\/second-factor\?return_to=/);
    const toEnrol = await browser.get(toStepUp.location!);
    expect(toEnrol.location).toMatch(/^\/account\/security\?return_to=/);
    const returnTo = decodeURIComponent(toEnrol.location!.split('return_to=')[1]!);
    const page = await browser.get(toEnrol.location!);
    expect(text(page)).toContain('Ask an administrator to run latchkey users mfa-enroll root');
    expect(page.body).not.toContain('To continue, set up a second factor');
    // No way around it: the set-up pages refuse, and the authorization still wants the factor.
    expect((await browser.get(`/account/security/totp?return_to=${encodeURIComponent(returnTo)}`)).status).toBe(403);
    expect((await browser.get(returnTo)).location).toMatch(/^\/login\/second-factor\?return_to=/);
    await expectNoFactor('root');

    // The operator's link, pasted whole into the page's field: on to the set-up, and from there to the client.
    const { link } = await createEnrolmentLink(t.store, issuer, (await t.store.findUserByUsername('root'))!, now());
    const accepted = await browser.post('/account/security/enrol', {
      csrf_token: inputValue(page.body, 'csrf_token')!,
      code: link,
      return_to: inputValue(page.body, 'return_to')!,
    });
    expect(accepted.status).toBe(303);
    expect(accepted.location).toBe(toEnrol.location);
    expect(text(await browser.get(accepted.location!))).toContain('Your enrolment link was accepted');
    const { page: codes } = await enrollTotp(t, browser, returnTo);
    expect(shownRecoveryCodes(codes.body)).toHaveLength(10);
    const final = await browser.get(returnTo);
    const code = new URL(final.location!).searchParams.get('code')!;
    const tokens = await t.app.inject({
      method: 'POST',
      url: '/oauth/token',
      ...form({ grant_type: 'authorization_code', client_id: 'web', code, redirect_uri: 'https://app.example.com/cb', code_verifier: verifier }),
    });
    expect(decodeJwt(tokens.json<{ id_token: string }>().id_token)).toMatchObject({ amr: ['pwd', 'otp'], acr: 'urn:latchkey:mfa' });
  });

  it('LATCHKEY_MFA=required, on the device path: no Allow button, and no factor, with a password alone', async () => {
    const browser = await setUp({ LATCHKEY_MFA: 'required' });
    const device = await t.app.inject({ method: 'POST', url: '/oauth/device/code', ...form({ client_id: 'latchkey-cli', scope: 'openid' }) });
    const userCode = device.json<{ user_code: string }>().user_code;
    const entry = await browser.get(`/activate?user_code=${userCode}`);
    const login = await browser.follow(await browser.post('/activate', { csrf_token: inputValue(entry.body, 'csrf_token')!, user_code: userCode }));
    expect(login.body).toContain('action="/login"');
    const afterPassword = await browser.follow(await signIn(browser, login, 'root', 'root-password'));
    expect(afterPassword.body).not.toContain('name="decision"');
    expect(text(afterPassword)).toContain('Ask an administrator to run latchkey users mfa-enroll root');
    await expectNoFactor('root');
  });
});

describe('the sanctioned ways', () => {
  it('an enrolment link: opening it spends nothing; signed out it asks for the sign-in and comes back; Continue spends it; then an app or a passkey can be set up', async () => {
    const browser = await setUp();
    const root = (await t.store.findUserByUsername('root'))!;
    const { link } = await createEnrolmentLink(t.store, issuer, root, now());
    const path = link.slice(issuer.length);
    expect(path).toMatch(/^\/account\/security\/enrol\?code=lk_fe_[A-Za-z0-9_-]{43}$/);
    const toLogin = await browser.get(path);
    expect(toLogin.location).toBe(`/login?return_to=${encodeURIComponent(path)}`);
    const back = await signIn(browser, await browser.get(toLogin.location!), 'root', 'root-password');
    expect(back.location).toBe(path);
    for (let i = 0; i < 3; i++) expect((await browser.get(path)).status).toBe(200);
    expect(t.store.db.prepare("SELECT used_at FROM email_tokens WHERE purpose = 'factor_enrolment'").all()).toEqual([{ used_at: null }]);
    const page = await browser.get(path);
    expect(text(page)).toContain('An administrator gave you this link so that you can set up the first second factor of your account root');
    expect(page.headers['referrer-policy']).toBe('no-referrer');
    // Without the form's token nothing is spent.
    expect((await browser.post('/account/security/enrol', { code: inputValue(page.body, 'code')! })).status).toBe(403);
    const accepted = await browser.post('/account/security/enrol', { csrf_token: inputValue(page.body, 'csrf_token')!, code: inputValue(page.body, 'code')! });
    expect(accepted.location).toBe('/account/security');
    const authenticator = new SoftAuthenticator(issuer);
    const registered = await registerPasskey(browser, authenticator);
    expect(registered.status, registered.body.slice(0, 300)).toBe(200);
    expect(shownRecoveryCodes(registered.body)).toHaveLength(10);
    expect(await t.store.listPasskeys(root.id)).toHaveLength(1);
    // From then on the factor guards the changes: more factors need a session that used one (this one did).
    const { page: more } = await enrollTotp(t, browser);
    expect(more.status).toBe(303);
    expect(await t.store.findTotp(root.id)).toBeDefined();
    const used = await t.app.services.auditTrail.flush().then(() => t.store.listAuditEvents({ event: 'second_factor.enrolment_link_used', limit: 10 }));
    expect(used).toHaveLength(1);
  });

  it('works once, for its own account, within its lifetime; a new link cancels the one before; garbage is a 400', async () => {
    const browser = await setUp();
    await addUser(t.store, 'ops', 'ops-password', { roles: ['admin'] });
    const root = (await t.store.findUserByUsername('root'))!;
    const ops = (await t.store.findUserByUsername('ops'))!;
    await signInAs(browser);
    const csrf = inputValue((await browser.get('/account/security')).body, 'csrf_token')!;
    const use = (code: string) => browser.post('/account/security/enrol', { csrf_token: csrf, code });

    // Another account's link: refused, and spent (it was seen by someone it was not meant for).
    const forOps = await createEnrolmentLink(t.store, issuer, ops, now());
    const other = await use(forOps.link);
    expect(other.status).toBe(400);
    expect(text(other)).toContain('This enrolment link has expired or was used');
    expect(t.store.db.prepare('SELECT used_at FROM email_tokens WHERE token_hash = ?').get(sha256(new URL(forOps.link).searchParams.get('code')!))).toEqual({
      used_at: now(),
    });

    // A newer link cancels the older.
    const first = await createEnrolmentLink(t.store, issuer, root, now());
    const second = await createEnrolmentLink(t.store, issuer, root, now());
    expect(second.replaced).toBe(1);
    expect((await use(first.link)).status).toBe(400);

    // Past its lifetime: refused.
    const short = await createEnrolmentLink(t.store, issuer, root, now(), 60);
    t.clock.advance(61);
    expect((await use(short.link)).status).toBe(400);
    await expectNoFactor('root');

    // Garbage: a clear 400, never a 500, nothing spent.
    for (const code of [
      '',
      'lk_fe_short',
      `lk_fe_${'A'.repeat(43)}`,
      `lk_pr_${'A'.repeat(43)}`,
      `${issuer}/account/security/enrol?code=nope`,
      'x'.repeat(2048),
      'lk_fe_\u0000',
    ]) {
      const res = await use(code);
      expect(res.status, code.slice(0, 40)).toBe(400);
    }
    expect((await browser.get('/account/security/enrol?code=garbage')).status).toBe(400);
    expect((await browser.get('/account/security/enrol')).status).toBe(400);

    // The code alone (without the address) works too, once.
    const fresh = await createEnrolmentLink(t.store, issuer, root, now());
    const code = new URL(fresh.link).searchParams.get('code')!;
    expect((await use(code)).status).toBe(303);
    const again = newBrowser();
    await signInAs(again);
    const againCsrf = inputValue((await again.get('/account/security')).body, 'csrf_token')!;
    expect((await again.post('/account/security/enrol', { csrf_token: againCsrf, code })).status).toBe(400);
  });

  it('the permit it leaves is this browser’s and this sign-in’s only', async () => {
    const browser = await setUp();
    await signInAs(browser);
    await acceptEnrolmentLink(t, browser, 'root');
    expect((await browser.get('/account/security/totp')).status).toBe(200);
    // Another browser signed in as root (a thief with the password) gets nothing from it.
    const thief = newBrowser();
    await signInAs(thief);
    expect((await thief.get('/account/security/totp')).status).toBe(403);
    // Nor a copy of its cookies in another browser with a session of its own.
    for (const [name, value] of browser.cookies) if (name.includes('enrolment')) thief.cookies.set(name, value);
    expect((await thief.get('/account/security/totp')).status).toBe(403);
    // Nor the same browser once the sign-in is old (sign in again), nor after a new sign-in.
    t.clock.advance(16 * 60);
    expect((await browser.get('/account/security/totp')).status).toBe(401);
    await signInAs(browser);
    expect((await browser.get('/account/security/totp')).status).toBe(403);
    await expectNoFactor('root');
  });

  it('another administrator makes a link on the user’s console page, shown once; not for someone with a factor', async () => {
    const browser = await setUp();
    await addUser(t.store, 'ops', 'ops-password', { roles: ['admin'] });
    await signInAs(browser);
    await acceptEnrolmentLink(t, browser, 'root');
    await enrollTotp(t, browser);
    const ops = (await t.store.findUserByUsername('ops'))!;
    const userPage = await browser.get(`/admin/users/${ops.id}`);
    expect(userPage.status).toBe(200);
    expect(userPage.body).toContain(`action="/admin/users/${ops.id}/second-factors/enrolment-link"`);
    const made = await browser.post(`/admin/users/${ops.id}/second-factors/enrolment-link`, { csrf_token: inputValue(userPage.body, 'csrf_token')! });
    expect(made.status).toBe(200);
    const link = decodeEntities(made.body.match(/<code class="secret" id="enrolment-link">([^<]+)<\/code>/)![1]!);
    expect(link).toMatch(/^http:\/\/localhost:8080\/account\/security\/enrol\?code=lk_fe_/);
    await t.app.services.auditTrail.flush();
    const [event] = await t.store.listAuditEvents({ event: 'second_factor.enrolment_link_created', limit: 10 });
    expect(event).toMatchObject({ actor: 'root', userId: ops.id });
    expect(JSON.stringify(event)).not.toContain('lk_fe_');

    // ops, with the link: a factor of their own.
    const opsBrowser = newBrowser();
    await signInAs(opsBrowser, 'ops');
    const opened = await opsBrowser.get(link.slice(issuer.length));
    expect(
      (await opsBrowser.post('/account/security/enrol', { csrf_token: inputValue(opened.body, 'csrf_token')!, code: inputValue(opened.body, 'code')! })).status,
    ).toBe(303);
    expect((await enrollTotp(t, opsBrowser)).page.status).toBe(200);

    // ops has a factor now: no link is made for them.
    const again = await browser.get(`/admin/users/${ops.id}`);
    expect(again.body).not.toContain('second-factors/enrolment-link');
    const refused = await browser.post(`/admin/users/${ops.id}/second-factors/enrolment-link`, { csrf_token: inputValue(again.body, 'csrf_token')! });
    expect(refused.status).toBe(409);
    expect(text(refused)).toContain('They have a second factor already');
  });

  it('an administrator cannot remove their last factor (a new first one would need a link again)', async () => {
    const browser = await setUp();
    await signInAs(browser);
    await acceptEnrolmentLink(t, browser, 'root');
    await enrollTotp(t, browser);
    const overview = await browser.get('/account/security');
    const removal = await browser.post('/account/security/totp/remove', { csrf_token: inputValue(overview.body, 'csrf_token')! });
    expect(removal.status).toBe(409);
    expect(text(removal)).toContain('Your account holds the admin role');
    expect(await t.store.findTotp(await userId('root'))).toBeDefined();
  });
});

describe('people without the admin role', () => {
  it('set up their first factor themselves, an authenticator app or a passkey, and may remove it (optional mode)', async () => {
    const browser = await setUp();
    await signInAs(browser, 'alice');
    const overview = await browser.get('/account/security');
    expect(overview.body).not.toContain('enrolment link');
    const { page } = await enrollTotp(t, browser);
    expect(page.status).toBe(200);
    await addUser(t.store, 'bob', 'bob-password');
    const bob = newBrowser();
    await signInAs(bob, 'bob');
    expect((await registerPasskey(bob, new SoftAuthenticator(issuer))).status).toBe(200);
    expect(await t.store.listPasskeys(await userId('bob'))).toHaveLength(1);
    const csrf = inputValue((await browser.get('/account/security')).body, 'csrf_token')!;
    expect((await browser.post('/account/security/totp/remove', { csrf_token: csrf })).status).toBe(303);
  });
});

describe('a fresh server', () => {
  /** Runs `latchkey <args>` through the executable's entry point, in this process, on the test's database. */
  async function latchkey(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
    const stdout = new PassThrough();
    const stderr = new PassThrough();
    const stdin = new PassThrough();
    stdin.end('');
    let out = '';
    let err = '';
    stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
    const code = await main(args, { stdout, stderr, stdin, env: { LATCHKEY_DB: join(dir!, 'latchkey.db'), LATCHKEY_ISSUER: issuer } });
    return { code, stdout: out, stderr: err };
  }

  it('LATCHKEY_MFA=required: the bootstrap administrator gets into the console through latchkey users mfa-enroll admin, and nothing else', async () => {
    dir = mkdtempSync(join(tmpdir(), 'latchkey-bootstrap-'));
    t = await testApp({ LATCHKEY_ISSUER: issuer, LATCHKEY_MFA: 'required' }, { path: join(dir, 'latchkey.db') });
    // The command reads the real clock: the server's clock is set to it.
    t.clock.set(Math.floor(Date.now() / 1000));
    const admin = (await t.store.findUserByUsername('admin'))!;
    expect(admin.roles).toEqual(['admin']);
    const browser = newBrowser();
    const toLogin = await browser.get('/admin');
    const afterPassword = await signIn(browser, await browser.get(toLogin.location!), 'admin', 'bootstrap-password');
    expect(afterPassword.location).toBe('/admin');
    const stepUp = await browser.get('/admin');
    const security = await browser.follow(stepUp);
    expect(text(security)).toContain('Ask an administrator to run latchkey users mfa-enroll admin');
    expect((await browser.get('/account/security/totp')).status).toBe(403);

    const made = await latchkey(['users', 'mfa-enroll', 'admin']);
    expect(made.code, made.stderr).toBe(0);
    const link = made.stdout.trim();
    expect(link).toMatch(/^http:\/\/localhost:8080\/account\/security\/enrol\?code=lk_fe_[A-Za-z0-9_-]{43}$/);
    expect(made.stderr).toContain('One-time enrolment link for admin');
    expect(made.stderr).not.toContain(link);
    const auditLine = made.stderr.split('\n').find((l) => l.includes('second_factor.enrolment_link_created'));
    expect(JSON.parse(auditLine!)).toMatchObject({ source: 'cli', username: 'admin', replaced: 0 });
    // A second one replaces it; the first no longer works.
    const second = await latchkey(['users', 'mfa-enroll', 'admin', '--expires-in', '600']);
    expect(second.stderr).toContain('The link made before no longer works.');
    const csrf = inputValue(security.body, 'csrf_token')!;
    const returnTo = inputValue(security.body, 'return_to')!;
    expect((await browser.post('/account/security/enrol', { csrf_token: csrf, code: link, return_to: returnTo })).status).toBe(400);
    const accepted = await browser.post('/account/security/enrol', { csrf_token: csrf, code: second.stdout.trim(), return_to: returnTo });
    expect(accepted.status).toBe(303);
    const { page } = await enrollTotp(t, browser, returnTo);
    expect(shownRecoveryCodes(page.body)).toHaveLength(10);
    const consolePage = await browser.get('/admin');
    expect(consolePage.status).toBe(200);
    expect(text(consolePage)).toContain('Admin console');

    // Now that admin has a factor, no link is made; bad input is a clear error.
    const refused = await latchkey(['users', 'mfa-enroll', 'admin']);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('admin has a second factor already');
    expect((await latchkey(['users', 'mfa-enroll', 'nobody'])).stderr).toContain('no user "nobody"');
    expect((await latchkey(['users', 'mfa-enroll', 'admin', '--expires-in', '30'])).code).toBe(2);
    expect((await latchkey(['users', 'mfa-enroll', 'admin', '--expires-in', String(8 * 86400)])).code).toBe(2);
    expect((await latchkey(['users', 'mfa-enroll'])).code).toBe(2);
    // --cancel: an unused link stops working.
    await addUser(t.store, 'ops', 'ops-password', { roles: ['admin'] });
    const forOps = await latchkey(['users', 'mfa-enroll', 'ops']);
    expect(forOps.code).toBe(0);
    const cancelled = await latchkey(['users', 'mfa-enroll', 'ops', '--cancel']);
    expect(cancelled.stderr).toContain('Cancelled the enrolment link of ops');
    const opsBrowser = newBrowser();
    await signInAs(opsBrowser, 'ops');
    const opsCsrf = inputValue((await opsBrowser.get('/account/security')).body, 'csrf_token')!;
    expect((await opsBrowser.post('/account/security/enrol', { csrf_token: opsCsrf, code: forOps.stdout.trim() })).status).toBe(400);
  });
});
