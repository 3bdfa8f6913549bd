/**
 * Pushed Authorization Requests (RFC 9126): POST /oauth/par authenticates the client as the token
 * endpoint does and validates the request as /authorize would; /authorize redeems the request_uri
 * once, in time, for the client that pushed it, and then uses only the pushed parameters.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { sha256 } from '../../src/crypto/secrets.js';
import { addApi, addClient, addUser, form, pkcePair, testApp, type TestApp } from '../helpers/app.js';
import { Browser, inputValue, injectTransport, signIn, type BrowserResponse } from '../helpers/browser.js';

let t: TestApp;
let browser: Browser;
let backendSecret: string;
const logLines: string[] = [];
const web = 'https://app.example.com/cb';
const requestUriPattern = /^urn:ietf:params:oauth:request_uri:[A-Za-z0-9_-]{43}$/;

beforeEach(async () => {
  logLines.length = 0;
  t = await testApp({}, { logLines });
  await addUser(t.store, 'alice', 'alice-password');
  await addApi(t.store, 'https://api.example.com', 'Photo Library API');
  const grantTypes = ['authorization_code', 'refresh_token'] as const;
  await addClient(t.store, 'spa', { name: 'Photo Editor', redirectUris: [web], grantTypes: [...grantTypes] });
  await addClient(t.store, 'other', { name: 'Other App', redirectUris: [web], grantTypes: [...grantTypes] });
  await addClient(t.store, 'strict', { name: 'Strict App', redirectUris: [web], grantTypes: [...grantTypes], requirePar: true });
  await addClient(t.store, 'tv', { grantTypes: ['device_code'], redirectUris: [web] });
  backendSecret = (await addClient(t.store, 'backend', { name: 'Backend', redirectUris: [web], grantTypes: [...grantTypes], confidential: true })).secret!;
  browser = new Browser(injectTransport(t.app));
});
afterEach(() => t.close());

const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}`;

/** A complete authorization request of client `spa`, with PKCE. */
function request(overrides: Record<string, string | undefined> = {}, verifierChallenge = pkcePair()) {
  const fields: Record<string, string | undefined> = {
    client_id: 'spa',
    response_type: 'code',
    redirect_uri: web,
    scope: 'openid email',
    state: 'pushed-state',
    nonce: 'pushed-nonce',
    code_challenge: verifierChallenge.challenge,
    code_challenge_method: 'S256',
    ...overrides,
  };
  return Object.fromEntries(Object.entries(fields).filter((e): e is [string, string] => e[1] !== undefined));
}

async function push(fields: Record<string, string>, headers: Record<string, string> = {}) {
  const body = form(fields);
  return t.app.inject({ method: 'POST', url: '/oauth/par', payload: body.payload, headers: { ...body.headers, ...headers } });
}

async function pushedUri(fields: Record<string, string>, headers: Record<string, string> = {}): Promise<string> {
  const res = await push(fields, headers);
  expect(res.statusCode, res.body).toBe(201);
  return res.json().request_uri as string;
}

const authorizeWith = (clientId: string, requestUri: string, extra: Record<string, string> = {}) =>
  `/authorize?${new URLSearchParams({ client_id: clientId, request_uri: requestUri, ...extra })}`;

const pushedRows = () => t.store.db.prepare('SELECT * FROM pushed_requests').all() as Array<Record<string, unknown>>;

/** Signs in when asked and allows on the consent page; returns the final redirect to the client. */
async function personAllows(first: BrowserResponse): Promise<URL> {
  let page = first;
  if (page.status === 303 && page.location?.startsWith('/login')) {
    const login = await browser.get(page.location);
    page = await signIn(browser, login, 'alice', 'alice-password');
    expect(page.status).toBe(303);
    page = await browser.get(page.location!);
  }
  expect(page.status, page.body.slice(0, 300)).toBe(200);
  expect(page.body).toContain('name="decision"');
  const done = await browser.post('/authorize/decision', {
    csrf_token: inputValue(page.body, 'csrf_token')!,
    interaction: inputValue(page.body, 'interaction')!,
    decision: 'allow',
  });
  expect(done.status).toBe(303);
  return new URL(done.location!);
}

async function redeem(code: string, fields: Record<string, string>, headers: Record<string, string> = {}) {
  const body = form({ grant_type: 'authorization_code', code, redirect_uri: web, ...fields });
  return t.app.inject({ method: 'POST', url: '/oauth/token', payload: body.payload, headers: { ...body.headers, ...headers } });
}

const claimsOf = (jwt: string) => JSON.parse(Buffer.from(jwt.split('.')[1]!, 'base64url').toString('utf8')) as Record<string, unknown>;

function expectErrorPage(res: BrowserResponse) {
  expect(res.status).toBe(400);
  expect(res.location).toBeUndefined();
  expect(res.headers['content-type']).toMatch(/^text\/html/);
  expect(res.body).toContain('This sign-in link is not valid');
}

describe('POST /oauth/par: pushing a request', () => {
  it('a public client: 201 with a fresh request_uri and expires_in 60, no-store; only the digest of its random part is stored', async () => {
    const fields = request();
    const res = await push(fields);
    expect(res.statusCode).toBe(201);
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    const body = res.json();
    expect(Object.keys(body).sort()).toEqual(['expires_in', 'request_uri']);
    expect(body.expires_in).toBe(60);
    expect(body.request_uri).toMatch(requestUriPattern);
    const random = (body.request_uri as string).split(':').at(-1)!;
    const rows = pushedRows();
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ request_hash: sha256(random), client_id: 'spa', created_at: t.clock(), expires_at: t.clock() + 60, used_at: null });
    expect(JSON.stringify(rows[0])).not.toContain(random);
    expect(JSON.parse(String(rows[0]!.parameters))).toEqual(fields);
    // Each push gets its own request_uri.
    expect(await pushedUri(request())).not.toBe(body.request_uri);
    const audited = logLines.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l.event === 'authorization.pushed');
    expect(audited).toHaveLength(2);
    expect(audited[0]).toMatchObject({ clientId: 'spa' });
  });

  it('a public client: /authorize with the request_uri signs in and issues a code carrying the pushed scope, state, nonce and PKCE', async () => {
    const pkce = pkcePair();
    const requestUri = await pushedUri(request({ scope: 'openid email offline_access', audience: 'https://api.example.com' }, pkce));
    const first = await browser.get(authorizeWith('spa', requestUri));
    expect(first.status).toBe(303);
    expect(first.location).toMatch(/^\/login\?return_to=%2Fauthorize%2Fcontinue%3Finteraction%3D/);
    const callback = await personAllows(first);
    expect(callback.origin + callback.pathname).toBe(web);
    expect(callback.searchParams.get('state')).toBe('pushed-state');
    expect(callback.searchParams.get('iss')).toBe('http://latchkey.test');
    const code = callback.searchParams.get('code')!;
    // The pushed code_challenge binds the code: a wrong verifier cannot redeem it.
    expect((await redeem(code, { client_id: 'spa', code_verifier: pkcePair().verifier })).json()).toMatchObject({ error: 'invalid_grant' });
    const pkce2 = pkcePair();
    const again = await pushedUri(request({ scope: 'openid email offline_access', audience: 'https://api.example.com' }, pkce2));
    // Signed in and consented now: the code comes at once.
    const direct = await browser.get(authorizeWith('spa', again));
    expect(direct.status).toBe(302);
    const tokens = await redeem(new URL(direct.location!).searchParams.get('code')!, { client_id: 'spa', code_verifier: pkce2.verifier });
    expect(tokens.statusCode, tokens.body).toBe(200);
    expect(tokens.json()).toMatchObject({ scope: 'openid email offline_access', token_type: 'Bearer' });
    expect(claimsOf(tokens.json().id_token)).toMatchObject({ aud: 'spa', nonce: 'pushed-nonce', email: 'alice@example.com' });
    expect(claimsOf(tokens.json().access_token)).toMatchObject({ aud: 'https://api.example.com' });
  });

  it('a confidential client with client_secret_basic (no client_id in the body): the code it gets redeems with its secret; the secret is not stored', async () => {
    const fields = request({ client_id: undefined, scope: 'openid profile', code_challenge: undefined, code_challenge_method: undefined });
    const requestUri = await pushedUri(fields, { authorization: basic('backend', backendSecret) });
    const stored = JSON.parse(String(pushedRows()[0]!.parameters)) as Record<string, string>;
    expect(stored).toEqual({ ...fields, client_id: 'backend' });
    const callback = await personAllows(await browser.get(authorizeWith('backend', requestUri)));
    expect(callback.searchParams.get('state')).toBe('pushed-state');
    const tokens = await redeem(callback.searchParams.get('code')!, {}, { authorization: basic('backend', backendSecret) });
    expect(tokens.statusCode, tokens.body).toBe(200);
    expect(tokens.json()).toMatchObject({ scope: 'openid profile' });
    expect(claimsOf(tokens.json().id_token)).toMatchObject({ aud: 'backend', nonce: 'pushed-nonce', name: 'Alice Example' });
  });

  it('a confidential client with client_secret_post: the secret is not among the stored parameters', async () => {
    await pushedUri({ ...request({ client_id: 'backend' }), client_secret: backendSecret });
    const stored = pushedRows()[0]!.parameters as string;
    expect(stored).not.toContain(backendSecret);
    expect(Object.keys(JSON.parse(stored))).not.toContain('client_secret');
  });

  describe('client authentication as at the token endpoint', () => {
    const cases: Array<[string, () => { fields: Record<string, string>; headers?: Record<string, string> }]> = [
      ['a wrong secret (Basic)', () => ({ fields: request({ client_id: undefined }), headers: { authorization: basic('backend', 'lk_cs_wrong') } })],
      ['a wrong secret (post)', () => ({ fields: { ...request({ client_id: 'backend' }), client_secret: 'lk_cs_wrong' } })],
      ['a confidential client with no secret', () => ({ fields: request({ client_id: 'backend' }) })],
      ['an unknown client', () => ({ fields: request({ client_id: 'nobody' }) })],
      ['a public client presenting a secret', () => ({ fields: { ...request(), client_secret: 'made-up' } })],
    ];
    for (const [name, make] of cases) {
      it(`${name} → 401 invalid_client, nothing stored`, async () => {
        const { fields, headers } = make();
        const res = await push(fields, headers);
        expect(res.statusCode).toBe(401);
        expect(res.json()).toEqual({ error: 'invalid_client', error_description: expect.any(String) });
        expect(res.headers['www-authenticate']).toMatch(/^Basic/);
        expect(pushedRows()).toEqual([]);
      });
    }

    it('a body client_id other than the authenticated client → 400 invalid_request', async () => {
      const res = await push(request({ client_id: 'spa' }), { authorization: basic('backend', backendSecret) });
      expect(res.statusCode).toBe(400);
      expect(res.json()).toEqual({ error: 'invalid_request', error_description: 'client_id does not match the authenticated client.' });
      expect(pushedRows()).toEqual([]);
    });

    it('no client at all → 400 invalid_request', async () => {
      const res = await push(request({ client_id: undefined }));
      expect(res.statusCode).toBe(400);
      expect(res.json()).toMatchObject({ error: 'invalid_request' });
    });
  });

  describe('the request is validated as /authorize would, and every problem is a 400 JSON error, never a redirect', () => {
    const cases: Array<[string, Record<string, string | undefined>, string]> = [
      ['no redirect_uri', { redirect_uri: undefined }, 'invalid_request'],
      ['an unregistered redirect_uri', { redirect_uri: 'https://evil.example/cb' }, 'invalid_request'],
      ['no state', { state: undefined }, 'invalid_request'],
      ['a state that could not be echoed (1,025 characters)', { state: 's'.repeat(1025) }, 'invalid_request'],
      ['an unknown scope', { scope: 'openid admin' }, 'invalid_scope'],
      ['an unknown audience', { audience: 'https://nope.example' }, 'invalid_target'],
      ['response_type=token', { response_type: 'token' }, 'unsupported_response_type'],
      ['no PKCE from a public client', { code_challenge: undefined, code_challenge_method: undefined }, 'invalid_request'],
      ['a request_uri inside the pushed request', { request_uri: 'urn:ietf:params:oauth:request_uri:abc' }, 'invalid_request'],
      ['a malformed request object', { request: 'eyJhbGciOiJub25lIn0.bm90IGpzb24.' }, 'invalid_request_object'],
      ['a client that may not use authorization_code', { client_id: 'tv' }, 'unauthorized_client'],
      ['more than 16 KiB of parameters', { login_hint: 'x'.repeat(17_000) }, 'invalid_request'],
    ];
    for (const [name, overrides, error] of cases) {
      it(`${name} → 400 ${error}, nothing stored`, async () => {
        const res = await push(request(overrides));
        expect(res.statusCode).toBe(400);
        expect(res.headers.location).toBeUndefined();
        expect(res.headers['cache-control']).toBe('no-store');
        expect(res.json()).toEqual({ error, error_description: expect.any(String) });
        expect(pushedRows()).toEqual([]);
      });
    }

    it('a repeated parameter → 400 invalid_request', async () => {
      const body = `${new URLSearchParams(request())}&scope=openid`;
      const res = await t.app.inject({ method: 'POST', url: '/oauth/par', payload: body, headers: { 'content-type': 'application/x-www-form-urlencoded' } });
      expect(res.statusCode).toBe(400);
      expect(res.json()).toEqual({ error: 'invalid_request', error_description: 'A parameter is repeated.' });
    });

    it('GET /oauth/par → 405', async () => {
      const res = await t.app.inject({ method: 'GET', url: '/oauth/par' });
      expect(res.statusCode).toBe(405);
      expect(res.headers.allow).toBe('POST');
    });
  });

  it('pushes of a public client count per client and address (LATCHKEY_RATE_LIMIT_DEVICE_AUTHORIZATION); a confidential client is not held to it', async () => {
    for (let n = 0; n < 30; n++) expect((await push(request())).statusCode).toBe(201);
    const limited = await push(request());
    expect(limited.statusCode).toBe(429);
    expect(limited.json()).toMatchObject({ error: 'temporarily_unavailable' });
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
    for (let n = 0; n < 31; n++)
      expect((await push(request({ client_id: 'backend' }), { authorization: basic('backend', backendSecret) })).statusCode).toBe(201);
  });
});

describe('GET /authorize with a pushed request_uri', () => {
  it('a request object may be pushed (RFC 9126 §3): its state and nonce are the ones the code comes back with', async () => {
    const object = `eyJhbGciOiJub25lIn0.${Buffer.from(JSON.stringify({ state: 'object-state', nonce: 'object-nonce' })).toString('base64url')}.`;
    const { verifier, challenge } = pkcePair();
    const requestUri = await pushedUri(request({ request: object, state: undefined, nonce: undefined }, { verifier, challenge }));
    const back = await personAllows(await browser.get(authorizeWith('spa', requestUri)));
    expect(back.searchParams.get('state')).toBe('object-state');
    const tokens = (await redeem(back.searchParams.get('code')!, { client_id: 'spa', code_verifier: verifier })).json();
    expect(claimsOf(tokens.id_token).nonce).toBe('object-nonce');
  });

  it('used twice: the second use is an error page, never a redirect', async () => {
    const requestUri = await pushedUri(request());
    expect((await browser.get(authorizeWith('spa', requestUri))).status).toBe(303);
    expectErrorPage(await browser.get(authorizeWith('spa', requestUri)));
    expect(pushedRows()[0]).toMatchObject({ used_at: t.clock() });
  });

  it('expired after 60 seconds: an error page; 59 seconds is still in time', async () => {
    const late = await pushedUri(request());
    const inTime = await pushedUri(request());
    t.clock.advance(59);
    expect((await browser.get(authorizeWith('spa', inTime))).status).toBe(303);
    t.clock.advance(2);
    expectErrorPage(await browser.get(authorizeWith('spa', late)));
  });

  it("another client's request_uri: an error page, and the request stays usable by its own client", async () => {
    const requestUri = await pushedUri(request());
    expectErrorPage(await browser.get(authorizeWith('other', requestUri)));
    expectErrorPage(await browser.get(authorizeWith('backend', requestUri)));
    expect(pushedRows()[0]).toMatchObject({ used_at: null });
    expect((await browser.get(authorizeWith('spa', requestUri))).status).toBe(303);
  });

  it('no client_id beside the request_uri: an error page, nothing redeemed', async () => {
    const requestUri = await pushedUri(request());
    expectErrorPage(await browser.get(`/authorize?${new URLSearchParams({ request_uri: requestUri })}`));
    expect(pushedRows()[0]).toMatchObject({ used_at: null });
  });

  const unknowns: Array<[string, string]> = [
    ['an unknown (guessed) request_uri', `urn:ietf:params:oauth:request_uri:${'A'.repeat(43)}`],
    ['a malformed request_uri (short)', 'urn:ietf:params:oauth:request_uri:abc'],
    ['a malformed request_uri (bad characters)', `urn:ietf:params:oauth:request_uri:${'%'.repeat(43)}`],
    ['the bare prefix', 'urn:ietf:params:oauth:request_uri:'],
  ];
  for (const [name, requestUri] of unknowns) {
    it(`${name}: an error page`, async () => {
      await pushedUri(request());
      expectErrorPage(await browser.get(authorizeWith('spa', requestUri, { redirect_uri: web, response_type: 'code', state: 's' })));
    });
  }

  it('a request_uri that is not a pushed one (another scheme) stays request_uri_not_supported', async () => {
    const { challenge } = pkcePair();
    const res = await browser.get(
      `/authorize?${new URLSearchParams({ client_id: 'spa', response_type: 'code', redirect_uri: web, state: 's-1', code_challenge: challenge, code_challenge_method: 'S256', request_uri: 'https://rp.example.com/request.jwt' })}`,
    );
    expect(res.status).toBe(302);
    const q = new URL(res.location!).searchParams;
    expect(q.get('error')).toBe('request_uri_not_supported');
    expect(q.get('state')).toBe('s-1');
  });

  it('parameters in the query beside the request_uri are ignored: redirect_uri, scope, state and prompt cannot be injected', async () => {
    const pkce = pkcePair();
    const requestUri = await pushedUri(request({ scope: 'openid' }, pkce));
    const evil = {
      redirect_uri: 'https://evil.example/cb',
      scope: 'openid email profile offline_access',
      state: 'evil-state',
      prompt: 'none',
      response_mode: 'form_post',
      nonce: 'evil-nonce',
    };
    const first = await browser.get(authorizeWith('spa', requestUri, evil));
    // prompt=none would have answered login_required: the pushed request (no prompt) asks to sign in.
    expect(first.status).toBe(303);
    expect(first.location).toMatch(/^\/login/);
    const callback = await personAllows(first);
    expect(callback.origin + callback.pathname).toBe(web);
    expect(callback.searchParams.get('state')).toBe('pushed-state');
    const tokens = await redeem(callback.searchParams.get('code')!, { client_id: 'spa', code_verifier: pkce.verifier });
    expect(tokens.statusCode, tokens.body).toBe(200);
    expect(tokens.json()).toMatchObject({ scope: 'openid' });
    expect(tokens.json().refresh_token).toBeUndefined();
    expect(claimsOf(tokens.json().id_token)).toMatchObject({ nonce: 'pushed-nonce' });
  });

  it('a client disabled after pushing: the pushed request leads to an error page', async () => {
    const requestUri = await pushedUri(request());
    await t.store.setClientDisabled('spa', true);
    expectErrorPage(await browser.get(authorizeWith('spa', requestUri)));
  });
});

describe('clients add --require-par', () => {
  it('a plain authorization request of such a client is refused back to it with invalid_request', async () => {
    const { challenge } = pkcePair();
    const res = await browser.get(
      `/authorize?${new URLSearchParams({ client_id: 'strict', response_type: 'code', redirect_uri: web, scope: 'openid', state: 'strict-state', code_challenge: challenge, code_challenge_method: 'S256' })}`,
    );
    expect(res.status).toBe(302);
    expect(res.location!.startsWith(`${web}?`)).toBe(true);
    const q = new URL(res.location!).searchParams;
    expect(q.get('error')).toBe('invalid_request');
    expect(q.get('error_description')).toBe('This client must use pushed authorization requests.');
    expect(q.get('state')).toBe('strict-state');
    expect(q.get('iss')).toBe('http://latchkey.test');
    expect(q.get('code')).toBeNull();
  });

  it('with an unregistered redirect_uri the refusal is an error page, as for any client', async () => {
    expectErrorPage(
      await browser.get(
        `/authorize?${new URLSearchParams({ client_id: 'strict', response_type: 'code', redirect_uri: 'https://evil.example/cb', state: 's' })}`,
      ),
    );
  });

  it('the same request pushed first is served, down to the code', async () => {
    const pkce = pkcePair();
    const requestUri = await pushedUri(request({ client_id: 'strict', scope: 'openid' }, pkce));
    const callback = await personAllows(await browser.get(authorizeWith('strict', requestUri)));
    expect(callback.searchParams.get('state')).toBe('pushed-state');
    const tokens = await redeem(callback.searchParams.get('code')!, { client_id: 'strict', code_verifier: pkce.verifier });
    expect(tokens.statusCode, tokens.body).toBe(200);
  });
});

describe('discovery', () => {
  it('publishes the PAR endpoint, and that PAR is not required of every client', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/.well-known/openid-configuration' });
    expect(res.json()).toMatchObject({ pushed_authorization_request_endpoint: 'http://latchkey.test/oauth/par', require_pushed_authorization_requests: false });
  });
});
