/**
 * Second factors through the pages, with app.inject and a manual clock: setting up an
 * authenticator app, the second step after the password (TOTP single use, ±1 step of drift, wrong
 * codes in the back-off), recovery codes, step-up by acr_values and LATCHKEY_MFA, the device flow,
 * and the guards of /account/security. Passkeys: test/routes/passkeys.test.ts.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { orderedSecretDigest } from '../../src/crypto/ordered_secrets.js';
import { secretPrefix, sha256 } from '../../src/crypto/secrets.js';
import { decodeJwt } from 'jose';
import { totpCodeAt } from '../../src/mfa/totp.js';
import { addClient, addUser, deviceGrantType, form, pkcePair, testApp, type TestApp } from '../helpers/app.js';
import { Browser, inputValue, injectTransport, signIn, type BrowserResponse } from '../helpers/browser.js';
import { answerSecondStep, enrollTotp, shownRecoveryCodes } from '../helpers/mfa.js';

let t: TestApp;
afterEach(() => t.close());

async function setUp(env: Record<string, string> = {}) {
  t = await testApp(env);
  await addUser(t.store, 'alice', 'alice-password');
  await addClient(t.store, 'web', { redirectUris: ['https://app.example.com/cb'], grantTypes: ['authorization_code'], firstParty: true });
  return new Browser(injectTransport(t.app));
}

const signInAs = async (browser: Browser, returnTo = '/activate') =>
  signIn(browser, await browser.get(`/login?return_to=${encodeURIComponent(returnTo)}`), 'alice', 'alice-password');
const signedIn = async (browser: Browser) => (await browser.get('/login')).status === 303;

/** Alice, signed in, with an authenticator app; then signed out. Returns the app's secret. */
async function aliceWithTotp(browser: Browser): Promise<string> {
  expect((await signInAs(browser)).status).toBe(303);
  const { secret, page } = await enrollTotp(t, browser);
  expect(page.status).toBe(200); // the recovery codes, shown once
  await browser.post('/logout', {});
  t.clock.advance(60); // past the enrolment code's step
  return secret;
}

function authorizeUrl(extra: Record<string, string> = {}) {
  const { verifier, challenge } = pkcePair();
  const query = new URLSearchParams({
    response_type: 'code',
    client_id: 'web',
    redirect_uri: 'https://app.example.com/cb',
    scope: 'openid',
    state: 's1',
    code_challenge: challenge,
    code_challenge_method: 'S256',
    ...extra,
  });
  return { url: `/authorize?${query}`, verifier };
}

async function redeem(location: string, verifier: string) {
  const code = new URL(location).searchParams.get('code')!;
  const res = await t.app.inject({
    method: 'POST',
    url: '/oauth/token',
    ...form({ grant_type: 'authorization_code', client_id: 'web', code, redirect_uri: 'https://app.example.com/cb', code_verifier: verifier }),
  });
  expect(res.statusCode, res.body).toBe(200);
  return res.json<{ access_token: string; id_token: string }>();
}

describe('setting up an authenticator app', () => {
  it('a QR code of the otpauth URI and the secret as text; confirmed with a code; ten recovery codes shown once', async () => {
    const browser = await setUp();
    await signInAs(browser);
    const setup = await browser.get('/account/security/totp');
    expect(setup.status).toBe(200);
    expect(setup.body).toContain('<svg');
    expect(setup.body).toMatch(/<code class="secret" id="totp-secret">[A-Z2-7]{4}( [A-Z2-7]{4}){7}<\/code>/);
    expect(setup.headers['cache-control']).toBe('no-store');
    const { secret, page } = await enrollTotp(t, browser);
    expect(secret).toMatch(/^[A-Z2-7]{32}$/);
    const codes = shownRecoveryCodes(page.body);
    expect(codes).toHaveLength(10);
    expect(new Set(codes).size).toBe(10);
    for (const code of codes) expect(code).toMatch(/^[a-z2-9]{5}-[a-z2-9]{5}$/);
    // Stored sealed, bound to the user; never in the clear.
    const user = (await t.store.findUserByUsername('alice'))!;
    const stored = (await t.store.findTotp(user.id))!;
    expect(stored.secret).toMatch(/^lk1\./);
    expect(stored.secret).not.toContain(secret);
    expect(await t.store.countRecoveryCodes(user.id)).toBe(10);
    // The overview says so, and the page does not show the codes again.
    const overview = await browser.get('/account/security');
    expect(overview.body).toContain('On since');
    expect(overview.body).toContain('10 of 10 unused');
    for (const code of codes) expect(overview.body).not.toContain(code);
  });

  it('a wrong confirmation code turns nothing on', async () => {
    const browser = await setUp();
    await signInAs(browser);
    const setup = await browser.get('/account/security/totp');
    const res = await browser.post('/account/security/totp', {
      csrf_token: inputValue(setup.body, 'csrf_token')!,
      setup: inputValue(setup.body, 'setup')!,
      otp: '000000',
    });
    expect(res.status).toBe(400);
    expect(res.body).toContain('That code isn’t right');
    expect(await t.store.findTotp((await t.store.findUserByUsername('alice'))!.id)).toBeUndefined();
  });

  it('a set-up form is bound to its person and expires; without its CSRF token it is refused', async () => {
    const browser = await setUp();
    await signInAs(browser);
    const setup = await browser.get('/account/security/totp');
    const secret = setup.body.match(/id="totp-secret">([^<]+)</)![1]!.replace(/\s/g, '');
    const fields = { csrf_token: inputValue(setup.body, 'csrf_token')!, setup: inputValue(setup.body, 'setup')!, otp: totpCodeAt(secret, t.clock()) };
    expect((await browser.post('/account/security/totp', { ...fields, csrf_token: '' })).status).toBe(403);
    // Another person cannot use alice's sealed set-up.
    await addUser(t.store, 'mallory', 'mallory-password');
    const other = new Browser(injectTransport(t.app));
    await signIn(other, await other.get('/login'), 'mallory', 'mallory-password');
    const otherPage = await other.get('/account/security');
    expect((await other.post('/account/security/totp', { ...fields, csrf_token: inputValue(otherPage.body, 'csrf_token')! })).status).toBe(400);
    // Eleven minutes later the set-up is over (and the sign-in is no longer recent either).
    t.clock.advance(11 * 60);
    const late = await browser.post('/account/security/totp', { ...fields, otp: totpCodeAt(secret, t.clock()) });
    expect(late.status).toBe(400);
    expect(late.body).toContain('expired');
  });
});

describe('the second step after the password', () => {
  it('no session until the code; then signed in with amr pwd+otp and acr urn:latchkey:mfa', async () => {
    const browser = await setUp();
    const secret = await aliceWithTotp(browser);
    const { url, verifier } = authorizeUrl();
    const toLogin = await browser.get(url);
    const afterPassword = await browser.follow(await signIn(browser, await browser.get(toLogin.location!), 'alice', 'alice-password'));
    expect(afterPassword.status).toBe(200);
    expect(afterPassword.body).toContain('action="/login/second-factor"');
    expect(afterPassword.body).toMatch(/<input id="otp" name="otp"/);
    expect(await signedIn(browser)).toBe(false); // the password alone opened nothing
    const done = await answerSecondStep(browser, afterPassword, totpCodeAt(secret, t.clock()));
    expect(done.status).toBe(303);
    const final = await browser.get(done.location!);
    const tokens = await redeem(final.location!, verifier);
    expect(decodeJwt(tokens.id_token)).toMatchObject({ amr: ['pwd', 'otp'], acr: 'urn:latchkey:mfa' });
    expect(decodeJwt(tokens.access_token)).toMatchObject({ amr: ['pwd', 'otp'], acr: 'urn:latchkey:mfa' });
  });

  it('a TOTP code is single use: the same code again, in the same window, is refused', async () => {
    const browser = await setUp();
    const secret = await aliceWithTotp(browser);
    const code = totpCodeAt(secret, t.clock());
    const first = await browser.follow(await signInAs(browser));
    expect((await answerSecondStep(browser, first, code)).status).toBe(303);
    await browser.post('/logout', {});
    const again = await browser.follow(await signInAs(browser));
    const replay = await answerSecondStep(browser, again, code);
    expect(replay.status).toBe(401);
    expect(replay.body).toContain('used already');
    expect(await signedIn(browser)).toBe(false);
  });

  it('±1 step of drift is accepted; two steps off is not', async () => {
    const browser = await setUp();
    const secret = await aliceWithTotp(browser);
    let page = await browser.follow(await signInAs(browser));
    expect((await answerSecondStep(browser, page, totpCodeAt(secret, t.clock() - 60))).status).toBe(401);
    page = await browser.follow(await signInAs(browser));
    expect((await answerSecondStep(browser, page, totpCodeAt(secret, t.clock() + 60))).status).toBe(401);
    page = await browser.follow(await signInAs(browser));
    expect((await answerSecondStep(browser, page, totpCodeAt(secret, t.clock() - 30))).status).toBe(303);
  });

  it('wrong codes count toward the sign-in back-off (429), and a right code is then refused too', async () => {
    const browser = await setUp();
    const secret = await aliceWithTotp(browser);
    const page = await browser.follow(await signInAs(browser));
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) statuses.push((await answerSecondStep(browser, page, String(100000 + i))).status);
    expect(statuses.slice(0, 4)).toEqual([401, 401, 401, 401]);
    expect(statuses).toContain(429);
    const blocked = await answerSecondStep(browser, page, totpCodeAt(secret, t.clock()));
    expect(blocked.status).toBe(429);
    expect(blocked.headers['retry-after']).toBeDefined();
  });

  it('someone holding the password cannot guess codes by signing in again between guesses; the owner’s browser still gets in', async () => {
    const owner = await setUp();
    const secret = await aliceWithTotp(owner);
    const guesser = new Browser(injectTransport(t.app));
    const statuses: number[] = [];
    // Each round: the right password (which clears the password back-off), then two wrong codes.
    for (let round = 0; round < 5; round++) {
      const first = await signInAs(guesser);
      expect(first.location).toMatch(/^\/login\/second-factor/);
      const step = await guesser.get(first.location!);
      for (let i = 0; i < 2; i++) statuses.push((await answerSecondStep(guesser, step, String(200000 + round * 2 + i))).status);
    }
    expect(statuses).toEqual(Array(10).fill(401));
    const step = await guesser.get((await signInAs(guesser)).location!);
    const held = await answerSecondStep(guesser, step, totpCodeAt(secret, t.clock()));
    expect(held.status).toBe(429);
    expect(held.body).toContain('Please wait 1 minute');
    expect(held.headers['retry-after']).toBe('60');
    // The owner's own browser is not held by the guesser's failures.
    const ownerStep = await owner.get((await signInAs(owner)).location!);
    expect((await answerSecondStep(owner, ownerStep, totpCodeAt(secret, t.clock()))).status).toBe(303);
    // A back-off, not a lock: a minute later the right code works from anywhere again.
    t.clock.advance(61);
    const later = await guesser.get((await signInAs(guesser)).location!);
    expect((await answerSecondStep(guesser, later, totpCodeAt(secret, t.clock()))).status).toBe(303);
  });

  it('a recovery code signs in once, whatever its case or dashes; the same code twice does not', async () => {
    const browser = await setUp();
    await signInAs(browser);
    const { page } = await enrollTotp(t, browser);
    const [code] = shownRecoveryCodes(page.body);
    await browser.post('/logout', {});
    let step = await browser.follow(await signInAs(browser));
    const used = await answerSecondStep(browser, step, ` ${code!.toUpperCase().replace('-', ' ')} `);
    expect(used.status).toBe(303);
    expect(await t.store.countRecoveryCodes((await t.store.findUserByUsername('alice'))!.id)).toBe(9);
    await browser.post('/logout', {});
    step = await browser.follow(await signInAs(browser));
    expect((await answerSecondStep(browser, step, code!)).status).toBe(401);
  });

  it('the second step expires after five minutes, and a new password in between ends it', async () => {
    const browser = await setUp();
    const secret = await aliceWithTotp(browser);
    let step = await browser.follow(await signInAs(browser));
    t.clock.advance(301);
    const late = await answerSecondStep(browser, step, totpCodeAt(secret, t.clock()));
    expect(late.status).toBe(401);
    expect(late.body).toContain('expired');
    step = await browser.follow(await signInAs(browser));
    await t.store.setUserPassword('alice', 'irrelevant-hash', Math.floor(t.clock()));
    expect((await answerSecondStep(browser, step, totpCodeAt(secret, t.clock()))).status).toBe(401);
    expect(await signedIn(browser)).toBe(false);
  });

  it('without its CSRF token the code is refused; without a first step the page sends to the sign-in', async () => {
    const browser = await setUp();
    const secret = await aliceWithTotp(browser);
    const step = await browser.follow(await signInAs(browser));
    expect((await browser.post('/login/second-factor', { otp: totpCodeAt(secret, t.clock()), return_to: '/activate' })).status).toBe(403);
    const stranger = new Browser(injectTransport(t.app));
    expect((await stranger.get('/login/second-factor')).location).toMatch(/^\/login\?return_to=/);
    // Someone else's browser cannot answer alice's second step (the state is in her cookie).
    expect((await answerSecondStep(stranger, step, totpCodeAt(secret, t.clock()))).status).toBe(403);
  });

  it('the first step, copied into another browser, is nothing there', async () => {
    const browser = await setUp();
    const secret = await aliceWithTotp(browser);
    const first = await signInAs(browser);
    expect(browser.cookies.get('latchkey_second_step')).toBeDefined();
    const thief = new Browser(injectTransport(t.app));
    await thief.get('/login'); // a browser of its own, with its own cookies
    thief.cookies.set('latchkey_second_step', browser.cookies.get('latchkey_second_step')!);
    const there = await thief.get(first.location!);
    expect(there.location).toMatch(/^\/login\?/);
    // In the browser it was made in, it still works.
    const step = await browser.get(first.location!);
    expect((await answerSecondStep(browser, step, totpCodeAt(secret, t.clock()))).status).toBe(303);
  });

  it('prompt=login asks for the second factor again', async () => {
    const browser = await setUp();
    const secret = await aliceWithTotp(browser);
    const first = await browser.follow(await signInAs(browser));
    await answerSecondStep(browser, first, totpCodeAt(secret, t.clock()));
    t.clock.advance(30);
    const { url } = authorizeUrl({ prompt: 'login' });
    const toLogin = await browser.get(url);
    expect(toLogin.location).toMatch(/fresh=1$/);
    const step = await browser.follow(await signIn(browser, await browser.get(toLogin.location!), 'alice', 'alice-password'));
    expect(step.body).toContain('action="/login/second-factor"');
    const done = await answerSecondStep(browser, step, totpCodeAt(secret, t.clock()));
    expect(new URL((await browser.get(done.location!)).location!).searchParams.get('code')).toBeTruthy();
  });
});

describe('step-up: acr_values and LATCHKEY_MFA', () => {
  it('acr_values=urn:latchkey:mfa for someone with no factor: set one up, then on to the code (acr mfa)', async () => {
    const browser = await setUp();
    const { url, verifier } = authorizeUrl({ acr_values: 'urn:latchkey:mfa' });
    const toLogin = await browser.get(url);
    const afterPassword = await signIn(browser, await browser.get(toLogin.location!), 'alice', 'alice-password');
    // Signed in with the password; the authorization then wants a second factor she has not got.
    const toStepUp = await browser.get(afterPassword.location!);
    expect(toStepUp.location).toMatch(/^\/login\/second-factor\?return_to=/);
    const toEnrol = await browser.get(toStepUp.location!);
    expect(toEnrol.location).toMatch(/^\/account\/security\?return_to=/);
    const enrolPage = await browser.get(toEnrol.location!);
    expect(enrolPage.body).toContain('To continue, set up a second factor');
    const returnTo = decodeURIComponent(toEnrol.location!.split('return_to=')[1]!);
    const { page } = await enrollTotp(t, browser, returnTo);
    expect(shownRecoveryCodes(page.body)).toHaveLength(10);
    const continueTo = page.body.match(/<a class="button" href="([^"]+)">I have saved them/)![1]!.replace(/&amp;/g, '&');
    expect(continueTo).toBe(returnTo);
    const final = await browser.get(continueTo);
    const tokens = await redeem(final.location!, verifier);
    expect(decodeJwt(tokens.id_token)).toMatchObject({ acr: 'urn:latchkey:mfa', amr: ['pwd', 'otp'] });
  });

  it('a session from before the person set up a factor must add it (optional mode); with prompt=none: interaction_required', async () => {
    const browser = await setUp();
    const elsewhere = new Browser(injectTransport(t.app));
    await signInAs(elsewhere); // an older, password-only session
    const secret = await aliceWithTotp(browser);
    const none = await elsewhere.get(authorizeUrl({ prompt: 'none' }).url);
    expect(new URL(none.location!).searchParams.get('error')).toBe('interaction_required');
    const { url, verifier } = authorizeUrl();
    const toStepUp = await elsewhere.get(url);
    expect(toStepUp.location).toMatch(/^\/login\/second-factor\?return_to=/);
    const step = await elsewhere.get(toStepUp.location!);
    expect(step.body).toContain('This needs your second factor');
    const done = await answerSecondStep(elsewhere, step, totpCodeAt(secret, t.clock()));
    const tokens = await redeem((await elsewhere.get(done.location!)).location!, verifier);
    expect(decodeJwt(tokens.id_token).acr).toBe('urn:latchkey:mfa');
  });

  it('a step-up is not a fresh sign-in: it keeps the sign-in time and the session end, and does not make the account page recent', async () => {
    const browser = await setUp();
    const elsewhere = new Browser(injectTransport(t.app));
    await signInAs(elsewhere); // password only, at t0
    const signedInAt = Math.floor(t.clock());
    const secret = await aliceWithTotp(browser);
    t.clock.advance(20 * 60); // well after the 15 minutes the account page asks for
    const { url, verifier } = authorizeUrl();
    const step = await elsewhere.get((await elsewhere.get(url)).location!);
    const done = await answerSecondStep(elsewhere, step, totpCodeAt(secret, t.clock()));
    expect(done.status).toBe(303);
    // The session ends when the password sign-in's would have (12 hours after it), not 12 hours from now.
    const cookie = done.headers['set-cookie']!.split('\n').find((c) => c.startsWith('latchkey_session='))!;
    expect(Number(cookie.match(/Max-Age=(\d+)/i)![1])).toBe(43200 - (Math.floor(t.clock()) - signedInAt));
    const tokens = await redeem((await elsewhere.get(done.location!)).location!, verifier);
    const claims = decodeJwt(tokens.id_token);
    expect(claims.acr).toBe('urn:latchkey:mfa');
    expect(claims.auth_time).toBe(signedInAt);
    // max_age is measured from the password, so a 10-minute max_age asks for a whole sign-in.
    const strict = await elsewhere.get(authorizeUrl({ max_age: '600' }).url);
    expect(strict.location).toMatch(/^\/login\?/);
    // Nor is the account page open to it: changing factors needs a recent sign-in.
    const page = await elsewhere.get('/account/security');
    expect(page.body).toContain('sign in again</a> first');
    const setup = await elsewhere.get('/account/security/totp');
    expect(setup.status).toBe(401);
    // And a multi-factor session is not raised again: the second step sends it on.
    const again = await elsewhere.get('/login/second-factor?return_to=%2Factivate');
    expect(again.location).toBe('/login?return_to=%2Factivate');
    expect((await elsewhere.get(again.location!)).location).toBe('/activate');
  });

  it('a session that recorded no first factor (made before amr was kept) signs in again rather than looping', async () => {
    const browser = await setUp();
    await aliceWithTotp(browser);
    // As a session from before the upgrade looks: no amr.
    const user = (await t.store.findUserByUsername('alice'))!;
    const id = 'a-session-from-before-the-upgrade';
    const now = Math.floor(t.clock());
    await t.store.createSession(
      {
        idHash: sha256(id),
        userId: user.id,
        authTime: now,
        amr: [],
        createdAt: now,
        expiresAt: now + 3600,
        interactionId: undefined,
        id: 'sid-from-before-the-upgrade',
        ip: undefined,
        userAgent: undefined,
        lastSeenAt: undefined,
      },
      { userTokensRevokedAt: user.tokensRevokedAt },
    );
    browser.cookies.set('latchkey_session', id);
    const { url } = authorizeUrl();
    const toStepUp = await browser.get(url);
    expect(toStepUp.location).toMatch(/^\/login\/second-factor\?return_to=/);
    const next = await browser.get(toStepUp.location!);
    expect(next.location).toMatch(/^\/login\?fresh=1&return_to=%2Fauthorize%2Fcontinue/);
    expect((await browser.get(next.location!)).body).toContain('action="/login"');
  });

  it('LATCHKEY_MFA=off: no second step even with a factor, and a client asking for one is told it cannot be had', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'latchkey-mfa-off-'));
    try {
      // Alice sets up an app on a server with second factors; the same database then runs with them off.
      t = await testApp({}, { path: join(dir, 'db.sqlite') });
      await addUser(t.store, 'alice', 'alice-password');
      await addClient(t.store, 'web', { redirectUris: ['https://app.example.com/cb'], grantTypes: ['authorization_code'], firstParty: true });
      await aliceWithTotp(new Browser(injectTransport(t.app)));
      await t.close();
      t = await testApp({ LATCHKEY_MFA: 'off' }, { path: join(dir, 'db.sqlite') });
      const browser = new Browser(injectTransport(t.app));
      expect((await signInAs(browser)).location).toBe('/activate'); // signed in: no second step
      const { url, verifier } = authorizeUrl();
      const tokens = await redeem((await browser.get(url)).location!, verifier);
      expect(decodeJwt(tokens.id_token)).toMatchObject({ amr: ['pwd'], acr: 'urn:latchkey:sfa' });
      const refused = await browser.get(authorizeUrl({ acr_values: 'urn:latchkey:mfa' }).url);
      expect(new URL(refused.location!).searchParams.get('error')).toBe('unmet_authentication_requirements');
      // Other acr values are voluntary: ignored.
      expect((await browser.get(authorizeUrl({ acr_values: 'urn:other:gold' }).url)).location).toMatch(/^https:\/\/app\.example\.com\/cb\?code=/);
      const device = await t.app.inject({ method: 'POST', url: '/oauth/device/code', ...form({ client_id: 'latchkey-cli', acr_values: 'urn:latchkey:mfa' }) });
      expect(device.statusCode).toBe(400);
      expect(device.json().error).toBe('unmet_authentication_requirements');
      expect((await t.app.inject({ method: 'GET', url: '/.well-known/openid-configuration' })).json().acr_values_supported).toBeUndefined();
      const security = await browser.get('/account/security');
      expect(security.body).toContain('This server does not use second factors');
      expect((await browser.get('/account/security/totp')).status).toBe(403);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('LATCHKEY_MFA=required: everyone sets a factor up at their next sign-in, and the last one cannot be removed', async () => {
    const browser = await setUp({ LATCHKEY_MFA: 'required' });
    const { url } = authorizeUrl();
    const toLogin = await browser.get(url);
    const afterPassword = await signIn(browser, await browser.get(toLogin.location!), 'alice', 'alice-password');
    const toStepUp = await browser.get(afterPassword.location!);
    const toEnrol = await browser.get(toStepUp.location!);
    expect(toEnrol.location).toMatch(/^\/account\/security\?return_to=/);
    await enrollTotp(t, browser);
    const overview = await browser.get('/account/security');
    expect(overview.body).toContain('This server requires one');
    const removal = await browser.post('/account/security/totp/remove', { csrf_token: inputValue(overview.body, 'csrf_token')! });
    expect(removal.status).toBe(409);
    expect(await t.store.findTotp((await t.store.findUserByUsername('alice'))!.id)).toBeDefined();
  });

  it('discovery lists the acr values and the acr and amr claims', async () => {
    await setUp();
    const discovery = (await t.app.inject({ method: 'GET', url: '/.well-known/openid-configuration' })).json();
    expect(discovery.acr_values_supported).toEqual(['urn:latchkey:sfa', 'urn:latchkey:mfa']);
    expect(discovery.claims_supported).toEqual(expect.arrayContaining(['acr', 'amr']));
  });
});

describe('the device flow with a second factor', () => {
  async function deviceCode(extra: Record<string, string> = {}) {
    const res = await t.app.inject({ method: 'POST', url: '/oauth/device/code', ...form({ client_id: 'latchkey-cli', scope: 'openid', ...extra }) });
    expect(res.statusCode).toBe(200);
    return res.json<{ device_code: string; user_code: string }>();
  }

  async function approve(browser: Browser, userCode: string, secret: string | undefined): Promise<BrowserResponse> {
    const entry = await browser.get(`/activate?user_code=${userCode}`);
    let page = await browser.follow(await browser.post('/activate', { csrf_token: inputValue(entry.body, 'csrf_token')!, user_code: userCode }));
    if (page.body.includes('action="/login"')) page = await browser.follow(await signIn(browser, page, 'alice', 'alice-password'));
    if (page.body.includes('action="/login/second-factor"')) {
      expect(secret, 'a second step was asked').toBeDefined();
      page = await browser.follow(await answerSecondStep(browser, page, totpCodeAt(secret!, t.clock())));
    }
    expect(page.body).toContain('name="decision"');
    return browser.post('/activate/confirm', {
      csrf_token: inputValue(page.body, 'csrf_token')!,
      user_code: inputValue(page.body, 'user_code')!,
      decision: 'allow',
    });
  }

  it('approved by a person with TOTP: the tokens say pwd+otp', async () => {
    const browser = await setUp();
    const secret = await aliceWithTotp(browser);
    const device = await deviceCode();
    expect((await approve(browser, device.user_code, secret)).status).toBe(200);
    const tokens = await t.app.inject({
      method: 'POST',
      url: '/oauth/token',
      ...form({ grant_type: deviceGrantType, client_id: 'latchkey-cli', device_code: device.device_code }),
    });
    expect(decodeJwt(tokens.json().access_token)).toMatchObject({ amr: ['pwd', 'otp'], acr: 'urn:latchkey:mfa' });
  });

  it('acr_values=urn:latchkey:mfa: a password-only session adds a second factor before the Allow button; a forged Allow approves nothing', async () => {
    const browser = await setUp(); // alice has no factor
    await signInAs(browser);
    const plain = await deviceCode();
    const asking = await deviceCode({ acr_values: 'urn:latchkey:mfa' });
    const grant = () => t.store.findDeviceGrantByDeviceCode(orderedSecretDigest(asking.device_code, secretPrefix.deviceCode));
    expect((await grant())?.acrValues).toBe('urn:latchkey:mfa');
    const confirm = await browser.get(`/activate/confirm?user_code=${asking.user_code}`);
    expect(confirm.location).toMatch(/^\/login\/second-factor\?return_to=%2Factivate%2Fconfirm/);
    // A decision posted anyway, with a token from another request's page, approves nothing.
    const other = await browser.get(`/activate/confirm?user_code=${plain.user_code}`);
    const forged = await browser.post('/activate/confirm', {
      csrf_token: inputValue(other.body, 'csrf_token')!,
      user_code: asking.user_code,
      decision: 'allow',
    });
    expect(forged.status).toBe(403);
    expect((await grant())?.status).toBe('pending');
    // The step-up: no factor yet, so one is set up, and the confirmation follows.
    const toEnrol = await browser.get(confirm.location!);
    expect(toEnrol.location).toMatch(/^\/account\/security\?return_to=/);
    const returnTo = decodeURIComponent(toEnrol.location!.split('return_to=')[1]!);
    await enrollTotp(t, browser, returnTo);
    const page = await browser.get(returnTo);
    expect(page.body).toContain('name="decision"');
    const allowed = await browser.post('/activate/confirm', {
      csrf_token: inputValue(page.body, 'csrf_token')!,
      user_code: inputValue(page.body, 'user_code')!,
      decision: 'allow',
    });
    expect(allowed.status).toBe(200);
    const tokens = await t.app.inject({
      method: 'POST',
      url: '/oauth/token',
      ...form({ grant_type: deviceGrantType, client_id: 'latchkey-cli', device_code: asking.device_code }),
    });
    expect(decodeJwt(tokens.json().access_token)).toMatchObject({ amr: ['pwd', 'otp'], acr: 'urn:latchkey:mfa' });
  });
});

describe('/account/security guards', () => {
  it('signed out: to the sign-in page; an old sign-in: sign in again first; a password-only session of someone with a factor: step up', async () => {
    const browser = await setUp();
    expect((await browser.get('/account/security')).location).toMatch(/^\/login\?return_to=%2Faccount%2Fsecurity/);
    await signInAs(browser);
    t.clock.advance(16 * 60);
    const old = await browser.get('/account/security/totp');
    expect(old.status).toBe(401);
    expect(old.body).toContain('Sign in again');
    t.clock.advance(-16 * 60);
    const elsewhere = new Browser(injectTransport(t.app));
    await signInAs(elsewhere); // password only, before the factor existed
    await enrollTotp(t, browser);
    const user = (await t.store.findUserByUsername('alice'))!;
    const overview = await elsewhere.get('/account/security');
    const removal = await elsewhere.post('/account/security/totp/remove', { csrf_token: inputValue(overview.body, 'csrf_token')! });
    expect(removal.location).toMatch(/^\/login\/second-factor/);
    expect(await t.store.findTotp(user.id)).toBeDefined();
  });

  it('new recovery codes replace the old ones at once', async () => {
    const browser = await setUp();
    await signInAs(browser);
    const { page } = await enrollTotp(t, browser);
    const old = shownRecoveryCodes(page.body);
    const overview = await browser.get('/account/security');
    const fresh = await browser.post('/account/security/recovery-codes', { csrf_token: inputValue(overview.body, 'csrf_token')! });
    const codes = shownRecoveryCodes(fresh.body);
    expect(codes).toHaveLength(10);
    expect(codes.filter((c) => old.includes(c))).toEqual([]);
    await browser.post('/logout', {});
    const step = await browser.follow(await signInAs(browser));
    expect((await answerSecondStep(browser, step, old[0]!)).status).toBe(401);
    expect((await answerSecondStep(browser, step, codes[0]!)).status).toBe(303);
  });

  it('removing the authenticator app ends the second step for that person (optional mode)', async () => {
    const browser = await setUp();
    await signInAs(browser);
    await enrollTotp(t, browser);
    const overview = await browser.get('/account/security');
    expect((await browser.post('/account/security/totp/remove', { csrf_token: inputValue(overview.body, 'csrf_token')! })).location).toBe('/account/security');
    await browser.post('/logout', {});
    expect((await signInAs(browser)).location).toBe('/activate');
  });
});
