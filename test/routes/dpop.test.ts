/**
 * DPoP (RFC 9449) at the token endpoint, userinfo and introspection: proofs checked (typ, alg,
 * jwk, signature, htm, htu, iat, jti replay, ath, server nonces), tokens bound to the key
 * (`token_type: DPoP`, `cnf.jkt`), a public client's refresh tokens bound too, and a bound token
 * refused as a bearer token.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { calculateJwkThumbprint, decodeJwt, exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from 'jose';
import { createHash } from 'node:crypto';
import { addClient, addUser, deviceGrantType, form, pkcePair, testApp, type TestApp } from '../helpers/app.js';
import { Browser, injectTransport, signIn } from '../helpers/browser.js';
import { normalizeUserCode, userCodeDigest } from '../../src/oauth/user_code.js';
import type { UserRecord } from '../../src/store/store.js';

let t: TestApp;
let alice: UserRecord;
let key: { privateKey: CryptoKey; jwk: JWK; jkt: string };
const issuer = 'http://latchkey.test';
const tokenUrl = `${issuer}/oauth/token`;

async function newKey() {
  const pair = await generateKeyPair('ES256', { extractable: true });
  const jwk = await exportJWK(pair.publicKey);
  return { privateKey: pair.privateKey, jwk, jkt: await calculateJwkThumbprint(jwk) };
}

interface ProofOptions {
  htm?: string;
  htu?: string;
  nonce?: string;
  accessToken?: string;
  iat?: number;
  jti?: string;
  typ?: string;
  with?: typeof key;
  jwk?: JWK;
}

async function proof(options: ProofOptions = {}): Promise<string> {
  const signer = options.with ?? key;
  const claims: Record<string, unknown> = {
    htm: options.htm ?? 'POST',
    htu: options.htu ?? tokenUrl,
    jti: options.jti ?? `jti-${Math.random()}`,
    iat: options.iat ?? Math.floor(t.clock()),
    ...(options.nonce === undefined ? {} : { nonce: options.nonce }),
    ...(options.accessToken === undefined ? {} : { ath: createHash('sha256').update(options.accessToken).digest('base64url') }),
  };
  return new SignJWT(claims).setProtectedHeader({ alg: 'ES256', typ: options.typ ?? 'dpop+jwt', jwk: options.jwk ?? signer.jwk }).sign(signer.privateKey);
}

async function serverNonce(): Promise<string> {
  const res = await t.app.inject({
    method: 'POST',
    url: '/oauth/token',
    ...form({ grant_type: 'refresh_token', client_id: 'cli', refresh_token: 'x' }),
    headers: { ...form({}).headers, dpop: await proof() },
  });
  expect(res.statusCode).toBe(400);
  expect(res.json().error).toBe('use_dpop_nonce');
  return res.headers['dpop-nonce'] as string;
}

/** The device flow up to the token request, approved by alice in the store. */
async function approvedDeviceCode(clientId = 'cli', extra: Record<string, string> = {}): Promise<string> {
  const device = (
    await t.app.inject({ method: 'POST', url: '/oauth/device/code', ...form({ client_id: clientId, scope: 'openid offline_access', ...extra }) })
  ).json();
  const grant = await t.store.findDeviceGrantByUserCode(userCodeDigest(t.app.services.userCodeKey, normalizeUserCode(device.user_code)!));
  await t.store.approveDeviceGrant(grant!.id, alice.id, Math.floor(t.clock()), ['pwd'], Math.floor(t.clock()));
  return device.device_code;
}

function tokenRequest(fields: Record<string, string>, dpop?: string) {
  const f = form(fields);
  return t.app.inject({ method: 'POST', url: '/oauth/token', payload: f.payload, headers: { ...f.headers, ...(dpop === undefined ? {} : { dpop }) } });
}

beforeEach(async () => {
  t = await testApp();
  alice = await addUser(t.store, 'alice');
  await addClient(t.store, 'cli', { grantTypes: ['device_code', 'refresh_token'] });
  key = await newKey();
});

afterEach(async () => {
  await t.close();
});

describe('the token endpoint', () => {
  it('asks for its nonce first (use_dpop_nonce + DPoP-Nonce), then binds the tokens: token_type DPoP, cnf.jkt', async () => {
    const deviceCode = await approvedDeviceCode();
    const first = await tokenRequest({ grant_type: deviceGrantType, device_code: deviceCode, client_id: 'cli' }, await proof());
    expect(first.statusCode).toBe(400);
    expect(first.json().error).toBe('use_dpop_nonce');
    const nonce = first.headers['dpop-nonce'] as string;
    expect(nonce).toMatch(/^[A-Za-z0-9_-]{32}$/);
    const res = await tokenRequest({ grant_type: deviceGrantType, device_code: deviceCode, client_id: 'cli' }, await proof({ nonce }));
    expect(res.statusCode).toBe(200);
    expect(res.json().token_type).toBe('DPoP');
    expect(res.headers['dpop-nonce']).toBeDefined();
    expect(decodeJwt(res.json().access_token).cnf).toEqual({ jkt: key.jkt });
  });

  it("a public client's refresh token is bound to the key: refused without a proof or with another key's", async () => {
    const nonce = await serverNonce();
    const tokens = (
      await tokenRequest({ grant_type: deviceGrantType, device_code: await approvedDeviceCode(), client_id: 'cli' }, await proof({ nonce }))
    ).json();
    const bare = await tokenRequest({ grant_type: 'refresh_token', client_id: 'cli', refresh_token: tokens.refresh_token });
    expect(bare.statusCode).toBe(400);
    expect(bare.json().error).toBe('invalid_grant');
    const other = await newKey();
    const stolen = await tokenRequest(
      { grant_type: 'refresh_token', client_id: 'cli', refresh_token: tokens.refresh_token },
      await proof({ nonce, with: other }),
    );
    expect(stolen.json().error).toBe('invalid_grant');
    const own = await tokenRequest({ grant_type: 'refresh_token', client_id: 'cli', refresh_token: tokens.refresh_token }, await proof({ nonce }));
    expect(own.statusCode).toBe(200);
    expect(own.json().token_type).toBe('DPoP');
    expect(decodeJwt(own.json().access_token).cnf).toEqual({ jkt: key.jkt });
    // The successor stays bound.
    expect((await tokenRequest({ grant_type: 'refresh_token', client_id: 'cli', refresh_token: own.json().refresh_token })).json().error).toBe('invalid_grant');
  });

  it('without a proof everything stays Bearer', async () => {
    const res = await tokenRequest({ grant_type: deviceGrantType, device_code: await approvedDeviceCode(), client_id: 'cli' });
    expect(res.json().token_type).toBe('Bearer');
    expect(decodeJwt(res.json().access_token).cnf).toBeUndefined();
  });

  it('refuses bad proofs with invalid_dpop_proof: replayed, another URL or method, old, wrong typ, no or private jwk, unsigned, two headers', async () => {
    const nonce = await serverNonce();
    const replayed = await proof({ nonce });
    expect((await tokenRequest({ grant_type: deviceGrantType, device_code: await approvedDeviceCode(), client_id: 'cli' }, replayed)).statusCode).toBe(200);
    const deviceCode = await approvedDeviceCode();
    const privateJwk = await exportJWK(key.privateKey);
    const unsigned = `${Buffer.from(JSON.stringify({ alg: 'none', typ: 'dpop+jwt', jwk: key.jwk })).toString('base64url')}.${Buffer.from(JSON.stringify({ htm: 'POST', htu: tokenUrl, jti: 'u', iat: Math.floor(t.clock()), nonce })).toString('base64url')}.`;
    const cases: [string, string][] = [
      ['replayed', replayed],
      ['other url', await proof({ nonce, htu: `${issuer}/oauth/introspect` })],
      ['other method', await proof({ nonce, htm: 'GET' })],
      ['old', await proof({ nonce, iat: Math.floor(t.clock()) - 600 })],
      ['future', await proof({ nonce, iat: Math.floor(t.clock()) + 600 })],
      ['typ', await proof({ nonce, typ: 'JWT' })],
      ['private jwk', await proof({ nonce, jwk: privateJwk })],
      ['unsigned', unsigned],
      ['garbage', 'not-a-jwt'],
    ];
    for (const [label, dpop] of cases) {
      const res = await tokenRequest({ grant_type: deviceGrantType, device_code: deviceCode, client_id: 'cli' }, dpop);
      expect(res.statusCode, label).toBe(400);
      expect(res.json().error, label).toBe('invalid_dpop_proof');
    }
    const f = form({ grant_type: deviceGrantType, device_code: deviceCode, client_id: 'cli' });
    const two = await t.app.inject({
      method: 'POST',
      url: '/oauth/token',
      payload: f.payload,
      headers: { ...f.headers, dpop: [await proof({ nonce }), await proof({ nonce })] },
    });
    expect(two.statusCode).toBe(400);
    // None of those spent the device code: the right proof still gets the tokens.
    expect((await tokenRequest({ grant_type: deviceGrantType, device_code: deviceCode, client_id: 'cli' }, await proof({ nonce }))).statusCode).toBe(200);
  });

  it('a nonce from an old time step is stale: use_dpop_nonce again', async () => {
    const nonce = await serverNonce();
    t.clock.advance(700);
    const res = await tokenRequest({ grant_type: deviceGrantType, device_code: await approvedDeviceCode(), client_id: 'cli' }, await proof({ nonce }));
    expect(res.json().error).toBe('use_dpop_nonce');
    expect(res.headers['dpop-nonce']).not.toBe(nonce);
  });

  it('discovery lists the algorithms', async () => {
    const metadata = (await t.app.inject({ method: 'GET', url: '/.well-known/openid-configuration' })).json();
    expect(metadata.dpop_signing_alg_values_supported).toEqual(expect.arrayContaining(['ES256', 'RS256', 'EdDSA']));
    expect(metadata.dpop_signing_alg_values_supported).not.toContain('HS256');
  });
});

describe('userinfo and introspection', () => {
  async function boundToken(): Promise<string> {
    const nonce = await serverNonce();
    return (await tokenRequest({ grant_type: deviceGrantType, device_code: await approvedDeviceCode(), client_id: 'cli' }, await proof({ nonce }))).json()
      .access_token;
  }
  const userinfo = (headers: Record<string, string>) => t.app.inject({ method: 'GET', url: '/userinfo', headers });

  it('accepts Authorization: DPoP with a proof by the key for this request', async () => {
    const token = await boundToken();
    const res = await userinfo({ authorization: `DPoP ${token}`, dpop: await proof({ htm: 'GET', htu: `${issuer}/userinfo`, accessToken: token }) });
    expect(res.statusCode).toBe(200);
    expect(res.json().sub).toBe(alice.id);
  });

  it('refuses the bound token as Bearer (a stolen copy), and a DPoP request without proof, with a proof for another URL, another token, another key, or replayed', async () => {
    const token = await boundToken();
    const bearer = await userinfo({ authorization: `Bearer ${token}` });
    expect(bearer.statusCode).toBe(401);
    expect(bearer.headers['www-authenticate']).toMatch(/^DPoP /);
    expect((await userinfo({ authorization: `DPoP ${token}` })).statusCode).toBe(401);
    const other = await newKey();
    const replayed = await proof({ htm: 'GET', htu: `${issuer}/userinfo`, accessToken: token });
    expect((await userinfo({ authorization: `DPoP ${token}`, dpop: replayed })).statusCode).toBe(200);
    for (const [label, dpop] of [
      ['replayed', replayed],
      ['other url', await proof({ htm: 'GET', htu: `${issuer}/oauth/token`, accessToken: token })],
      ['no ath', await proof({ htm: 'GET', htu: `${issuer}/userinfo` })],
      ['other token', await proof({ htm: 'GET', htu: `${issuer}/userinfo`, accessToken: `${token}x` })],
      ['other key', await proof({ htm: 'GET', htu: `${issuer}/userinfo`, accessToken: token, with: other })],
    ] as const) {
      const res = await userinfo({ authorization: `DPoP ${token}`, dpop });
      expect(res.statusCode, label).toBe(401);
      expect(res.headers['www-authenticate'], label).toMatch(/^DPoP algs="/);
    }
  });

  it('an unbound token sent with the DPoP scheme is refused', async () => {
    const token = (await tokenRequest({ grant_type: deviceGrantType, device_code: await approvedDeviceCode(), client_id: 'cli' })).json().access_token;
    expect(
      (await userinfo({ authorization: `DPoP ${token}`, dpop: await proof({ htm: 'GET', htu: `${issuer}/userinfo`, accessToken: token }) })).statusCode,
    ).toBe(401);
    expect((await userinfo({ authorization: `Bearer ${token}` })).statusCode).toBe(200);
  });

  it("introspection says DPoP and names the key (cnf); a confidential client's refresh token is not bound to the key", async () => {
    const secret = (await addClient(t.store, 'tvc', { confidential: true, grantTypes: ['device_code', 'refresh_token'] })).secret!;
    const nonce = await serverNonce();
    const tokens = (
      await tokenRequest(
        { grant_type: deviceGrantType, device_code: await approvedDeviceCode('tvc', { client_secret: secret }), client_id: 'tvc', client_secret: secret },
        await proof({ nonce }),
      )
    ).json();
    expect(tokens.token_type).toBe('DPoP');
    const seen = (
      await t.app.inject({ method: 'POST', url: '/oauth/introspect', ...form({ token: tokens.access_token, client_id: 'tvc', client_secret: secret }) })
    ).json();
    expect(seen).toMatchObject({ active: true, token_type: 'DPoP', cnf: { jkt: key.jkt } });
    const refreshed = await tokenRequest({ grant_type: 'refresh_token', client_id: 'tvc', client_secret: secret, refresh_token: tokens.refresh_token });
    expect(refreshed.statusCode).toBe(200);
    expect(refreshed.json().token_type).toBe('Bearer');
  });
});

describe('more proof checks', () => {
  it('alg none with a signature part, and an HMAC proof, are refused; the previous nonce still counts, and an iat just inside the window passes', async () => {
    const nonce = await serverNonce();
    const deviceCode = await approvedDeviceCode();
    const claims = { htm: 'POST', htu: tokenUrl, jti: 'n1', iat: Math.floor(t.clock()), nonce };
    const none = `${Buffer.from(JSON.stringify({ alg: 'none', typ: 'dpop+jwt', jwk: key.jwk })).toString('base64url')}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.c2ln`;
    const hmac = await new SignJWT({ ...claims, jti: 'h1' })
      .setProtectedHeader({ alg: 'HS256', typ: 'dpop+jwt', jwk: { kty: 'oct', k: 'c2VjcmV0' } as unknown as JWK })
      .sign(new TextEncoder().encode('secret'));
    for (const [label, dpop] of [
      ['none', none],
      ['hmac', hmac],
    ] as const) {
      const res = await tokenRequest({ grant_type: deviceGrantType, device_code: deviceCode, client_id: 'cli' }, dpop);
      expect(res.json().error, label).toBe('invalid_dpop_proof');
    }
    const f = form({ grant_type: deviceGrantType, device_code: deviceCode, client_id: 'cli' });
    const two = await t.app.inject({
      method: 'POST',
      url: '/oauth/token',
      payload: f.payload,
      headers: { ...f.headers, dpop: [await proof({ nonce }), await proof({ nonce })] },
    });
    expect(two.json().error).toBe('invalid_dpop_proof');
    // One time step later the nonce handed out before is still accepted, with a proof almost 5 minutes old.
    t.clock.advance(300);
    const late = await tokenRequest(
      { grant_type: deviceGrantType, device_code: deviceCode, client_id: 'cli' },
      await proof({ nonce, iat: Math.floor(t.clock()) - 290 }),
    );
    expect(late.statusCode).toBe(200);
  });

  it('an unbound public refresh token presented with a proof becomes bound to that key', async () => {
    const tokens = (await tokenRequest({ grant_type: deviceGrantType, device_code: await approvedDeviceCode(), client_id: 'cli' })).json();
    const nonce = await serverNonce();
    const bound = await tokenRequest({ grant_type: 'refresh_token', client_id: 'cli', refresh_token: tokens.refresh_token }, await proof({ nonce }));
    expect(bound.json().token_type).toBe('DPoP');
    const bare = await tokenRequest({ grant_type: 'refresh_token', client_id: 'cli', refresh_token: bound.json().refresh_token });
    expect(bare.json().error).toBe('invalid_grant');
  });
});

describe('codes bound to a key (RFC 9449 §10): a proof at PAR, or dpop_jkt', () => {
  async function codeVia(requestQuery: URLSearchParams): Promise<string> {
    const browser = new Browser(injectTransport(t.app));
    let page = await browser.follow(await browser.get(`/authorize?${requestQuery}`));
    page = await signIn(browser, page, 'alice', 'correct horse battery');
    const answer = await browser.get(page.location!);
    return new URL(answer.location!).searchParams.get('code')!;
  }
  const redirectUri = 'https://web.example.com/cb';
  const redeem = (code: string, verifier: string, dpop?: string) =>
    tokenRequest({ grant_type: 'authorization_code', code, client_id: 'web', redirect_uri: redirectUri, code_verifier: verifier }, dpop);

  beforeEach(async () => {
    await addClient(t.store, 'web', { grantTypes: ['authorization_code'], redirectUris: [redirectUri], firstParty: true });
  });

  it('a proof sent to PAR binds the code: redeemed only with a proof by that key', async () => {
    const { verifier, challenge } = pkcePair();
    const push = (dpop?: string) => {
      const f = form({
        client_id: 'web',
        response_type: 'code',
        redirect_uri: redirectUri,
        scope: 'openid',
        state: 's',
        code_challenge: challenge,
        code_challenge_method: 'S256',
      });
      return t.app.inject({ method: 'POST', url: '/oauth/par', payload: f.payload, headers: { ...f.headers, ...(dpop === undefined ? {} : { dpop }) } });
    };
    const first = await push(await proof({ htu: `${issuer}/oauth/par` }));
    expect(first.json().error).toBe('use_dpop_nonce');
    const nonce = first.headers['dpop-nonce'] as string;
    expect((await push(await proof({ htu: tokenUrl, nonce }))).json().error).toBe('invalid_dpop_proof');
    const pushed = await push(await proof({ htu: `${issuer}/oauth/par`, nonce }));
    expect(pushed.statusCode).toBe(201);
    const code = await codeVia(new URLSearchParams({ client_id: 'web', request_uri: pushed.json().request_uri }));
    expect((await redeem(code, verifier)).json().error).toBe('invalid_grant');
    const other = await newKey();
    expect((await redeem(code, verifier, await proof({ nonce, with: other }))).json().error).toBe('invalid_grant');
    const ok = await redeem(code, verifier, await proof({ nonce }));
    expect(ok.statusCode).toBe(200);
    expect(ok.json().token_type).toBe('DPoP');
  });

  it('dpop_jkt on a plain authorization request binds the code too; a malformed one is refused', async () => {
    const { verifier, challenge } = pkcePair();
    const query = new URLSearchParams({
      client_id: 'web',
      response_type: 'code',
      redirect_uri: redirectUri,
      scope: 'openid',
      state: 's',
      code_challenge: challenge,
      code_challenge_method: 'S256',
      dpop_jkt: key.jkt,
    });
    const code = await codeVia(query);
    expect((await redeem(code, verifier)).json().error).toBe('invalid_grant');
    const nonce = await serverNonce();
    expect((await redeem(code, verifier, await proof({ nonce }))).statusCode).toBe(200);
    query.set('dpop_jkt', 'short');
    const bad = await t.app.inject({ method: 'GET', url: `/authorize?${query}` });
    expect(new URL(bad.headers.location!).searchParams.get('error')).toBe('invalid_request');
  });
});
