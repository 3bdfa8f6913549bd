/**
 * Resource indicators (RFC 8707): `resource` names a token's target wherever `audience` does
 * (/authorize, PAR, device authorization), and at the token endpoint `resource` or `audience` may
 * name what the grant holds — the access token is then for that audience — but nothing else:
 * an unknown target, one the grant does not hold, two that disagree, or several are
 * `invalid_target`, and a refused request spends nothing.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { decodeJwt } from 'jose';
import { sha256 } from '../../src/crypto/secrets.js';
import { normalizeUserCode, userCodeDigest } from '../../src/oauth/user_code.js';
import type { UserRecord } from '../../src/store/store.js';
import { addApi, addClient, addUser, deviceGrantType, pkcePair, testApp, type TestApp } from '../helpers/app.js';
import { Browser, injectTransport, signIn, type BrowserResponse } from '../helpers/browser.js';
import { refreshTokenKey } from '../../src/oauth/refresh_tokens.js';

const photos = 'https://photos.example.com';
const billing = 'https://billing.example.com';
const unknown = 'https://nope.example.com';
const userinfo = 'http://latchkey.test/userinfo';
const cb = 'https://app.example.com/cb';

let t: TestApp;
let alice: UserRecord;
let browser: Browser;
let machineSecret: string;

beforeEach(async () => {
  t = await testApp();
  alice = await addUser(t.store, 'alice', 'alice-password');
  await addApi(t.store, photos, 'Photo Library API', [], ['read:photos']);
  await addApi(t.store, billing, 'Billing API', [], ['read:invoices']);
  await addClient(t.store, 'spa', { redirectUris: [cb], grantTypes: ['authorization_code', 'refresh_token'], firstParty: true });
  await addClient(t.store, 'tv', { grantTypes: ['device_code', 'refresh_token'] });
  machineSecret = (await addClient(t.store, 'nightly', { confidential: true, grantTypes: ['client_credentials'] })).secret!;
  await t.store.saveClientGrant({ clientId: 'nightly', api: photos, scopes: ['read:photos'], createdAt: 1_800_000_000 });
  await t.store.saveClientGrant({ clientId: 'nightly', api: billing, scopes: ['read:invoices'], createdAt: 1_800_000_000 });
  browser = new Browser(injectTransport(t.app));
  await signIn(browser, await browser.get('/login'), 'alice', 'alice-password');
});
afterEach(() => t.close());

/** Request parameters: an array is sent once per value (`resource` may repeat on the wire); undefined is left out. */
type Fields = Record<string, string | string[] | undefined>;

function body(fields: Fields) {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(fields))
    for (const item of value === undefined ? [] : Array.isArray(value) ? value : [value]) search.append(name, item);
  return { payload: search.toString(), headers: { 'content-type': 'application/x-www-form-urlencoded' } };
}

function post(url: string, fields: Fields) {
  return t.app.inject({ method: 'POST', url, ...body(fields) });
}

function expectInvalidTarget(res: Awaited<ReturnType<typeof post>>) {
  expect(res.statusCode, res.body).toBe(400);
  expect(res.headers['cache-control']).toBe('no-store');
  expect(res.json()).toMatchObject({ error: 'invalid_target' });
  expect(res.json().error_description).toEqual(expect.any(String));
}

/** /authorize for `spa` with PKCE and extra parameters; returns the answer (a redirect to the client). */
async function authorize(extra: Fields): Promise<{ res: BrowserResponse; verifier: string }> {
  const pkce = pkcePair();
  const query = body({
    response_type: 'code',
    client_id: 'spa',
    redirect_uri: cb,
    scope: 'openid offline_access',
    state: 's',
    code_challenge: pkce.challenge,
    code_challenge_method: 'S256',
    ...extra,
  }).payload;
  return { res: await browser.get(`/authorize?${query}`), verifier: pkce.verifier };
}

/** A code for `spa`, with its verifier, from an authorization request with these extra parameters. */
async function obtainCode(extra: Record<string, string>): Promise<{ code: string; verifier: string }> {
  const { res, verifier } = await authorize(extra);
  expect(res.status, res.body).toBe(302);
  const code = new URL(res.location!).searchParams.get('code');
  expect(code, res.location).toMatch(/^lk_ac_/);
  return { code: code!, verifier };
}

function redeem(code: { code: string; verifier: string }, extra: Fields = {}) {
  return post('/oauth/token', {
    grant_type: 'authorization_code',
    client_id: 'spa',
    redirect_uri: cb,
    code: code.code,
    code_verifier: code.verifier,
    ...extra,
  });
}

function refresh(refreshToken: string, extra: Fields = {}) {
  return post('/oauth/token', { grant_type: 'refresh_token', client_id: 'spa', refresh_token: refreshToken, ...extra });
}

/** Redirect parameters of an /authorize answer. */
function redirected(res: BrowserResponse): URLSearchParams {
  expect(res.status, res.body).toBe(302);
  expect(res.location!.startsWith(`${cb}?`)).toBe(true);
  return new URL(res.location!).searchParams;
}

/** The refused targets every endpoint answers invalid_target for, beside a request that names `photos`. */
const refusedTargets: Array<[string, Fields]> = [
  ['resource and audience both sent and different', { resource: photos, audience: billing }],
  ['several resources', { resource: [photos, billing] }],
  ['the same resource twice', { resource: [photos, photos] }],
  ['a resource that is not an absolute URI', { resource: 'photos' }],
  ['a resource with a fragment', { resource: `${photos}#section` }],
];

describe('resource at the authorization endpoints (RFC 8707 §2.1)', () => {
  it('/authorize: resource names the API as audience does; the code is bound to it', async () => {
    for (const extra of [{ resource: photos }, { resource: photos, audience: photos }]) {
      const { res } = await authorize(extra);
      const code = await t.store.findAuthorizationCode(sha256(redirected(res).get('code')!));
      expect(code?.audience).toBe(photos);
    }
  });

  it('/authorize: an unknown resource → invalid_target, redirected with state', async () => {
    const q = redirected((await authorize({ resource: unknown })).res);
    expect(q.get('error')).toBe('invalid_target');
    expect(q.get('state')).toBe('s');
    expect(q.get('code')).toBeNull();
  });

  for (const [name, extra] of refusedTargets) {
    it(`/authorize: ${name} → invalid_target, redirected with state`, async () => {
      const q = redirected((await authorize(extra)).res);
      expect(q.get('error')).toBe('invalid_target');
      expect(q.get('error_description')).toBeTruthy();
      expect(q.get('state')).toBe('s');
      expect(q.get('code')).toBeNull();
    });
  }

  it('/authorize: a request object may name one resource, alone or in an array; several → invalid_target', async () => {
    const requestObject = (claims: Record<string, unknown>) =>
      `${Buffer.from(JSON.stringify({ alg: 'none' })).toString('base64url')}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.`;
    for (const resource of [photos, [photos]]) {
      const { res } = await authorize({ request: requestObject({ resource }) });
      const code = await t.store.findAuthorizationCode(sha256(redirected(res).get('code')!));
      expect(code?.audience).toBe(photos);
    }
    const q = redirected((await authorize({ request: requestObject({ resource: [photos, billing] }) })).res);
    expect(q.get('error')).toBe('invalid_target');
  });

  it('PAR: resource names the API; unknown, disagreeing, several or malformed → invalid_target', async () => {
    const pkce = pkcePair();
    const request = (extra: Fields) => ({
      client_id: 'spa',
      response_type: 'code',
      redirect_uri: cb,
      scope: 'openid',
      state: 's',
      code_challenge: pkce.challenge,
      code_challenge_method: 'S256',
      ...extra,
    });
    const pushed = await post('/oauth/par', request({ resource: photos }));
    expect(pushed.statusCode, pushed.body).toBe(201);
    const res = await browser.get(`/authorize?${new URLSearchParams({ client_id: 'spa', request_uri: pushed.json().request_uri })}`);
    const code = await t.store.findAuthorizationCode(sha256(redirected(res).get('code')!));
    expect(code?.audience).toBe(photos);

    for (const [name, extra] of [['an unknown resource', { resource: unknown }] as const, ...refusedTargets]) {
      const refused = await post('/oauth/par', request(extra));
      expect(refused.statusCode, name).toBe(400);
      expect(refused.json().error, name).toBe('invalid_target');
    }
  });

  it('device authorization: resource names the API; unknown, disagreeing, several or malformed → invalid_target', async () => {
    const started = await post('/oauth/device/code', { client_id: 'tv', resource: photos });
    expect(started.statusCode, started.body).toBe(200);
    const grant = await t.store.findDeviceGrantByUserCode(userCodeDigest(t.app.services.userCodeKey, normalizeUserCode(started.json().user_code)!));
    expect(grant?.audience).toBe(photos);

    for (const [name, extra] of [['an unknown resource', { resource: unknown }] as const, ...refusedTargets]) {
      const refused = await post('/oauth/device/code', { client_id: 'tv', ...extra });
      expect(refused.statusCode, name).toBe(400);
      expect(refused.json().error, name).toBe('invalid_target');
    }
  });
});

describe('resource and audience at the token endpoint (RFC 8707 §2.2)', () => {
  describe('grant_type=authorization_code', () => {
    it('naming the granted audience (resource, audience or both) gives a token for it; the refresh token keeps the grant', async () => {
      for (const target of [{ resource: photos }, { audience: photos }, { resource: photos, audience: photos }]) {
        const res = await redeem(await obtainCode({ audience: photos }), target);
        expect(res.statusCode, res.body).toBe(200);
        expect(decodeJwt(res.json().access_token).aud).toBe(photos);
        const family = await t.store.findRefreshToken(refreshTokenKey(res.json().refresh_token));
        expect(family?.audience).toBe(photos);
      }
    });

    it('an unknown target → invalid_target, and the code is not spent', async () => {
      const code = await obtainCode({ audience: photos });
      for (const target of [{ resource: unknown }, { audience: unknown }]) expectInvalidTarget(await redeem(code, target));
      const res = await redeem(code);
      expect(res.statusCode, res.body).toBe(200);
      expect(decodeJwt(res.json().access_token).aud).toBe(photos);
    });

    it('a registered API the code was not granted for → invalid_target, never a wider token', async () => {
      // Granted for the userinfo endpoint only (no audience asked): no API can be named afterwards.
      for (const target of [{ resource: photos }, { audience: photos }]) expectInvalidTarget(await redeem(await obtainCode({}), target));
      // Granted for one API: not another, nor the userinfo endpoint.
      for (const target of [{ resource: billing }, { audience: billing }, { resource: userinfo }]) {
        expectInvalidTarget(await redeem(await obtainCode({ audience: photos }), target));
      }
    });

    for (const [name, extra] of refusedTargets) {
      it(`${name} → invalid_target`, async () => {
        expectInvalidTarget(await redeem(await obtainCode({ audience: photos }), extra));
      });
    }
  });

  describe('grant_type=refresh_token', () => {
    async function refreshTokenFor(audience: string | undefined): Promise<string> {
      const res = await redeem(await obtainCode(audience === undefined ? {} : { audience }));
      expect(res.statusCode, res.body).toBe(200);
      return res.json().refresh_token as string;
    }

    it('naming the family’s audience (resource or audience) gives a token for it; the refresh token keeps the grant', async () => {
      let token = await refreshTokenFor(photos);
      for (const target of [{ resource: photos }, { audience: photos }, { resource: photos, audience: photos }]) {
        const res = await refresh(token, target);
        expect(res.statusCode, res.body).toBe(200);
        expect(decodeJwt(res.json().access_token).aud).toBe(photos);
        token = res.json().refresh_token as string;
        expect((await t.store.findRefreshToken(refreshTokenKey(token)))?.audience).toBe(photos);
      }
    });

    it('an unknown target or one the family does not hold → invalid_target, and the refresh token still works', async () => {
      const token = await refreshTokenFor(photos);
      for (const target of [{ resource: unknown }, { audience: unknown }, { resource: billing }, { audience: billing }, { resource: userinfo }]) {
        expectInvalidTarget(await refresh(token, target));
      }
      // Nothing was rotated by the refusals: the token is the live one, not a reused one.
      const res = await refresh(token);
      expect(res.statusCode, res.body).toBe(200);
      expect(decodeJwt(res.json().access_token).aud).toBe(photos);
    });

    it('a userinfo-only family cannot be widened to an API', async () => {
      const token = await refreshTokenFor(undefined);
      for (const target of [{ resource: photos }, { audience: photos }]) expectInvalidTarget(await refresh(token, target));
    });

    for (const [name, extra] of refusedTargets) {
      it(`${name} → invalid_target`, async () => {
        expectInvalidTarget(await refresh(await refreshTokenFor(photos), extra));
      });
    }
  });

  describe('grant_type=urn:ietf:params:oauth:grant-type:device_code', () => {
    /** An approved device grant for `tv` with this audience; returns its device code. */
    async function approvedDeviceCode(audience: string): Promise<string> {
      const started = await post('/oauth/device/code', { client_id: 'tv', scope: 'openid offline_access', audience });
      expect(started.statusCode, started.body).toBe(200);
      const grant = await t.store.findDeviceGrantByUserCode(userCodeDigest(t.app.services.userCodeKey, normalizeUserCode(started.json().user_code)!));
      await t.store.approveDeviceGrant(grant!.id, alice.id, Math.floor(t.clock()), ['pwd'], Math.floor(t.clock()));
      return started.json().device_code as string;
    }

    const poll = (deviceCode: string, extra: Fields = {}) =>
      post('/oauth/token', { grant_type: deviceGrantType, client_id: 'tv', device_code: deviceCode, ...extra });

    it('naming the grant’s audience gives a token for it; any other target → invalid_target and the code is not spent', async () => {
      const deviceCode = await approvedDeviceCode(photos);
      for (const target of [{ resource: unknown }, { audience: billing }, { resource: userinfo }, ...refusedTargets.map(([, extra]) => extra)]) {
        expectInvalidTarget(await poll(deviceCode, target));
      }
      const res = await poll(deviceCode, { resource: photos });
      expect(res.statusCode, res.body).toBe(200);
      expect(decodeJwt(res.json().access_token).aud).toBe(photos);
    });
  });

  describe('grant_type=client_credentials', () => {
    const machine = (extra: Fields) => {
      const request = body({ grant_type: 'client_credentials', ...extra });
      const authorization = `Basic ${Buffer.from(`nightly:${machineSecret}`).toString('base64')}`;
      return t.app.inject({ method: 'POST', url: '/oauth/token', payload: request.payload, headers: { ...request.headers, authorization } });
    };

    it('resource picks one of the granted APIs as audience does', async () => {
      for (const target of [{ resource: billing }, { audience: billing }, { resource: billing, audience: billing }]) {
        const res = await machine(target);
        expect(res.statusCode, res.body).toBe(200);
        expect(decodeJwt(res.json().access_token)).toMatchObject({ aud: billing, scope: 'read:invoices' });
      }
    });

    it('an unknown or ungranted resource, disagreeing targets, several or malformed → invalid_target', async () => {
      await addApi(t.store, 'https://ungranted.example.com', 'Ungranted API', [], ['x']);
      for (const [name, extra] of [
        ['an unknown resource', { resource: unknown }] as const,
        ['an ungranted resource', { resource: 'https://ungranted.example.com' }] as const,
        ...refusedTargets,
      ]) {
        const res = await machine(extra);
        expect(res.statusCode, name).toBe(400);
        expect(res.json().error, name).toBe('invalid_target');
      }
    });
  });
});
