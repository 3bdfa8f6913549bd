import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { testApp, type TestApp } from '../helpers/app.js';
import { generateSigningKey } from '../../src/crypto/keys.js';
import { isSealed } from '../../src/crypto/secret_box.js';

let t: TestApp;
beforeEach(async () => {
  t = await testApp();
});
afterEach(() => t.close());

describe('GET /.well-known/openid-configuration', () => {
  it('publishes the endpoints that exist, under the issuer', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/.well-known/openid-configuration' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.json()).toMatchObject({
      issuer: 'http://latchkey.test',
      authorization_endpoint: 'http://latchkey.test/authorize',
      device_authorization_endpoint: 'http://latchkey.test/oauth/device/code',
      token_endpoint: 'http://latchkey.test/oauth/token',
      userinfo_endpoint: 'http://latchkey.test/userinfo',
      revocation_endpoint: 'http://latchkey.test/oauth/revoke',
      introspection_endpoint: 'http://latchkey.test/oauth/introspect',
      registration_endpoint: 'http://latchkey.test/oauth/register',
      jwks_uri: 'http://latchkey.test/.well-known/jwks.json',
      grant_types_supported: ['authorization_code', 'urn:ietf:params:oauth:grant-type:device_code', 'refresh_token', 'client_credentials'],
      response_types_supported: ['code'],
      response_modes_supported: ['query', 'form_post'],
      code_challenge_methods_supported: ['S256'],
      authorization_response_iss_parameter_supported: true,
      subject_types_supported: ['public'],
      id_token_signing_alg_values_supported: ['RS256'],
      scopes_supported: ['openid', 'email', 'profile', 'address', 'phone', 'offline_access'],
      claims_parameter_supported: true,
      request_parameter_supported: true,
      request_uri_parameter_supported: false,
      ui_locales_supported: ['en', 'fr'],
      token_endpoint_auth_methods_supported: ['none', 'client_secret_basic', 'client_secret_post', 'client_secret_jwt', 'private_key_jwt'],
      introspection_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post', 'client_secret_jwt', 'private_key_jwt'],
    });
  });
});

describe('GET /.well-known/jwks.json', () => {
  it('publishes the RS256 public key created on first start, and no private part', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/.well-known/jwks.json' });
    expect(res.statusCode).toBe(200);
    const { keys } = res.json();
    expect(keys).toHaveLength(1);
    expect(keys[0]).toMatchObject({ kty: 'RSA', alg: 'RS256', use: 'sig', e: 'AQAB' });
    expect(keys[0].kid).toBe(await t.app.services.signer.activeKid());
    for (const privatePart of ['d', 'p', 'q', 'dp', 'dq', 'qi']) expect(keys[0]).not.toHaveProperty(privatePart);
  });

  it('keeps the same key across restarts on the same database', async () => {
    const before = (await t.app.inject({ method: 'GET', url: '/.well-known/jwks.json' })).json();
    const { buildApp } = await import('../../src/app.js');
    const again = await buildApp({ config: t.config, store: t.store, clock: t.clock, logger: false });
    const after = (await again.inject({ method: 'GET', url: '/.well-known/jwks.json' })).json();
    await again.close();
    expect(after).toEqual(before);
  });
});

describe('health', () => {
  it('GET /healthz → 200', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/healthz' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ status: 'ok' });
  });

  it('GET /readyz → 200 while the database answers, 503 when it does not', async () => {
    expect((await t.app.inject({ method: 'GET', url: '/readyz' })).json()).toEqual({ status: 'ok' });
    t.store.db.close();
    const res = await t.app.inject({ method: 'GET', url: '/readyz' });
    expect(res.statusCode).toBe(503);
    expect(res.json()).toEqual({ status: 'unavailable', reason: 'database' });
  });
});

describe('readiness and signing', () => {
  it('GET /readyz → 503 (signing) and tokens 503 while the newest signing key cannot be used; 200 again once it can', async () => {
    expect((await t.app.inject({ method: 'GET', url: '/readyz' })).statusCode).toBe(200);
    // What an older `latchkey keys rotate` wrote: an active key whose private key is in the clear.
    const clear = generateSigningKey('RS256');
    await t.store.rotateSigningKeys([{ ...clear, createdAt: Math.floor(t.clock()) }], Math.floor(t.clock()));
    t.clock.advance(2);
    const ready = await t.app.inject({ method: 'GET', url: '/readyz' });
    expect({ status: ready.statusCode, body: ready.json(), retryAfter: ready.headers['retry-after'] }).toEqual({
      status: 503,
      body: { status: 'unavailable', reason: 'signing' },
      retryAfter: '2',
    });
    const signed = await t.app.services.signer.signAccessToken({ sub: 'x' }).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(signed).toMatchObject({ code: 'temporarily_unavailable', status: 503 });
    // The keys it had stay published and keep verifying; the untrusted one is not published.
    const jwks = await t.app.inject({ method: 'GET', url: '/.well-known/jwks.json' });
    expect(jwks.statusCode).toBe(200);
    expect(jwks.json().keys.map((k: { kid: string }) => k.kid)).not.toContain(clear.kid);
    // The operator encrypts it on purpose (what secret-key rotate does): signing resumes with it.
    const box = t.app.services.secretBox;
    await t.store.resealSecrets(({ context, value }) => (isSealed(value) ? value : box.seal(context, value)));
    t.clock.advance(2);
    expect((await t.app.inject({ method: 'GET', url: '/readyz' })).statusCode).toBe(200);
    expect(await t.app.services.signer.activeKid()).toBe(clear.kid);
  });
});

describe('unknown addresses', () => {
  it('an API client gets a JSON 404, a browser a page', async () => {
    const api = await t.app.inject({ method: 'GET', url: '/nope' });
    expect(api.statusCode).toBe(404);
    expect(api.json()).toEqual({ error: 'not_found', error_description: 'There is nothing at this address.' });
    const page = await t.app.inject({ method: 'GET', url: '/nope', headers: { accept: 'text/html' } });
    expect(page.statusCode).toBe(404);
    expect(page.body).toContain('Page not found');
  });

  it('the stylesheet is served from this server', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/assets/latchkey.css' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('text/css; charset=utf-8');
    expect(res.body).toContain('prefers-color-scheme: dark');
  });
});
