import { describe, it, expect } from 'vitest';
import { plainClientFields } from '../../src/directory/clients.js';
import { manualClock } from '../../src/clock.js';
import { configFrom } from '../../src/config.js';
import { OAuthError, type OAuthErrorCode } from '../../src/errors.js';
import { parseAuthorizationRequest, type ParsedAuthorizationRequest } from '../../src/oauth/authorization_request.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite_store.js';
import { addApi, addClient } from '../helpers/app.js';
import { client, t0 } from '../helpers/records.js';

const config = configFrom({ LATCHKEY_ISSUER: 'http://latchkey.test' });
const requestObjects = { issuer: config.issuer, clock: manualClock(t0), secretBox: undefined };
const challenge = 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM';
const appRedirect = 'https://app.example.com/cb';

type Query = Record<string, string | string[] | undefined>;

/** A PKCE request of public client `app` that is valid as it stands. */
function baseQuery(): Record<string, string> {
  return {
    client_id: 'app',
    redirect_uri: appRedirect,
    response_type: 'code',
    state: 'st-1',
    scope: 'openid email',
    nonce: 'n-1',
    code_challenge: challenge,
    code_challenge_method: 'S256',
  };
}

/** The base query with `changes` applied; an undefined value removes the parameter. */
function query(changes: Query = {}): Record<string, string | string[]> {
  const q: Record<string, string | string[]> = { ...baseQuery() };
  for (const [key, value] of Object.entries(changes)) {
    if (value === undefined) delete q[key];
    else q[key] = value;
  }
  return q;
}

/**
 * A fresh :memory: store for one test, always closed, holding:
 * - app: public, authorization_code + refresh_token, PKCE required;
 * - device-only: public, device_code only;
 * - no-refresh: public, authorization_code only;
 * - nopkce: public, authorization_code, registered with requirePkce false;
 * - the API https://api.example.com.
 */
async function parse(q: unknown): Promise<ParsedAuthorizationRequest> {
  const store = new SqliteStore({ path: ':memory:', now: t0 });
  try {
    await addClient(store, 'app', {
      grantTypes: ['authorization_code', 'refresh_token'],
      redirectUris: [appRedirect, 'http://127.0.0.1/callback', 'com.example.app:/cb'],
    });
    await addClient(store, 'device-only', { grantTypes: ['device_code'], redirectUris: ['https://device.example.com/cb'] });
    await addClient(store, 'no-refresh', { grantTypes: ['authorization_code'], redirectUris: ['https://norefresh.example.com/cb'] });
    await store.createClient(
      client({ clientId: 'nopkce', grantTypes: ['authorization_code'], requirePkce: false, redirectUris: ['https://nopkce.example.com/cb'] }),
    );
    await addApi(store, 'https://api.example.com');
    return await parseAuthorizationRequest(store, config, q, { requestObjects });
  } finally {
    await store.close();
  }
}

describe('parseAuthorizationRequest', () => {
  describe('invalid_page: never a redirect before client and redirect_uri are verified', () => {
    it.each<[string, unknown]>([
      ['no query at all', undefined],
      ['an empty query', {}],
      ['client_id missing', query({ client_id: undefined })],
      ['client_id empty', query({ client_id: '' })],
      ['client_id unknown', query({ client_id: 'nobody' })],
      ['client_id repeated', query({ client_id: ['app', 'app'] })],
      ['client_id repeated, unknown first', query({ client_id: ['nobody', 'app'] })],
      ['client_id too long', query({ client_id: 'a'.repeat(257) })],
      ['redirect_uri missing', query({ redirect_uri: undefined })],
      ['redirect_uri empty', query({ redirect_uri: '' })],
      ['redirect_uri unregistered', query({ redirect_uri: 'https://evil.example.com/cb' })],
      ['redirect_uri of another client', query({ redirect_uri: 'https://device.example.com/cb' })],
      ['redirect_uri with a trailing slash', query({ redirect_uri: `${appRedirect}/` })],
      ['redirect_uri repeated', query({ redirect_uri: [appRedirect, appRedirect] })],
      ['redirect_uri repeated, registered first', query({ redirect_uri: [appRedirect, 'https://evil.example.com/cb'] })],
      ['loopback redirect_uri with another path', query({ redirect_uri: 'http://127.0.0.1:5000/other' })],
      ['bad client and bad response_type: the client is reported', query({ client_id: 'nobody', response_type: 'token' })],
      ['bad redirect_uri and no state: no redirect', query({ redirect_uri: 'https://evil.example.com/cb', state: undefined })],
    ])('%s', async (_name, q) => {
      const result = await parse(q);
      expect(result.kind).toBe('invalid_page');
      expect(Object.keys(result).sort()).toEqual(['kind', 'message']);
      if (result.kind === 'invalid_page') expect(result.message).not.toBe('');
    });
  });

  describe('invalid_redirect: the error goes back to the verified redirect_uri with state', () => {
    it.each<[string, Query, OAuthErrorCode]>([
      ['response_type missing', { response_type: undefined }, 'invalid_request'],
      ['response_type empty', { response_type: '' }, 'invalid_request'],
      ['response_type=token', { response_type: 'token' }, 'unsupported_response_type'],
      ['response_type=code id_token', { response_type: 'code id_token' }, 'unsupported_response_type'],
      ['scope repeated', { scope: ['openid', 'email'] }, 'invalid_request'],
      ['response_type repeated', { response_type: ['code', 'code'] }, 'invalid_request'],
      ['nonce repeated', { nonce: ['a', 'b'] }, 'invalid_request'],
      ['code_challenge repeated', { code_challenge: [challenge, challenge] }, 'invalid_request'],
      ['an unknown parameter repeated', { foo: ['1', '2'] }, 'invalid_request'],
      ['request that is not a JWT', { request: 'x.y.z' }, 'invalid_request_object'],
      ['request encrypted (five parts)', { request: 'a.b.c.d.e' }, 'invalid_request_object'],
      ['request repeated', { request: ['eyJhbGciOiJub25lIn0.e30.', 'eyJhbGciOiJub25lIn0.e30.'] }, 'invalid_request'],
      ['request together with request_uri', { request: 'eyJhbGciOiJub25lIn0.e30.', request_uri: 'https://x.example/r' }, 'invalid_request'],
      ['request signed with HS256 by a client keeping no secret', { request: 'eyJhbGciOiJIUzI1NiJ9.e30.c2ln' }, 'invalid_request_object'],
      [
        'request whose response_type differs from the query',
        { request: `eyJhbGciOiJub25lIn0.${Buffer.from('{"response_type":"token"}').toString('base64url')}.` },
        'invalid_request_object',
      ],
      ['claims not JSON', { claims: '{' }, 'invalid_request'],
      ['claims an array', { claims: '[]' }, 'invalid_request'],
      ['acr essential with no level of ours', { claims: '{"id_token":{"acr":{"essential":true,"values":["gold"]}}}' }, 'unmet_authentication_requirements'],
      ['display with a control character', { display: 'pa\u0001ge' }, 'invalid_request'],
      ['ui_locales too long', { ui_locales: 'fr '.repeat(100) }, 'invalid_request'],
      ['claims_locales not printable', { claims_locales: 'fr\u00e9' }, 'invalid_request'],
      ['login_hint with a line break', { login_hint: 'a\nb' }, 'invalid_request'],
      ['login_hint too long', { login_hint: 'a'.repeat(257) }, 'invalid_request'],
      ['request_uri=', { request_uri: 'urn:ietf:params:oauth:request_uri:abc' }, 'request_uri_not_supported'],
      ['registration=', { registration: '{}' }, 'registration_not_supported'],
      ['response_mode=fragment', { response_mode: 'fragment' }, 'invalid_request'],
      ['response_mode=query.jwt (JARM)', { response_mode: 'query.jwt' }, 'invalid_request'],
      ['scope unknown', { scope: 'openid admin' }, 'invalid_scope'],
      ['audience unknown', { audience: 'https://unknown.example.com' }, 'invalid_target'],
      ['code_challenge_method=plain', { code_challenge_method: 'plain' }, 'invalid_request'],
      ['code_challenge_method=plain without challenge', { code_challenge: undefined, code_challenge_method: 'plain' }, 'invalid_request'],
      ['code_challenge without method', { code_challenge_method: undefined }, 'invalid_request'],
      ['code_challenge_method without challenge', { code_challenge: undefined }, 'invalid_request'],
      ['code_challenge malformed (42 chars)', { code_challenge: challenge.slice(0, 42) }, 'invalid_request'],
      ['code_challenge malformed (padding)', { code_challenge: `${challenge.slice(0, 42)}=` }, 'invalid_request'],
      ['code_challenge empty', { code_challenge: '' }, 'invalid_request'],
      ['public client without PKCE', { code_challenge: undefined, code_challenge_method: undefined }, 'invalid_request'],
      ['prompt=none login', { prompt: 'none login' }, 'invalid_request'],
      ['prompt=bogus', { prompt: 'bogus' }, 'invalid_request'],
      ['prompt=login bogus', { prompt: 'login bogus' }, 'invalid_request'],
      ['max_age=-1', { max_age: '-1' }, 'invalid_request'],
      ['max_age=abc', { max_age: 'abc' }, 'invalid_request'],
      ['max_age=1.5', { max_age: '1.5' }, 'invalid_request'],
      ['max_age empty', { max_age: '' }, 'invalid_request'],
      ['nonce empty', { nonce: '' }, 'invalid_request'],
      ['nonce too long (256 at most)', { nonce: 'n'.repeat(257) }, 'invalid_request'],
      ['nonce with U+0000', { nonce: 'n\u0000n' }, 'invalid_request'],
      ['nonce with a line break', { nonce: 'n\nn' }, 'invalid_request'],
    ])('%s → %s', async (_name, changes, code) => {
      const result = await parse(query(changes));
      expect(result.kind).toBe('invalid_redirect');
      if (result.kind !== 'invalid_redirect') return;
      expect(result.redirectUri).toBe(appRedirect);
      expect(result.state).toBe('st-1');
      expect(result.error).toBeInstanceOf(OAuthError);
      expect(result.error.code).toBe(code);
      expect(result.error.description).not.toBe('');
    });

    it('a client without the authorization_code grant → unauthorized_client', async () => {
      const result = await parse(query({ client_id: 'device-only', redirect_uri: 'https://device.example.com/cb' }));
      expect(result).toMatchObject({ kind: 'invalid_redirect', redirectUri: 'https://device.example.com/cb', state: 'st-1' });
      if (result.kind === 'invalid_redirect') expect(result.error.code).toBe('unauthorized_client');
    });

    it('state missing → invalid_request with state undefined', async () => {
      const result = await parse(query({ state: undefined }));
      expect(result.kind).toBe('invalid_redirect');
      if (result.kind !== 'invalid_redirect') return;
      expect(result.redirectUri).toBe(appRedirect);
      expect(result.state).toBeUndefined();
      expect(result.error.code).toBe('invalid_request');
    });

    it.each<[string, Query]>([
      ['state repeated', { state: ['a', 'b'] }],
      ['state too long (1024 at most)', { state: 's'.repeat(1025) }],
      ['state not VSCHAR', { state: 'caf\u00e9' }],
      ['state too long, beside an error found earlier', { state: 's'.repeat(1025), response_type: 'token' }],
    ])('%s → a page: an error redirect could not carry it (RFC 6749 §4.1.2.1)', async (_name, changes) => {
      expect(await parse(query(changes))).toEqual({ kind: 'invalid_page', message: 'The request’s state is malformed.' });
    });

    it('state empty → invalid_request, echoing the empty state as sent', async () => {
      const result = await parse(query({ state: '' }));
      expect(result).toMatchObject({ kind: 'invalid_redirect', redirectUri: appRedirect, state: '' });
      if (result.kind === 'invalid_redirect') expect(result.error.code).toBe('invalid_request');
    });

    it('echoes the state of a loopback request and answers to the requested port', async () => {
      const result = await parse(query({ redirect_uri: 'http://127.0.0.1:53682/callback', state: 'loop-state', response_type: 'token' }));
      expect(result).toMatchObject({ kind: 'invalid_redirect', redirectUri: 'http://127.0.0.1:53682/callback', state: 'loop-state' });
      if (result.kind === 'invalid_redirect') expect(result.error.code).toBe('unsupported_response_type');
    });
  });

  describe('valid', () => {
    it('a PKCE request of a public client, in full', async () => {
      const result = await parse(query());
      expect(result).toStrictEqual({
        kind: 'valid',
        client: {
          clientId: 'app',
          name: 'App app',
          secretHash: undefined,
          redirectUris: [appRedirect, 'http://127.0.0.1/callback', 'com.example.app:/cb'],
          grantTypes: ['authorization_code', 'refresh_token'],
          requirePkce: true,
          firstParty: false,
          builtIn: false,
          createdAt: 1_800_000_000,
          tokensRevokedAt: undefined,
          postLogoutRedirectUris: [],
          backchannelLogoutUri: undefined,
          webOrigins: [],
          ...plainClientFields,
        },
        maxAge: undefined,
        expectedSubject: undefined,
        requiredSubject: undefined,
        request: {
          clientId: 'app',
          redirectUri: appRedirect,
          scope: 'openid email',
          audience: 'http://latchkey.test/userinfo',
          state: 'st-1',
          nonce: 'n-1',
          codeChallenge: challenge,
          prompt: [],
        },
      });
    });

    it('without scope and nonce: scope openid, nonce undefined', async () => {
      const result = await parse(query({ scope: undefined, nonce: undefined }));
      expect(result.kind).toBe('valid');
      if (result.kind !== 'valid') return;
      expect(result.request.scope).toBe('openid');
      expect(result.request.nonce).toBeUndefined();
    });

    it('a registered audience is kept', async () => {
      const result = await parse(query({ audience: 'https://api.example.com' }));
      expect(result.kind).toBe('valid');
      if (result.kind === 'valid') expect(result.request.audience).toBe('https://api.example.com');
    });

    it('a client registered with requirePkce false may omit PKCE', async () => {
      const result = await parse(
        query({ client_id: 'nopkce', redirect_uri: 'https://nopkce.example.com/cb', code_challenge: undefined, code_challenge_method: undefined }),
      );
      expect(result.kind).toBe('valid');
      if (result.kind !== 'valid') return;
      expect(result.client.clientId).toBe('nopkce');
      expect(result.request).toStrictEqual({
        clientId: 'nopkce',
        redirectUri: 'https://nopkce.example.com/cb',
        scope: 'openid email',
        audience: 'http://latchkey.test/userinfo',
        state: 'st-1',
        nonce: 'n-1',
        codeChallenge: undefined,
        prompt: [],
      });
    });

    it('a client registered with requirePkce false still gets its PKCE checked when it sends one', async () => {
      const result = await parse(query({ client_id: 'nopkce', redirect_uri: 'https://nopkce.example.com/cb', code_challenge_method: 'plain' }));
      expect(result.kind).toBe('invalid_redirect');
      if (result.kind === 'invalid_redirect') expect(result.error.code).toBe('invalid_request');
    });

    it.each([['http://127.0.0.1:53682/callback'], ['http://127.0.0.1/callback']])('a loopback redirect_uri %s is kept as requested', async (redirectUri) => {
      const result = await parse(query({ redirect_uri: redirectUri }));
      expect(result.kind).toBe('valid');
      if (result.kind === 'valid') expect(result.request.redirectUri).toBe(redirectUri);
    });

    it('a private-use scheme redirect_uri', async () => {
      const result = await parse(query({ redirect_uri: 'com.example.app:/cb' }));
      expect(result.kind).toBe('valid');
      if (result.kind === 'valid') expect(result.request.redirectUri).toBe('com.example.app:/cb');
    });

    it('offline_access is kept for a client with the refresh_token grant', async () => {
      const result = await parse(query({ scope: 'openid offline_access email' }));
      expect(result.kind).toBe('valid');
      if (result.kind === 'valid') expect(result.request.scope).toBe('openid offline_access email');
    });

    it('offline_access is dropped for a client without the refresh_token grant', async () => {
      const result = await parse(query({ client_id: 'no-refresh', redirect_uri: 'https://norefresh.example.com/cb', scope: 'openid offline_access email' }));
      expect(result.kind).toBe('valid');
      if (result.kind === 'valid') expect(result.request.scope).toBe('openid email');
    });

    it.each<[string, string[]]>([
      ['login consent', ['login', 'consent']],
      ['consent', ['consent']],
      ['none', ['none']],
      ['select_account', []],
      ['select_account login', ['login']],
      ['  login   consent ', ['login', 'consent']],
      ['', []],
    ])('prompt=%j → %j', async (prompt, expected) => {
      const result = await parse(query({ prompt }));
      expect(result.kind).toBe('valid');
      if (result.kind === 'valid') expect(result.request.prompt).toStrictEqual(expected);
    });

    it.each<[string, number]>([
      ['0', 0],
      ['3600', 3600],
      ['999999999', 999_999_999],
    ])('max_age=%s → maxAge %d', async (maxAge, expected) => {
      const result = await parse(query({ max_age: maxAge }));
      expect(result.kind).toBe('valid');
      if (result.kind === 'valid') expect(result.maxAge).toBe(expected);
    });

    it('an unsigned request object\u2019s members replace the query\u2019s (OIDC Core §6.3.3), its redirect_uri included', async () => {
      const object = Buffer.from(
        JSON.stringify({ state: 'from-object', nonce: 'n-object', scope: 'openid profile', redirect_uri: 'http://127.0.0.1/callback', max_age: 60 }),
      ).toString('base64url');
      const result = await parse(
        query({ request: `eyJhbGciOiJub25lIn0.${object}.`, state: undefined, nonce: undefined, redirect_uri: 'https://unregistered.example/cb' }),
      );
      expect(result.kind).toBe('valid');
      if (result.kind !== 'valid') return;
      expect(result.request).toMatchObject({ state: 'from-object', nonce: 'n-object', scope: 'openid profile', redirectUri: 'http://127.0.0.1/callback' });
      expect(result.maxAge).toBe(60);
    });

    it('a broken request object with an unregistered query redirect_uri is a page, not a redirect', async () => {
      expect((await parse(query({ request: 'x.y.z', redirect_uri: 'https://unregistered.example/cb' }))).kind).toBe('invalid_page');
    });

    it('claims, ui_locales, login_hint and display are kept; claims_locales accepted', async () => {
      const result = await parse(
        query({
          claims: '{"userinfo":{"name":null},"id_token":{"email":null}}',
          ui_locales: ' fr-CA en ',
          login_hint: 'alice@example.com',
          display: 'popup',
          claims_locales: 'se',
        }),
      );
      expect(result.kind).toBe('valid');
      if (result.kind !== 'valid') return;
      expect(result.request).toMatchObject({ claims: { userinfo: ['name'], idToken: ['email'] }, uiLocales: 'fr-CA en', loginHint: 'alice@example.com' });
    });

    it('a sub asked for with a value is the expected person; acr values in claims take the place of acr_values', async () => {
      const result = await parse(
        query({ claims: '{"id_token":{"sub":{"value":"u-42"},"acr":{"values":["urn:latchkey:mfa"]}}}', acr_values: 'urn:latchkey:sfa' }),
      );
      expect(result.kind).toBe('valid');
      if (result.kind !== 'valid') return;
      expect(result.expectedSubject).toBe('u-42');
      expect(result.requiredSubject).toBe('u-42');
      expect(result.request.acrValues).toBe('urn:latchkey:mfa');
    });

    it('acr_values listing the single-factor level too does not ask for a second factor (values in order of preference)', async () => {
      const result = await parse(query({ acr_values: 'urn:latchkey:sfa urn:latchkey:mfa' }));
      expect(result.kind === 'valid' && result.request.acrValues).toBeUndefined();
    });

    it('unknown extra parameters are ignored, and so are claims_locales and display (kept: ui_locales, login_hint)', async () => {
      const result = await parse(query({ foo: 'bar', ui_locales: 'en', claims_locales: 'en', display: 'page', login_hint: 'alice' }));
      expect(result.kind).toBe('valid');
      if (result.kind !== 'valid') return;
      expect(result.request).toStrictEqual({
        clientId: 'app',
        redirectUri: appRedirect,
        scope: 'openid email',
        audience: 'http://latchkey.test/userinfo',
        state: 'st-1',
        nonce: 'n-1',
        codeChallenge: challenge,
        prompt: [],
        uiLocales: 'en',
        loginHint: 'alice',
      });
    });

    it('response_mode=query is accepted', async () => {
      expect((await parse(query({ response_mode: 'query' }))).kind).toBe('valid');
    });

    // The parser marks a repeated parameter with the string 'repeated', so a legitimate value
    // that happens to be that word must still be taken at face value.
    it('a state whose value is the word "repeated" is kept', async () => {
      const result = await parse(query({ state: 'repeated' }));
      expect(result.kind).toBe('valid');
      if (result.kind === 'valid') expect(result.request.state).toBe('repeated');
    });

    it('a client whose client_id is the word "repeated" is found', async () => {
      const store = new SqliteStore({ path: ':memory:', now: t0 });
      try {
        await addClient(store, 'repeated', { grantTypes: ['authorization_code'], redirectUris: ['https://repeated.example.com/cb'] });
        const result = await parseAuthorizationRequest(store, config, query({ client_id: 'repeated', redirect_uri: 'https://repeated.example.com/cb' }), {
          requestObjects,
        });
        expect(result.kind).toBe('valid');
        if (result.kind === 'valid') expect(result.request.clientId).toBe('repeated');
      } finally {
        await store.close();
      }
    });
  });
});
