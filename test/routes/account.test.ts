/**
 * /account through the pages, with app.inject and a manual clock: the profile, changing
 * the password (with or without ending the other sign-ins), "Devices and apps" with a revoke
 * button per sign-in, "Sign out everywhere", withdrawing consent — and their abuse cases: no
 * session, a forged form, another person's ids, wrong current passwords in the back-off.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { decodeJwt } from 'jose';
import { sha256 } from '../../src/crypto/secrets.js';
import { addClient, addUser, form, pkcePair, testApp, type TestApp } from '../helpers/app.js';
import { Browser, inputValue, injectTransport, signIn } from '../helpers/browser.js';
import { refresh, tokensFor } from '../helpers/flows.js';
import { earlierScryptHash, session } from '../helpers/records.js';

let t: TestApp;
const logLines: string[] = [];
afterEach(() => t.close());

async function setUp(env: Record<string, string> = {}) {
  logLines.length = 0;
  t = await testApp(env, { logLines });
  await addUser(t.store, 'alice', 'alice-password', { email: 'alice@example.com', name: 'Alice' });
  await addUser(t.store, 'bob', 'bob-password');
  await addClient(t.store, 'tv', { name: 'Living Room TV' });
  await addClient(t.store, 'photos', {
    name: 'Photo Editor',
    redirectUris: ['https://photos.example.com/cb'],
    grantTypes: ['authorization_code', 'refresh_token'],
  });
  return new Browser(injectTransport(t.app), 'Mozilla/5.0 (X11; Linux x86_64) Firefox/140.0');
}

const signInAs = async (browser: Browser, who = 'alice') => {
  const res = await signIn(browser, await browser.get('/login?fresh=1&return_to=%2Faccount'), who, `${who}-password`);
  expect(res.status).toBe(303);
  return res;
};
const alice = async () => (await t.store.findUserByUsername('alice'))!;
const audited = () => logLines.map((l) => JSON.parse(l) as { event?: string; [k: string]: unknown }).filter((l) => l.event);
const csrfOf = async (browser: Browser) => inputValue((await browser.get('/account')).body, 'csrf_token')!;
const revokeButtons = (html: string) => [...html.matchAll(/name="revoke" value="([^"]+)"/g)].map((m) => m[1]!);

/** Photo Editor through the Authorization Code flow with consent, in `browser` (signed in). */
async function consentToPhotos(browser: Browser) {
  const { verifier, challenge } = pkcePair();
  const query = new URLSearchParams({
    response_type: 'code',
    client_id: 'photos',
    redirect_uri: 'https://photos.example.com/cb',
    scope: 'openid offline_access',
    state: 's',
    code_challenge: challenge,
    code_challenge_method: 'S256',
  });
  const consent = await browser.follow(await browser.get(`/authorize?${query}`));
  expect(consent.body).toContain('name="decision"');
  const decided = await browser.post('/authorize/decision', {
    csrf_token: inputValue(consent.body, 'csrf_token')!,
    interaction: inputValue(consent.body, 'interaction')!,
    decision: 'allow',
  });
  const code = new URL(decided.location!).searchParams.get('code')!;
  const res = await t.app.inject({
    method: 'POST',
    url: '/oauth/token',
    ...form({ grant_type: 'authorization_code', client_id: 'photos', code, redirect_uri: 'https://photos.example.com/cb', code_verifier: verifier }),
  });
  expect(res.statusCode, res.body).toBe(200);
  return res.json<{ access_token: string; refresh_token: string; id_token: string }>();
}

describe('the account page', () => {
  it('needs a session; shows the profile and every sign-in with where it came from', async () => {
    const browser = await setUp();
    expect((await browser.get('/account')).location).toBe('/login?return_to=%2Faccount');
    await signInAs(browser);
    const tv = await tokensFor(t, await alice(), 'tv');
    const page = await browser.get('/account');
    expect(page.status).toBe(200);
    expect(page.headers['cache-control']).toBe('no-store');
    expect(page.body).toContain('value="alice@example.com"');
    expect(page.body).toContain('This browser');
    expect(page.body).toContain('<span class="software">Firefox on Linux</span>');
    expect(page.body).not.toContain('Firefox/140.0');
    expect(page.body).toContain('Living Room TV');
    expect(revokeButtons(page.body)).toHaveLength(2);
    expect(tv.refresh_token).toBeDefined();
  });

  it('"Devices and apps" names each device as people know it, never with its raw User-Agent', async () => {
    const browser = await setUp();
    await signInAs(browser);
    const others: Array<[string, string]> = [
      ['Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36', 'Chrome on macOS'],
      [
        'Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1',
        'Safari on iPhone',
      ],
      // Hundreds of characters of anything: what made a phone's account page thousands of pixels tall.
      [`Mozilla/5.0 (${'Garbage; '.repeat(40)}) <img src=x onerror=alert(1)>`, 'Unknown software'],
    ];
    for (const [userAgent] of others) await signInAs(new Browser(injectTransport(t.app), userAgent));
    const page = await browser.get('/account');
    const shown = [...page.body.matchAll(/<span class="software">([^<]*)<\/span>/g)].map((m) => m[1]);
    expect(shown.sort()).toEqual(['Firefox on Linux', ...others.map(([, name]) => name)].sort());
    expect(page.body).not.toContain('Garbage;');
    expect(page.body).not.toContain('AppleWebKit');
    expect(page.body).not.toContain('<img src=x');
  });

  it('a profile change needs the form token; a new email is unverified and needs the current password', async () => {
    const browser = await setUp();
    await signInAs(browser);
    await t.store.markEmailVerified((await alice()).id, 'alice@example.com');
    expect((await browser.post('/account/profile', { csrf_token: 'forged', name: 'Mallory', email: 'm@evil.example' })).status).toBe(403);
    expect((await browser.post('/account/profile', { name: 'Mallory', email: 'm@evil.example' })).status).toBe(403);
    expect((await alice()).email).toBe('alice@example.com');
    const csrf = await csrfOf(browser);
    expect((await browser.post('/account/profile', { csrf_token: csrf, name: 'x'.repeat(300), email: 'alice@example.com' })).status).toBe(400);
    expect((await browser.post('/account/profile', { csrf_token: csrf, name: 'Alice L.', email: 'not an email' })).status).toBe(400);
    expect((await browser.post('/account/profile', { csrf_token: csrf, name: 'Alice\u0000', email: 'alice@example.com' })).status).toBe(400);
    expect((await browser.post('/account/profile', { csrf_token: csrf, name: 'Alice', email: 'alice@exa\nmple.com' })).status).toBe(400);
    // The name alone: the email stays verified.
    expect((await browser.post('/account/profile', { csrf_token: csrf, name: 'Alice L.', email: 'ALICE@example.com' })).status).toBe(200);
    expect(await alice()).toMatchObject({ name: 'Alice L.', emailVerified: true });
    // A new email (where reset links go) needs the password: a stolen session cannot redirect them.
    for (const current_password of ['', 'wrong-password']) {
      const refused = await browser.post('/account/profile', {
        csrf_token: await csrfOf(browser),
        name: 'Alice L.',
        email: 'alice@new.example',
        current_password,
      });
      expect(refused.status).toBe(401);
      expect(refused.body).toContain('enter your current password');
    }
    expect((await alice()).email).toBe('ALICE@example.com');
    const changed = await browser.post('/account/profile', {
      csrf_token: await csrfOf(browser),
      name: 'Alice L.',
      email: 'alice@new.example',
      current_password: 'alice-password',
    });
    expect(changed.status).toBe(200);
    expect(changed.body).toContain('not verified yet');
    expect(await alice()).toMatchObject({ email: 'alice@new.example', emailVerified: false });
    expect(
      audited()
        .filter((e) => e.event === 'user.profile_changed')
        .map((e) => e.emailChanged),
    ).toEqual([false, true]);
  });
});

describe('a password stored by an earlier version (scrypt)', () => {
  it('proven to change the email, it is stored anew as Argon2id (m=19456, t=2, p=1), and the session goes on', async () => {
    const browser = await setUp();
    const carol = await addUser(t.store, 'carol', earlierScryptHash.password, { passwordHash: earlierScryptHash.hash });
    // A session from before the upgrade (a sign-in now would already rehash).
    const now = Math.floor(t.clock());
    await t.store.createSession(session({ idHash: sha256('carol-session'), userId: carol.id, authTime: now, createdAt: now, expiresAt: now + 3600 }));
    browser.cookies.set('latchkey_session', 'carol-session');
    const changed = await browser.post('/account/profile', {
      csrf_token: await csrfOf(browser),
      name: 'Carol',
      email: 'carol@new.example',
      current_password: earlierScryptHash.password,
    });
    expect(changed.status).toBe(200);
    const stored = (await t.store.findUserById(carol.id))!;
    expect(stored.email).toBe('carol@new.example');
    expect(stored.passwordHash).toMatch(/^\$argon2id\$v=19\$m=19456,t=2,p=1\$/);
    expect(stored.tokensRevokedAt).toBeUndefined();
    expect(audited()).toContainEqual(expect.objectContaining({ event: 'user.password_rehashed', userId: carol.id, from: 'scrypt' }));
    expect((await browser.get('/account')).status).toBe(200);
  });
});

describe('changing the password', () => {
  it('needs the current one (wrong ones count toward the back-off); by default every other sign-in ends, this browser stays', async () => {
    const browser = await setUp();
    await signInAs(browser);
    const other = new Browser(injectTransport(t.app));
    await signInAs(other);
    const tv = await tokensFor(t, await alice(), 'tv');
    const csrf = await csrfOf(browser);
    expect((await browser.post('/account/password', { csrf_token: csrf, current_password: 'wrong', new_password: 'a-new-password' })).status).toBe(401);
    expect((await browser.post('/account/password', { csrf_token: csrf, current_password: 'alice-password', new_password: 'short' })).status).toBe(400);
    const changed = await browser.post('/account/password', { csrf_token: csrf, current_password: 'alice-password', new_password: 'a-new-password' });
    expect(changed.status).toBe(200);
    expect(changed.body).toContain('every other sign-in has ended');
    // This browser is still signed in; the other browser and the TV are not.
    expect((await browser.get('/account')).status).toBe(200);
    expect((await other.get('/account')).status).toBe(303);
    expect((await refresh(t, 'tv', tv.refresh_token!)).json().error).toBe('invalid_grant');
    // The old password no longer works, the new one does.
    const fresh = new Browser(injectTransport(t.app));
    expect((await signIn(fresh, await fresh.get('/login'), 'alice', 'alice-password')).status).toBe(401);
    expect((await signIn(fresh, await fresh.get('/login'), 'alice', 'a-new-password')).status).toBe(303);
    expect(audited().find((e) => e.event === 'user.password_changed')).toMatchObject({ source: 'account', endedOtherSignIns: true });
    expect(JSON.stringify(logLines)).not.toContain('a-new-password');
  });

  it('"keep my other devices signed in" keeps them', async () => {
    const browser = await setUp();
    await signInAs(browser);
    const other = new Browser(injectTransport(t.app));
    await signInAs(other);
    const tv = await tokensFor(t, await alice(), 'tv');
    const changed = await browser.post('/account/password', {
      csrf_token: await csrfOf(browser),
      current_password: 'alice-password',
      new_password: 'a-new-password',
      keep_other_sign_ins: '1',
    });
    expect(changed.status).toBe(200);
    expect((await other.get('/account')).status).toBe(200);
    expect((await refresh(t, 'tv', tv.refresh_token!)).statusCode).toBe(200);
  });

  it('wrong current passwords are password guesses: past the back-off, 429', async () => {
    const browser = await setUp({ LATCHKEY_RATE_LIMIT_SIGNIN_ACCOUNT: '3/30' });
    await signInAs(browser);
    const csrf = await csrfOf(browser);
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++)
      statuses.push((await browser.post('/account/password', { csrf_token: csrf, current_password: `guess-${i}`, new_password: 'a-new-password' })).status);
    expect(statuses.slice(0, 3)).toEqual([401, 401, 401]);
    expect(statuses.slice(3)).toEqual([429, 429]);
  });
});

describe('devices and apps', () => {
  it('revoking the TV: its next refresh is invalid_grant; the browser keeps going', async () => {
    const browser = await setUp();
    await signInAs(browser);
    const tv = await tokensFor(t, await alice(), 'tv');
    const [family] = await t.store.listRefreshFamilies((await alice()).id, Math.floor(t.clock()));
    const page = await browser.get('/account');
    expect(revokeButtons(page.body)).toContain(family!.familyId);
    const done = await browser.post('/account/revoke', { csrf_token: inputValue(page.body, 'csrf_token')!, revoke: family!.familyId });
    expect(done.status).toBe(200);
    expect(done.body).toContain('That device or app was signed out');
    expect(done.body).not.toContain('Living Room TV');
    expect((await refresh(t, 'tv', tv.refresh_token!)).json().error).toBe('invalid_grant');
    // Its access token is refused at userinfo too (the family is revoked).
    const userinfo = await t.app.inject({ method: 'GET', url: '/userinfo', headers: { authorization: `Bearer ${tv.access_token}` } });
    expect(userinfo.statusCode).toBe(401);
    expect((await browser.get('/account')).status).toBe(200);
    expect(audited().find((e) => e.event === 'session.revoked')).toMatchObject({ kind: 'app', clientId: 'tv', source: 'account' });
  });

  it('another browser session can be signed out; "Sign out here" signs this one out', async () => {
    const browser = await setUp();
    await signInAs(browser);
    const other = new Browser(injectTransport(t.app));
    await signInAs(other);
    const sessions = await t.store.listSessions((await alice()).id, Math.floor(t.clock()));
    expect(sessions).toHaveLength(2);
    const page = await browser.get('/account');
    const csrf = inputValue(page.body, 'csrf_token')!;
    const otherId = sessions.find((s) => !page.body.includes(`value="${s.id}" aria-label="Sign out here`))!.id;
    expect(page.body).toContain('Sign out here');
    expect((await browser.post('/account/revoke', { csrf_token: csrf, revoke: otherId })).body).toContain('That browser was signed out');
    expect((await other.get('/account')).status).toBe(303);
    const ownId = (await t.store.listSessions((await alice()).id, Math.floor(t.clock())))[0]!.id;
    const out = await browser.post('/account/revoke', { csrf_token: csrf, revoke: ownId });
    expect(out.body).toContain('signed out');
    expect((await browser.get('/account')).status).toBe(303);
  });

  it('another person’s session or family is not touched by its id; unknown ids change nothing; a forged form is 403', async () => {
    const browser = await setUp();
    await signInAs(browser);
    const bobBrowser = new Browser(injectTransport(t.app));
    await signInAs(bobBrowser, 'bob');
    const bob = (await t.store.findUserByUsername('bob'))!;
    const bobTv = await tokensFor(t, bob, 'tv');
    const now = Math.floor(t.clock());
    const [bobSession] = await t.store.listSessions(bob.id, now);
    const [bobFamily] = await t.store.listRefreshFamilies(bob.id, now);
    const csrf = await csrfOf(browser);
    for (const id of [bobSession!.id, bobFamily!.familyId, 'nope', '', "' OR 1=1 --", 'x'.repeat(128)]) {
      const res = await browser.post('/account/revoke', { csrf_token: csrf, revoke: id });
      expect(res.status, id).toBe(200);
      expect(res.body).toContain('had ended already');
    }
    expect((await bobBrowser.get('/account')).status).toBe(200);
    expect((await refresh(t, 'tv', bobTv.refresh_token!)).statusCode).toBe(200);
    expect((await browser.post('/account/revoke', { csrf_token: 'forged', revoke: bobSession!.id })).status).toBe(403);
    expect((await browser.post('/account/revoke', { revoke: 'x'.repeat(200) })).status).toBe(400);
  });

  it('"Sign out everywhere" ends every session and family, and the access tokens issued until then', async () => {
    const browser = await setUp();
    await signInAs(browser);
    const other = new Browser(injectTransport(t.app));
    await signInAs(other);
    const tv = await tokensFor(t, await alice(), 'tv');
    const done = await browser.post('/account/sign-out-everywhere', { csrf_token: await csrfOf(browser) });
    expect(done.status).toBe(200);
    expect(done.body).toContain('signed out everywhere');
    expect((await browser.get('/account')).status).toBe(303);
    expect((await other.get('/account')).status).toBe(303);
    expect((await refresh(t, 'tv', tv.refresh_token!)).json().error).toBe('invalid_grant');
    expect((await t.app.inject({ method: 'GET', url: '/userinfo', headers: { authorization: `Bearer ${tv.access_token}` } })).statusCode).toBe(401);
    expect(await t.store.listRefreshFamilies((await alice()).id, Math.floor(t.clock()))).toEqual([]);
    // Without the form token: nothing.
    const again = new Browser(injectTransport(t.app));
    await signInAs(again);
    expect((await again.post('/account/sign-out-everywhere', { csrf_token: 'forged' })).status).toBe(403);
    expect((await again.get('/account')).status).toBe(200);
  });
});

describe('applications you allowed', () => {
  it('withdrawing consent ends that application’s sign-ins, and it asks again next time; id_tokens carry sid', async () => {
    const browser = await setUp();
    await signInAs(browser);
    const photos = await consentToPhotos(browser);
    const sessions = await t.store.listSessions((await alice()).id, Math.floor(t.clock()));
    expect(decodeJwt(photos.id_token).sid).toBe(sessions[0]!.id);
    const page = await browser.get('/account');
    expect(page.body).toContain('Photo Editor');
    expect(page.body).toMatch(/name="client_id" value="photos"/);
    const done = await browser.post('/account/consents/withdraw', { csrf_token: inputValue(page.body, 'csrf_token')!, client_id: 'photos' });
    expect(done.body).toContain('Access withdrawn');
    expect((await refresh(t, 'photos', photos.refresh_token)).json().error).toBe('invalid_grant');
    expect(await t.store.listConsents((await alice()).id)).toEqual([]);
    // Withdrawing what was never given: nothing, and that application's sign-ins stay.
    const tv = await tokensFor(t, await alice(), 'tv');
    expect((await browser.post('/account/consents/withdraw', { csrf_token: inputValue(page.body, 'csrf_token')!, client_id: 'tv' })).body).toContain(
      'had no access',
    );
    expect((await refresh(t, 'tv', tv.refresh_token!)).statusCode).toBe(200);
    expect(audited().filter((e) => e.event === 'consent.withdrawn')).toHaveLength(1);
  });
});
