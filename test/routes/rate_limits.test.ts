/**
 * The rate limits of RFC 8628 §5.1/§5.2 and against password guessing, as a client and a browser
 * meet them: 429 with Retry-After, an OAuth body on the API and a friendly page in the browser.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { addClient, addUser, form, testApp, type TestApp } from '../helpers/app.js';
import { Browser, injectTransport, signIn } from '../helpers/browser.js';

let t: TestApp;
afterEach(() => t.close());

describe('sign-in attempts', () => {
  it('per account: after 5 failures a growing back-off, even with the right password; a success resets it', async () => {
    t = await testApp();
    await addUser(t.store, 'alice', 'alice-password');
    const browser = new Browser(injectTransport(t.app));
    const attempt = async (password: string) => signIn(browser, await browser.get('/login'), 'alice', password);
    for (let i = 0; i < 5; i++) expect((await attempt('wrong-guess')).status).toBe(401);
    const limited = await attempt('alice-password');
    expect(limited.status).toBe(429);
    expect(limited.headers['retry-after']).toBe('30');
    expect(limited.headers['content-type']).toMatch(/^text\/html/);
    expect(limited.body).toContain('Too many attempts');
    t.clock.advance(30);
    expect((await attempt('wrong-guess')).status).toBe(401);
    expect((await attempt('alice-password')).headers['retry-after']).toBe('60'); // doubled
    t.clock.advance(60);
    expect((await attempt('alice-password')).status).toBe(303);
  });

  it('per account, whatever the spelling: fullwidth letters, case and surrounding spaces are one account to the back-off', async () => {
    t = await testApp();
    await addUser(t.store, 'alice', 'alice-password');
    const browser = new Browser(injectTransport(t.app));
    for (const spelling of ['ａｌｉｃｅ', 'ALICE ', ' alice', 'Ａｌｉｃｅ', 'al\u200bice']) {
      expect((await signIn(browser, await browser.get('/login'), spelling, 'wrong-guess')).status, spelling).toBe(401);
    }
    for (const spelling of ['alice', 'ａｌｉｃｅ']) {
      expect((await signIn(browser, await browser.get('/login'), spelling, 'alice-password')).status, spelling).toBe(429);
    }
    t.clock.advance(30);
    // A spelling of the name is the name: the owner signs in with it.
    expect((await signIn(browser, await browser.get('/login'), 'ＡＬＩＣＥ', 'alice-password')).status).toBe(303);
  });

  it('parallel guesses cannot slip past the check: at most the limit get a password checked', async () => {
    t = await testApp();
    await addUser(t.store, 'alice', 'alice-password');
    const browser = new Browser(injectTransport(t.app));
    const page = await browser.get('/login');
    const results = await Promise.all(Array.from({ length: 30 }, () => signIn(browser, page, 'alice', 'wrong-guess')));
    const statuses = results.map((r) => r.status);
    expect(statuses.filter((s) => s === 401)).toHaveLength(5);
    expect(statuses.filter((s) => s === 429)).toHaveLength(25);
  });

  it('per address: guessing many accounts from one address is slowed too', async () => {
    t = await testApp({ LATCHKEY_RATE_LIMIT_SIGNIN_ADDRESS: '3/30', LATCHKEY_RATE_LIMIT_SIGNIN_ACCOUNT: 'off' });
    const browser = new Browser(injectTransport(t.app));
    for (const name of ['a1', 'a2', 'a3']) expect((await signIn(browser, await browser.get('/login'), name, 'guess-guess')).status).toBe(401);
    expect((await signIn(browser, await browser.get('/login'), 'a4', 'guess-guess')).status).toBe(429);
  });
});

// Guessing is throttled where it comes from, never by locking the account itself.
describe('the owner is never locked out by someone guessing their password', () => {
  const behindProxy = { LATCHKEY_TRUST_PROXY: '1' };
  /** A browser at an address of its own (through the trusted proxy's X-Forwarded-For). */
  function browserAt(address: string): Browser {
    const browser = new Browser(injectTransport(t.app));
    browser.extraHeaders = { 'x-forwarded-for': address };
    return browser;
  }
  const attempt = async (browser: Browser, password: string, username = 'alice') => signIn(browser, await browser.get('/login'), username, password);

  it('6 wrong passwords from one address, then the right one from a fresh browser elsewhere: signed in', async () => {
    t = await testApp(behindProxy);
    await addUser(t.store, 'alice', 'alice-password');
    const attacker = browserAt('203.0.113.66');
    for (let i = 0; i < 6; i++) await attempt(attacker, 'wrong-guess');
    expect((await attempt(attacker, 'wrong-guess')).status).toBe(429);
    expect((await attempt(browserAt('198.51.100.7'), 'alice-password')).status).toBe(303);
    // and the attacker is still held back, with a growing wait
    const held = await attempt(attacker, 'alice-password');
    expect(held.status).toBe(429);
  });

  it("a browser the owner signed in with before stays usable even behind the attacker's own address", async () => {
    t = await testApp(behindProxy);
    await addUser(t.store, 'alice', 'alice-password');
    const owner = browserAt('203.0.113.66');
    expect((await attempt(owner, 'alice-password')).status).toBe(303);
    expect([...owner.cookies.keys()]).toContain('latchkey_device');
    await owner.post('/logout', {});
    const attacker = browserAt('203.0.113.66'); // same address, no device cookie
    for (let i = 0; i < 12; i++) await attempt(attacker, 'wrong-guess');
    expect((await attempt(attacker, 'alice-password')).status).toBe(429);
    expect((await attempt(owner, 'alice-password')).status).toBe(303);
    // Hours of guessing later, still the same.
    for (let hour = 0; hour < 3; hour++) {
      await owner.post('/logout', {});
      t.clock.advance(3600);
      await attempt(attacker, 'wrong-guess');
      expect((await attempt(owner, 'alice-password')).status).toBe(303);
    }
  });

  it("a known browser's own failures are throttled on their own, and do not spill onto the address", async () => {
    t = await testApp(behindProxy);
    await addUser(t.store, 'alice', 'alice-password');
    const owner = browserAt('203.0.113.10');
    await attempt(owner, 'alice-password');
    await owner.post('/logout', {});
    for (let i = 0; i < 5; i++) expect((await attempt(owner, 'typo-typo')).status).toBe(401);
    expect((await attempt(owner, 'alice-password')).status).toBe(429);
    expect((await attempt(browserAt('203.0.113.10'), 'alice-password')).status).toBe(303); // another browser there
  });

  it('a device cookie counts only for the account that signed in with it, and a forged one counts for nothing', async () => {
    t = await testApp(behindProxy);
    await addUser(t.store, 'alice', 'alice-password');
    await addUser(t.store, 'bob', 'bob-password');
    const browser = browserAt('203.0.113.20');
    await attempt(browser, 'alice-password');
    await browser.post('/logout', {});
    for (let i = 0; i < 5; i++) await attempt(browser, 'wrong-guess', 'bob');
    expect((await attempt(browser, 'bob-password', 'bob')).status).toBe(429); // known for alice, not for bob
    const value = browser.cookies.get('latchkey_device')!;
    const forged = browserAt('203.0.113.20');
    forged.cookies.set('latchkey_device', value.replace(/\.[^.]+$/, `.${'A'.repeat(43)}`));
    for (let i = 0; i < 5; i++) await attempt(forged, 'wrong-guess');
    expect((await attempt(forged, 'alice-password')).status).toBe(429);
  });

  it('an account guessed at from many addresses is slowed — each attempt waits — but never refused', async () => {
    const pauses: number[] = [];
    t = await testApp({ ...behindProxy, LATCHKEY_RATE_LIMIT_SIGNIN_ACCOUNT_TOTAL: '20/3600' }, { sleep: async (ms) => void pauses.push(ms) });
    await addUser(t.store, 'alice', 'alice-password');
    for (let i = 0; i < 20; i++) expect((await attempt(browserAt(`198.51.100.${i + 1}`), 'wrong-guess')).status).toBe(401);
    expect(pauses).toEqual([]);
    expect((await attempt(browserAt('192.0.2.200'), 'wrong-guess')).status).toBe(401);
    expect(pauses).toEqual([3000]);
    // The owner from a fresh browser and address: slowed too, but signed in.
    expect((await attempt(browserAt('192.0.2.201'), 'alice-password')).status).toBe(303);
    expect(pauses).toEqual([3000, 3000]);
  });

  it('under such an attack, attempts from unknown browsers go one at a time; past 16 waiting, 429 for a few seconds', async () => {
    let inPause = 0;
    let most = 0;
    const sleep = async () => {
      inPause++;
      most = Math.max(most, inPause);
      await new Promise((r) => setTimeout(r, 10)); // the slow-down itself: long enough for the other attempts to queue behind it
      inPause--;
    };
    t = await testApp({ ...behindProxy, LATCHKEY_RATE_LIMIT_SIGNIN_ACCOUNT_TOTAL: '2/3600' }, { sleep });
    await addUser(t.store, 'alice', 'alice-password');
    for (let i = 0; i < 2; i++) await attempt(browserAt(`198.51.100.${i + 1}`), 'wrong-guess');
    const browsers = Array.from({ length: 20 }, (_, i) => browserAt(`203.0.113.${i + 1}`));
    const pages = await Promise.all(browsers.map((b) => b.get('/login')));
    const statuses = await Promise.all(browsers.map(async (b, i) => (await signIn(b, pages[i]!, 'alice', 'wrong-guess')).status));
    expect(most).toBe(1); // never two guesses at once on this account
    expect(statuses.filter((s) => s === 401)).toHaveLength(16);
    expect(statuses.filter((s) => s === 429)).toHaveLength(4);
  });

  it('a browser the owner used before is not slowed during such an attack', async () => {
    const pauses: number[] = [];
    t = await testApp({ ...behindProxy, LATCHKEY_RATE_LIMIT_SIGNIN_ACCOUNT_TOTAL: '3/3600' }, { sleep: async (ms) => void pauses.push(ms) });
    await addUser(t.store, 'alice', 'alice-password');
    const owner = browserAt('192.0.2.1');
    await attempt(owner, 'alice-password');
    await owner.post('/logout', {});
    for (let i = 0; i < 5; i++) await attempt(browserAt(`198.51.100.${i + 1}`), 'wrong-guess');
    pauses.length = 0;
    expect((await attempt(owner, 'alice-password')).status).toBe(303);
    expect(pauses).toEqual([]);
  });
});

describe('device authorization requests', () => {
  it('per client and address (LATCHKEY_RATE_LIMIT_DEVICE_AUTHORIZATION): 429 with an OAuth body', async () => {
    t = await testApp({ LATCHKEY_RATE_LIMIT_DEVICE_AUTHORIZATION: '3/60' });
    await addClient(t.store, 'tv');
    await addClient(t.store, 'kiosk');
    const request = (clientId: string) => t.app.inject({ method: 'POST', url: '/oauth/device/code', ...form({ client_id: clientId }) });
    for (let i = 0; i < 3; i++) expect((await request('tv')).statusCode).toBe(200);
    const limited = await request('tv');
    expect(limited.statusCode).toBe(429);
    expect(limited.headers['retry-after']).toBe('60');
    expect(limited.json()).toEqual({ error: 'temporarily_unavailable', error_description: 'Too many device authorization requests. Try again later.' });
    expect((await request('kiosk')).statusCode).toBe(200); // another client is not affected
    t.clock.advance(60);
    expect((await request('tv')).statusCode).toBe(200);
  });

  it('off disables it', async () => {
    t = await testApp({ LATCHKEY_RATE_LIMIT_DEVICE_AUTHORIZATION: 'off' });
    await addClient(t.store, 'tv');
    for (let i = 0; i < 50; i++) expect((await t.app.inject({ method: 'POST', url: '/oauth/device/code', ...form({ client_id: 'tv' }) })).statusCode).toBe(200);
  });
});

describe('configured limits for codes', () => {
  it('LATCHKEY_RATE_LIMIT_USER_CODE and LATCHKEY_RATE_LIMIT_UNKNOWN_DEVICE_CODE are honoured', async () => {
    t = await testApp({ LATCHKEY_RATE_LIMIT_USER_CODE: '2/60', LATCHKEY_RATE_LIMIT_UNKNOWN_DEVICE_CODE: '2/60' });
    await addClient(t.store, 'tv');
    const poll = () =>
      t.app.inject({
        method: 'POST',
        url: '/oauth/token',
        ...form({ grant_type: 'urn:ietf:params:oauth:grant-type:device_code', client_id: 'tv', device_code: 'lk_dc_nope' }),
      });
    expect((await poll()).statusCode).toBe(400);
    expect((await poll()).statusCode).toBe(400);
    expect((await poll()).statusCode).toBe(429);
    const browser = new Browser(injectTransport(t.app));
    const enter = async () => {
      const page = await browser.get('/activate');
      const csrf = page.body.match(/name="csrf_token" value="([^"]+)"/)![1]!;
      return browser.post('/activate', { csrf_token: csrf, user_code: 'BCDF-GHJK' });
    };
    expect((await enter()).status).toBe(400);
    expect((await enter()).status).toBe(400);
    expect((await enter()).status).toBe(429);
  });
});
