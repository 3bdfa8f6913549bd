import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { normalizeUserCode, userCodeDigest } from '../../src/oauth/user_code.js';
import type { UserRecord } from '../../src/store/store.js';
import { addApi, addClient, addUser, form, testApp, type TestApp } from '../helpers/app.js';
import { Browser, decodeEntities, injectTransport, inputValue, signIn } from '../helpers/browser.js';

let t: TestApp;
let alice: UserRecord;
let browser: Browser;

beforeEach(async () => {
  t = await testApp();
  await addClient(t.store, 'tv', { name: 'Living Room TV' });
  await addApi(t.store, 'https://api.example.com', 'Photo Library API');
  alice = await addUser(t.store, 'alice', 'alice-password');
  browser = new Browser(injectTransport(t.app));
});
afterEach(() => t.close());

async function startDeviceFlow(userAgent = 'tv-firmware/1.2') {
  const f = form({ client_id: 'tv', scope: 'openid email offline_access', audience: 'https://api.example.com' });
  const res = await t.app.inject({ method: 'POST', url: '/oauth/device/code', payload: f.payload, headers: { ...f.headers, 'user-agent': userAgent } });
  return res.json<{ device_code: string; user_code: string; verification_uri_complete: string }>();
}

const grantOf = async (userCode: string) =>
  (await t.store.findDeviceGrantByUserCode(userCodeDigest(t.app.services.userCodeKey, normalizeUserCode(userCode)!)))!;

async function enterCode(typed: string) {
  const entry = await browser.get('/activate');
  return browser.post('/activate', { csrf_token: inputValue(entry.body, 'csrf_token')!, user_code: typed });
}

async function signedInBrowser() {
  const login = await browser.get('/login');
  const res = await signIn(browser, login, 'alice', 'alice-password');
  expect(res.status).toBe(303);
}

describe('GET /activate', () => {
  it('shows a labelled code field, a CSRF token and the security headers', async () => {
    const res = await browser.get('/activate');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(res.body).toContain('<label for="user_code">');
    expect(res.body).toMatch(/<input id="user_code" name="user_code"/);
    expect(inputValue(res.body, 'csrf_token')).toMatch(/^\d+\.[A-Za-z0-9_-]{43}$/);
    expect(res.headers['content-security-policy']).toContain("frame-ancestors 'none'");
    expect(res.headers['content-security-policy']).toContain("default-src 'none'");
    expect(res.headers['content-security-policy']).not.toContain('unsafe-inline');
    expect(res.headers['referrer-policy']).toBe('no-referrer');
    expect(res.headers['x-frame-options']).toBe('DENY');
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.body).toContain('<meta name="viewport" content="width=device-width, initial-scale=1">');
    expect(res.body).not.toMatch(/(src|href)="https?:\/\//);
  });

  it('verification_uri_complete pre-fills the code and approves nothing by itself', async () => {
    const { user_code, verification_uri_complete } = await startDeviceFlow();
    const res = await browser.get(new URL(verification_uri_complete).pathname + new URL(verification_uri_complete).search);
    expect(res.status).toBe(200);
    expect(inputValue(res.body, 'user_code')).toBe(user_code);
    expect((await grantOf(user_code)).status).toBe('pending');
  });

  it('pre-fill normalises a lower-case code without dash, and escapes anything else', async () => {
    const { user_code } = await startDeviceFlow();
    const res = await browser.get(`/activate?user_code=${user_code.replace('-', '').toLowerCase()}`);
    expect(inputValue(res.body, 'user_code')).toBe(user_code);
    const hostile = await browser.get(`/activate?user_code=${encodeURIComponent('"><script>alert(1)</script>')}`);
    expect(hostile.status).toBe(200);
    expect(hostile.body).not.toContain('<script>');
  });

  it('a repeated user_code → a friendly 400 page', async () => {
    const res = await browser.get('/activate?user_code=a&user_code=b');
    expect(res.status).toBe(400);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(res.body).toContain('repeated');
  });
});

describe('POST /activate', () => {
  it('without its CSRF token → 403 page, nothing looked up', async () => {
    const { user_code } = await startDeviceFlow();
    const res = await browser.post('/activate', { user_code });
    expect(res.status).toBe(403);
    expect(res.body).toContain('This form has expired');
  });

  it('a token made for another form is refused', async () => {
    const login = await browser.get('/login');
    const res = await browser.post('/activate', { user_code: 'BCDF-GHJK', csrf_token: inputValue(login.body, 'csrf_token')! });
    expect(res.status).toBe(403);
  });

  it('a right code typed in lower case with spaces → redirect to the confirmation', async () => {
    const { user_code } = await startDeviceFlow();
    const typed = ` ${user_code.slice(0, 4).toLowerCase()} ${user_code.slice(5).toLowerCase()} `;
    const res = await enterCode(typed);
    expect(res.status).toBe(303);
    expect(res.location).toBe(`/activate/confirm?user_code=${user_code}`);
  });

  it('a wrong code → 400 with a clear message and the field marked invalid', async () => {
    const res = await enterCode('BCDF-GHJK');
    expect(res.status).toBe(400);
    expect(res.body).toContain('That code isn’t right');
    expect(res.body).toContain('aria-invalid="true"');
  });

  it('something that cannot be a code → 400 saying what is wrong with it', async () => {
    const res = await enterCode('hello');
    expect(res.status).toBe(400);
    expect(res.body).toContain('Codes never contain the letters A, E, I, O, U or Y.');
    expect(res.body).toContain('aria-invalid="true"');
  });

  // The case people meet: 8 letters typed, one of them a letter no code has (an O read for a Q …).
  it.each([
    ['8 letters with a vowel', 'BCDF-GHJO', 'Codes never contain the letters A, E, I, O, U or Y.'],
    ['8 letters with a Y', 'bcdf ghjy', 'Codes never contain the letters A, E, I, O, U or Y.'],
    ['a digit', 'BCDF-GHJ0', 'Codes have letters only, without digits, accents or other signs.'],
    ['an accented letter', 'BCDF-GHJÉ', 'Codes have letters only, without digits, accents or other signs.'],
    ['7 letters', 'BCDF-GHJ', 'That code is too short. Codes have 8 letters, like BCDF-GHJK.'],
    ['9 letters', 'BCDF-GHJKL', 'That code is too long. Codes have 8 letters, like BCDF-GHJK.'],
    ['nothing but dashes', ' - ', 'Enter the code shown on your device. Codes have 8 letters, like BCDF-GHJK.'],
    ['a code of the right form that no device has', 'BCDF-GHJK', 'That code isn’t right. Check the code on your device and try again.'],
  ])('%s → 400 saying exactly that', async (_case, typed, message) => {
    const res = await enterCode(typed);
    expect(res.status).toBe(400);
    expect(decodeEntities(res.body)).toContain(message);
    expect(decodeEntities(res.body)).not.toContain('That doesn’t look like a code');
  });

  it('the wording follows the page language', async () => {
    const entry = await browser.get('/activate');
    const res = await t.app.inject({
      method: 'POST',
      url: '/activate',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        'accept-language': 'fr',
        cookie: [...browser.cookies].map(([k, v]) => `${k}=${v}`).join('; '),
      },
      payload: new URLSearchParams({ csrf_token: inputValue(entry.body, 'csrf_token')!, user_code: 'BCDF-GHJO' }).toString(),
    });
    expect(res.statusCode).toBe(400);
    expect(decodeEntities(res.body)).toContain('Les codes ne contiennent jamais les lettres A, E, I, O, U ni Y.');
  });

  it('an expired code → 400 saying to start again', async () => {
    const { user_code } = await startDeviceFlow();
    t.clock.advance(901);
    const res = await enterCode(user_code);
    expect(res.status).toBe(400);
    expect(res.body).toContain('expired or has already been used');
  });

  it('is rate limited per address: past 10 wrong codes → 429 with Retry-After, even for a right code', async () => {
    const { user_code } = await startDeviceFlow();
    for (let i = 0; i < 10; i++) expect((await enterCode('BCDF-GHJK')).status).toBe(400);
    const limited = await enterCode(user_code);
    expect(limited.status).toBe(429);
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
    expect(limited.headers['content-type']).toMatch(/^text\/html/);
    expect(limited.body).toContain('Too many attempts');
    t.clock.advance(301);
    expect((await enterCode(user_code)).status).toBe(303);
  });
});

describe('GET /activate/confirm', () => {
  it('asks an anonymous person to sign in first, and returns to the confirmation', async () => {
    const { user_code } = await startDeviceFlow();
    const res = await browser.get(`/activate/confirm?user_code=${user_code}`);
    expect(res.status).toBe(303);
    expect(res.location).toBe(`/login?return_to=${encodeURIComponent(`/activate/confirm?user_code=${user_code}`)}`);
    const login = await browser.get(res.location!);
    const signedIn = await signIn(browser, login, 'alice', 'alice-password');
    expect(signedIn.status).toBe(303);
    expect(signedIn.location).toBe(`/activate/confirm?user_code=${user_code}`);
  });

  it('shows the application, the access in plain words, the code and where the request came from', async () => {
    const { user_code } = await startDeviceFlow('curl/8.4.0');
    await signedInBrowser();
    t.clock.advance(180);
    const res = await browser.get(`/activate/confirm?user_code=${user_code}`);
    expect(res.status).toBe(200);
    expect(res.body).toContain('Allow Living Room TV to access your account?');
    expect(res.body).toContain(`<p class="user-code"`);
    expect(res.body).toContain(user_code);
    expect(res.body).toContain('See your email address');
    expect(res.body).toContain('Keep access when you are not using it');
    expect(res.body).toContain('Photo Library API');
    expect(res.body).toContain('127.0.0.1');
    expect(res.body).toContain('<dd class="software">curl 8.4</dd>');
    expect(res.body).toContain('3 minutes ago');
    expect(res.body).toMatch(/<button type="submit" name="decision" value="allow"/);
    expect(res.body).toMatch(/<button type="submit" name="decision" value="deny"/);
    expect(res.body).toContain('Signed in as <strong>alice</strong>');
  });

  it('a User-Agent of free text (UTF-8, markup) is never shown: a short safe name instead', async () => {
    // Node hands header bytes over one latin1 character per byte: this is what "Café TV" arrives as.
    const sent = 'Café TV — Wohnzimmer <b>📺</b>';
    const { user_code } = await startDeviceFlow(Buffer.from(sent, 'utf8').toString('latin1'));
    await signedInBrowser();
    const res = await browser.get(`/activate/confirm?user_code=${user_code}`);
    expect(res.body).toContain('<dd class="software">Unknown software</dd>');
    expect(res.body).not.toContain('Wohnzimmer');
    expect(res.body).not.toContain('Caf');
  });

  it.each([
    ['our command line on Linux', 'latchkey/0.2.0 (Linux; x64)', 'latchkey 0.2 on Linux'],
    ['our command line on a Mac', 'latchkey/0.2.0 (Darwin; arm64)', 'latchkey 0.2 on macOS'],
    ['our command line on Windows', 'latchkey/0.3.1 (Windows_NT; x64)', 'latchkey 0.3 on Windows'],
    ['a library', 'openid-client/v6.8.9', 'openid-client 6.8'],
    ['a browser', 'Mozilla/5.0 (Android 14; Mobile; rv:132.0) Gecko/132.0 Firefox/132.0', 'Firefox on Android'],
  ])('names the device software as people know it: %s', async (_case, userAgent, shown) => {
    const { user_code } = await startDeviceFlow(userAgent);
    await signedInBrowser();
    const res = await browser.get(`/activate/confirm?user_code=${user_code}`);
    expect(res.status).toBe(200);
    expect(res.body).toContain(`<dd class="software">${shown}</dd>`);
  });

  it('a User-Agent of hundreds of characters comes out short', async () => {
    const long = `Evil/1.0 (${'x'.repeat(240)}) <script>alert(1)</script>`;
    const { user_code } = await startDeviceFlow(long);
    await signedInBrowser();
    const res = await browser.get(`/activate/confirm?user_code=${user_code}`);
    const shown = res.body.match(/<dd class="software">([^<]*)<\/dd>/)?.[1];
    expect(shown).toBe('Evil 1.0');
    expect(res.body).not.toContain('xxxxxxxx');
    expect(res.body).not.toContain('<script>alert');
  });
});

describe('POST /activate/confirm', () => {
  async function confirmationPage(userCode: string) {
    await signedInBrowser();
    const page = await browser.get(`/activate/confirm?user_code=${userCode}`);
    expect(page.status).toBe(200);
    return page;
  }

  it('Allow approves the grant for the signed-in person', async () => {
    const { user_code } = await startDeviceFlow();
    const page = await confirmationPage(user_code);
    const res = await browser.post('/activate/confirm', { csrf_token: inputValue(page.body, 'csrf_token')!, user_code, decision: 'allow' });
    expect(res.status).toBe(200);
    expect(res.body).toContain('You’re all set'.replace('’', "'"));
    expect(res.body).toContain('Return to your device');
    expect(await grantOf(user_code)).toMatchObject({ status: 'approved', userId: alice.id });
  });

  it('Deny denies it', async () => {
    const { user_code } = await startDeviceFlow();
    const page = await confirmationPage(user_code);
    const res = await browser.post('/activate/confirm', { csrf_token: inputValue(page.body, 'csrf_token')!, user_code, decision: 'deny' });
    expect(res.status).toBe(200);
    expect(res.body).toContain('Request denied');
    expect((await grantOf(user_code)).status).toBe('denied');
  });

  it('a second answer for the same code changes nothing', async () => {
    const { user_code } = await startDeviceFlow();
    const page = await confirmationPage(user_code);
    const csrf = inputValue(page.body, 'csrf_token')!;
    await browser.post('/activate/confirm', { csrf_token: csrf, user_code, decision: 'deny' });
    const again = await browser.post('/activate/confirm', { csrf_token: csrf, user_code, decision: 'allow' });
    expect(again.status).toBe(400);
    expect(again.body).toContain('expired or has already been used');
    expect((await grantOf(user_code)).status).toBe('denied');
  });

  it('without CSRF token → 403 and the grant stays pending', async () => {
    const { user_code } = await startDeviceFlow();
    await confirmationPage(user_code);
    const res = await browser.post('/activate/confirm', { user_code, decision: 'allow' });
    expect(res.status).toBe(403);
    expect((await grantOf(user_code)).status).toBe('pending');
  });

  it('when not signed in → 401 page and nothing approved', async () => {
    const { user_code } = await startDeviceFlow();
    const entry = await browser.get('/activate');
    const res = await browser.post('/activate/confirm', { csrf_token: inputValue(entry.body, 'csrf_token')!, user_code, decision: 'allow' });
    expect(res.status).toBe(401);
    expect((await grantOf(user_code)).status).toBe('pending');
  });

  it('a decision other than allow or deny → 400 page', async () => {
    const { user_code } = await startDeviceFlow();
    const page = await confirmationPage(user_code);
    const res = await browser.post('/activate/confirm', { csrf_token: inputValue(page.body, 'csrf_token')!, user_code, decision: 'maybe' });
    expect(res.status).toBe(400);
    expect((await grantOf(user_code)).status).toBe('pending');
  });
});
