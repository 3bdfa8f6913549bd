/**
 * Cross-origin requests (CORS) through app.inject: discovery and the JWKS for any origin; the
 * token, userinfo, revocation and device authorization endpoints for an origin registered for the
 * client the request concerns, errors included; preflights answered for an origin registered for
 * any client; no CORS header for an absent, malformed or unregistered origin, on any page or other
 * endpoint, and never Access-Control-Allow-Credentials. Also the browser policy: a public client
 * with a web origin has its refresh family end after LATCHKEY_BROWSER_REFRESH_LIFETIME.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { LightMyRequestResponse } from 'fastify';
import { randomUUID } from 'node:crypto';
import { calculateJwkThumbprint, exportJWK, generateKeyPair, SignJWT } from 'jose';
import { addClient, addUser, deviceGrantType, form, testApp, type TestApp } from '../helpers/app.js';
import { refresh, tokensFor } from '../helpers/flows.js';
import { normalizeUserCode, userCodeDigest } from '../../src/oauth/user_code.js';
import type { UserRecord } from '../../src/store/store.js';

let t: TestApp;
let alice: UserRecord;
let confidentialSecret: string;

const app = 'https://app.example.com';
const other = 'https://other.example.com';
const evil = 'https://evil.example';

beforeEach(async () => {
  t = await testApp();
  alice = await addUser(t.store, 'alice');
  await addClient(t.store, 'spa', {
    grantTypes: ['authorization_code', 'device_code', 'refresh_token'],
    redirectUris: [`${app}/callback`],
    webOrigins: [app, 'http://localhost:5173'],
  });
  await addClient(t.store, 'other-spa', { webOrigins: [other] });
  await addClient(t.store, 'tv');
  confidentialSecret = (await addClient(t.store, 'portal', { confidential: true, webOrigins: [app] })).secret!;
});
afterEach(() => t.close());

const header = (res: LightMyRequestResponse, name: string) => res.headers[name];

/** The answer lets a page of `origin` read it: that origin (or any, `*`), its challenges and nonces exposed, never credentials. */
function expectReadableBy(res: LightMyRequestResponse, origin: string) {
  expect(header(res, 'access-control-allow-origin'), res.body).toBe(origin);
  expect(header(res, 'access-control-expose-headers')).toBe('WWW-Authenticate, DPoP-Nonce');
  expect(header(res, 'access-control-allow-credentials')).toBeUndefined();
  expect(header(res, 'vary')).toMatch(/\bOrigin\b/);
}

/** No CORS header at all: the browser keeps the answer from the page. */
function expectNoCors(res: LightMyRequestResponse) {
  for (const name of Object.keys(res.headers)) expect(name.startsWith('access-control-'), `${name} on ${res.statusCode}`).toBe(false);
}

function post(url: string, fields: Record<string, string>, headers: Record<string, string> = {}) {
  const f = form(fields);
  return t.app.inject({ method: 'POST', url, payload: f.payload, headers: { ...f.headers, ...headers } });
}

function preflight(url: string, origin: string, method = 'POST', headers = 'content-type, dpop') {
  return t.app.inject({
    method: 'OPTIONS',
    url,
    headers: { origin, 'access-control-request-method': method, 'access-control-request-headers': headers },
  });
}

/** A device code for `clientId`, approved by alice in the store. */
async function approvedDeviceCode(clientId: string, headers: Record<string, string> = {}): Promise<string> {
  const device = await post('/oauth/device/code', { client_id: clientId, scope: 'openid email offline_access' }, headers);
  expect(device.statusCode, device.body).toBe(200);
  const code = device.json<{ user_code: string; device_code: string }>();
  const grant = await t.store.findDeviceGrantByUserCode(userCodeDigest(t.app.services.userCodeKey, normalizeUserCode(code.user_code)!));
  await t.store.approveDeviceGrant(grant!.id, alice.id, Math.floor(t.clock()), ['pwd'], Math.floor(t.clock()));
  return code.device_code;
}

describe('discovery and the JWKS: any origin', () => {
  for (const url of ['/.well-known/openid-configuration', '/.well-known/oauth-authorization-server', '/.well-known/jwks.json']) {
    it(`${url} is readable from any origin, and preflights are answered`, async () => {
      const res = await t.app.inject({ method: 'GET', url, headers: { origin: evil } });
      expect(res.statusCode).toBe(200);
      expectReadableBy(res, '*');
      const pre = await preflight(url, evil, 'GET', 'dpop');
      expect(pre.statusCode).toBe(204);
      expect(pre.headers).toMatchObject({
        'access-control-allow-origin': '*',
        'access-control-allow-methods': 'GET',
        'access-control-allow-headers': 'authorization, content-type, dpop',
        'access-control-max-age': '3600',
      });
      expect(header(pre, 'access-control-allow-credentials')).toBeUndefined();
      expect(header(pre, 'vary')).toMatch(/\bOrigin\b/);
    });

    it(`${url} without an Origin, or with a malformed one, answers as ever with no CORS header`, async () => {
      const plain = await t.app.inject({ method: 'GET', url });
      expect(plain.statusCode).toBe(200);
      expectNoCors(plain);
      expect(header(plain, 'vary')).toMatch(/\bOrigin\b/);
      for (const origin of [
        'null',
        'https://app.example.com/',
        'HTTPS://APP.EXAMPLE.COM',
        'https://app.example.com:443',
        'ftp://app.example.com',
        'https://user@app.example.com',
        'not an origin',
      ]) {
        const res = await t.app.inject({ method: 'GET', url, headers: { origin } });
        expect(res.statusCode, origin).toBe(200);
        expect(res.body).toBe(plain.body);
        expectNoCors(res);
      }
    });
  }
});

describe('the RFC 8414 metadata of an issuer with a path', () => {
  it('at its path-inserted address (RFC 8414 §3.1): readable from any origin, preflights answered', async () => {
    await t.close();
    t = await testApp({ LATCHKEY_ISSUER: 'http://latchkey.test/id' });
    const res = await t.app.inject({ method: 'GET', url: '/.well-known/oauth-authorization-server/id', headers: { origin: evil } });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ issuer: 'http://latchkey.test/id' });
    expectReadableBy(res, '*');
    const pre = await preflight('/.well-known/oauth-authorization-server/id', evil, 'GET');
    expect(pre.statusCode).toBe(204);
    expect(pre.headers).toMatchObject({ 'access-control-allow-origin': '*', 'access-control-allow-methods': 'GET' });
  });
});

describe('/oauth/token: only an origin registered for the client concerned', () => {
  it("a registered origin of the request's client reads the tokens; another client's origin or an unknown one gets the ordinary answer without CORS headers", async () => {
    const deviceCode = await approvedDeviceCode('spa');
    const tokens = await post('/oauth/token', { grant_type: deviceGrantType, client_id: 'spa', device_code: deviceCode }, { origin: app });
    expect(tokens.statusCode, tokens.body).toBe(200);
    expect(tokens.json()).toHaveProperty('access_token');
    expectReadableBy(tokens, app);

    const second = await approvedDeviceCode('spa');
    const fromOther = await post('/oauth/token', { grant_type: deviceGrantType, client_id: 'spa', device_code: second }, { origin: other });
    // The answer is what it would be for anyone (the browser, not the server, withholds it).
    expect(fromOther.statusCode).toBe(200);
    expectNoCors(fromOther);
    expect(header(fromOther, 'vary')).toMatch(/\bOrigin\b/);

    const unknown = await post('/oauth/token', { grant_type: 'refresh_token', client_id: 'spa', refresh_token: 'lk_rt_nothing' }, { origin: evil });
    expect(unknown.statusCode).toBe(400);
    expectNoCors(unknown);
  });

  it('an OAuth error answer carries the CORS headers for an allowed origin, so the page can read it', async () => {
    const res = await post('/oauth/token', { grant_type: 'refresh_token', client_id: 'spa', refresh_token: 'lk_rt_nothing' }, { origin: app });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ error: 'invalid_grant' });
    expectReadableBy(res, app);
    const missing = await post('/oauth/token', { client_id: 'spa' }, { origin: app });
    expect(missing.json()).toMatchObject({ error: 'invalid_request' });
    expectReadableBy(missing, app);
  });

  it('the client is the one its credentials name: HTTP Basic for a confidential client', async () => {
    const basic = `Basic ${Buffer.from(`portal:${confidentialSecret}`).toString('base64')}`;
    const res = await post('/oauth/token', { grant_type: 'refresh_token', refresh_token: 'lk_rt_nothing' }, { origin: app, authorization: basic });
    expect(res.json()).toMatchObject({ error: 'invalid_grant' });
    expectReadableBy(res, app);
    // Credentials that disagree with the form name no client: nobody's origin reads the refusal.
    const mixed = await post(
      '/oauth/token',
      { grant_type: 'refresh_token', client_id: 'other-spa', refresh_token: 'x' },
      { origin: other, authorization: basic },
    );
    expect(mixed.statusCode).toBe(400);
    expectNoCors(mixed);
  });

  it('a disabled client, a client without web origins, or an unknown client gets no CORS headers', async () => {
    expectReadableBy(await post('/oauth/token', { grant_type: 'refresh_token', client_id: 'spa', refresh_token: 'x' }, { origin: app }), app);
    await t.store.setClientDisabled('spa', true);
    expectNoCors(await post('/oauth/token', { grant_type: 'refresh_token', client_id: 'spa', refresh_token: 'x' }, { origin: app }));
    expectNoCors(await post('/oauth/token', { grant_type: 'refresh_token', client_id: 'tv', refresh_token: 'x' }, { origin: app }));
    expectNoCors(await post('/oauth/token', { grant_type: 'refresh_token', client_id: 'nobody', refresh_token: 'x' }, { origin: app }));
  });

  it('a malformed Origin gets the ordinary answer and no CORS header', async () => {
    // The same origin, well formed, is answered.
    expectReadableBy(await post('/oauth/token', { grant_type: 'refresh_token', client_id: 'spa', refresh_token: 'x' }, { origin: app }), app);
    for (const origin of ['null', `${app}/`, 'HTTPS://APP.EXAMPLE.COM', `${app}:443`, `${app}, ${app}`]) {
      const res = await post('/oauth/token', { grant_type: 'refresh_token', client_id: 'spa', refresh_token: 'x' }, { origin });
      expect(res.statusCode, origin).toBe(400);
      expect(res.json()).toMatchObject({ error: 'invalid_grant' });
      expectNoCors(res);
    }
  });

  it('a preflight is answered for an origin registered for any client, and not for an unknown origin or another method', async () => {
    for (const origin of [app, other, 'http://localhost:5173']) {
      const res = await preflight('/oauth/token', origin);
      expect(res.statusCode, origin).toBe(204);
      expect(res.body).toBe('');
      expect(res.headers).toMatchObject({
        'access-control-allow-origin': origin,
        'access-control-allow-methods': 'POST',
        'access-control-allow-headers': 'authorization, content-type, dpop',
        'access-control-max-age': '3600',
      });
      expect(header(res, 'access-control-allow-credentials')).toBeUndefined();
      expect(header(res, 'vary')).toMatch(/\bOrigin\b/);
    }
    for (const [origin, method] of [
      [evil, 'POST'],
      ['null', 'POST'],
      [app, 'GET'],
      [app, 'DELETE'],
    ] as const) {
      const res = await preflight('/oauth/token', origin, method);
      expect(res.statusCode, `${origin} ${method}`).toBe(204);
      expectNoCors(res);
    }
    // An OPTIONS request that is no preflight says what the endpoint allows.
    const options = await t.app.inject({ method: 'OPTIONS', url: '/oauth/token' });
    expect(options.statusCode).toBe(204);
    expect(header(options, 'allow')).toBe('POST, OPTIONS');
    expectNoCors(options);
  });

  it("a client's origins are answered from the moment they are registered, and no longer once removed", async () => {
    expectNoCors(await preflight('/oauth/token', 'https://new.example.com'));
    await t.store.updateClient('tv', { webOrigins: ['https://new.example.com'] });
    expect(header(await preflight('/oauth/token', 'https://new.example.com'), 'access-control-allow-origin')).toBe('https://new.example.com');
    expectReadableBy(
      await post('/oauth/token', { grant_type: 'refresh_token', client_id: 'tv', refresh_token: 'x' }, { origin: 'https://new.example.com' }),
      'https://new.example.com',
    );
    await t.store.updateClient('tv', { webOrigins: [] });
    expectNoCors(await preflight('/oauth/token', 'https://new.example.com'));
    expectNoCors(await post('/oauth/token', { grant_type: 'refresh_token', client_id: 'tv', refresh_token: 'x' }, { origin: 'https://new.example.com' }));
  });

  it('DPoP from a browser: the nonce challenge is readable (DPoP-Nonce exposed) and the proven request is answered with DPoP tokens', async () => {
    const pair = await generateKeyPair('ES256', { extractable: true });
    const jwk = await exportJWK(pair.publicKey);
    const proof = (nonce?: string) =>
      new SignJWT({ htm: 'POST', htu: 'http://latchkey.test/oauth/token', jti: randomUUID(), iat: Math.floor(t.clock()), ...(nonce ? { nonce } : {}) })
        .setProtectedHeader({ alg: 'ES256', typ: 'dpop+jwt', jwk })
        .sign(pair.privateKey);
    const deviceCode = await approvedDeviceCode('spa');
    const fields = { grant_type: deviceGrantType, client_id: 'spa', device_code: deviceCode };
    const challenge = await post('/oauth/token', fields, { origin: app, dpop: await proof() });
    expect(challenge.json()).toMatchObject({ error: 'use_dpop_nonce' });
    expectReadableBy(challenge, app);
    const nonce = header(challenge, 'dpop-nonce') as string;
    expect(nonce).toBeTruthy();
    const tokens = await post('/oauth/token', fields, { origin: app, dpop: await proof(nonce) });
    expect(tokens.statusCode, tokens.body).toBe(200);
    expect(tokens.json()).toMatchObject({ token_type: 'DPoP' });
    expectReadableBy(tokens, app);
    const claims = JSON.parse(Buffer.from((tokens.json().access_token as string).split('.')[1]!, 'base64url').toString()) as { cnf?: { jkt?: string } };
    expect(claims.cnf?.jkt).toBe(await calculateJwkThumbprint(jwk));
  });
});

describe('/userinfo: the origins of the access token’s client', () => {
  it('readable by an origin of the client the token was issued to, by header or form body; not by another', async () => {
    const { access_token } = await tokensFor(t, alice, 'spa', { scope: 'openid email' });
    const bearer = { authorization: `Bearer ${access_token}` };
    const allowed = await t.app.inject({ method: 'GET', url: '/userinfo', headers: { ...bearer, origin: app } });
    expect(allowed.statusCode).toBe(200);
    expect(allowed.json()).toMatchObject({ sub: alice.id, email: 'alice@example.com' });
    expectReadableBy(allowed, app);
    const byBody = await post('/userinfo', { access_token }, { origin: app });
    expect(byBody.statusCode).toBe(200);
    expectReadableBy(byBody, app);
    const refused = await t.app.inject({ method: 'GET', url: '/userinfo', headers: { ...bearer, origin: other } });
    expect(refused.statusCode).toBe(200);
    expectNoCors(refused);
    // A token of a client with no web origin: no origin reads its answer.
    const tv = await tokensFor(t, alice, 'tv', { scope: 'openid' });
    expectNoCors(await t.app.inject({ method: 'GET', url: '/userinfo', headers: { authorization: `Bearer ${tv.access_token}`, origin: app } }));
  });

  it("the challenge of a refused token is readable (WWW-Authenticate exposed) by its client's origin; cookies play no part", async () => {
    const { access_token } = await tokensFor(t, alice, 'spa', { scope: 'openid' });
    const [head, payload] = access_token.split('.');
    const forged = `${head}.${payload}.${'A'.repeat(86)}`;
    const res = await t.app.inject({ method: 'GET', url: '/userinfo', headers: { authorization: `Bearer ${forged}`, origin: app } });
    expect(res.statusCode).toBe(401);
    expect(header(res, 'www-authenticate')).toContain('invalid_token');
    expectReadableBy(res, app);
    const noToken = await t.app.inject({ method: 'GET', url: '/userinfo', headers: { origin: app, cookie: 'lk_session=whatever' } });
    expect(noToken.statusCode).toBe(401);
    expectNoCors(noToken);
  });

  it('a preflight for GET and POST with an Authorization header is answered for a registered origin', async () => {
    for (const method of ['GET', 'POST']) {
      const res = await preflight('/userinfo', app, method, 'authorization');
      expect(res.statusCode).toBe(204);
      expect(res.headers).toMatchObject({ 'access-control-allow-origin': app, 'access-control-allow-methods': 'GET, POST' });
    }
    expectNoCors(await preflight('/userinfo', evil, 'GET', 'authorization'));
  });
});

describe('/oauth/revoke and /oauth/device/code', () => {
  it("revocation is readable by the client's origin only, and revokes as before", async () => {
    const tokens = await tokensFor(t, alice, 'spa');
    const fromOther = await post('/oauth/revoke', { client_id: 'spa', token: 'lk_rt_unknown' }, { origin: other });
    expect(fromOther.statusCode).toBe(200);
    expectNoCors(fromOther);
    const res = await post('/oauth/revoke', { client_id: 'spa', token: tokens.refresh_token! }, { origin: app });
    expect(res.statusCode).toBe(200);
    expectReadableBy(res, app);
    expect((await refresh(t, 'spa', tokens.refresh_token!)).json()).toMatchObject({ error: 'invalid_grant' });
    expect((await preflight('/oauth/revoke', app)).headers['access-control-allow-origin']).toBe(app);
  });

  it("device authorization is readable by the client's origin only", async () => {
    const res = await post('/oauth/device/code', { client_id: 'spa', scope: 'openid' }, { origin: app });
    expect(res.statusCode).toBe(200);
    expectReadableBy(res, app);
    const fromOther = await post('/oauth/device/code', { client_id: 'spa', scope: 'openid' }, { origin: other });
    expect(fromOther.statusCode).toBe(200);
    expectNoCors(fromOther);
    expect((await preflight('/oauth/device/code', 'http://localhost:5173')).headers['access-control-allow-origin']).toBe('http://localhost:5173');
  });
});

describe('never on pages, /authorize, the console or any other endpoint', () => {
  const elsewhere = [
    '/login',
    '/activate',
    '/account',
    '/account/security',
    '/admin',
    '/admin/clients',
    `/authorize?${new URLSearchParams({ client_id: 'spa', response_type: 'code', redirect_uri: `${app}/callback`, code_challenge: 'x'.repeat(43), code_challenge_method: 'S256' })}`,
    '/logout',
    '/healthz',
    '/readyz',
    '/metrics',
    '/oauth/introspect',
    '/oauth/par',
    '/oauth/register',
    '/nowhere',
  ];

  it('no CORS header for a registered origin, on GET, POST or a preflight', async () => {
    // The origin is registered, and answered where CORS belongs.
    expect(header(await preflight('/oauth/token', app), 'access-control-allow-origin')).toBe(app);
    for (const url of elsewhere) {
      const get = await t.app.inject({ method: 'GET', url, headers: { origin: app, accept: 'text/html' } });
      expectNoCors(get);
      const posted = await post(url.split('?')[0]!, { client_id: 'spa' }, { origin: app });
      expectNoCors(posted);
      const pre = await preflight(url, app);
      expect(pre.statusCode, url).not.toBe(500);
      expectNoCors(pre);
    }
  });
});

describe('the browser policy: refresh families of a public client with a web origin', () => {
  it('end LATCHKEY_BROWSER_REFRESH_LIFETIME (default 24 hours) after the sign-in, however often refreshed; other clients keep theirs', async () => {
    const spa = await tokensFor(t, alice, 'spa');
    const tv = await tokensFor(t, alice, 'tv');
    // Rotating within the lifetime works as ever, and never extends it.
    t.clock.advance(86400 - 60);
    const rotated = await refresh(t, 'spa', spa.refresh_token!);
    expect(rotated.statusCode, rotated.body).toBe(200);
    t.clock.advance(60);
    const late = await refresh(t, 'spa', rotated.json().refresh_token as string);
    expect(late.statusCode).toBe(400);
    expect(late.json()).toMatchObject({ error: 'invalid_grant' });
    // A client with no web origin (a TV) keeps LATCHKEY_REFRESH_TOKEN_TTL.
    expect((await refresh(t, 'tv', tv.refresh_token!)).statusCode).toBe(200);
  });

  it('the lifetime is a setting, and a confidential client with a web origin is not held to it', async () => {
    await t.close();
    t = await testApp({ LATCHKEY_BROWSER_REFRESH_LIFETIME: '3600' });
    alice = await addUser(t.store, 'alice');
    await addClient(t.store, 'spa', { webOrigins: [app] });
    const { secret } = await addClient(t.store, 'portal', { confidential: true, webOrigins: [app] });
    const spa = await tokensFor(t, alice, 'spa');
    const portal = await tokensFor(t, alice, 'portal', { clientSecret: secret! });
    t.clock.advance(3600);
    expect((await refresh(t, 'spa', spa.refresh_token!)).json()).toMatchObject({ error: 'invalid_grant' });
    expect((await refresh(t, 'portal', portal.refresh_token!, { client_secret: secret! })).statusCode).toBe(200);
  });
});
