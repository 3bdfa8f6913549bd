/**
 * RFC 8414 authorization server metadata: `/.well-known/oauth-authorization-server` serves the same
 * facts as the OpenID discovery document, at the address RFC 8414 §3.1 gives for the issuer (the
 * well-known segment before the issuer's path, when it has one), and a plain OAuth client library
 * (oauth4webapi with `algorithm: 'oauth2'`) discovers the server with it over a real socket.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { decodeJwt } from 'jose';
import * as oauth from 'oauth4webapi';
import { addApi, addClient, testApp, type TestApp } from '../helpers/app.js';
import { freePort } from '../helpers/process.js';

let t: TestApp | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

async function get(app: TestApp, url: string) {
  return app.app.inject({ method: 'GET', url });
}

describe('GET /.well-known/oauth-authorization-server (RFC 8414)', () => {
  it('the two documents agree on every shared member, and RFC 8414’s required ones are there', async () => {
    t = await testApp();
    const oauthMetadata = await get(t, '/.well-known/oauth-authorization-server');
    const oidcMetadata = await get(t, '/.well-known/openid-configuration');
    expect(oauthMetadata.statusCode).toBe(200);
    expect(oauthMetadata.headers['content-type']).toMatch(/^application\/json/);
    expect(oauthMetadata.headers['cache-control']).toBe('no-store');
    const plain = oauthMetadata.json<Record<string, unknown>>();
    const oidc = oidcMetadata.json<Record<string, unknown>>();
    const shared = Object.keys(plain).filter((key) => key in oidc);
    expect(shared.length).toBeGreaterThan(20);
    for (const key of shared) expect(plain[key], key).toEqual(oidc[key]);
    // Nothing only one of them tells.
    expect(Object.keys(plain).sort()).toEqual(Object.keys(oidc).sort());
    // RFC 8414 §2: issuer, the endpoints of the grants offered, response types; §3.2: the issuer is ours.
    expect(plain).toMatchObject({
      issuer: 'http://latchkey.test',
      authorization_endpoint: 'http://latchkey.test/authorize',
      token_endpoint: 'http://latchkey.test/oauth/token',
      jwks_uri: 'http://latchkey.test/.well-known/jwks.json',
      registration_endpoint: 'http://latchkey.test/oauth/register',
      revocation_endpoint: 'http://latchkey.test/oauth/revoke',
      introspection_endpoint: 'http://latchkey.test/oauth/introspect',
      device_authorization_endpoint: 'http://latchkey.test/oauth/device/code',
      pushed_authorization_request_endpoint: 'http://latchkey.test/oauth/par',
      response_types_supported: ['code'],
      grant_types_supported: ['authorization_code', 'urn:ietf:params:oauth:grant-type:device_code', 'refresh_token', 'client_credentials'],
      code_challenge_methods_supported: ['S256'],
    });
  });

  it('an issuer with a path: the well-known segment goes before the path (§3.1); other paths are not found', async () => {
    t = await testApp({ LATCHKEY_ISSUER: 'https://id.example.com/tenant/a' });
    const inserted = await get(t, '/.well-known/oauth-authorization-server/tenant/a');
    expect(inserted.statusCode).toBe(200);
    expect(inserted.headers['cache-control']).toBe('no-store');
    expect(inserted.json()).toEqual((await get(t, '/.well-known/openid-configuration')).json());
    expect(inserted.json()).toMatchObject({ issuer: 'https://id.example.com/tenant/a', token_endpoint: 'https://id.example.com/tenant/a/oauth/token' });
    // What a proxy serving the issuer's path from this server's root passes on for {issuer}/.well-known/…
    expect((await get(t, '/.well-known/oauth-authorization-server')).json()).toEqual(inserted.json());
    for (const other of [
      '/.well-known/oauth-authorization-server/tenant',
      '/.well-known/oauth-authorization-server/tenant/b',
      '/.well-known/oauth-authorization-server/x',
    ]) {
      const res = await get(t, other);
      expect(res.statusCode, other).toBe(404);
      expect(res.json(), other).toEqual({ error: 'not_found', error_description: 'There is nothing at this address.' });
    }
  });

  it('an issuer without a path has no path-inserted address', async () => {
    t = await testApp();
    expect((await get(t, '/.well-known/oauth-authorization-server/anything')).statusCode).toBe(404);
  });
});

describe('oauth4webapi discovers a plain OAuth 2.0 authorization server (RFC 8414) over a real socket', () => {
  for (const issuerPath of ['', '/idp']) {
    it(`issuer ${issuerPath === '' ? 'without a path' : 'with a path'}: discoveryRequest + processDiscoveryResponse, then a token through the discovered endpoint`, async () => {
      const port = await freePort();
      const issuer = new URL(`http://127.0.0.1:${port}${issuerPath}`);
      t = await testApp({ LATCHKEY_ISSUER: issuer.href.replace(/\/$/, '') });
      await addApi(t.store, 'https://reports.example.com', 'Reports', [], ['read:reports']);
      await addApi(t.store, 'https://billing.example.com', 'Billing', [], ['read:invoices']);
      const secret = (await addClient(t.store, 'nightly', { confidential: true, grantTypes: ['client_credentials'] })).secret!;
      await t.store.saveClientGrant({ clientId: 'nightly', api: 'https://reports.example.com', scopes: ['read:reports'], createdAt: 1_800_000_000 });
      await t.store.saveClientGrant({ clientId: 'nightly', api: 'https://billing.example.com', scopes: ['read:invoices'], createdAt: 1_800_000_000 });
      await t.app.listen({ port, host: '127.0.0.1' });

      const response = await oauth.discoveryRequest(issuer, { algorithm: 'oauth2', [oauth.allowInsecureRequests]: true });
      expect(new URL(response.url).pathname).toBe(`/.well-known/oauth-authorization-server${issuerPath}`);
      const as = await oauth.processDiscoveryResponse(issuer, response);
      expect(as.issuer).toBe(issuer.href.replace(/\/$/, ''));
      expect(as.token_endpoint).toBe(`${as.issuer}/oauth/token`);

      // No proxy strips the issuer's path here: the token endpoint is called at the server's root.
      const server = { ...as, token_endpoint: `http://127.0.0.1:${port}/oauth/token` };
      const client: oauth.Client = { client_id: 'nightly' };
      const granted = await oauth.clientCredentialsGrantRequest(
        server,
        client,
        oauth.ClientSecretBasic(secret),
        { resource: 'https://billing.example.com' },
        { [oauth.allowInsecureRequests]: true },
      );
      const tokens = await oauth.processClientCredentialsResponse(server, client, granted);
      expect(decodeJwt(tokens.access_token)).toMatchObject({ aud: 'https://billing.example.com', iss: as.issuer });
    });
  }
});
