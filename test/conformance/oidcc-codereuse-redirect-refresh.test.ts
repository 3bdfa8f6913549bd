/**
 * Basic OP plan, codes, redirect URIs and refresh tokens: oidcc-codereuse,
 * oidcc-codereuse-30seconds, oidcc-ensure-registered-redirect-uri, oidcc-refresh-token.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  authorizationRequest,
  callbackUri,
  codeFlow,
  discoveryUrl,
  expectValidIdToken,
  issuer,
  opFetch,
  randomAlphanumeric,
  startOp,
  Tester,
  tokenRequest,
  userinfo,
  type Op,
  type SuiteClient,
} from './suite.js';

let op: Op;
beforeAll(async () => {
  op = await startOp();
});
afterAll(async () => {
  await op?.close();
});

/** AbstractOIDCCAuthCodeReuse.checkResponse: 400, JSON, invalid_grant, a well-formed description. */
function expectInvalidGrant(answer: Awaited<ReturnType<typeof tokenRequest>>) {
  expect(answer.status).toBe(400);
  expect(answer.headers.get('content-type')).toMatch(/^application\/json(;|$)/);
  expect(answer.body.error).toBe('invalid_grant');
  expect(typeof answer.body.error_description === 'string' ? answer.body.error_description : '').toMatch(/^[\x20-\x21\x23-\x5b\x5d-\x7e]*$/);
}

describe('oidcc-codereuse', () => {
  it('the code redeemed a second time at once: 400 invalid_grant', async () => {
    const { request, code } = await codeFlow(op, new Tester(op));
    expectInvalidGrant(await tokenRequest(op, op.client, { grant_type: 'authorization_code', code, redirect_uri: request.params.redirect_uri! }));
  });
});

describe('oidcc-codereuse-30seconds', () => {
  it('30 seconds later: 400 invalid_grant, and the access token of the first redemption no longer works', async () => {
    const { request, code, tokens } = await codeFlow(op, new Tester(op));
    op.t.clock.advance(30); // WaitFor30Seconds
    expectInvalidGrant(await tokenRequest(op, op.client, { grant_type: 'authorization_code', code, redirect_uri: request.params.redirect_uri! }));
    // EnsureHttpStatusCodeIs4xx (WARNING): the tokens issued from the code are revoked.
    const res = await opFetch(op, `${issuer}/userinfo`, { headers: { authorization: `Bearer ${tokens.accessToken}` } });
    expect(res.status).toBeGreaterThanOrEqual(400);
    expect(res.status).toBeLessThan(500);
  });
});

describe('oidcc-ensure-registered-redirect-uri', () => {
  it('the registered URI plus a path segment: an error page, no redirect anywhere (the screenshot)', async () => {
    const request = authorizationRequest(op.client, { redirect_uri: `${callbackUri}/${randomAlphanumeric(10)}` });
    const outcome = await new Tester(op).open(request.url);
    expect(outcome.kind).toBe('page');
    if (outcome.kind !== 'page') return;
    expect(outcome.status).toBe(400);
    expect(outcome.body).toContain('not registered');
  });

  it('near misses are refused too: another scheme, case, a trailing slash, a query added', async () => {
    for (const redirect of [callbackUri.replace('https:', 'http:'), callbackUri.toUpperCase(), `${callbackUri}/`, `${callbackUri}?x=1`]) {
      const outcome = await new Tester(op).open(authorizationRequest(op.client, { redirect_uri: redirect }).url);
      expect(outcome.kind, redirect).toBe('page');
    }
  });
});

describe('oidcc-refresh-token', () => {
  /** The module's scope choice: openid offline_access with prompt=consent when discovery lists offline_access. */
  async function refreshableFlow(client: SuiteClient, nonceLength: number) {
    const metadata = (await (await opFetch(op, discoveryUrl)).json()) as { scopes_supported: string[]; grant_types_supported: string[] };
    expect(metadata.scopes_supported).toContain('offline_access');
    // EnsureServerConfigurationSupportsRefreshToken (WARNING).
    expect(metadata.grant_types_supported).toContain('refresh_token');
    const nonce = nonceLength > 10 ? randomAlphanumeric(nonceLength - 4) + '-._~' : randomAlphanumeric(nonceLength);
    const flow = await codeFlow(op, new Tester(op), { client, extras: { scope: 'openid offline_access', prompt: 'consent', nonce } });
    expect(flow.tokens.claims.nonce).toBe(nonce);
    expect(flow.tokens.refreshToken).toMatch(/^[\x20-\x7e]+$/); // EnsureRefreshTokenContainsAllowedCharactersOnly
    return flow;
  }

  /** RefreshTokenRequestSteps: the refresh answer's checks. */
  async function refreshes(client: SuiteClient, refreshToken: string, first: Awaited<ReturnType<typeof refreshableFlow>>['tokens'], withScope: boolean) {
    op.t.clock.advance(1); // WaitForOneSecond
    const answer = await tokenRequest(op, client, {
      grant_type: 'refresh_token',
      refresh_token: refreshToken,
      ...(withScope ? { scope: 'openid offline_access' } : {}),
    });
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    expect(answer.headers.get('content-type')).toMatch(/^application\/json(;|$)/);
    expect(answer.headers.get('cache-control')).toMatch(/(^|,\s*)no-store(\s*,|$)/); // CheckTokenEndpointCacheHeaders
    expect(String(answer.body.token_type).toLowerCase()).toBe('bearer');
    expect(answer.body.access_token).toMatch(/^[\x20-\x7e]+$/);
    expect(answer.body.access_token).not.toBe(first.accessToken);
    expect(typeof answer.body.expires_in === 'number' && answer.body.expires_in > 0).toBe(true);
    const rotated = answer.body.refresh_token as string | undefined;
    if (rotated !== undefined) expect(Buffer.byteLength(rotated)).toBeGreaterThanOrEqual(16); // EnsureMinimumRefreshTokenLength
    if (answer.body.id_token !== undefined) {
      // CompareIdTokenClaims: same iss, sub, aud and auth_time; a new iat.
      const claims = await expectValidIdToken(op, answer.body.id_token as string, { clientId: client.id, nonce: undefined });
      expect(claims).toMatchObject({ iss: first.claims.iss, sub: first.claims.sub, aud: first.claims.aud, auth_time: first.claims.auth_time });
      expect(claims.iat).not.toBe(first.claims.iat);
    }
    // requestProtectedResource with the refreshed token.
    await userinfo(op, { accessToken: answer.body.access_token as string, tokenType: answer.body.token_type as string });
    return rotated ?? refreshToken;
  }

  it('both clients refresh (client 1 repeating the scope, client 2 with a 43-character nonce); client 2\u2019s refresh token is invalid_grant for client 1', async () => {
    const one = await refreshableFlow(op.client, 10);
    await refreshes(op.client, one.tokens.refreshToken!, one.tokens, true);
    const two = await refreshableFlow(op.client2, 43);
    const twoLatest = await refreshes(op.client2, two.tokens.refreshToken!, two.tokens, false);
    // performSecondClientTests: client 2's refresh token with client 1's credentials.
    expectInvalidGrant(await tokenRequest(op, op.client, { grant_type: 'refresh_token', refresh_token: twoLatest, scope: 'openid offline_access' }));
  });
});
