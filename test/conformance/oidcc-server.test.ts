/**
 * Basic OP plan, the happy flows and the authorization request's basic variations:
 * oidcc-server, oidcc-server-client-secret-post, oidcc-response-type-missing,
 * oidcc-idtoken-signature, oidcc-idtoken-unsigned, oidcc-ensure-request-without-nonce-succeeds-for-code-flow,
 * oidcc-ensure-request-with-unknown-parameter-succeeds, oidcc-ensure-request-with-valid-pkce-succeeds,
 * oidcc-ensure-post-request-succeeds. Each `describe` is named after its module.
 */
import { createHash, randomBytes } from 'node:crypto';
import { decodeProtectedHeader } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addClient } from '../helpers/app.js';
import {
  authorizationRequest,
  callbackUri,
  codeFlow,
  discoveryUrl,
  issuer,
  expectAuthorizationError,
  expectCode,
  fetchJwks,
  opFetch,
  startOp,
  Tester,
  tokenRequest,
  userinfo,
  type Op,
} from './suite.js';

let op: Op;
beforeAll(async () => {
  op = await startOp();
});
afterAll(async () => {
  await op?.close();
});

/** EnsureIdTokenDoesNotContainNonRequestedClaims: what an id_token for scope=openid may carry. */
const protocolClaims = ['iss', 'sub', 'aud', 'exp', 'iat', 'auth_time', 'nonce', 'acr', 'amr', 'azp', 'at_hash', 'c_hash', 'nbf', 'jti', 'sid', 's_hash'];

describe('oidcc-server', () => {
  it('code flow with client_secret_basic: code, state, iss; id_token checks; userinfo', async () => {
    const { code, tokens } = await codeFlow(op, new Tester(op));
    // EnsureMinimumAuthorizationCodeLength (≥ 128 bits) and EnsureMinimumAuthorizationCodeEntropy (> 96 bits).
    expect(Buffer.byteLength(code)).toBeGreaterThanOrEqual(16);
    const counts = new Map<string, number>();
    for (const ch of code) counts.set(ch, (counts.get(ch) ?? 0) + 1);
    const bitsPerChar = -[...counts.values()].reduce((sum, n) => sum + (n / code.length) * Math.log2(n / code.length), 0);
    expect(bitsPerChar * code.length).toBeGreaterThan(96);
    // ValidateAtHash: present and right (checked in redeem); EnsureIdTokenDoesNotContainName (WARNING).
    expect(tokens.claims.at_hash).toBeDefined();
    expect(tokens.claims.name).toBeUndefined();
    // EnsureIdTokenDoesNotContainNonRequestedClaims (WARNING): scope=openid asks for nothing but sub.
    expect(Object.keys(tokens.claims).filter((c) => !protocolClaims.includes(c))).toStrictEqual([]);
    // ExtractExpiresInFromTokenEndpointResponse (WARNING when missing).
    expect(tokens.answer.body.expires_in).toBe(86400);
  });

  it('client_secret_basic: id and secret are form-urlencoded before base64 (RFC 6749 §2.3.1), as the suite sends them', async () => {
    // A client id with a colon: read without the decoding, the Basic credentials would split there.
    const { secret } = await addClient(op.t.store, 'urn:oidcc:client', { confidential: true, redirectUris: [callbackUri], grantTypes: ['authorization_code'] });
    await codeFlow(op, new Tester(op), { client: { id: 'urn:oidcc:client', secret: secret! } });
  });
});

describe('oidcc-server-client-secret-post', () => {
  it('discovery lists client_secret_post (EnsureServerConfigurationSupportsClientSecretPost) and the flow works with it', async () => {
    const metadata = (await (await opFetch(op, discoveryUrl)).json()) as Record<string, string[]>;
    expect(metadata.token_endpoint_auth_methods_supported).toEqual(expect.arrayContaining(['client_secret_basic', 'client_secret_post']));
    await codeFlow(op, new Tester(op), { client: op.clientPost, auth: 'client_secret_post' });
  });
});

describe('oidcc-response-type-missing', () => {
  it('no response_type: an invalid_request redirect with state, no code, only the allowed parameters', async () => {
    const request = authorizationRequest(op.client, { response_type: undefined });
    const error = expectAuthorizationError(await new Tester(op).open(request.url), request.state);
    // CheckErrorFromAuthorizationEndpointErrorInvalidRequestOrUnsupportedResponseType.
    expect(['invalid_request', 'unsupported_response_type']).toContain(error);
  });
});

describe('oidcc-idtoken-signature', () => {
  it('(dynamic clients only in the plan) id_tokens are RS256 with a kid the JWKS publishes', async () => {
    const { tokens } = await codeFlow(op, new Tester(op));
    const header = decodeProtectedHeader(tokens.idToken);
    // EnsureIdTokenContainsKid, EnsureIdTokenSignatureIsRS256.
    expect(header.alg).toBe('RS256');
    const jwks = await fetchJwks(op);
    expect(jwks.keys.filter((k) => k.kid === header.kid)).toHaveLength(1);
  });
});

describe('oidcc-idtoken-unsigned', () => {
  it('(dynamic clients only; skipped when none is not offered) unsigned id_tokens are never offered nor issued', async () => {
    const metadata = (await (await opFetch(op, discoveryUrl)).json()) as Record<string, string[]>;
    // OIDCCCheckIdTokenSigningAlgValuesSupportedAlgNone: without none the module is SKIPPED.
    expect(metadata.id_token_signing_alg_values_supported).toStrictEqual(['RS256']);
    const { tokens } = await codeFlow(op, new Tester(op));
    expect(decodeProtectedHeader(tokens.idToken).alg).not.toBe('none');
  });
});

describe('oidcc-ensure-request-without-nonce-succeeds-for-code-flow', () => {
  it('a code request without nonce gets a code (and an id_token without nonce)', async () => {
    const { tokens } = await codeFlow(op, new Tester(op), { extras: { nonce: undefined } });
    expect(tokens.claims.nonce).toBeUndefined();
  });
});

describe('oidcc-ensure-request-with-unknown-parameter-succeeds', () => {
  it('extra=foobar is ignored (RFC 6749 §3.1)', async () => {
    await codeFlow(op, new Tester(op), { extras: { extra: 'foobar' } });
  });
});

describe('oidcc-ensure-request-with-valid-pkce-succeeds', () => {
  it('S256 with a 128-character verifier of the whole unreserved set, redeemed with client authentication', async () => {
    const unreserved = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~';
    const verifier = Array.from(randomBytes(128), (b) => unreserved[b % unreserved.length]).join('');
    const challenge = createHash('sha256').update(verifier, 'ascii').digest('base64url');
    await codeFlow(op, new Tester(op), { extras: { code_challenge: challenge, code_challenge_method: 'S256' }, codeVerifier: verifier });
  });

  it('the wrong verifier is refused with invalid_grant', async () => {
    const verifier = randomBytes(64).toString('base64url');
    const request = authorizationRequest(op.client, {
      code_challenge: createHash('sha256').update(verifier).digest('base64url'),
      code_challenge_method: 'S256',
    });
    const code = expectCode(await new Tester(op).open(request.url), request);
    const answer = await tokenRequest(op, op.client, {
      grant_type: 'authorization_code',
      code,
      redirect_uri: request.params.redirect_uri!,
      code_verifier: `${verifier}x`,
    });
    expect(answer.status).toBe(400);
    expect(answer.body.error).toBe('invalid_grant');
  });
});

describe('oidcc-ensure-post-request-succeeds', () => {
  it('the authorization request POSTed as a form (OIDC Core §3.1.2.1) is answered with a redirect and completes', async () => {
    const tester = new Tester(op);
    const { outcome, tokens } = await codeFlow(op, tester, { method: 'POST' });
    expect(outcome.kind).toBe('callback');
    await userinfo(op, tokens);
  });

  it('a cross-site POST (no cookies: SameSite=Lax) from a signed-in browser with prompt=none is moved to a GET that carries them, and comes back silently', async () => {
    const tester = new Tester(op);
    await codeFlow(op, tester);
    const request = authorizationRequest(op.client, { prompt: 'none' });
    const [endpoint, query] = request.url.split('?');
    // The browser sends none of the OP's Lax cookies with a form posted from another site.
    const posted = await opFetch(op, endpoint!, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: query });
    expect(posted.status).toBe(303);
    expect(posted.headers.get('set-cookie')).toBeNull();
    // The top-level GET it moves to carries them.
    const outcome = await tester.open(new URL(posted.headers.get('location')!, issuer).href);
    expect(outcome.pages).toStrictEqual([]);
    expectCode(outcome, request);
  });
});
