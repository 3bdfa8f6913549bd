import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { verifyPassword } from '../../src/crypto/password.js';
import { sha256 } from '../../src/crypto/secrets.js';
import { addClient, addUser, testApp, type TestApp } from '../helpers/app.js';
import { Browser, injectTransport, inputValue, signIn } from '../helpers/browser.js';
import { refresh, tokensFor } from '../helpers/flows.js';
import { earlierScryptHash, session } from '../helpers/records.js';

let t: TestApp;
let browser: Browser;

beforeEach(async () => {
  t = await testApp();
  await addUser(t.store, 'alice', 'alice-password');
  browser = new Browser(injectTransport(t.app));
});
afterEach(() => t.close());

describe('GET /login', () => {
  it('renders labelled username and password fields, a CSRF token and the place to return to', async () => {
    const res = await browser.get('/login?return_to=%2Factivate%2Fconfirm%3Fuser_code%3DBCDF-GHJK');
    expect(res.status).toBe(200);
    expect(res.body).toContain('<label for="username">');
    expect(res.body).toContain('<label for="password">');
    expect(res.body).toMatch(/name="password" type="password" autocomplete="current-password"/);
    expect(inputValue(res.body, 'return_to')).toBe('/activate/confirm?user_code=BCDF-GHJK');
    expect(res.headers['set-cookie']).toMatch(/latchkey_csrf=[^;]+; Path=\/; HttpOnly; SameSite=Lax/);
  });

  it('never offers to return to another site', async () => {
    for (const target of ['https://evil.example/', '//evil.example', '/\\evil.example', 'javascript:alert(1)']) {
      const res = await browser.get(`/login?return_to=${encodeURIComponent(target)}`);
      expect(inputValue(res.body, 'return_to')).toBe('/activate');
    }
  });
});

describe('POST /login', () => {
  async function attempt(username: string, password: string, returnTo?: string) {
    const page = await browser.get(returnTo ? `/login?return_to=${encodeURIComponent(returnTo)}` : '/login');
    return signIn(browser, page, username, password);
  }

  it('right credentials → a new HttpOnly SameSite session cookie, stored hashed, and a redirect back', async () => {
    const res = await attempt('alice', 'alice-password', '/activate?x=1');
    expect(res.status).toBe(303);
    expect(res.location).toBe('/activate?x=1');
    const cookie = res.headers['set-cookie']!.split('\n').find((c) => c.startsWith('latchkey_session='))!;
    expect(cookie).toMatch(/HttpOnly/);
    expect(cookie).toMatch(/SameSite=Lax/);
    expect(cookie).not.toMatch(/Secure/); // the test issuer is http
    const id = browser.cookies.get('latchkey_session')!;
    expect(await t.store.findSession(sha256(id), Math.floor(t.clock()))).toBeDefined();
    expect(JSON.stringify(t.store.db.prepare('SELECT * FROM sessions').all())).not.toContain(id);
    const page = await browser.get('/activate');
    expect(page.body).toContain('Signed in as <strong>alice</strong>');
  });

  it('the username is case-insensitive', async () => {
    expect((await attempt('ALICE', 'alice-password')).status).toBe(303);
  });

  it('a sign-in replaces any session id the browser already had (no fixation)', async () => {
    await signIn(browser, await browser.get('/login'), 'alice', 'alice-password');
    const first = browser.cookies.get('latchkey_session')!;
    expect((await browser.get('/login')).status).toBe(303); // already signed in: nothing to show
    // A fresh sign-in (as prompt=login asks) shows the form to a signed-in person.
    const again = await browser.get('/login?fresh=1');
    expect(again.status).toBe(200);
    expect(inputValue(again.body, 'username')).toBe('alice');
    expect((await signIn(browser, again, 'alice', 'alice-password')).status).toBe(303);
    const second = browser.cookies.get('latchkey_session')!;
    expect(second).not.toBe(first);
    expect(await t.store.findSession(sha256(first), Math.floor(t.clock()))).toBeUndefined();
  });

  it('a wrong password and an unknown user get the same 401 answer', async () => {
    const wrong = await attempt('alice', 'nope-nope');
    const unknown = await attempt('mallory', 'nope-nope');
    for (const res of [wrong, unknown]) {
      expect(res.status).toBe(401);
      expect(res.body).toContain('Wrong username or password.');
      expect(res.headers['set-cookie'] ?? '').not.toContain('latchkey_session=');
    }
  });

  it('empty fields → 400 asking for both', async () => {
    const res = await attempt('', '');
    expect(res.status).toBe(400);
    expect(res.body).toContain('Enter your username and password.');
  });

  it('a disabled account cannot sign in, and the answer does not reveal a right password', async () => {
    await t.store.setUserDisabled('alice', true, Math.floor(t.clock()));
    const res = await attempt('alice', 'alice-password');
    expect(res.status).toBe(401);
    expect(res.body).toContain('Wrong username or password.');
    expect(browser.cookies.has('latchkey_session')).toBe(false);
  });

  it('without CSRF token → 403 and no session', async () => {
    const res = await browser.post('/login', { username: 'alice', password: 'alice-password' });
    expect(res.status).toBe(403);
    expect(browser.cookies.has('latchkey_session')).toBe(false);
  });

  it('a return_to to another site is replaced by a local page', async () => {
    const page = await browser.get('/login');
    const res = await browser.post('/login', {
      csrf_token: inputValue(page.body, 'csrf_token')!,
      username: 'alice',
      password: 'alice-password',
      return_to: '//evil.example/steal',
    });
    expect(res.status).toBe(303);
    expect(res.location).toBe('/activate');
  });

  it('sessions end after LATCHKEY_SESSION_TTL', async () => {
    await attempt('alice', 'alice-password');
    t.clock.advance(12 * 3600 + 1);
    const page = await browser.get('/activate');
    expect(page.body).not.toContain('Signed in as');
  });

  it('disabling the user ends the session', async () => {
    await attempt('alice', 'alice-password');
    await t.store.setUserDisabled('alice', true, Math.floor(t.clock()));
    expect((await browser.get('/activate')).body).not.toContain('Signed in as');
  });
});

describe('a password stored by an earlier version (scrypt)', () => {
  const lines: string[] = [];
  const currentArgon2id = /^\$argon2id\$v=19\$m=19456,t=2,p=1\$/;
  const carolOf = async () => (await t.store.findUserByUsername('carol'))!;
  const audited = () => lines.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l.event !== undefined);

  beforeEach(async () => {
    await t.close();
    lines.length = 0;
    t = await testApp({}, { logLines: lines });
    browser = new Browser(injectTransport(t.app));
  });

  async function attempt(username: string, password: string, who = browser) {
    return signIn(who, await who.get('/login'), username, password);
  }

  it("verifies at sign-in and is replaced by Argon2id (m=19456, t=2, p=1) without ending the person's sessions or tokens", async () => {
    const carol = await addUser(t.store, 'carol', earlierScryptHash.password, { passwordHash: earlierScryptHash.hash });
    await addClient(t.store, 'tv');
    // What carol holds from before the upgrade: a browser's session and a device's tokens.
    const now = Math.floor(t.clock());
    const sessionId = 'a-session-from-before-the-upgrade';
    await t.store.createSession(session({ idHash: sha256(sessionId), userId: carol.id, authTime: now, createdAt: now, expiresAt: now + 3600 }));
    const earlier = new Browser(injectTransport(t.app));
    earlier.cookies.set('latchkey_session', sessionId);
    expect((await earlier.get('/activate')).body).toContain('Signed in as <strong>carol</strong>');
    const tv = await tokensFor(t, carol, 'tv');

    const res = await attempt('carol', earlierScryptHash.password);
    expect(res.status).toBe(303);
    expect(browser.cookies.has('latchkey_session')).toBe(true);
    const upgraded = await carolOf();
    expect(upgraded.passwordHash).toMatch(currentArgon2id);
    expect(await verifyPassword(earlierScryptHash.password, upgraded.passwordHash)).toBe(true);
    expect(upgraded).toStrictEqual({ ...carol, passwordHash: upgraded.passwordHash });
    expect(audited()).toContainEqual(expect.objectContaining({ event: 'user.password_rehashed', userId: carol.id, from: 'scrypt' }));
    // Nothing carol held has ended: the same password, stored another way.
    expect((await earlier.get('/activate')).body).toContain('Signed in as <strong>carol</strong>');
    expect((await t.app.inject({ method: 'GET', url: '/userinfo', headers: { authorization: `Bearer ${tv.access_token}` } })).statusCode).toBe(200);
    expect((await refresh(t, 'tv', tv.refresh_token!)).statusCode).toBe(200);

    // The new hash is current: the next sign-in verifies it and stores nothing.
    expect((await attempt('carol', earlierScryptHash.password, new Browser(injectTransport(t.app)))).status).toBe(303);
    expect((await carolOf()).passwordHash).toBe(upgraded.passwordHash);
    expect(audited().filter((e) => e.event === 'user.password_rehashed')).toHaveLength(1);
  });

  it('a wrong password, or the right one for a disabled account, leaves the hash as it is', async () => {
    await addUser(t.store, 'carol', earlierScryptHash.password, { passwordHash: earlierScryptHash.hash });
    expect((await attempt('carol', 'not-the-password')).status).toBe(401);
    expect((await carolOf()).passwordHash).toBe(earlierScryptHash.hash);
    await t.store.setUserDisabled('carol', true, Math.floor(t.clock()));
    expect((await attempt('carol', earlierScryptHash.password)).status).toBe(401);
    expect((await carolOf()).passwordHash).toBe(earlierScryptHash.hash);
    expect(audited().filter((e) => e.event === 'user.password_rehashed')).toEqual([]);
  });
});

describe('logout', () => {
  for (const method of ['GET', 'POST'] as const) {
    it(`${method} /logout ends the session (the contract), with no form to fill`, async () => {
      await signIn(browser, await browser.get('/login'), 'alice', 'alice-password');
      const id = browser.cookies.get('latchkey_session')!;
      const res = method === 'GET' ? await browser.get('/logout') : await browser.post('/logout', {});
      expect(res.status).toBe(200);
      expect(res.body).toContain('You’re signed out'.replace('’', "'"));
      expect(browser.cookies.has('latchkey_session')).toBe(false);
      expect(await t.store.findSession(sha256(id), Math.floor(t.clock()))).toBeUndefined();
      expect((await browser.get('/activate')).body).not.toContain('Signed in as');
    });
  }

  it('a form rendered before signing out no longer works after it (CSRF tokens are bound to the session)', async () => {
    await signIn(browser, await browser.get('/login'), 'alice', 'alice-password');
    const entry = await browser.get('/activate');
    await browser.get('/logout');
    const res = await browser.post('/activate', { csrf_token: inputValue(entry.body, 'csrf_token')!, user_code: 'BCDF-GHJK' });
    expect(res.status).toBe(403);
  });
});

describe('CSRF tokens', () => {
  it('expire after two hours', async () => {
    const entry = await browser.get('/activate');
    t.clock.advance(2 * 3600 + 1);
    const res = await browser.post('/activate', { csrf_token: inputValue(entry.body, 'csrf_token')!, user_code: 'BCDF-GHJK' });
    expect(res.status).toBe(403);
  });

  it('from another browser are refused', async () => {
    const entry = await browser.get('/activate');
    const other = new Browser(injectTransport(t.app));
    await other.get('/activate');
    const res = await other.post('/activate', { csrf_token: inputValue(entry.body, 'csrf_token')!, user_code: 'BCDF-GHJK' });
    expect(res.status).toBe(403);
  });

  it('with a forged issue time are refused', async () => {
    const entry = await browser.get('/activate');
    const [, mac] = inputValue(entry.body, 'csrf_token')!.split('.');
    const res = await browser.post('/activate', { csrf_token: `${Math.floor(t.clock()) + 100}.${mac}`, user_code: 'BCDF-GHJK' });
    expect(res.status).toBe(403);
  });
});

describe('return_to that a Location header cannot carry', () => {
  it('is percent-encoded instead of failing with 500', async () => {
    const page = await browser.get('/login?return_to=%2F%E2%98%83');
    expect(page.status).toBe(200);
    expect(inputValue(page.body, 'return_to')).toBe('/%E2%98%83');
    const res = await browser.post('/login', {
      csrf_token: inputValue(page.body, 'csrf_token')!,
      username: 'alice',
      password: 'alice-password',
      return_to: '/☃',
    });
    expect(res.status).toBe(303);
    expect(res.location).toBe('/%E2%98%83');
    expect(browser.cookies.has('latchkey_session')).toBe(true);
  });
});

describe('cookies over https', () => {
  it('are Secure and use the __Host- prefix', async () => {
    await t.close();
    t = await testApp({ LATCHKEY_ISSUER: 'https://id.example.com' });
    await addUser(t.store, 'alice', 'alice-password');
    browser = new Browser(injectTransport(t.app));
    const page = await browser.get('/login');
    expect(page.headers['set-cookie']).toMatch(/^__Host-latchkey_csrf=[^;]+; Path=\/; HttpOnly; Secure; SameSite=Lax/);
    expect(page.headers['strict-transport-security']).toBe('max-age=31536000');
    const res = await signIn(browser, page, 'alice', 'alice-password');
    expect(res.headers['set-cookie']).toMatch(/__Host-latchkey_session=[^;]+; Max-Age=43200; Path=\/; HttpOnly; Secure; SameSite=Lax/);
  });
});
