/**
 * Basic OP plan, the claims parameter and request objects: oidcc-claims-essential,
 * oidcc-unsigned-request-object-supported-correctly-or-rejected-as-unsupported,
 * oidcc-ensure-request-object-with-redirect-uri, and
 * oidcc-request-uri-unsigned-supported-correctly-or-rejected-as-unsupported (not applicable to
 * static clients in the plan; Latchkey takes the "rejected as unsupported" branch).
 *
 * Latchkey supports request objects by value, so the request-object modules take their
 * "supported correctly" branch: state and nonce travel only inside the object.
 */
import { generateKeyPair, exportJWK, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addClient } from '../helpers/app.js';
import {
  authorizationRequest,
  callbackUri,
  codeFlow,
  discoveryUrl,
  expectAuthorizationError,
  expectCode,
  issuer,
  opFetch,
  randomAlphanumeric,
  redeem,
  startOp,
  Tester,
  tokenRequest,
  unsignedRequestObject,
  userinfo,
  type AuthorizationRequest,
  type Op,
} from './suite.js';

let op: Op;
beforeAll(async () => {
  op = await startOp();
});
afterAll(async () => {
  await op?.close();
});

describe('oidcc-claims-essential', () => {
  it('claims={"userinfo":{"name":{"essential":true}}} with scope=openid: name at userinfo, not in the id_token', async () => {
    const claims = JSON.stringify({ userinfo: { name: { essential: true } } });
    const { tokens } = await codeFlow(op, new Tester(op), { extras: { claims } });
    // EnsureIdTokenDoesNotContainName (WARNING).
    expect(tokens.claims.name).toBeUndefined();
    const info = await userinfo(op, tokens);
    // EnsureUserInfoContainsName (WARNING).
    expect(info).toStrictEqual({ sub: tokens.claims.sub, name: 'Buffy Summers' });
  });

  it('the claims asked for by name outlive a refresh: the refreshed token still gets them at userinfo', async () => {
    const claims = JSON.stringify({ userinfo: { phone_number: null } });
    const { tokens } = await codeFlow(op, new Tester(op), { extras: { scope: 'openid offline_access', prompt: 'consent', claims } });
    expect((await userinfo(op, tokens)).phone_number).toBe('+1 (805) 555-0100');
    const refreshed = await tokenRequest(op, op.client, { grant_type: 'refresh_token', refresh_token: tokens.refreshToken! });
    expect(refreshed.status).toBe(200);
    const info = await userinfo(op, { accessToken: refreshed.body.access_token as string, tokenType: 'Bearer' });
    expect(info).toStrictEqual({ sub: tokens.claims.sub, phone_number: '+1 (805) 555-0100' });
  });

  it('claims asked for the id_token are in it; ones the server does not hold are ignored', async () => {
    const claims = JSON.stringify({ id_token: { email: null, phone_number: { essential: true }, shoe_size: null }, userinfo: { address: null } });
    const { tokens } = await codeFlow(op, new Tester(op), { extras: { claims } });
    expect(tokens.claims).toMatchObject({ email: 'buffy@example.test', phone_number: '+1 (805) 555-0100' });
    expect(tokens.claims.shoe_size).toBeUndefined();
    expect((await userinfo(op, tokens)).address).toBeDefined();
  });

  it('a sub asked for with a value names the person: someone else signed in gets login_required with prompt=none', async () => {
    const tester = new Tester(op);
    const first = await codeFlow(op, tester);
    const same = await codeFlow(op, tester, { extras: { prompt: 'none', claims: JSON.stringify({ id_token: { sub: { value: first.tokens.claims.sub } } }) } });
    expect(same.outcome.pages).toStrictEqual([]);
    const request = authorizationRequest(op.client, { prompt: 'none', claims: JSON.stringify({ id_token: { sub: { value: 'someone-else' } } }) });
    expect(expectAuthorizationError(await tester.open(request.url), request.state)).toBe('login_required');
  });

  it('an essential acr no level of Latchkey can meet is unmet_authentication_requirements; urn:latchkey:mfa alone asks for a second factor', async () => {
    const request = authorizationRequest(op.client, { claims: JSON.stringify({ id_token: { acr: { essential: true, values: ['urn:example:gold'] } } }) });
    expect(expectAuthorizationError(await new Tester(op).open(request.url), request.state)).toBe('unmet_authentication_requirements');
    const tester = new Tester(op);
    await codeFlow(op, tester);
    const stepUp = authorizationRequest(op.client, {
      prompt: 'none',
      claims: JSON.stringify({ id_token: { acr: { essential: true, values: ['urn:latchkey:mfa'] } } }),
    });
    expect(expectAuthorizationError(await tester.open(stepUp.url), stepUp.state)).toBe('interaction_required');
  });

  it('a malformed claims parameter is invalid_request at the client', async () => {
    for (const claims of ['{not json', '[]', '{"userinfo":[]}', '{"id_token":{"email":5}}', '{"userinfo":{"name":{"essential":"yes"}}}']) {
      const request = authorizationRequest(op.client, { claims });
      expect(expectAuthorizationError(await new Tester(op).open(request.url), request.state), claims).toBe('invalid_request');
    }
  });
});

/** ConvertAuthorizationEndpointRequestToRequestObject + BuildRequestObjectByValueRedirectToAuthorizationEndpoint. */
function byValue(request: AuthorizationRequest, object: string, queryRedirect = request.params.redirect_uri!): AuthorizationRequest {
  const p = request.params;
  const query = new URLSearchParams({
    request: object,
    response_type: p.response_type!,
    client_id: p.client_id!,
    scope: p.scope!,
    redirect_uri: queryRedirect,
  });
  return { ...request, url: `${issuer}/authorize?${query.toString()}` };
}

describe('oidcc-unsigned-request-object-supported-correctly-or-rejected-as-unsupported', () => {
  it('discovery: request_parameter_supported and none among the request object algorithms (so the module runs)', async () => {
    const metadata = (await (await opFetch(op, discoveryUrl)).json()) as Record<string, unknown>;
    expect(metadata.request_parameter_supported).toBe(true);
    expect(metadata.request_object_signing_alg_values_supported).toEqual(expect.arrayContaining(['none', 'RS256']));
  });

  it('state and nonce only inside an alg=none request object: the code comes back with its state, the id_token with its nonce', async () => {
    const base = authorizationRequest(op.client);
    const request = byValue(base, unsignedRequestObject(base.params));
    expect(request.url).not.toContain('state=');
    const outcome = await new Tester(op).open(request.url);
    const code = expectCode(outcome, base);
    const tokens = await redeem(op, op.client, code, base);
    expect(tokens.claims.nonce).toBe(base.nonce);
  });
});

describe('oidcc-ensure-request-object-with-redirect-uri', () => {
  it('the object\u2019s registered redirect_uri takes precedence over the query\u2019s unregistered one (OIDC Core §6.3.3)', async () => {
    const base = authorizationRequest(op.client);
    const request = byValue(base, unsignedRequestObject(base.params), `${callbackUri}_invalid`);
    const outcome = await new Tester(op).open(request.url);
    expect(outcome.kind === 'callback' && outcome.url.pathname).toBe(new URL(callbackUri).pathname);
    const code = expectCode(outcome, base);
    expect((await redeem(op, op.client, code, base)).claims.nonce).toBe(base.nonce);
  });

  it('an object naming an unregistered redirect_uri is an error page, whatever the query says', async () => {
    const base = authorizationRequest(op.client, { redirect_uri: `${callbackUri}_invalid` });
    const outcome = await new Tester(op).open(byValue(base, unsignedRequestObject(base.params), callbackUri).url);
    expect(outcome.kind).toBe('page');
  });
});

describe('oidcc-request-uri-unsigned-supported-correctly-or-rejected-as-unsupported', () => {
  it('(dynamic clients only in the plan) a request_uri that is not a pushed request is request_uri_not_supported, nothing fetched', async () => {
    const metadata = (await (await opFetch(op, discoveryUrl)).json()) as Record<string, unknown>;
    expect(metadata.request_uri_parameter_supported).toBe(false);
    const base = authorizationRequest(op.client);
    const query = new URLSearchParams({
      request_uri: `${op.origin}/requesturi/${randomAlphanumeric(64)}#frag`,
      response_type: 'code',
      client_id: op.client.id,
      scope: 'openid',
      redirect_uri: callbackUri,
      state: base.state!,
    });
    const outcome = await new Tester(op).open(`${issuer}/authorize?${query.toString()}`);
    expect(expectAuthorizationError(outcome, base.state)).toBe('request_uri_not_supported');
  });
});

describe('request objects: signed, and the abuse cases (OIDC Core §6.1, RFC 9101)', () => {
  async function keyClient() {
    const { publicKey, privateKey } = await generateKeyPair('ES256');
    const jwk = { ...(await exportJWK(publicKey)), kid: 'ro-1', alg: 'ES256', use: 'sig' };
    const id = `ro-${randomAlphanumeric(6)}`;
    await addClient(op.t.store, id, { confidential: true, redirectUris: [callbackUri], grantTypes: ['authorization_code'], jwks: { keys: [jwk] } });
    return { id, privateKey };
  }

  it('an object signed with the client\u2019s registered key is used; a wrong key, another audience, an expired one are refused at the client', async () => {
    const { id, privateKey } = await keyClient();
    const base = authorizationRequest({ id, secret: '' });
    const sign = (claims: Record<string, unknown>, key = privateKey) => new SignJWT(claims).setProtectedHeader({ alg: 'ES256', kid: 'ro-1' }).sign(key);
    const good = await sign({ ...base.params, iss: id, aud: issuer, exp: op.now() + 60 });
    expectCode(await new Tester(op).open(byValue(base, good).url), base);

    const stranger = (await generateKeyPair('ES256')).privateKey;
    const cases = [
      await sign({ ...base.params, iss: id, aud: issuer }, stranger),
      await sign({ ...base.params, iss: id, aud: 'https://elsewhere.example' }),
      await sign({ ...base.params, iss: 'someone-else', aud: issuer }),
      await sign({ ...base.params, iss: id, aud: issuer, exp: op.now() - 120 }),
      await sign({ ...base.params, client_id: 'another-client' }),
      unsignedRequestObject({ ...base.params, request_uri: 'https://x.example/ro' }),
      unsignedRequestObject({ ...base.params, response_type: 'token' }),
      'not.a.jwt',
      `${unsignedRequestObject(base.params)}c2ln`,
    ];
    for (const object of cases) {
      const outcome = await new Tester(op).open(byValue(base, object).url + `&state=${base.state}`);
      expect(expectAuthorizationError(outcome, base.state), object.slice(0, 40)).toBe('invalid_request_object');
    }
  });

  it('HS256 with the secret of a client that keeps it (--client-secret-jwt) is used; HS256 keyed with a registered public key is refused', async () => {
    const { secret } = await addClient(op.t.store, 'ro-hmac', {
      confidential: true,
      redirectUris: [callbackUri],
      grantTypes: ['authorization_code'],
      secretBox: op.t.app.services.secretBox,
    });
    const base = authorizationRequest({ id: 'ro-hmac', secret: secret! });
    const hmac = await new SignJWT({ ...base.params, iss: 'ro-hmac', aud: issuer }).setProtectedHeader({ alg: 'HS256' }).sign(new TextEncoder().encode(secret));
    expectCode(await new Tester(op).open(byValue(base, hmac).url), base);

    // Algorithm confusion: an HMAC keyed with the bytes of the client's own public key.
    const { publicKey } = await generateKeyPair('RS256');
    const jwk = { ...(await exportJWK(publicKey)), kid: 'rsa-1', alg: 'RS256', use: 'sig' };
    await addClient(op.t.store, 'ro-rsa', { confidential: true, redirectUris: [callbackUri], grantTypes: ['authorization_code'], jwks: { keys: [jwk] } });
    const rsaBase = authorizationRequest({ id: 'ro-rsa', secret: '' });
    for (const keyBytes of [JSON.stringify(jwk), String(jwk.n)]) {
      const forged = await new SignJWT({ ...rsaBase.params }).setProtectedHeader({ alg: 'HS256', kid: 'rsa-1' }).sign(new TextEncoder().encode(keyBytes));
      expect(expectAuthorizationError(await new Tester(op).open(byValue(rsaBase, forged).url + `&state=${rsaBase.state}`), rsaBase.state)).toBe(
        'invalid_request_object',
      );
    }
  });

  it('a client whose jwks_uri cannot be reached gets invalid_request_object, not a server error', async () => {
    await addClient(op.t.store, 'ro-remote', {
      confidential: true,
      redirectUris: [callbackUri],
      grantTypes: ['authorization_code'],
      jwksUri: 'https://127.0.0.1:1/jwks.json',
    });
    const { privateKey } = await generateKeyPair('ES256');
    const base = authorizationRequest({ id: 'ro-remote', secret: '' });
    const object = await new SignJWT({ ...base.params, iss: 'ro-remote', aud: issuer }).setProtectedHeader({ alg: 'ES256', kid: 'k' }).sign(privateKey);
    expect(expectAuthorizationError(await new Tester(op).open(byValue(base, object).url + `&state=${base.state}`), base.state)).toBe('invalid_request_object');
  });

  it('a broken object with an unregistered query redirect_uri is a page, never a redirect', async () => {
    const base = authorizationRequest(op.client);
    const outcome = await new Tester(op).open(byValue(base, 'x.y.z', `${callbackUri}/elsewhere`).url);
    expect(outcome.kind).toBe('page');
  });
});
