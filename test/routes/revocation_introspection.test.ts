import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { decodeJwt } from 'jose';
import type { UserRecord } from '../../src/store/store.js';
import { addApi, addClient, addUser, form, testApp, type TestApp } from '../helpers/app.js';
import { refresh, tokensFor } from '../helpers/flows.js';

let t: TestApp;
let alice: UserRecord;
let apiSecret: string;

beforeEach(async () => {
  t = await testApp();
  alice = await addUser(t.store, 'alice');
  // resource-server is the API's own server: it may introspect tokens issued for the API (RFC 7662 §4).
  await addApi(t.store, 'https://api.example.com', 'Example API', ['resource-server']);
  await addClient(t.store, 'cli');
  await addClient(t.store, 'other');
  apiSecret = (await addClient(t.store, 'resource-server', { confidential: true, grantTypes: ['device_code', 'refresh_token'] })).secret!;
});
afterEach(() => t.close());

const post = (url: string, fields: Record<string, string>, headers: Record<string, string> = {}) => {
  const f = form(fields);
  return t.app.inject({ method: 'POST', url, payload: f.payload, headers: { ...f.headers, ...headers } });
};
const revoke = (fields: Record<string, string>) => post('/oauth/revoke', fields);
const introspect = (token: string, extra: Record<string, string> = {}) => {
  const basic = Buffer.from(`resource-server:${apiSecret}`).toString('base64');
  return post('/oauth/introspect', { token, ...extra }, { authorization: `Basic ${basic}` });
};
const userinfo = (token: string) => t.app.inject({ method: 'GET', url: '/userinfo', headers: { authorization: `Bearer ${token}` } });

describe('POST /oauth/revoke (RFC 7009)', () => {
  it('a refresh token: 200, and its whole family stops working', async () => {
    const first = await tokensFor(t, alice, 'cli');
    const second = (await refresh(t, 'cli', first.refresh_token!)).json();
    const res = await revoke({ client_id: 'cli', token: second.refresh_token, token_type_hint: 'refresh_token' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.json()).toEqual({});
    expect((await refresh(t, 'cli', second.refresh_token)).json().error).toBe('invalid_grant');
    expect((await introspect(second.refresh_token)).json()).toEqual({ active: false });
  });

  it('an access token: revoked by its jti until it expires; userinfo and introspection refuse it', async () => {
    const tokens = await tokensFor(t, alice, 'cli');
    expect((await userinfo(tokens.access_token)).statusCode).toBe(200);
    expect((await revoke({ client_id: 'cli', token: tokens.access_token })).statusCode).toBe(200);
    expect((await userinfo(tokens.access_token)).statusCode).toBe(401);
    expect((await introspect(tokens.access_token)).json()).toEqual({ active: false });
    expect(await t.store.isAccessTokenRevoked(String(decodeJwt(tokens.access_token).jti))).toBe(true);
  });

  it('token_type_hint is honoured but not trusted', async () => {
    const tokens = await tokensFor(t, alice, 'cli');
    expect((await revoke({ client_id: 'cli', token: tokens.refresh_token!, token_type_hint: 'access_token' })).statusCode).toBe(200);
    expect((await refresh(t, 'cli', tokens.refresh_token!)).json().error).toBe('invalid_grant');
    expect((await revoke({ client_id: 'cli', token: tokens.access_token, token_type_hint: 'refresh_token' })).statusCode).toBe(200);
    expect((await userinfo(tokens.access_token)).statusCode).toBe(401);
    expect((await revoke({ client_id: 'cli', token: tokens.access_token, token_type_hint: 'nonsense' })).statusCode).toBe(200);
  });

  it('unknown, malformed and already revoked tokens answer 200', async () => {
    for (const token of ['lk_rt_unknown', 'not-a-token', 'eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.', 'a.b.c']) {
      const res = await revoke({ client_id: 'cli', token });
      expect(res.statusCode).toBe(200);
    }
  });

  it("a client may only revoke its own tokens: another client's is refused and keeps working", async () => {
    const tokens = await tokensFor(t, alice, 'cli');
    const res = await revoke({ client_id: 'other', token: tokens.refresh_token! });
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toBe('invalid_request');
    expect((await revoke({ client_id: 'other', token: tokens.access_token })).statusCode).toBe(400);
    expect((await refresh(t, 'cli', tokens.refresh_token!)).statusCode).toBe(200);
    expect((await userinfo(tokens.access_token)).statusCode).toBe(200);
  });

  it('client authentication as at the token endpoint: unknown client → 401; missing token → invalid_request', async () => {
    expect((await revoke({ client_id: 'ghost', token: 'x' })).statusCode).toBe(401);
    expect((await revoke({ client_id: 'resource-server', token: 'x' })).statusCode).toBe(401); // no secret
    const missing = await revoke({ client_id: 'cli' });
    expect(missing.statusCode).toBe(400);
    expect(missing.json().error).toBe('invalid_request');
  });
});

describe('POST /oauth/introspect (RFC 7662)', () => {
  it('an access token: active with its claims', async () => {
    const tokens = await tokensFor(t, alice, 'cli', { audience: 'https://api.example.com' });
    const claims = decodeJwt(tokens.access_token);
    const res = await introspect(tokens.access_token);
    expect(res.statusCode).toBe(200);
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.json()).toEqual({
      active: true,
      scope: 'openid email profile offline_access',
      client_id: 'cli',
      username: 'alice',
      token_type: 'Bearer',
      exp: claims.exp,
      iat: claims.iat,
      sub: alice.id,
      aud: 'https://api.example.com',
      iss: 'http://latchkey.test',
      jti: claims.jti,
    });
  });

  it('an expired access token, a rotated refresh token, a disabled user → {"active": false}', async () => {
    const tokens = await tokensFor(t, alice, 'resource-server', { clientSecret: apiSecret });
    expect((await introspect(tokens.refresh_token!)).json()).toMatchObject({ active: true, token_type: 'refresh_token', client_id: 'resource-server' });
    const next = await post('/oauth/token', {
      grant_type: 'refresh_token',
      client_id: 'resource-server',
      client_secret: apiSecret,
      refresh_token: tokens.refresh_token!,
    });
    expect(next.statusCode).toBe(200);
    expect((await introspect(tokens.refresh_token!)).json()).toEqual({ active: false });
    await t.store.setUserDisabled('alice', true, Math.floor(t.clock()));
    expect((await introspect(next.json().access_token)).json()).toEqual({ active: false });
    await t.store.setUserDisabled('alice', false, Math.floor(t.clock()));
    t.clock.advance(86400);
    expect((await introspect(next.json().access_token)).json()).toEqual({ active: false });
  });

  it("another client's refresh token is inactive to it", async () => {
    const tokens = await tokensFor(t, alice, 'cli');
    expect((await introspect(tokens.refresh_token!)).json()).toEqual({ active: false });
  });

  it('garbage → {"active": false}', async () => {
    for (const token of ['x', 'a.b.c', 'lk_rt_nothing']) expect((await introspect(token)).json()).toEqual({ active: false });
  });

  it('is for confidential clients: a public client or a wrong secret → 401 invalid_client', async () => {
    const tokens = await tokensFor(t, alice, 'cli');
    const publicClient = await post('/oauth/introspect', { client_id: 'cli', token: tokens.access_token });
    expect(publicClient.statusCode).toBe(401);
    expect(publicClient.json().error).toBe('invalid_client');
    const wrong = await post('/oauth/introspect', { client_id: 'resource-server', client_secret: 'nope', token: tokens.access_token });
    expect(wrong.statusCode).toBe(401);
  });
});
