/**
 * Machine clients: grant_type=client_credentials (RFC 6749 §4.4) within what
 * `clients grant` allows, and client authentication by secret (with a rotation overlap),
 * client_secret_jwt and private_key_jwt (RFC 7523), each with its abuse cases.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { decodeJwt, exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from 'jose';
import { addApi, addClient, addUser, form, testApp, type TestApp } from '../helpers/app.js';
import { tokensFor } from '../helpers/flows.js';
import { newClientSecret } from '../../src/directory/clients.js';

const reports = 'https://reports.example.com';
const billing = 'https://billing.example.com';
const assertionType = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';
let t: TestApp;
let secret: string;
let logLines: string[];

function basic(id: string, value: string): string {
  return `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(value)}`).toString('base64')}`;
}

function token(fields: Record<string, string>, authorization?: string) {
  const request = form(fields);
  return t.app.inject({
    method: 'POST',
    url: '/oauth/token',
    payload: request.payload,
    headers: { ...request.headers, ...(authorization ? { authorization } : {}) },
  });
}

beforeEach(async () => {
  logLines = [];
  t = await testApp({}, { logLines });
  await addApi(t.store, reports, 'Reports', ['nightly'], ['read:reports', 'write:reports']);
  await addApi(t.store, billing, 'Billing', [], ['read:invoices']);
  secret = (await addClient(t.store, 'nightly', { confidential: true, grantTypes: ['client_credentials'], secretBox: t.app.services.secretBox })).secret!;
  await t.store.saveClientGrant({ clientId: 'nightly', api: reports, scopes: ['read:reports'], createdAt: 1_800_000_000 });
});

afterEach(async () => {
  await t.close();
});

describe('client_credentials', () => {
  it('client_secret_basic: a token for the machine itself, no refresh token, no id_token', async () => {
    const res = await token({ grant_type: 'client_credentials', audience: reports, scope: 'read:reports' }, basic('nightly', secret));
    expect(res.statusCode).toBe(200);
    expect(res.headers['cache-control']).toBe('no-store');
    const body = res.json();
    expect(Object.keys(body).sort()).toEqual(['access_token', 'expires_in', 'scope', 'token_type']);
    expect(body.token_type).toBe('Bearer');
    expect(body.scope).toBe('read:reports');
    const claims = decodeJwt(body.access_token);
    expect(claims).toMatchObject({ sub: 'nightly', client_id: 'nightly', aud: reports, scope: 'read:reports', iss: 'http://latchkey.test' });
    expect(claims.auth_time).toBeUndefined();
  });

  it('client_secret_post, no scope asked: everything granted; no audience with a single grant: that API', async () => {
    const res = await token({ grant_type: 'client_credentials', client_id: 'nightly', client_secret: secret });
    expect(res.statusCode).toBe(200);
    expect(res.json().scope).toBe('read:reports');
    expect(decodeJwt(res.json().access_token).aud).toBe(reports);
  });

  it('a machine asking for an ungranted scope → invalid_scope; for an OpenID Connect scope → invalid_scope; for an unknown one → invalid_scope', async () => {
    for (const scope of ['read:reports write:reports', 'write:reports', 'openid', 'read:reports offline_access', 'no-such-scope', 'bad"scope']) {
      const res = await token({ grant_type: 'client_credentials', audience: reports, scope }, basic('nightly', secret));
      expect(res.statusCode, scope).toBe(400);
      expect(res.json().error, scope).toBe('invalid_scope');
    }
  });

  it('an API the machine was not granted, or an unknown one → invalid_target; several grants and no audience → invalid_target', async () => {
    for (const audience of [billing, 'https://unknown.example.com']) {
      const res = await token({ grant_type: 'client_credentials', audience }, basic('nightly', secret));
      expect(res.statusCode).toBe(400);
      expect(res.json().error).toBe('invalid_target');
    }
    await t.store.saveClientGrant({ clientId: 'nightly', api: billing, scopes: ['read:invoices'], createdAt: 1_800_000_000 });
    const unnamed = await token({ grant_type: 'client_credentials' }, basic('nightly', secret));
    expect(unnamed.json().error).toBe('invalid_target');
    const named = await token({ grant_type: 'client_credentials', audience: billing }, basic('nightly', secret));
    expect(named.json().scope).toBe('read:invoices');
  });

  it('a granted scope the API no longer declares is not issued, and a token that would allow nothing is refused', async () => {
    const api = (await t.store.findApi(reports))!;
    await t.store.updateApi({ ...api, scopes: ['write:reports'] });
    const res = await token({ grant_type: 'client_credentials', audience: reports, scope: 'read:reports' }, basic('nightly', secret));
    expect(res.json().error).toBe('invalid_scope');
    const all = await token({ grant_type: 'client_credentials', audience: reports }, basic('nightly', secret));
    expect(all.statusCode).toBe(400);
    expect(all.json().error).toBe('invalid_scope');
  });

  it('a disabled client → invalid_client, and its tokens stop working while it is disabled', async () => {
    const gateway = (await addClient(t.store, 'gateway', { confidential: true, grantTypes: ['client_credentials'] })).secret!;
    const api = (await t.store.findApi(reports))!;
    await t.store.updateApi({ ...api, introspectionClients: ['nightly', 'gateway'] });
    const issued = (await token({ grant_type: 'client_credentials' }, basic('nightly', secret))).json().access_token;
    const introspect = () =>
      t.app.inject({ method: 'POST', url: '/oauth/introspect', ...form({ token: issued, client_id: 'gateway', client_secret: gateway }) });
    expect((await introspect()).json().active).toBe(true);
    await t.store.setClientDisabled('nightly', true);
    const res = await token({ grant_type: 'client_credentials' }, basic('nightly', secret));
    expect(res.statusCode).toBe(401);
    expect(res.json().error).toBe('invalid_client');
    expect((await introspect()).json()).toEqual({ active: false });
    await t.store.setClientDisabled('nightly', false);
    expect((await introspect()).json().active).toBe(true);
  });

  it('a disabled client cannot start a sign-in, refresh, or use its person tokens', async () => {
    const person = await addUser(t.store, 'dora');
    await addClient(t.store, 'tv', { grantTypes: ['device_code', 'refresh_token'] });
    await addClient(t.store, 'web', { grantTypes: ['authorization_code'], redirectUris: ['https://web.example.com/cb'] });
    const tokens = await tokensFor(t, person, 'tv', { scope: 'openid offline_access' });
    await t.store.setClientDisabled('tv', true);
    await t.store.setClientDisabled('web', true);
    const device = await t.app.inject({ method: 'POST', url: '/oauth/device/code', ...form({ client_id: 'tv' }) });
    expect(device.statusCode).toBe(401);
    const refreshed = await token({ grant_type: 'refresh_token', client_id: 'tv', refresh_token: tokens.refresh_token! });
    expect(refreshed.statusCode).toBe(401);
    const userinfo = await t.app.inject({ method: 'GET', url: '/userinfo', headers: { authorization: `Bearer ${tokens.access_token}` } });
    expect(userinfo.statusCode).toBe(401);
    const authorize = await t.app.inject({
      method: 'GET',
      url: `/authorize?${new URLSearchParams({ response_type: 'code', client_id: 'web', redirect_uri: 'https://web.example.com/cb', state: 's', code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM', code_challenge_method: 'S256' })}`,
    });
    expect(authorize.statusCode).toBe(400);
    expect(authorize.body).toContain('disabled');
    expect(authorize.headers.location).toBeUndefined();
  });

  it('a client not registered for the grant → unauthorized_client; a public client → unauthorized_client or invalid_client', async () => {
    const other = (await addClient(t.store, 'web', { confidential: true, grantTypes: ['authorization_code'] })).secret!;
    const res = await token({ grant_type: 'client_credentials' }, basic('web', other));
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toBe('unauthorized_client');
    await addClient(t.store, 'public', { grantTypes: ['client_credentials'] });
    const pub = await token({ grant_type: 'client_credentials', client_id: 'public' });
    expect(pub.statusCode).toBe(400);
    expect(pub.json().error).toBe('unauthorized_client');
  });

  it('wrong secret → invalid_client 401 with a Basic challenge', async () => {
    const res = await token({ grant_type: 'client_credentials' }, basic('nightly', `${secret}x`));
    expect(res.statusCode).toBe(401);
    expect(res.headers['www-authenticate']).toContain('Basic');
  });

  it("the API's introspection client sees the machine token active without a username; userinfo refuses it", async () => {
    const issued = (await token({ grant_type: 'client_credentials' }, basic('nightly', secret))).json().access_token;
    const introspection = await t.app.inject({
      method: 'POST',
      url: '/oauth/introspect',
      ...form({ token: issued }),
      headers: { ...form({}).headers, authorization: basic('nightly', secret) },
    });
    expect(introspection.json()).toMatchObject({ active: true, sub: 'nightly', client_id: 'nightly', scope: 'read:reports' });
    expect(introspection.json().username).toBeUndefined();
    const userinfo = await t.app.inject({ method: 'GET', url: '/userinfo', headers: { authorization: `Bearer ${issued}` } });
    expect(userinfo.statusCode).toBe(401);
  });

  it('revoked by the client, the token is inactive', async () => {
    const issued = (await token({ grant_type: 'client_credentials' }, basic('nightly', secret))).json().access_token;
    const revoke = await t.app.inject({ method: 'POST', url: '/oauth/revoke', ...form({ token: issued, client_id: 'nightly', client_secret: secret }) });
    expect(revoke.statusCode).toBe(200);
    const introspection = await t.app.inject({
      method: 'POST',
      url: '/oauth/introspect',
      ...form({ token: issued, client_id: 'nightly', client_secret: secret }),
    });
    expect(introspection.json().active).toBe(false);
  });

  it('a person token is never taken for a machine token, even when the user id equals a client id', async () => {
    const user = await addUser(t.store, 'mallory', 'correct horse battery', { id: 'nightly' });
    // The other way round: the machine's token names no person, not even the one whose id it shares.
    const machine = (await token({ grant_type: 'client_credentials' }, basic('nightly', secret))).json().access_token;
    expect((await t.app.inject({ method: 'GET', url: '/userinfo', headers: { authorization: `Bearer ${machine}` } })).statusCode).toBe(401);
    const seen = await t.app.inject({ method: 'POST', url: '/oauth/introspect', ...form({ token: machine, client_id: 'nightly', client_secret: secret }) });
    expect(seen.json().active).toBe(true);
    expect(seen.json().username).toBeUndefined();
    await addClient(t.store, 'cli', { grantTypes: ['device_code'] });
    const tokens = await tokensFor(t, user, 'cli', { scope: 'openid' });
    expect(decodeJwt(tokens.access_token).auth_time).toBeDefined();
    // It stays mallory's token: userinfo answers for her, introspection names her.
    const userinfo = await t.app.inject({ method: 'GET', url: '/userinfo', headers: { authorization: `Bearer ${tokens.access_token}` } });
    expect(userinfo.statusCode).toBe(200);
    expect(userinfo.json().sub).toBe('nightly');
  });

  it('is counted in the metrics and stored in the audit log', async () => {
    await token({ grant_type: 'client_credentials' }, basic('nightly', secret));
    const metrics = await t.app.inject({ method: 'GET', url: '/metrics' });
    expect(metrics.body).toMatch(/latchkey_tokens_issued_total\{grant_type="client_credentials"\} 1/);
    await t.app.services.auditTrail.flush();
    const events = await t.store.listAuditEvents({ event: 'token.issued', limit: 10 });
    expect(events[0]).toMatchObject({
      event: 'token.issued',
      clientId: 'nightly',
      details: { grant: 'client_credentials', api: reports, scope: 'read:reports' },
    });
    expect(logLines.some((l) => l.includes('"grant":"client_credentials"'))).toBe(true);
  });
});

describe('secret rotation with an overlap', () => {
  it('the old secret works until the overlap ends, the new one at once', async () => {
    const fresh = newClientSecret(t.app.services.secretBox, 'nightly', true);
    await t.store.rotateClientSecret('nightly', { hash: fresh.hash, sealed: fresh.sealed }, Math.floor(t.clock()) + 60);
    expect((await token({ grant_type: 'client_credentials' }, basic('nightly', secret))).statusCode).toBe(200);
    expect((await token({ grant_type: 'client_credentials' }, basic('nightly', fresh.secret))).statusCode).toBe(200);
    t.clock.advance(61);
    expect((await token({ grant_type: 'client_credentials' }, basic('nightly', secret))).statusCode).toBe(401);
    expect((await token({ grant_type: 'client_credentials' }, basic('nightly', fresh.secret))).statusCode).toBe(200);
  });

  it('without an overlap the old secret stops at once', async () => {
    const fresh = newClientSecret(t.app.services.secretBox, 'nightly', true);
    await t.store.rotateClientSecret('nightly', { hash: fresh.hash, sealed: fresh.sealed }, undefined);
    expect((await token({ grant_type: 'client_credentials' }, basic('nightly', secret))).statusCode).toBe(401);
  });
});

describe('private_key_jwt and client_secret_jwt (RFC 7523)', () => {
  let privateKey: CryptoKey;
  let publicJwk: JWK;

  beforeEach(async () => {
    const pair = await generateKeyPair('ES256');
    privateKey = pair.privateKey;
    publicJwk = { ...(await exportJWK(pair.publicKey)), kid: 'k1', alg: 'ES256', use: 'sig' };
    await addClient(t.store, 'signer', { grantTypes: ['client_credentials'], jwks: { keys: [publicJwk] } });
    await t.store.saveClientGrant({ clientId: 'signer', api: reports, scopes: ['read:reports', 'write:reports'], createdAt: 1_800_000_000 });
  });

  function assertion(claims: Record<string, unknown> = {}, options: { key?: CryptoKey | Uint8Array; alg?: string; now?: number } = {}) {
    const now = options.now ?? Math.floor(t.clock());
    return new SignJWT({ jti: `jti-${Math.random()}`, ...claims })
      .setProtectedHeader({ alg: options.alg ?? 'ES256', kid: 'k1' })
      .setIssuer(typeof claims.iss === 'string' ? claims.iss : 'signer')
      .setSubject(typeof claims.sub === 'string' ? claims.sub : 'signer')
      .setAudience(typeof claims.aud === 'string' ? claims.aud : 'http://latchkey.test/oauth/token')
      .setIssuedAt(now)
      .setExpirationTime(Number(claims.exp ?? now + 60))
      .sign(options.key ?? privateKey);
  }

  function withAssertion(jwt: string, extra: Record<string, string> = {}) {
    return token({ grant_type: 'client_credentials', client_assertion_type: assertionType, client_assertion: jwt, ...extra });
  }

  it('a valid assertion gets a token; the issuer itself is an accepted audience too', async () => {
    const res = await withAssertion(await assertion());
    expect(res.statusCode).toBe(200);
    expect(decodeJwt(res.json().access_token).sub).toBe('signer');
    expect((await withAssertion(await assertion({ aud: 'http://latchkey.test' }))).statusCode).toBe(200);
    expect((await withAssertion(await assertion(), { client_id: 'signer' })).statusCode).toBe(200);
  });

  it('a replayed jti is refused and audited', async () => {
    const jwt = await assertion({ jti: 'once' });
    expect((await withAssertion(jwt)).statusCode).toBe(200);
    const replay = await withAssertion(jwt);
    expect(replay.statusCode).toBe(401);
    expect(replay.json().error).toBe('invalid_client');
    expect(logLines.some((l) => l.includes('client.assertion_replayed'))).toBe(true);
  });

  it('wrong audience, wrong issuer, expired, far-off exp, no jti, another key, alg none, unknown assertion type → invalid_client', async () => {
    const other = await generateKeyPair('ES256');
    const now = Math.floor(t.clock());
    const noJti = await new SignJWT({})
      .setProtectedHeader({ alg: 'ES256' })
      .setIssuer('signer')
      .setSubject('signer')
      .setAudience('http://latchkey.test')
      .setIssuedAt(now)
      .setExpirationTime(now + 60)
      .sign(privateKey);
    const unsigned = `${Buffer.from(JSON.stringify({ alg: 'none' })).toString('base64url')}.${Buffer.from(JSON.stringify({ iss: 'signer', sub: 'signer', aud: 'http://latchkey.test', exp: now + 60, jti: 'x' })).toString('base64url')}.`;
    const cases: [string, string][] = [
      ['audience', await assertion({ aud: 'https://elsewhere.example.com/token' })],
      ['issuer', await assertion({ iss: 'nightly' })],
      ['expired', await assertion({ exp: now - 120 })],
      ['far exp', await assertion({ exp: now + 3600 })],
      ['no jti', noJti],
      ['other key', await assertion({}, { key: other.privateKey })],
      ['alg none', unsigned],
      ['garbage', 'not.a.jwt'],
    ];
    for (const [label, jwt] of cases) {
      const res = await withAssertion(jwt);
      expect(res.statusCode, label).toBe(401);
      expect(res.json().error, label).toBe('invalid_client');
    }
    const wrongType = await token({ grant_type: 'client_credentials', client_assertion_type: 'urn:example:saml', client_assertion: await assertion() });
    expect(wrongType.json().error).toBe('invalid_client');
  });

  it('a client_id that differs from the assertion, or an assertion with a secret too → invalid_request', async () => {
    expect((await withAssertion(await assertion(), { client_id: 'nightly' })).json().error).toBe('invalid_request');
    expect((await withAssertion(await assertion(), { client_secret: 'x' })).json().error).toBe('invalid_request');
  });

  it('an HMAC made with the public key of a client registered with keys is refused (no algorithm confusion)', async () => {
    const confused = await assertion({}, { key: new TextEncoder().encode(JSON.stringify(publicJwk)), alg: 'HS256' });
    expect((await withAssertion(confused)).statusCode).toBe(401);
    const confusedX = await assertion({}, { key: new TextEncoder().encode(String(publicJwk.x)), alg: 'HS256' });
    expect((await withAssertion(confusedX)).statusCode).toBe(401);
  });

  it('an assertion naming several audiences is refused', async () => {
    const now = Math.floor(t.clock());
    const several = await new SignJWT({ jti: 'several' })
      .setProtectedHeader({ alg: 'ES256' })
      .setIssuer('signer')
      .setSubject('signer')
      .setAudience(['http://latchkey.test/oauth/token', 'https://other-server.example.com/token'])
      .setIssuedAt(now)
      .setExpirationTime(now + 60)
      .sign(privateKey);
    expect((await withAssertion(several)).statusCode).toBe(401);
  });

  it('a client registered with keys cannot use a secret, and a secret client cannot pass an asymmetric assertion', async () => {
    const res = await token({ grant_type: 'client_credentials', client_id: 'signer', client_secret: 'anything' });
    expect(res.statusCode).toBe(401);
    const signedByNightly = await assertion({ iss: 'nightly', sub: 'nightly' });
    expect((await withAssertion(signedByNightly)).statusCode).toBe(401);
  });

  it('client_secret_jwt needs a client whose secret is kept for it: a digest-only client is refused', async () => {
    const plain = (await addClient(t.store, 'plain', { confidential: true, grantTypes: ['client_credentials'] })).secret!;
    await t.store.saveClientGrant({ clientId: 'plain', api: reports, scopes: ['read:reports'], createdAt: 1_800_000_000 });
    const jwt = await assertion({ iss: 'plain', sub: 'plain' }, { key: new TextEncoder().encode(plain), alg: 'HS256' });
    expect((await withAssertion(jwt)).statusCode).toBe(401);
    expect((await token({ grant_type: 'client_credentials' }, basic('plain', plain))).statusCode).toBe(200);
  });

  it('client_secret_jwt: an HMAC with the client secret; the wrong secret is refused', async () => {
    const key = new TextEncoder().encode(secret);
    const good = await assertion({ iss: 'nightly', sub: 'nightly' }, { key, alg: 'HS256' });
    const res = await withAssertion(good);
    expect(res.statusCode).toBe(200);
    expect(decodeJwt(res.json().access_token).sub).toBe('nightly');
    const bad = await assertion({ iss: 'nightly', sub: 'nightly' }, { key: new TextEncoder().encode(`${secret}-not`), alg: 'HS256' });
    expect((await withAssertion(bad)).statusCode).toBe(401);
  });

  it('keys fetched from the jwks_uri (and a key set with private parts is never accepted at registration)', async () => {
    let served = 0;
    const server: Server = createServer((_req, res) => {
      served++;
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ keys: [publicJwk] }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const uri = `http://127.0.0.1:${(server.address() as AddressInfo).port}/jwks.json`;
      await addClient(t.store, 'remote', { grantTypes: ['client_credentials'], jwksUri: uri });
      await t.store.saveClientGrant({ clientId: 'remote', api: reports, scopes: ['read:reports'], createdAt: 1_800_000_000 });
      const res = await withAssertion(await assertion({ iss: 'remote', sub: 'remote' }));
      expect(res.statusCode).toBe(200);
      expect((await withAssertion(await assertion({ iss: 'remote', sub: 'remote' }))).statusCode).toBe(200);
      expect(served).toBe(1);
    } finally {
      server.close();
    }
  });

  it('discovery lists the JWT methods and their algorithms', async () => {
    const metadata = (await t.app.inject({ method: 'GET', url: '/.well-known/openid-configuration' })).json();
    expect(metadata.token_endpoint_auth_methods_supported).toEqual(expect.arrayContaining(['private_key_jwt', 'client_secret_jwt', 'client_secret_basic']));
    expect(metadata.token_endpoint_auth_signing_alg_values_supported).toEqual(expect.arrayContaining(['ES256', 'RS256', 'HS256']));
    expect(metadata.token_endpoint_auth_signing_alg_values_supported).not.toContain('none');
    expect(metadata.grant_types_supported).toContain('client_credentials');
  });
});
