import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { sha256 } from '../../src/crypto/secrets.js';
import type { UserRecord } from '../../src/store/store.js';
import { addApi, addClient, addUser, pkcePair, testApp, type TestApp } from '../helpers/app.js';
import { Browser, inputValue, injectTransport, signIn, type BrowserResponse } from '../helpers/browser.js';

let t: TestApp;
let alice: UserRecord;
let browser: Browser;
const web = 'https://app.example.com/cb';

beforeEach(async () => {
  t = await testApp();
  alice = await addUser(t.store, 'alice', 'alice-password');
  await addApi(t.store, 'https://api.example.com', 'Photo Library API');
  const grants = ['authorization_code', 'refresh_token'] as const;
  await addClient(t.store, 'web', { name: 'Photo Editor', redirectUris: [web], grantTypes: [...grants] });
  await addClient(t.store, 'first', { name: 'Company Portal', redirectUris: [web], grantTypes: [...grants], firstParty: true });
  await addClient(t.store, 'native', { name: 'Desktop App', redirectUris: ['http://127.0.0.1/callback'], grantTypes: [...grants] });
  await addClient(t.store, 'tv', { grantTypes: ['device_code'], redirectUris: [web] });
  browser = new Browser(injectTransport(t.app));
});
afterEach(() => t.close());

function authorizeUrl(params: Record<string, string | undefined>): string {
  const { challenge } = pkcePair();
  const defaults: Record<string, string> = {
    response_type: 'code',
    client_id: 'web',
    redirect_uri: web,
    scope: 'openid email profile',
    state: 'state-123',
    code_challenge: challenge,
    code_challenge_method: 'S256',
  };
  const merged = { ...defaults, ...params };
  const query = new URLSearchParams(Object.entries(merged).filter((e): e is [string, string] => e[1] !== undefined));
  return `/authorize?${query}`;
}

function redirectParams(res: BrowserResponse): URLSearchParams {
  expect(res.location).toBeDefined();
  return new URL(res.location!).searchParams;
}

async function signInFirst() {
  expect((await signIn(browser, await browser.get('/login'), 'alice', 'alice-password')).status).toBe(303);
}

/** Follows the redirect to sign-in and signs in; returns what the flow answers next. */
async function signInThrough(res: BrowserResponse) {
  expect(res.status).toBe(303);
  expect(res.location).toMatch(/^\/login\?return_to=%2Fauthorize%2Fcontinue%3Finteraction%3D/);
  const login = await browser.get(res.location!);
  expect(login.status).toBe(200);
  const after = await signIn(browser, login, 'alice', 'alice-password');
  expect(after.status).toBe(303);
  return browser.get(after.location!);
}

async function decide(page: BrowserResponse, decision: 'allow' | 'deny') {
  return browser.post('/authorize/decision', {
    csrf_token: inputValue(page.body, 'csrf_token')!,
    interaction: inputValue(page.body, 'interaction')!,
    decision,
  });
}

describe('GET /authorize: requests that cannot be answered to the client', () => {
  const cases: Array<[string, Record<string, string | undefined>]> = [
    ['no client_id', { client_id: undefined }],
    ['an unknown client_id', { client_id: 'nobody' }],
    ['no redirect_uri', { redirect_uri: undefined }],
    ['an unregistered redirect_uri', { redirect_uri: 'https://evil.example/cb' }],
    ['a redirect_uri differing by a trailing slash', { redirect_uri: `${web}/` }],
    ['a redirect_uri with another port', { redirect_uri: 'https://app.example.com:8443/cb' }],
  ];
  for (const [name, params] of cases) {
    it(`${name} → an error page, never a redirect`, async () => {
      const res = await browser.get(authorizeUrl(params));
      expect(res.status).toBe(400);
      expect(res.location).toBeUndefined();
      expect(res.headers['content-type']).toMatch(/^text\/html/);
      expect(res.body).toContain('This sign-in link is not valid');
    });
  }

  it('a repeated redirect_uri → an error page', async () => {
    const res = await browser.get(`${authorizeUrl({})}&redirect_uri=${encodeURIComponent('https://evil.example/cb')}`);
    expect(res.status).toBe(400);
    expect(res.location).toBeUndefined();
  });
});

describe('GET /authorize: errors redirected to the client with error, error_description, state and iss', () => {
  const cases: Array<[string, Record<string, string | undefined>, string]> = [
    ['a bad response_type', { response_type: 'token' }, 'unsupported_response_type'],
    ['no response_type', { response_type: undefined }, 'invalid_request'],
    ['an unknown scope', { scope: 'openid admin' }, 'invalid_scope'],
    ['an unknown audience', { audience: 'https://nope.example' }, 'invalid_target'],
    ['no PKCE from a public client', { code_challenge: undefined, code_challenge_method: undefined }, 'invalid_request'],
    ['code_challenge_method=plain', { code_challenge_method: 'plain' }, 'invalid_request'],
    ['a code_challenge without method', { code_challenge_method: undefined }, 'invalid_request'],
    ['a malformed code_challenge', { code_challenge: 'short' }, 'invalid_request'],
    ['prompt=none combined with login', { prompt: 'none login' }, 'invalid_request'],
    ['a malformed request object', { request: 'eyJ...' }, 'invalid_request_object'],
  ];
  for (const [name, params, error] of cases) {
    it(`${name} → ${error}`, async () => {
      const res = await browser.get(authorizeUrl(params));
      expect(res.status).toBe(302);
      expect(res.location!.startsWith(`${web}?`)).toBe(true);
      const q = redirectParams(res);
      expect(q.get('error')).toBe(error);
      expect(q.get('error_description')).toBeTruthy();
      expect(q.get('state')).toBe('state-123');
      expect(q.get('iss')).toBe('http://latchkey.test');
      expect(q.get('code')).toBeNull();
    });
  }

  it('no state → invalid_request, without state', async () => {
    const res = await browser.get(authorizeUrl({ state: undefined }));
    const q = redirectParams(res);
    expect(q.get('error')).toBe('invalid_request');
    expect(q.get('error_description')).toBe('state is required.');
    expect(q.has('state')).toBe(false);
  });

  it('a client without the authorization_code grant → unauthorized_client', async () => {
    const res = await browser.get(authorizeUrl({ client_id: 'tv' }));
    expect(redirectParams(res).get('error')).toBe('unauthorized_client');
  });
});

describe('a state that cannot be echoed: an error page, since an error redirect must carry it (RFC 6749 §4.1.2.1)', () => {
  /** The page answering a request that must not be redirected: 4xx HTML, no Location, nothing for the client. */
  function expectStatePage(res: BrowserResponse) {
    expect(res.status).toBe(400);
    expect(res.location).toBeUndefined();
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(res.body).toContain('This sign-in link is not valid');
    expect(res.body).toContain('The request’s state is malformed.');
    expect(res.body).not.toContain('name="code"');
  }

  const malformed: Array<[string, string]> = [
    ['too long (1,025 characters)', `state=${'s'.repeat(1025)}`],
    ['not printable ASCII (é)', `state=${encodeURIComponent('caf\u00e9')}`],
    ['with a control character', 'state=a%01b'],
    ['repeated', 'state=one&state=two'],
    ['repeated with the same value', 'state=one&state=one'],
  ];
  // Each alone, and beside errors found before state is checked (they would otherwise redirect).
  const otherErrors: Array<[string, Record<string, string | undefined>]> = [
    ['no other error', {}],
    ['response_type=token', { response_type: 'token' }],
    ['a repeated scope', {}],
    ['a request_uri that was not pushed', { request_uri: 'https://rp.example.com/request.jwt' }],
    ['response_mode=fragment', { response_mode: 'fragment' }],
    ['a malformed dpop_jkt', { dpop_jkt: 'x' }],
    ['an unknown audience', { audience: 'https://nope.example' }],
  ];
  for (const [stateName, stateQuery] of malformed) {
    for (const [errorName, params] of otherErrors) {
      it(`a state ${stateName}, ${errorName} → a page, no redirect`, async () => {
        const extra = errorName === 'a repeated scope' ? '&scope=openid' : '';
        const res = await browser.get(`${authorizeUrl({ ...params, state: undefined })}&${stateQuery}${extra}`);
        expectStatePage(res);
      });
    }
  }

  it('with response_mode=form_post: a page, not a form posting to the client', async () => {
    const res = await browser.get(`${authorizeUrl({ response_mode: 'form_post', response_type: 'token', state: undefined })}&state=${'s'.repeat(1025)}`);
    expectStatePage(res);
    expect(res.body).not.toContain('action="https://app.example.com/cb"');
  });

  it("in a request object (which replaces the query's state): a page", async () => {
    const object = `eyJhbGciOiJub25lIn0.${Buffer.from(JSON.stringify({ state: 'caf\u00e9' })).toString('base64url')}.`;
    expectStatePage(await browser.get(authorizeUrl({ state: undefined, request: object })));
  });

  it('in the query beside a request object that cannot be opened: a page', async () => {
    expectStatePage(await browser.get(`${authorizeUrl({ state: undefined, request: 'eyJ...' })}&state=${'s'.repeat(1025)}`));
  });

  it('POSTed: moved to a GET that shows the page; posted too long for an address, the page at once', async () => {
    const formHeaders = { 'content-type': 'application/x-www-form-urlencoded' };
    const short = await t.app.inject({
      method: 'POST',
      url: '/authorize',
      headers: formHeaders,
      payload: `${authorizeUrl({ state: undefined }).split('?')[1]}&state=one&state=two`,
    });
    expect(short.statusCode).toBe(303);
    expect(short.headers.location).toMatch(/^\/authorize\?/);
    expectStatePage(await browser.get(short.headers.location as string));
    const long = await browser.post(
      '/authorize',
      Object.fromEntries(new URLSearchParams(authorizeUrl({ state: 'caf\u00e9', response_type: 'token', padding: 'x'.repeat(8000) }).split('?')[1])),
    );
    expectStatePage(long);
  });

  it('a valid state still comes back on every error redirect, also for errors found before state is checked', async () => {
    const cases: Array<[string, string, string]> = [
      ['a repeated scope', `${authorizeUrl({})}&scope=openid`, 'invalid_request'],
      ['a request_uri that was not pushed', authorizeUrl({ request_uri: 'https://rp.example.com/request.jwt' }), 'request_uri_not_supported'],
      ['registration', authorizeUrl({ registration: '{}' }), 'registration_not_supported'],
      ['no response_type', authorizeUrl({ response_type: undefined }), 'invalid_request'],
      ['response_type=token', authorizeUrl({ response_type: 'token' }), 'unsupported_response_type'],
      ['response_mode=fragment', authorizeUrl({ response_mode: 'fragment' }), 'invalid_request'],
      ['a malformed dpop_jkt', authorizeUrl({ dpop_jkt: 'x' }), 'invalid_request'],
      ['a request object that cannot be opened', authorizeUrl({ request: 'eyJ...' }), 'invalid_request_object'],
      ['a client without the grant', authorizeUrl({ client_id: 'tv' }), 'unauthorized_client'],
      ['an unknown audience', authorizeUrl({ audience: 'https://nope.example' }), 'invalid_target'],
      ['a malformed nonce', authorizeUrl({ nonce: 'n'.repeat(257) }), 'invalid_request'],
      [
        'a state of exactly 1,024 printable characters',
        `${authorizeUrl({ state: undefined, response_type: 'token' })}&state=${encodeURIComponent(' ~'.repeat(512))}`,
        'unsupported_response_type',
      ],
    ];
    for (const [name, url, error] of cases) {
      const res = await browser.get(url);
      expect(res.status, name).toBe(302);
      const q = redirectParams(res);
      expect(q.get('error'), name).toBe(error);
      expect(q.get('state'), name).toBe(name.startsWith('a state of') ? ' ~'.repeat(512) : 'state-123');
      expect(q.get('iss'), name).toBe('http://latchkey.test');
    }
    // And through form_post, as a field of the posted form.
    const posted = await browser.get(authorizeUrl({ response_mode: 'form_post', response_type: 'token' }));
    expect(posted.status).toBe(200);
    expect(posted.body).toContain('<form method="post" action="https://app.example.com/cb">');
    expect(posted.body).toContain('name="error" value="unsupported_response_type"');
    expect(posted.body).toContain('name="state" value="state-123"');
  });
});

describe('GET /authorize: sign-in, consent, code', () => {
  it('an anonymous person signs in, sees the consent page, allows, and is sent back with code, state and iss', async () => {
    const { challenge } = pkcePair();
    const start = await browser.get(
      authorizeUrl({ code_challenge: challenge, nonce: 'n-1', audience: 'https://api.example.com', scope: 'openid email offline_access' }),
    );
    const consent = await signInThrough(start);
    expect(consent.status).toBe(200);
    expect(consent.body).toContain('Allow Photo Editor to access your account?');
    expect(consent.body).toContain('See your email address');
    expect(consent.body).toContain('Photo Library API');
    expect(consent.body).toContain('app.example.com');
    expect(consent.body).toMatch(/<button type="submit" name="decision" value="allow"/);
    expect(consent.body).toMatch(/<button type="submit" name="decision" value="deny"/);
    // The form's answer redirects to the client, so the page's CSP must allow that origin.
    expect(consent.headers['content-security-policy']).toContain("form-action 'self' https://app.example.com");

    const done = await decide(consent, 'allow');
    expect(done.status).toBe(303);
    const q = redirectParams(done);
    expect(done.location!.startsWith(`${web}?`)).toBe(true);
    expect(q.get('code')).toMatch(/^lk_ac_[A-Za-z0-9_-]{43}$/);
    expect(q.get('state')).toBe('state-123');
    expect(q.get('iss')).toBe('http://latchkey.test');

    // Bound to everything the contract names; stored only as its digest.
    const code = await t.store.findAuthorizationCode(sha256(q.get('code')!));
    expect(code).toMatchObject({
      clientId: 'web',
      userId: alice.id,
      redirectUri: web,
      scope: 'openid email offline_access',
      audience: 'https://api.example.com',
      nonce: 'n-1',
      codeChallenge: challenge,
      expiresAt: Math.floor(t.clock()) + 60,
    });
    expect(JSON.stringify(t.store.db.prepare('SELECT * FROM authorization_codes').all())).not.toContain(q.get('code'));
  });

  it('the sign-in page names the application and lets its form redirect there', async () => {
    const start = await browser.get(authorizeUrl({}));
    const login = await browser.get(start.location!);
    expect(login.body).toContain('Sign in to continue to <strong>Photo Editor</strong>');
    expect(login.headers['content-security-policy']).toContain("form-action 'self' https://app.example.com");
  });

  it('Deny → access_denied with state', async () => {
    const consent = await signInThrough(await browser.get(authorizeUrl({})));
    const res = await decide(consent, 'deny');
    expect(res.status).toBe(303);
    const q = redirectParams(res);
    expect(q.get('error')).toBe('access_denied');
    expect(q.get('state')).toBe('state-123');
    expect(q.get('code')).toBeNull();
  });

  it('consent is remembered per user, client and scopes; wider scopes ask again', async () => {
    const consent = await signInThrough(await browser.get(authorizeUrl({ scope: 'openid email' })));
    await decide(consent, 'allow');
    const again = await browser.get(authorizeUrl({ scope: 'openid' }));
    expect(again.status).toBe(302);
    expect(redirectParams(again).get('code')).toMatch(/^lk_ac_/);
    const wider = await browser.get(authorizeUrl({ scope: 'openid email profile' }));
    expect(wider.status).toBe(200);
    expect(wider.body).toContain('See your name, username and other profile details');
  });

  it('prompt=consent asks again even when remembered', async () => {
    await decide(await signInThrough(await browser.get(authorizeUrl({}))), 'allow');
    const res = await browser.get(authorizeUrl({ prompt: 'consent' }));
    expect(res.status).toBe(200);
    expect(res.body).toContain('Allow Photo Editor');
  });

  it('a first-party client skips consent', async () => {
    await signInFirst();
    const res = await browser.get(authorizeUrl({ client_id: 'first' }));
    expect(res.status).toBe(302);
    expect(redirectParams(res).get('code')).toMatch(/^lk_ac_/);
  });

  it('a decision without its CSRF token is refused', async () => {
    const consent = await signInThrough(await browser.get(authorizeUrl({})));
    const res = await browser.post('/authorize/decision', { interaction: inputValue(consent.body, 'interaction')!, decision: 'allow' });
    expect(res.status).toBe(403);
    expect(res.location).toBeUndefined();
  });

  it('an interaction cannot be continued from another browser', async () => {
    const start = await browser.get(authorizeUrl({}));
    const other = new Browser(injectTransport(t.app));
    await signIn(other, await other.get('/login'), 'alice', 'alice-password');
    const res = await other.get(decodeURIComponent(start.location!.split('return_to=')[1]!));
    expect(res.status).toBe(400);
    expect(res.body).toContain('This sign-in has expired');
  });

  it('an interaction expires after 10 minutes', async () => {
    const start = await browser.get(authorizeUrl({}));
    t.clock.advance(601);
    const login = await browser.get(start.location!);
    const after = await signIn(browser, login, 'alice', 'alice-password');
    const res = await browser.get(after.location!);
    expect(res.status).toBe(400);
    expect(res.body).toContain('This sign-in has expired');
  });
});

describe('prompt and max_age', () => {
  it('prompt=none without a session → login_required', async () => {
    const q = redirectParams(await browser.get(authorizeUrl({ prompt: 'none' })));
    expect(q.get('error')).toBe('login_required');
    expect(q.get('state')).toBe('state-123');
  });

  it('prompt=none signed in but without consent → consent_required', async () => {
    await signInFirst();
    expect(redirectParams(await browser.get(authorizeUrl({ prompt: 'none' }))).get('error')).toBe('consent_required');
  });

  it('prompt=none signed in with consent → a code, no page', async () => {
    await signInFirst();
    const res = await browser.get(authorizeUrl({ prompt: 'none', client_id: 'first' }));
    expect(res.status).toBe(302);
    expect(redirectParams(res).get('code')).toMatch(/^lk_ac_/);
  });

  it('prompt=login makes a signed-in person sign in again, and the code carries the new auth_time', async () => {
    await signInFirst();
    t.clock.advance(100);
    const res = await browser.get(authorizeUrl({ prompt: 'login', client_id: 'first' }));
    expect(res.status).toBe(303);
    expect(res.location).toContain('fresh=1');
    const login = await browser.get(res.location!);
    expect(login.status).toBe(200);
    const after = await signIn(browser, login, 'alice', 'alice-password');
    const done = await browser.get(after.location!);
    expect(done.status).toBe(302);
    const code = await t.store.findAuthorizationCode(sha256(redirectParams(done).get('code')!));
    expect(code!.authTime).toBe(Math.floor(t.clock()));
  });

  it('max_age asks for a new sign-in when the last one is older', async () => {
    await signInFirst();
    t.clock.advance(120);
    const stale = await browser.get(authorizeUrl({ max_age: '60', client_id: 'first' }));
    expect(stale.status).toBe(303);
    expect(stale.location).toMatch(/^\/login\?/);
    const recent = await browser.get(authorizeUrl({ max_age: '600', client_id: 'first' }));
    expect(recent.status).toBe(302);
  });
});

describe('decisions are bound to their request (review findings)', () => {
  it("a decision token from another request's page cannot answer a request that asked for a fresh sign-in", async () => {
    await signInFirst();
    const stepUp = await browser.get(authorizeUrl({ client_id: 'first', prompt: 'login' }));
    expect(stepUp.status).toBe(303); // to the sign-in page
    const interaction = decodeURIComponent(stepUp.location!).match(/interaction=([A-Za-z0-9_.-]+)/)![1]!;
    const other = await browser.get(authorizeUrl({ client_id: 'native', redirect_uri: 'http://127.0.0.1:4561/callback' }));
    expect(other.status).toBe(200);
    const res = await browser.post('/authorize/decision', { csrf_token: inputValue(other.body, 'csrf_token')!, interaction, decision: 'allow' });
    expect(res.status).toBe(403);
    expect(res.location).toBeUndefined();
  });

  it('a decision posted when the sign-in is no longer fresh enough goes back to sign-in', async () => {
    await signInFirst();
    const page = await browser.get(authorizeUrl({ max_age: '60' }));
    expect(page.status).toBe(200);
    t.clock.advance(61);
    const res = await decide(page, 'allow');
    expect(res.status).toBe(303);
    expect(res.location).toMatch(/^\/login\?/);
  });

  it('signing in elsewhere does not count as acting on this request (loopback confirmation still shown)', async () => {
    const start = await browser.get(authorizeUrl({ client_id: 'latchkey-cli', redirect_uri: 'http://127.0.0.1:40111/callback' }));
    await signInFirst(); // on another page, not through this request's sign-in
    const res = await browser.get(decodeURIComponent(start.location!.split('return_to=')[1]!.split('&')[0]!));
    expect(res.status).toBe(200);
    expect(res.body).toContain('Continue to Latchkey CLI?');
  });

  it('a private-use scheme redirect also gets the confirmation', async () => {
    await addClient(t.store, 'mobile', { name: 'Mobile App', redirectUris: ['com.example.mobile:/cb'], grantTypes: ['authorization_code'], firstParty: true });
    await signInFirst();
    const res = await browser.get(authorizeUrl({ client_id: 'mobile', redirect_uri: 'com.example.mobile:/cb' }));
    expect(res.status).toBe(200);
    expect(res.body).toContain('Continue to Mobile App?');
  });

  it('a sealed request that was altered, or made for another browser, is refused', async () => {
    const start = await browser.get(authorizeUrl({}));
    const continuePath = decodeURIComponent(start.location!.split('return_to=')[1]!.split('&')[0]!);
    const [body, mac] = continuePath.split('interaction=')[1]!.split('.');
    const wire = JSON.parse(Buffer.from(body!, 'base64url').toString('utf8'));
    wire.r = 'https://evil.example/cb';
    const forged = `${Buffer.from(JSON.stringify(wire)).toString('base64url')}.${mac}`;
    await signInFirst();
    const res = await browser.get(`/authorize/continue?interaction=${forged}`);
    expect(res.status).toBe(400);
    expect(res.body).toContain('This sign-in has expired');
    expect(res.location).toBeUndefined();
  });

  it('a confidential client does not have to use PKCE', async () => {
    await addClient(t.store, 'backend', { redirectUris: [web], grantTypes: ['authorization_code'], confidential: true, firstParty: true });
    await signInFirst();
    const res = await browser.get(authorizeUrl({ client_id: 'backend', code_challenge: undefined, code_challenge_method: undefined }));
    expect(res.status).toBe(302);
    expect(new URL(res.location!).searchParams.get('code')).toMatch(/^lk_ac_/);
  });
});

describe('loopback redirects (RFC 8252)', () => {
  it('accept any port of a registered loopback redirect', async () => {
    await signInFirst();
    const res = await browser.get(authorizeUrl({ client_id: 'native', redirect_uri: 'http://127.0.0.1:53682/callback' }));
    expect(res.status).toBe(200); // consent for a third-party native app
    const done = await decide(res, 'allow');
    expect(done.location!.startsWith('http://127.0.0.1:53682/callback?code=lk_ac_')).toBe(true);
  });

  it('with no page shown on the way, a one-click confirmation comes first (RFC 8252 §8.6)', async () => {
    await signInFirst();
    const cli = await browser.get(authorizeUrl({ client_id: 'latchkey-cli', redirect_uri: 'http://127.0.0.1:40111/callback' }));
    expect(cli.status).toBe(200);
    expect(cli.body).toContain('Continue to Latchkey CLI?');
    expect(cli.headers['content-security-policy']).toContain("form-action 'self' http://127.0.0.1:40111");
    const done = await decide(cli, 'allow');
    expect(done.status).toBe(303);
    expect(done.location!.startsWith('http://127.0.0.1:40111/callback?code=lk_ac_')).toBe(true);
  });

  // A sign-in page is not the person saying yes to this application, so it does
  // not replace the confirmation — above all when the client itself asked for it with prompt=login.
  it('a sign-in in the same request still ends on the confirmation, which then sends the code', async () => {
    const start = await browser.get(authorizeUrl({ client_id: 'latchkey-cli', redirect_uri: 'http://127.0.0.1:40111/callback' }));
    const confirm = await signInThrough(start);
    expect(confirm.status).toBe(200);
    expect(confirm.body).toContain('Continue to Latchkey CLI?');
    const done = await decide(confirm, 'allow');
    expect(done.status).toBe(303);
    expect(done.location!.startsWith('http://127.0.0.1:40111/callback?code=lk_ac_')).toBe(true);
  });

  it('prompt=login does not remove the confirmation (RFC 8252 §8.6)', async () => {
    await signInFirst();
    const start = await browser.get(authorizeUrl({ client_id: 'latchkey-cli', redirect_uri: 'http://127.0.0.1:40111/callback', prompt: 'login' }));
    expect(start.status).toBe(303);
    const login = await browser.get(start.location!);
    const after = await signIn(browser, login, 'alice', 'alice-password');
    const confirm = await browser.get(after.location!);
    expect(confirm.status).toBe(200);
    expect(confirm.body).toContain('Continue to Latchkey CLI?');
    expect(confirm.location).toBeUndefined();
  });

  it('a private-use redirect with prompt=login also keeps the confirmation', async () => {
    await addClient(t.store, 'mobile', { name: 'Mobile App', redirectUris: ['com.example.mobile:/cb'], grantTypes: ['authorization_code'], firstParty: true });
    const start = await browser.get(authorizeUrl({ client_id: 'mobile', redirect_uri: 'com.example.mobile:/cb', prompt: 'login' }));
    const confirm = await signInThrough(start);
    expect(confirm.status).toBe(200);
    expect(confirm.body).toContain('Continue to Mobile App?');
  });

  it('prompt=none to a loopback redirect with no page shown → consent_required', async () => {
    await signInFirst();
    const res = await browser.get(authorizeUrl({ client_id: 'latchkey-cli', redirect_uri: 'http://127.0.0.1:40111/callback', prompt: 'none' }));
    expect(redirectParams(res).get('error')).toBe('consent_required');
  });

  it('a loopback host other than the registered one is refused with a page', async () => {
    const res = await browser.get(authorizeUrl({ client_id: 'latchkey-cli', redirect_uri: 'http://localhost:40111/callback' }));
    expect(res.status).toBe(400);
    expect(res.location).toBeUndefined();
  });
});

describe('anonymous requests cost no storage', () => {
  const tables = () => (t.store.db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all() as Array<{ name: string }>).map(({ name }) => name);
  const rowCounts = () =>
    Object.fromEntries(tables().map((name) => [name, (t.store.db.prepare(`SELECT count(*) AS n FROM "${name}"`).get() as { n: number }).n]));

  it('a flood of anonymous /authorize requests with long state and nonce writes nothing to the database', async () => {
    const before = rowCounts();
    const pages = t.store.db.pragma('page_count', { simple: true });
    for (let i = 0; i < 300; i++) {
      const res = await t.app.inject({ method: 'GET', url: authorizeUrl({ state: `${i}`.padEnd(1024, 's'), nonce: 'n'.repeat(256) }) });
      expect(res.statusCode).toBe(303); // to the sign-in page
    }
    expect(rowCounts()).toEqual(before);
    expect(t.store.db.pragma('page_count', { simple: true })).toBe(pages);
  });

  it('the request is still there after the sign-in: state, nonce and PKCE reach the code', async () => {
    const { verifier, challenge } = pkcePair();
    const state = 'x'.repeat(1024);
    const start = await browser.get(authorizeUrl({ client_id: 'first', state, nonce: 'n'.repeat(256), code_challenge: challenge }));
    const done = await signInThrough(start);
    expect(done.status).toBe(302);
    expect(redirectParams(done).get('state')).toBe(state);
    const code = await t.store.findAuthorizationCode(sha256(redirectParams(done).get('code')!));
    expect(code).toMatchObject({ nonce: 'n'.repeat(256), redirectUri: web, clientId: 'first' });
    expect(code!.codeChallenge).toBe(challenge);
    expect(verifier).toBeTruthy();
  });

  it('a state that is not printable ASCII (RFC 6749 VSCHAR) is refused on a page, never sent back', async () => {
    for (const state of ['caf\u00e9', 'a\u0001b']) {
      const res = await browser.get(authorizeUrl({ state }));
      expect(res.status).toBe(400);
      expect(res.location).toBeUndefined();
      expect(res.body).toContain('The request’s state is malformed.');
    }
  });

  it('a sealed request whose redirect URI was unregistered meanwhile sends nothing there', async () => {
    const start = await browser.get(authorizeUrl({ client_id: 'first' }));
    t.store.db.prepare("UPDATE clients SET redirect_uris = '[]' WHERE client_id = 'first'").run();
    const done = await signInThrough(start);
    expect(done.status).toBe(400);
    expect(done.location).toBeUndefined();
  });

  it('state and nonce are capped (1024 and 256 characters)', async () => {
    const longState = await browser.get(authorizeUrl({ state: 's'.repeat(1025) }));
    expect(longState.status).toBe(400);
    expect(longState.location).toBeUndefined();
    const longNonce = redirectParams(await browser.get(authorizeUrl({ nonce: 'n'.repeat(257) })));
    expect(longNonce.get('error')).toBe('invalid_request');
    expect(longNonce.get('state')).toBe('state-123');
  });
});

describe('id_token_hint (OIDC Core §3.1.2.1)', () => {
  /** A real id_token of `first` for alice: sign in, get a code, redeem it. */
  async function idTokenOf(clientId = 'first'): Promise<string> {
    const { verifier, challenge } = pkcePair();
    await signInFirst();
    const done = await browser.get(authorizeUrl({ client_id: clientId, code_challenge: challenge, nonce: 'n-1' }));
    const code = redirectParams(done).get('code')!;
    const res = await t.app.inject({
      method: 'POST',
      url: '/oauth/token',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({ grant_type: 'authorization_code', client_id: clientId, code, redirect_uri: web, code_verifier: verifier }).toString(),
    });
    expect(res.statusCode).toBe(200);
    return res.json().id_token;
  }

  it('a garbage hint with prompt=none is an error, not ignored', async () => {
    await signInFirst();
    const q = redirectParams(await browser.get(authorizeUrl({ client_id: 'first', prompt: 'none', id_token_hint: 'not.a.token' })));
    expect(q.get('error')).toBe('invalid_request');
    expect(q.get('code')).toBeNull();
    expect(q.get('state')).toBe('state-123');
  });

  it('a tampered hint is refused too', async () => {
    const hint = await idTokenOf();
    const [h, p, sig] = hint.split('.');
    const payload = JSON.parse(Buffer.from(p!, 'base64url').toString('utf8'));
    payload.sub = 'someone-else';
    const tampered = `${h}.${Buffer.from(JSON.stringify(payload)).toString('base64url')}.${sig}`;
    expect(redirectParams(await browser.get(authorizeUrl({ client_id: 'first', prompt: 'none', id_token_hint: tampered }))).get('error')).toBe(
      'invalid_request',
    );
  });

  it('a hint issued to another client is refused', async () => {
    await addClient(t.store, 'first2', { redirectUris: [web], grantTypes: ['authorization_code'], firstParty: true });
    const hint = await idTokenOf();
    expect(redirectParams(await browser.get(authorizeUrl({ client_id: 'first2', prompt: 'none', id_token_hint: hint }))).get('error')).toBe('invalid_request');
  });

  it('a valid hint for the signed-in person gives a code with prompt=none, even once the id_token has expired', async () => {
    const hint = await idTokenOf();
    t.clock.advance(2 * 3600); // past the id_token's hour; the sign-in (12 hours) still holds
    const res = await browser.get(authorizeUrl({ client_id: 'first', prompt: 'none', id_token_hint: hint }));
    expect(redirectParams(res).get('code')).toMatch(/^lk_ac_/);
  });

  it('a valid hint naming someone else than the signed-in person: login_required with prompt=none, a new sign-in otherwise', async () => {
    const hint = await idTokenOf();
    await addUser(t.store, 'bob', 'bob-password');
    const other = new Browser(injectTransport(t.app));
    expect((await signIn(other, await other.get('/login'), 'bob', 'bob-password')).status).toBe(303);
    const none = await other.get(authorizeUrl({ client_id: 'first', prompt: 'none', id_token_hint: hint }));
    expect(redirectParams(none).get('error')).toBe('login_required');
    const interactive = await other.get(authorizeUrl({ client_id: 'first', id_token_hint: hint }));
    expect(interactive.status).toBe(303);
    expect(interactive.location).toMatch(/^\/login\?return_to=.*&fresh=1$/);
  });
});

describe('response_mode=form_post', () => {
  it('answers with a page that posts the response to the redirect URI, under a policy that allows only its own script', async () => {
    const t = await testApp();
    try {
      await addUser(t.store, 'ann', 'ann-password-1');
      await addClient(t.store, 'web', {
        grantTypes: ['authorization_code'],
        redirectUris: ['https://web.example.com/cb'],
        firstParty: true,
        requirePkce: false,
      });
      const browser = new Browser(injectTransport(t.app));
      const query = new URLSearchParams({
        response_type: 'code',
        response_mode: 'form_post',
        client_id: 'web',
        redirect_uri: 'https://web.example.com/cb',
        scope: 'openid',
        state: 'a"b<c',
      });
      let page = await browser.follow(await browser.get(`/authorize?${query}`));
      page = await signIn(browser, page, 'ann', 'ann-password-1');
      const answer = await browser.get(page.location!);
      expect(answer.status).toBe(200);
      expect(answer.headers['cache-control']).toBe('no-store');
      expect(answer.body).toContain('<form method="post" action="https://web.example.com/cb">');
      expect(answer.body).toContain('name="state" value="a&quot;b&lt;c"');
      expect(answer.body).toMatch(/name="code" value="lk_ac_[A-Za-z0-9_-]+"/);
      expect(answer.body).toContain(`name="iss" value="${t.config.issuer}"`);
      const policy = answer.headers['content-security-policy']!;
      const script = /<script>([^<]*)<\/script>/.exec(answer.body)![1]!;
      const { createHash } = await import('node:crypto');
      expect(policy).toContain(`script-src 'sha256-${createHash('sha256').update(script).digest('base64')}'`);
      expect(policy).toContain('form-action https://web.example.com');
      expect(policy).not.toContain("'unsafe-inline'");
      expect(policy).toContain("frame-ancestors 'none'");
    } finally {
      await t.close();
    }
  });

  it('is refused for a private-use scheme redirect (a browser cannot post there), and other modes are refused', async () => {
    const t = await testApp();
    try {
      await addClient(t.store, 'app', { grantTypes: ['authorization_code'], redirectUris: ['com.example.app:/cb'] });
      const bad = await t.app.inject({
        method: 'GET',
        url: `/authorize?${new URLSearchParams({ response_type: 'code', response_mode: 'form_post', client_id: 'app', redirect_uri: 'com.example.app:/cb', state: 's', code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM', code_challenge_method: 'S256' })}`,
      });
      expect(bad.statusCode).toBe(302);
      expect(new URL(bad.headers.location!).searchParams.get('error')).toBe('invalid_request');
      const fragment = await t.app.inject({
        method: 'GET',
        url: `/authorize?${new URLSearchParams({ response_type: 'code', response_mode: 'fragment', client_id: 'app', redirect_uri: 'com.example.app:/cb', state: 's', code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM', code_challenge_method: 'S256' })}`,
      });
      expect(new URL(fragment.headers.location!).searchParams.get('error')).toBe('invalid_request');
      const metadata = (await t.app.inject({ method: 'GET', url: '/.well-known/openid-configuration' })).json();
      expect(metadata.response_modes_supported).toEqual(['query', 'form_post']);
    } finally {
      await t.close();
    }
  });
});

describe('POST /authorize (OIDC Core §3.1.2.1)', () => {
  const formHeaders = { 'content-type': 'application/x-www-form-urlencoded' };

  it('moves the form to a GET of the same request (SameSite=Lax cookies travel with top-level GETs), which then asks to sign in', async () => {
    const params = new URLSearchParams(authorizeUrl({ nonce: 'n-1' }).split('?')[1]);
    const res = await t.app.inject({ method: 'POST', url: '/authorize', headers: formHeaders, payload: params.toString() });
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe(`/authorize?${params.toString()}`);
    expect(res.headers['set-cookie']).toBeUndefined();
    const next = await browser.get(res.headers.location as string);
    await signInThrough(next);
  });

  it('a repeated parameter stays repeated, so the GET refuses it like any repeated parameter', async () => {
    const body = `${authorizeUrl({}).split('?')[1]}&scope=openid`;
    const res = await t.app.inject({ method: 'POST', url: '/authorize', headers: formHeaders, payload: body });
    expect(res.statusCode).toBe(303);
    const answer = await browser.get(res.headers.location as string);
    expect(redirectParams(answer).get('error')).toBe('invalid_request');
  });

  it('a request too long for an address is handled where it was posted (a request object of 9 KB)', async () => {
    const object = `eyJhbGciOiJub25lIn0.${Buffer.from(JSON.stringify({ state: 'from-object', padding: 'x'.repeat(9000) })).toString('base64url')}.`;
    const params = new URLSearchParams(authorizeUrl({ state: undefined, request: object }).split('?')[1]);
    const res = await browser.post('/authorize', Object.fromEntries(params));
    expect(res.status).toBe(303);
    expect(res.location).toMatch(/^\/login\?return_to=%2Fauthorize%2Fcontinue/);
  });

  it('an unknown client or an unregistered redirect posted directly is still an error page; a form with nothing is one too', async () => {
    const long = new URLSearchParams(authorizeUrl({ client_id: 'nobody', padding: 'x'.repeat(8000) }).split('?')[1]);
    const res = await t.app.inject({ method: 'POST', url: '/authorize', headers: formHeaders, payload: long.toString() });
    expect(res.statusCode).toBe(400);
    expect(res.headers.location).toBeUndefined();
    const empty = await t.app.inject({ method: 'POST', url: '/authorize', headers: formHeaders, payload: '' });
    expect(empty.statusCode).toBe(303);
    expect((await browser.get(empty.headers.location as string)).status).toBe(400);
  });

  it('a body that is not a form is refused with a 4xx, never a 500', async () => {
    const res = await t.app.inject({ method: 'POST', url: '/authorize', headers: { 'content-type': 'text/plain' }, payload: 'client_id=web' });
    expect(res.statusCode).toBeGreaterThanOrEqual(400);
    expect(res.statusCode).toBeLessThan(500);
  });
});

describe('claims and request objects at the consent page', () => {
  it('a sub asked for with a value admits no one else: someone else signing in for the request gets access_denied, not a code', async () => {
    await addUser(t.store, 'bob', 'bob-password');
    const claims = JSON.stringify({ id_token: { sub: { value: alice.id, essential: true } } });
    const start = await browser.get(authorizeUrl({ client_id: 'first', claims }));
    const login = await browser.get(start.location!);
    const after = await browser.get((await signIn(browser, login, 'bob', 'bob-password')).location!);
    expect(redirectParams(after).get('error')).toBe('access_denied');
    expect(redirectParams(after).get('code')).toBeNull();
    // Alice herself is let through.
    const aliceBrowser = new Browser(injectTransport(t.app));
    const hers = await aliceBrowser.get(authorizeUrl({ client_id: 'first', claims }));
    const done = await aliceBrowser.get((await signIn(aliceBrowser, await aliceBrowser.get(hers.location!), 'alice', 'alice-password')).location!);
    expect(redirectParams(done).get('code')).toBeTruthy();
  });

  it('prompt=none with claims whose scope the person never allowed is consent_required', async () => {
    await decide(await signInThrough(await browser.get(authorizeUrl({ scope: 'openid' }))), 'allow');
    const quiet = await browser.get(authorizeUrl({ scope: 'openid', prompt: 'none', claims: JSON.stringify({ userinfo: { address: null } }) }));
    expect(redirectParams(quiet).get('error')).toBe('consent_required');
  });

  it('claims asked for by name are part of what the person allows (their scope is shown and remembered)', async () => {
    const claims = JSON.stringify({ userinfo: { phone_number: null, name: null } });
    const first = await signInThrough(await browser.get(authorizeUrl({ scope: 'openid', claims })));
    expect(first.body).toContain('See your phone number');
    expect(first.body).toContain('See your name, username and other profile details');
    const answer = await decide(first, 'allow');
    expect(redirectParams(answer).get('code')).toBeTruthy();
    expect((await t.store.findConsent(alice.id, 'web', t.config.defaultAudience))!.scope.split(' ').sort()).toStrictEqual(['openid', 'phone', 'profile']);
    // Asked again with the same claims: no page (consent covers them); with address: asked.
    expect(redirectParams(await browser.get(authorizeUrl({ scope: 'openid', claims }))).get('code')).toBeTruthy();
    const more = await browser.get(authorizeUrl({ scope: 'openid', claims: JSON.stringify({ id_token: { address: null } }) }));
    expect(more.body).toContain('See your postal address');
  });
});

describe('login_hint and ui_locales on the pages', () => {
  it('login_hint is escaped into the sign-in form, never markup; an overlong one is refused', async () => {
    const res = await browser.get(authorizeUrl({ login_hint: '"><script>alert(1)</script>' }));
    const login = await browser.get(res.location!);
    expect(login.body).toContain('value="&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;"');
    expect(login.body).not.toContain('<script>alert(1)');
    const long = await browser.get(authorizeUrl({ login_hint: 'x'.repeat(300) }));
    expect(redirectParams(long).get('error')).toBe('invalid_request');
  });

  it('ui_locales carries through sign-in to consent; a language Latchkey lacks falls back to Accept-Language, then English', async () => {
    const res = await browser.get(authorizeUrl({ ui_locales: 'de fr' }));
    const login = await browser.get(res.location!);
    expect(login.body).toContain('<html lang="fr"');
    const consent = await browser.get((await signIn(browser, login, 'alice', 'alice-password')).location!);
    expect(consent.body).toContain('<html lang="fr"');
    expect(consent.body).toContain('Voir votre adresse e-mail');
    const other = new Browser(injectTransport(t.app));
    const swedish = await other.get((await other.get(authorizeUrl({ ui_locales: 'se' }))).location!);
    expect(swedish.body).toContain('<html lang="en"');
  });
});
