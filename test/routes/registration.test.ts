/**
 * Dynamic client registration (RFC 7591) and management (RFC 7592): registrations with
 * an initial access token (single use, expiring), metadata checked as operator-made clients are
 * (stricter for plain http), the exact RFC 7591 §3.2.2 errors, and GET/PUT/DELETE at the
 * registration_client_uri with the client's own registration access token only.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { decodeJwt, exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from 'jose';
import { randomSecret, secretPrefix, sha256 } from '../../src/crypto/secrets.js';
import { addApi, addClient, form, pkcePair, testApp, type TestApp } from '../helpers/app.js';

const reports = 'https://reports.example.com';
const redirectUri = 'https://rp.example.com/callback';
let t: TestApp;
let logLines: string[];
/** The clients bootstrap made (the built-in CLI client). */
let clientsAtStart: number;

beforeEach(async () => {
  logLines = [];
  t = await testApp({}, { logLines });
  await addApi(t.store, reports, 'Reports', [], ['read:reports']);
  clientsAtStart = (await t.store.listClients()).length;
});

afterEach(async () => {
  await t.close();
});

/** An initial access token as `clients registration-token` makes one. */
async function initialToken(lifetime = 3600): Promise<string> {
  const token = randomSecret(secretPrefix.registrationToken);
  const now = Math.floor(t.clock());
  await t.store.createRegistrationToken({ tokenHash: sha256(token), createdAt: now, expiresAt: now + lifetime, usedAt: undefined, clientId: undefined });
  return token;
}

function register(body: unknown, token: string | undefined, headers: Record<string, string> = {}) {
  return t.app.inject({
    method: 'POST',
    url: '/oauth/register',
    headers: { 'content-type': 'application/json', ...(token === undefined ? {} : { authorization: `Bearer ${token}` }), ...headers },
    payload: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

function manage(method: 'GET' | 'PUT' | 'DELETE', clientId: string, token: string | undefined, body?: unknown) {
  return t.app.inject({
    method,
    url: `/oauth/register/${encodeURIComponent(clientId)}`,
    headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...(token === undefined ? {} : { authorization: `Bearer ${token}` }) },
    ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
  });
}

function tokenRequest(fields: Record<string, string>, authorization?: string) {
  const request = form(fields);
  return t.app.inject({
    method: 'POST',
    url: '/oauth/token',
    payload: request.payload,
    headers: { ...request.headers, ...(authorization ? { authorization } : {}) },
  });
}

function basic(id: string, secret: string): string {
  return `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString('base64')}`;
}

const publicApp = {
  client_name: 'Desktop App',
  redirect_uris: ['http://127.0.0.1:8400/callback'],
  token_endpoint_auth_method: 'none',
  grant_types: ['authorization_code', 'refresh_token'],
};

describe('POST /oauth/register: valid registrations', () => {
  it('is advertised in discovery', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/.well-known/openid-configuration' });
    expect(res.json().registration_endpoint).toBe('http://latchkey.test/oauth/register');
  });

  it('a public client: 201 with the RFC 7591 §3.2.1 response, no secret, PKCE required; the token is spent', async () => {
    const token = await initialToken();
    const res = await register({ ...publicApp, scope: 'openid', logo_uri: 'https://rp.example.com/logo.png', 'client_name#fr': 'Appli' }, token);
    expect(res.statusCode).toBe(201);
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.headers['pragma']).toBe('no-cache');
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    const body = res.json();
    expect(body.client_id).toMatch(/^dyn_[A-Za-z0-9]{24}$/);
    expect(body.registration_access_token).toMatch(/^lk_ra_[A-Za-z0-9_-]{43}$/);
    // Unknown members (logo_uri, client_name#fr) are ignored; scope is accepted and not registered.
    expect(body).toStrictEqual({
      client_id: body.client_id,
      client_id_issued_at: 1_800_000_000,
      registration_access_token: body.registration_access_token,
      registration_client_uri: `http://latchkey.test/oauth/register/${body.client_id}`,
      client_name: 'Desktop App',
      redirect_uris: ['http://127.0.0.1:8400/callback'],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    });
    const stored = await t.store.findClient(body.client_id);
    expect(stored).toMatchObject({
      name: 'Desktop App',
      secretHash: undefined,
      requirePkce: true,
      firstParty: false,
      builtIn: false,
      grantTypes: ['authorization_code', 'refresh_token'],
      registrationAccessTokenHash: sha256(body.registration_access_token),
      tokenEndpointAuthMethod: 'none',
    });
    expect(await t.store.findRegistrationToken(sha256(token))).toMatchObject({ usedAt: 1_800_000_000, clientId: body.client_id });
    // The registration access token is stored only as its digest.
    expect(JSON.stringify(t.store.db.prepare('SELECT * FROM clients').all())).not.toContain(body.registration_access_token);
    expect(JSON.stringify(t.store.db.prepare('SELECT * FROM registration_tokens').all())).not.toContain(token);
    expect(logLines.some((l) => l.includes('"event":"client.registered"') && l.includes(body.client_id))).toBe(true);
    expect(logLines.join('\n')).not.toContain(token);
    expect(logLines.join('\n')).not.toContain(body.registration_access_token);
  });

  it('the registered public client can start the Authorization Code flow (PKCE required)', async () => {
    const body = (await register(publicApp, await initialToken())).json();
    const { challenge } = pkcePair();
    const query = { response_type: 'code', client_id: body.client_id, redirect_uri: publicApp.redirect_uris[0]!, scope: 'openid', state: 's-1' };
    const start = await t.app.inject({
      method: 'GET',
      url: `/authorize?${new URLSearchParams({ ...query, code_challenge: challenge, code_challenge_method: 'S256' })}`,
    });
    expect(start.statusCode).toBe(303);
    expect(start.headers.location).toMatch(/^\/login\?return_to=%2Fauthorize%2Fcontinue/);
    const withoutPkce = await t.app.inject({ method: 'GET', url: `/authorize?${new URLSearchParams(query)}` });
    expect([302, 303]).toContain(withoutPkce.statusCode);
    const refused = new URL(withoutPkce.headers.location as string);
    expect(`${refused.origin}${refused.pathname}`).toBe(publicApp.redirect_uris[0]);
    expect(refused.searchParams.get('error')).toBe('invalid_request');
  });

  it('a confidential client_credentials client: a secret once; no API access until an operator grants it; then tokens', async () => {
    const res = await register(
      { client_name: 'Nightly', grant_types: ['client_credentials'], token_endpoint_auth_method: 'client_secret_post' },
      await initialToken(),
    );
    expect(res.statusCode).toBe(201);
    const body = res.json();
    expect(body).toMatchObject({
      grant_types: ['client_credentials'],
      response_types: [],
      token_endpoint_auth_method: 'client_secret_post',
      client_secret_expires_at: 0,
    });
    expect(body.client_secret).toMatch(/^lk_cs_[A-Za-z0-9_-]{43}$/);
    expect(body.redirect_uris).toEqual([]);
    expect(await t.store.findClient(body.client_id)).toMatchObject({ secretHash: sha256(body.client_secret), secretSealed: undefined, requirePkce: false });

    const before = await tokenRequest({ grant_type: 'client_credentials', client_id: body.client_id, client_secret: body.client_secret, audience: reports });
    expect(before.statusCode).toBe(400);
    expect(before.json().error).toBe('invalid_target');
    await t.store.saveClientGrant({ clientId: body.client_id, api: reports, scopes: ['read:reports'], createdAt: 1_800_000_000 });
    const after = await tokenRequest({ grant_type: 'client_credentials', client_id: body.client_id, client_secret: body.client_secret, audience: reports });
    expect(after.statusCode).toBe(200);
    expect(decodeJwt(after.json().access_token)).toMatchObject({ sub: body.client_id, aud: reports, scope: 'read:reports' });
    // client_secret_basic works with the same secret.
    expect((await tokenRequest({ grant_type: 'client_credentials', audience: reports }, basic(body.client_id, body.client_secret))).statusCode).toBe(200);
  });

  it('client_secret_jwt: the secret is kept sealed so the HMAC can be checked', async () => {
    const body = (await register({ grant_types: ['client_credentials'], token_endpoint_auth_method: 'client_secret_jwt' }, await initialToken())).json();
    expect(body.token_endpoint_auth_method).toBe('client_secret_jwt');
    expect(body.client_name).toBe(body.client_id);
    const stored = await t.store.findClient(body.client_id);
    expect(stored?.secretSealed).toBeDefined();
    expect(stored?.secretSealed).not.toContain(body.client_secret);
  });

  it('private_key_jwt with a JWK Set: no secret; assertions signed by the key get tokens once granted', async () => {
    const pair = await generateKeyPair('ES256');
    const publicJwk: JWK = { ...(await exportJWK(pair.publicKey)), kid: 'k1', alg: 'ES256', use: 'sig' };
    const res = await register(
      { grant_types: ['client_credentials'], token_endpoint_auth_method: 'private_key_jwt', jwks: { keys: [publicJwk] } },
      await initialToken(),
    );
    expect(res.statusCode).toBe(201);
    const body = res.json();
    expect(body.client_secret).toBeUndefined();
    expect(body.client_secret_expires_at).toBeUndefined();
    expect(body.jwks).toEqual({ keys: [publicJwk] });
    expect(body.token_endpoint_auth_method).toBe('private_key_jwt');
    await t.store.saveClientGrant({ clientId: body.client_id, api: reports, scopes: ['read:reports'], createdAt: 1_800_000_000 });
    const now = Math.floor(t.clock());
    const assertion = (key: CryptoKey) =>
      new SignJWT({ jti: randomSecret() })
        .setProtectedHeader({ alg: 'ES256', kid: 'k1' })
        .setIssuer(body.client_id)
        .setSubject(body.client_id)
        .setAudience('http://latchkey.test/oauth/token')
        .setIssuedAt(now)
        .setExpirationTime(now + 60)
        .sign(key);
    const assertionType = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';
    const ok = await tokenRequest({
      grant_type: 'client_credentials',
      client_assertion_type: assertionType,
      client_assertion: await assertion(pair.privateKey),
    });
    expect(ok.statusCode).toBe(200);
    const other = await generateKeyPair('ES256');
    const forged = await tokenRequest({
      grant_type: 'client_credentials',
      client_assertion_type: assertionType,
      client_assertion: await assertion(other.privateKey),
    });
    expect(forged.statusCode).toBe(401);
    expect(forged.json().error).toBe('invalid_client');
  });

  it('private_key_jwt with a jwks_uri, device code, logout URIs: all registered as given', async () => {
    const res = await register(
      {
        grant_types: ['urn:ietf:params:oauth:grant-type:device_code', 'refresh_token'],
        token_endpoint_auth_method: 'private_key_jwt',
        jwks_uri: 'https://rp.example.com/jwks.json',
        post_logout_redirect_uris: ['https://rp.example.com/bye'],
        backchannel_logout_uri: 'https://rp.example.com/backchannel',
      },
      await initialToken(),
    );
    expect(res.statusCode).toBe(201);
    expect(res.json()).toMatchObject({
      grant_types: ['urn:ietf:params:oauth:grant-type:device_code', 'refresh_token'],
      response_types: [],
      jwks_uri: 'https://rp.example.com/jwks.json',
      post_logout_redirect_uris: ['https://rp.example.com/bye'],
      backchannel_logout_uri: 'https://rp.example.com/backchannel',
    });
    expect(await t.store.findClient(res.json().client_id)).toMatchObject({
      grantTypes: ['device_code', 'refresh_token'],
      jwksUri: 'https://rp.example.com/jwks.json',
    });
  });

  it('default metadata: authorization_code, code, client_secret_basic', async () => {
    const res = await register({ redirect_uris: [redirectUri] }, await initialToken());
    expect(res.statusCode).toBe(201);
    expect(res.json()).toMatchObject({ grant_types: ['authorization_code'], response_types: ['code'], token_endpoint_auth_method: 'client_secret_basic' });
    expect(res.json().client_secret).toMatch(/^lk_cs_/);
  });
});

describe('POST /oauth/register: invalid metadata → RFC 7591 §3.2.2 errors (and the token is not spent)', () => {
  const cases: Array<[string, unknown, 'invalid_redirect_uri' | 'invalid_client_metadata']> = [
    ['no redirect_uris with authorization_code', { grant_types: ['authorization_code'] }, 'invalid_redirect_uri'],
    ['empty redirect_uris', { redirect_uris: [] }, 'invalid_redirect_uri'],
    ['a relative redirect URI', { redirect_uris: ['/callback'] }, 'invalid_redirect_uri'],
    ['a javascript: redirect URI', { redirect_uris: ['javascript:alert(1)'] }, 'invalid_redirect_uri'],
    ['a data: redirect URI', { redirect_uris: ['data:text/html,hi'] }, 'invalid_redirect_uri'],
    ['a redirect URI with a fragment', { redirect_uris: ['https://rp.example.com/cb#frag'] }, 'invalid_redirect_uri'],
    ['plain http to a host that is not loopback', { redirect_uris: ['http://rp.example.com/cb'] }, 'invalid_redirect_uri'],
    ['a private-use scheme that is not a reverse domain', { redirect_uris: ['myapp:/cb'] }, 'invalid_redirect_uri'],
    ['a redirect URI with spaces', { redirect_uris: ['https://rp.example.com/a b'] }, 'invalid_redirect_uri'],
    ['redirect_uris as a string', { redirect_uris: redirectUri }, 'invalid_redirect_uri'],
    ['redirect_uris holding a number', { redirect_uris: [42] }, 'invalid_redirect_uri'],
    ['more than 20 redirect URIs', { redirect_uris: Array.from({ length: 21 }, (_, n) => `https://rp.example.com/${n}`) }, 'invalid_redirect_uri'],
    ['an unknown grant type', { redirect_uris: [redirectUri], grant_types: ['authorization_code', 'password'] }, 'invalid_client_metadata'],
    ['the implicit grant', { redirect_uris: [redirectUri], grant_types: ['implicit'], response_types: ['token'] }, 'invalid_client_metadata'],
    ['the short device_code alias', { grant_types: ['device_code'] }, 'invalid_client_metadata'],
    ['no grant type at all', { grant_types: [] }, 'invalid_client_metadata'],
    ['response_types token', { redirect_uris: [redirectUri], response_types: ['code', 'token'] }, 'invalid_client_metadata'],
    ['response_types code without authorization_code', { grant_types: ['client_credentials'], response_types: ['code'] }, 'invalid_client_metadata'],
    ['authorization_code without response type code', { redirect_uris: [redirectUri], response_types: [] }, 'invalid_client_metadata'],
    ['an unknown auth method', { redirect_uris: [redirectUri], token_endpoint_auth_method: 'tls_client_auth' }, 'invalid_client_metadata'],
    ['private_key_jwt without keys', { grant_types: ['client_credentials'], token_endpoint_auth_method: 'private_key_jwt' }, 'invalid_client_metadata'],
    [
      'both jwks and jwks_uri',
      {
        grant_types: ['client_credentials'],
        token_endpoint_auth_method: 'private_key_jwt',
        jwks_uri: 'https://rp.example.com/jwks',
        jwks: { keys: [{ kty: 'EC', crv: 'P-256', x: 'x', y: 'y' }] },
      },
      'invalid_client_metadata',
    ],
    [
      'a JWKS holding a private key',
      {
        grant_types: ['client_credentials'],
        token_endpoint_auth_method: 'private_key_jwt',
        jwks: { keys: [{ kty: 'EC', crv: 'P-256', x: 'x', y: 'y', d: 'private' }] },
      },
      'invalid_client_metadata',
    ],
    [
      'a JWKS holding a symmetric key',
      { grant_types: ['client_credentials'], token_endpoint_auth_method: 'private_key_jwt', jwks: { keys: [{ kty: 'oct', k: 'c2VjcmV0' }] } },
      'invalid_client_metadata',
    ],
    ['an empty JWKS', { grant_types: ['client_credentials'], token_endpoint_auth_method: 'private_key_jwt', jwks: { keys: [] } }, 'invalid_client_metadata'],
    [
      'jwks as an array',
      { grant_types: ['client_credentials'], token_endpoint_auth_method: 'private_key_jwt', jwks: [{ kty: 'EC' }] },
      'invalid_client_metadata',
    ],
    [
      'a plain-http jwks_uri',
      { grant_types: ['client_credentials'], token_endpoint_auth_method: 'private_key_jwt', jwks_uri: 'http://rp.example.com/jwks' },
      'invalid_client_metadata',
    ],
    ['keys with a secret method', { grant_types: ['client_credentials'], jwks_uri: 'https://rp.example.com/jwks' }, 'invalid_client_metadata'],
    ['client_credentials for a public client', { grant_types: ['client_credentials'], token_endpoint_auth_method: 'none' }, 'invalid_client_metadata'],
    ['client_name as an array', { redirect_uris: [redirectUri], client_name: ['App'] }, 'invalid_client_metadata'],
    ['client_name as an object', { redirect_uris: [redirectUri], client_name: { en: 'App' } }, 'invalid_client_metadata'],
    ['client_name with a bidi override', { redirect_uris: [redirectUri], client_name: 'Pay\u202eLegit' }, 'invalid_client_metadata'],
    ['client_name with a newline', { redirect_uris: [redirectUri], client_name: 'App\nAdmin' }, 'invalid_client_metadata'],
    ['a client_name over 256 characters', { redirect_uris: [redirectUri], client_name: 'x'.repeat(257) }, 'invalid_client_metadata'],
    ['token_endpoint_auth_method as an array', { redirect_uris: [redirectUri], token_endpoint_auth_method: ['none'] }, 'invalid_client_metadata'],
    ['grant_types as a string', { redirect_uris: [redirectUri], grant_types: 'authorization_code' }, 'invalid_client_metadata'],
    ['scope as an array', { redirect_uris: [redirectUri], scope: ['openid'] }, 'invalid_client_metadata'],
    ['a javascript: post-logout URI', { redirect_uris: [redirectUri], post_logout_redirect_uris: ['javascript:alert(1)'] }, 'invalid_client_metadata'],
    ['a plain-http backchannel logout URI', { redirect_uris: [redirectUri], backchannel_logout_uri: 'http://rp.example.com/bcl' }, 'invalid_client_metadata'],
    ['a JSON array instead of an object', [redirectUri], 'invalid_client_metadata'],
    ['JSON null', null, 'invalid_client_metadata'],
  ];

  for (const [name, body, error] of cases) {
    it(`${name} → ${error}`, async () => {
      const token = await initialToken();
      const res = await register(body, token);
      expect(res.statusCode).toBe(400);
      expect(res.headers['cache-control']).toBe('no-store');
      const answer = res.json();
      expect(Object.keys(answer).sort()).toEqual(['error', 'error_description']);
      expect(answer.error).toBe(error);
      expect(await t.store.findRegistrationToken(sha256(token))).toMatchObject({ usedAt: undefined });
      expect(await t.store.listClients()).toHaveLength(clientsAtStart);
    });
  }

  it('a body that is not JSON, or not sent as application/json → invalid_client_metadata', async () => {
    const token = await initialToken();
    for (const [payload, type] of [
      ['{"redirect_uris": [', 'application/json'],
      ['', 'application/json'],
      [JSON.stringify({ redirect_uris: [redirectUri] }), 'text/plain'],
      ['redirect_uris=https%3A%2F%2Frp.example.com%2Fcb', 'application/x-www-form-urlencoded'],
      [Buffer.from([0x7b, 0xff, 0xfe, 0x7d]), 'application/json'],
    ] as const) {
      const res = await t.app.inject({ method: 'POST', url: '/oauth/register', headers: { 'content-type': type, authorization: `Bearer ${token}` }, payload });
      expect(res.statusCode, `${type}: ${String(payload)}`).toBe(400);
      expect(res.json().error).toBe('invalid_client_metadata');
    }
    const none = await t.app.inject({ method: 'POST', url: '/oauth/register', headers: { authorization: `Bearer ${token}` } });
    expect(none.statusCode).toBe(400);
    expect(none.json().error).toBe('invalid_client_metadata');
    expect(await t.store.findRegistrationToken(sha256(token))).toMatchObject({ usedAt: undefined });
  });

  it('a body over 64 KiB → 413 invalid_client_metadata, whatever Content-Length says', async () => {
    const token = await initialToken();
    const big = JSON.stringify({ redirect_uris: [redirectUri], padding: 'x'.repeat(64 * 1024) });
    const res = await register(big, token);
    expect(res.statusCode).toBe(413);
    expect(res.json()).toEqual({ error: 'invalid_client_metadata', error_description: 'The registration request is larger than 64 KiB.' });
    // Chunked, without a Content-Length: still bounded while reading.
    const { Readable } = await import('node:stream');
    const chunked = await t.app.inject({
      method: 'POST',
      url: '/oauth/register',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}`, 'transfer-encoding': 'chunked' },
      payload: Readable.from([Buffer.from(big.slice(0, 40_000)), Buffer.from(big.slice(40_000))]),
    });
    expect(chunked.statusCode).toBe(413);
    expect(await t.store.findRegistrationToken(sha256(token))).toMatchObject({ usedAt: undefined });
  });

  it('JSON bodies stay refused everywhere else: the token endpoint still takes forms only', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/oauth/token',
      headers: { 'content-type': 'application/json' },
      payload: JSON.stringify({ grant_type: 'client_credentials' }),
    });
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toBe('invalid_request');
  });
});

describe('POST /oauth/register: the initial access token', () => {
  it('none → 401 invalid_token with a bare Bearer challenge', async () => {
    for (const headers of [{}, { authorization: 'Basic Zm9vOmJhcg==' }, { authorization: 'Bearer ' }]) {
      const res = await t.app.inject({
        method: 'POST',
        url: '/oauth/register',
        headers: { 'content-type': 'application/json', ...headers },
        payload: JSON.stringify(publicApp),
      });
      expect(res.statusCode).toBe(401);
      expect(res.headers['www-authenticate']).toBe('Bearer realm="latchkey"');
      expect(res.json()).toEqual({ error: 'invalid_token', error_description: 'An initial access token is required.' });
    }
    expect(await t.store.listClients()).toHaveLength(clientsAtStart);
  });

  it('unknown, expired or already used → 401 invalid_token naming the error; nothing is registered', async () => {
    const used = await initialToken();
    expect((await register(publicApp, used)).statusCode).toBe(201);
    const expiring = await initialToken(60);
    const cases = [randomSecret(secretPrefix.registrationToken), 'lk_it_short', used];
    t.clock.advance(60);
    cases.push(expiring);
    for (const token of cases) {
      const res = await register(publicApp, token);
      expect(res.statusCode).toBe(401);
      expect(res.headers['www-authenticate']).toBe(
        'Bearer realm="latchkey", error="invalid_token", error_description="The initial access token is invalid, expired or already used."',
      );
      expect(res.json()).toEqual({ error: 'invalid_token', error_description: 'The initial access token is invalid, expired or already used.' });
    }
    expect(await t.store.listClients()).toHaveLength(clientsAtStart + 1);
    expect(logLines.filter((l) => l.includes('"event":"client.registration_refused"'))).toHaveLength(4);
  });

  it('a registration access token, or a client secret, is not an initial access token', async () => {
    const registered = (await register({ redirect_uris: [redirectUri] }, await initialToken())).json();
    for (const token of [registered.registration_access_token, registered.client_secret]) {
      expect((await register(publicApp, token)).statusCode).toBe(401);
    }
  });

  it('simultaneous registrations with one token: exactly one client', async () => {
    const token = await initialToken();
    const results = await Promise.all(Array.from({ length: 5 }, () => register(publicApp, token)));
    expect(results.map((r) => r.statusCode).sort()).toEqual([201, 401, 401, 401, 401]);
    expect(await t.store.listClients()).toHaveLength(clientsAtStart + 1);
  });

  it('other methods on /oauth/register → 405', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/oauth/register' });
    expect(res.statusCode).toBe(405);
    expect(res.headers.allow).toBe('POST');
  });
});

describe('RFC 7592 management at registration_client_uri', () => {
  let client: Record<string, string>;

  beforeEach(async () => {
    client = (
      await register(
        {
          client_name: 'Web',
          redirect_uris: [redirectUri],
          grant_types: ['authorization_code', 'refresh_token'],
          token_endpoint_auth_method: 'client_secret_post',
        },
        await initialToken(),
      )
    ).json();
  });

  it('GET with the registration access token: the registered metadata, without the secret', async () => {
    const res = await manage('GET', client.client_id!, client.registration_access_token);
    expect(res.statusCode).toBe(200);
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.json()).toStrictEqual({
      client_id: client.client_id,
      client_id_issued_at: 1_800_000_000,
      client_secret_expires_at: 0,
      registration_access_token: client.registration_access_token,
      registration_client_uri: client.registration_client_uri,
      client_name: 'Web',
      redirect_uris: [redirectUri],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'client_secret_post',
    });
    expect(logLines.some((l) => l.includes('"event":"client.registration_read"'))).toBe(true);
  });

  it('no token, a wrong token, another client’s token, an initial access token, the client secret → 401 invalid_token', async () => {
    const other = (await register(publicApp, await initialToken())).json();
    const unused = await initialToken();
    for (const method of ['GET', 'PUT', 'DELETE'] as const) {
      const body = method === 'PUT' ? { client_id: client.client_id, redirect_uris: ['https://evil.example.com/cb'] } : undefined;
      const bare = await manage(method, client.client_id!, undefined, body);
      expect(bare.statusCode, method).toBe(401);
      expect(bare.headers['www-authenticate']).toBe('Bearer realm="latchkey"');
      for (const token of [randomSecret(secretPrefix.registrationAccessToken), other.registration_access_token, unused, client.client_secret]) {
        const res = await manage(method, client.client_id!, token, body);
        expect(res.statusCode, method).toBe(401);
        expect(res.json()).toEqual({ error: 'invalid_token', error_description: 'The registration access token is invalid.' });
        expect(res.headers['www-authenticate']).toContain('error="invalid_token"');
      }
    }
    // A client's own token does not reach another client either.
    expect((await manage('GET', other.client_id, client.registration_access_token)).statusCode).toBe(401);
    expect((await t.store.findClient(client.client_id!))?.redirectUris).toEqual([redirectUri]);
  });

  it('operator-made, unknown and disabled clients cannot be managed here', async () => {
    await addClient(t.store, 'operator-made', { redirectUris: [redirectUri], grantTypes: ['authorization_code'] });
    expect((await manage('GET', 'operator-made', client.registration_access_token)).statusCode).toBe(401);
    expect((await manage('GET', 'no-such-client', client.registration_access_token)).statusCode).toBe(401);
    await t.store.setClientDisabled(client.client_id!, true);
    expect((await manage('GET', client.client_id!, client.registration_access_token)).statusCode).toBe(401);
  });

  it('PUT replaces the metadata; the secret is kept while the method keeps it, replaced when it changes', async () => {
    const res = await manage('PUT', client.client_id!, client.registration_access_token, {
      client_id: client.client_id,
      client_secret: client.client_secret,
      client_name: 'Web 2',
      redirect_uris: ['https://rp.example.com/new'],
      token_endpoint_auth_method: 'client_secret_basic',
      // Ignored (RFC 7592 §2.2 says not to send them).
      registration_access_token: 'lk_ra_chosen',
      client_id_issued_at: 1,
    });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({
      client_name: 'Web 2',
      redirect_uris: ['https://rp.example.com/new'],
      grant_types: ['authorization_code'],
      token_endpoint_auth_method: 'client_secret_basic',
    });
    expect(res.json().client_secret).toBeUndefined();
    expect(res.json().registration_access_token).toBe(client.registration_access_token);
    expect(await t.store.findClient(client.client_id!)).toMatchObject({
      name: 'Web 2',
      secretHash: sha256(client.client_secret!),
      redirectUris: ['https://rp.example.com/new'],
      grantTypes: ['authorization_code'],
    });
    expect(logLines.some((l) => l.includes('"event":"client.registration_updated"'))).toBe(true);

    // To client_secret_jwt: a new secret (kept sealed), the old one stops working.
    const jwt = await manage('PUT', client.client_id!, client.registration_access_token, {
      client_id: client.client_id,
      redirect_uris: [redirectUri],
      token_endpoint_auth_method: 'client_secret_jwt',
    });
    expect(jwt.statusCode).toBe(200);
    const fresh = jwt.json().client_secret as string;
    expect(fresh).toMatch(/^lk_cs_/);
    expect(fresh).not.toBe(client.client_secret);
    expect(await t.store.findClient(client.client_id!)).toMatchObject({ secretHash: sha256(fresh) });
    expect((await t.store.findClient(client.client_id!))?.secretSealed).toBeDefined();

    // To a public client: no secret at all, PKCE required.
    const open = await manage('PUT', client.client_id!, client.registration_access_token, {
      client_id: client.client_id,
      redirect_uris: [redirectUri],
      token_endpoint_auth_method: 'none',
    });
    expect(open.statusCode).toBe(200);
    expect(open.json().client_secret_expires_at).toBeUndefined();
    expect(await t.store.findClient(client.client_id!)).toMatchObject({
      secretHash: undefined,
      secretSealed: undefined,
      requirePkce: true,
      tokenEndpointAuthMethod: 'none',
    });
  });

  it('PUT is validated like a registration, and must name this client and only its current secret', async () => {
    const put = (body: Record<string, unknown>) => manage('PUT', client.client_id!, client.registration_access_token, body);
    const expectations: Array<[Record<string, unknown>, string]> = [
      [{ client_id: client.client_id, redirect_uris: ['javascript:alert(1)'] }, 'invalid_redirect_uri'],
      [{ client_id: client.client_id, redirect_uris: ['http://evil.example.com/cb'] }, 'invalid_redirect_uri'],
      [{ client_id: client.client_id, redirect_uris: [redirectUri], grant_types: ['password'] }, 'invalid_client_metadata'],
      [{ redirect_uris: [redirectUri] }, 'invalid_client_metadata'],
      [{ client_id: 'dyn_someone_else', redirect_uris: [redirectUri] }, 'invalid_client_metadata'],
      [{ client_id: client.client_id, client_secret: 'lk_cs_chosen_by_the_client', redirect_uris: [redirectUri] }, 'invalid_client_metadata'],
    ];
    for (const [body, error] of expectations) {
      const res = await put(body);
      expect(res.statusCode, JSON.stringify(body)).toBe(400);
      expect(res.json().error).toBe(error);
    }
    expect(await t.store.findClient(client.client_id!)).toMatchObject({ name: 'Web', redirectUris: [redirectUri], secretHash: sha256(client.client_secret!) });
  });

  it('DELETE removes the client as `clients remove` does: 204, its tokens and grants go, the token stops working', async () => {
    await t.store.saveClientGrant({ clientId: client.client_id!, api: reports, scopes: ['read:reports'], createdAt: 1_800_000_000 });
    const res = await manage('DELETE', client.client_id!, client.registration_access_token);
    expect(res.statusCode).toBe(204);
    expect(res.body).toBe('');
    expect(await t.store.findClient(client.client_id!)).toBeUndefined();
    expect(await t.store.listClientGrants(client.client_id)).toEqual([]);
    expect((await manage('GET', client.client_id!, client.registration_access_token)).statusCode).toBe(401);
    expect((await manage('DELETE', client.client_id!, client.registration_access_token)).statusCode).toBe(401);
    expect(logLines.some((l) => l.includes('"event":"client.registration_deleted"'))).toBe(true);
  });

  it('a client a configuration file manages cannot be changed or deleted through registration: 403, nothing changed, the file not told', async () => {
    expect(await t.store.setManagedBy('client', client.client_id!, '/etc/latchkey/latchkey.yaml')).toBe(true);
    const put = await manage('PUT', client.client_id!, client.registration_access_token, {
      client_id: client.client_id,
      client_name: 'Renamed',
      redirect_uris: [redirectUri],
      grant_types: ['authorization_code', 'refresh_token'],
      token_endpoint_auth_method: 'client_secret_post',
    });
    expect(put.statusCode).toBe(403);
    expect(put.json().error).toBe('access_denied');
    expect(put.body).not.toContain('latchkey.yaml');
    const del = await manage('DELETE', client.client_id!, client.registration_access_token);
    expect(del.statusCode).toBe(403);
    expect(await t.store.findClient(client.client_id!)).toMatchObject({ name: 'Web' });
    expect((await manage('GET', client.client_id!, client.registration_access_token)).statusCode).toBe(200);
  });

  it('POST at the registration_client_uri → 405', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: `/oauth/register/${client.client_id}`,
      headers: { 'content-type': 'application/json' },
      payload: '{}',
    });
    expect(res.statusCode).toBe(405);
    expect(res.headers.allow).toBe('GET, PUT, DELETE');
  });
});
