/**
 * What ends a token besides its own expiry: a new password, `users revoke-tokens`, a
 * disabled account, a removed client; and who may learn about a token at the introspection
 * endpoint (RFC 7662 §4). Driven through the endpoints, with the store verbs the admin commands use.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { hashPassword } from '../../src/crypto/password.js';
import type { UserRecord } from '../../src/store/store.js';
import { addApi, addClient, addUser, form, pkcePair, testApp, type TestApp } from '../helpers/app.js';
import { Browser, injectTransport, signIn } from '../helpers/browser.js';
import { refresh, tokensFor } from '../helpers/flows.js';
import { normalizeUserCode, userCodeDigest } from '../../src/oauth/user_code.js';

let t: TestApp;
let alice: UserRecord;
let rsSecret: string;
let otherSecret: string;
const api = 'https://api.example.com';

beforeEach(async () => {
  t = await testApp();
  alice = await addUser(t.store, 'alice', 'alice-password');
  await addClient(t.store, 'cli');
  rsSecret = (await addClient(t.store, 'resource-server', { confidential: true, grantTypes: ['device_code'] })).secret!;
  otherSecret = (await addClient(t.store, 'nosy', { confidential: true, grantTypes: ['device_code'] })).secret!;
  await addApi(t.store, api, 'Example API', ['resource-server']);
  await addApi(t.store, 'https://billing.example.com', 'Billing', []);
});
afterEach(() => t.close());

const now = () => Math.floor(t.clock());
const userinfo = (token: string) => t.app.inject({ method: 'GET', url: '/userinfo', headers: { authorization: `Bearer ${token}` } });
const introspect = (token: string, clientId = 'resource-server', secret = rsSecret) =>
  t.app.inject({ method: 'POST', url: '/oauth/introspect', ...form({ token, client_id: clientId, client_secret: secret }) });

/** A token used right after an event in the same second is treated as issued before it: step on. */
const later = () => t.clock.advance(1);

describe('a new password ends every sign-in of the person (RFC 6819 §5.2.2.3)', () => {
  it('the old refresh token no longer refreshes, and the old access token is refused at userinfo and introspection', async () => {
    const tokens = await tokensFor(t, alice, 'cli', { audience: api });
    const bystander = await addUser(t.store, 'bob', 'bob-password');
    const bobTokens = await tokensFor(t, bystander, 'cli', { audience: api });
    later();
    expect(await t.store.setUserPassword('alice', await hashPassword('a-new-password'), now())).toBe(true);
    expect((await refresh(t, 'cli', tokens.refresh_token!)).json().error).toBe('invalid_grant');
    const res = await userinfo(tokens.access_token);
    expect(res.statusCode).toBe(401);
    expect(res.headers['www-authenticate']).toContain('error="invalid_token"');
    expect((await introspect(tokens.access_token)).json()).toEqual({ active: false });
    // Someone else's tokens are untouched.
    expect((await userinfo(bobTokens.access_token)).statusCode).toBe(200);
    expect((await refresh(t, 'cli', bobTokens.refresh_token!)).statusCode).toBe(200);
    // A fresh sign-in afterwards works.
    later();
    const fresh = await tokensFor(t, alice, 'cli', { audience: api });
    expect((await userinfo(fresh.access_token)).statusCode).toBe(200);
  });

  it('a device code approved before the change yields no tokens', async () => {
    const start = (await t.app.inject({ method: 'POST', url: '/oauth/device/code', ...form({ client_id: 'cli' }) })).json();
    const grant = await t.store.findDeviceGrantByUserCode(userCodeDigest(t.app.services.userCodeKey, normalizeUserCode(start.user_code)!));
    await t.store.approveDeviceGrant(grant!.id, alice.id, now(), ['pwd'], now());
    later();
    await t.store.setUserPassword('alice', await hashPassword('a-new-password'), now());
    const poll = await t.app.inject({
      method: 'POST',
      url: '/oauth/token',
      ...form({ grant_type: 'urn:ietf:params:oauth:grant-type:device_code', client_id: 'cli', device_code: start.device_code }),
    });
    expect(poll.statusCode).toBe(400);
    expect(poll.json().error).toBe('invalid_grant');
  });

  it('an authorization code issued before the change cannot be redeemed', async () => {
    await addClient(t.store, 'web', { redirectUris: ['https://app.example.com/cb'], grantTypes: ['authorization_code'], firstParty: true });
    const browser = new Browser(injectTransport(t.app));
    await signIn(browser, await browser.get('/login'), 'alice', 'alice-password');
    const { verifier, challenge } = pkcePair();
    const query = new URLSearchParams({
      response_type: 'code',
      client_id: 'web',
      redirect_uri: 'https://app.example.com/cb',
      scope: 'openid',
      state: 's',
      code_challenge: challenge,
      code_challenge_method: 'S256',
    });
    const done = await browser.get(`/authorize?${query}`);
    const code = new URL(done.location!).searchParams.get('code')!;
    later();
    await t.store.setUserPassword('alice', await hashPassword('a-new-password'), now());
    const res = await t.app.inject({
      method: 'POST',
      url: '/oauth/token',
      ...form({ grant_type: 'authorization_code', client_id: 'web', code, redirect_uri: 'https://app.example.com/cb', code_verifier: verifier }),
    });
    expect(res.json().error).toBe('invalid_grant');
  });

  it('a token issued in the very second of the change is refused too (no second-long window for a thief)', async () => {
    const tokens = await tokensFor(t, alice, 'cli');
    await t.store.setUserPassword('alice', await hashPassword('a-new-password'), now());
    expect((await userinfo(tokens.access_token)).statusCode).toBe(401);
  });
});

// Access tokens with no refresh family (no offline_access): only the user's revocation mark can
// refuse them, so these prove the userinfo and introspection checks themselves.
describe('access tokens without a refresh token are refused too', () => {
  const endings: Array<[string, () => Promise<unknown>]> = [
    ['a new password', async () => t.store.setUserPassword('alice', await hashPassword('a-new-password'), now())],
    ['revoke-tokens', () => t.store.revokeUserTokens('alice', now())],
    ['disable', () => t.store.setUserDisabled('alice', true, now())],
  ];
  for (const [what, end] of endings) {
    it(`after ${what}`, async () => {
      const tokens = await tokensFor(t, alice, 'cli', { scope: 'openid email', audience: api });
      expect(tokens.refresh_token).toBeUndefined();
      expect((await userinfo(tokens.access_token)).statusCode).toBe(200);
      later();
      await end();
      if (what === 'disable') await t.store.setUserDisabled('alice', false, now()); // enabled again: the mark still holds
      expect((await userinfo(tokens.access_token)).statusCode).toBe(401);
      expect((await introspect(tokens.access_token)).json()).toEqual({ active: false });
    });
  }

  it('after the client is removed and registered again', async () => {
    const tokens = await tokensFor(t, alice, 'cli', { scope: 'openid' });
    later();
    await t.store.removeClient('cli', now());
    await addClient(t.store, 'cli');
    expect((await userinfo(tokens.access_token)).statusCode).toBe(401);
  });

  it('a client removed before removals were recorded: a token older than the client now registered is refused', async () => {
    const tokens = await tokensFor(t, alice, 'cli', { scope: 'openid' });
    // What an older version did: delete the row and remember nothing.
    t.store.db.prepare("DELETE FROM clients WHERE client_id = 'cli'").run();
    const { client } = await addClient(t.store, 'cli');
    t.store.db.prepare("UPDATE clients SET created_at = ? WHERE client_id = 'cli'").run(now() + 1);
    expect(client.clientId).toBe('cli');
    expect((await userinfo(tokens.access_token)).statusCode).toBe(401);
  });
});

describe('revokeUserTokens (latchkey users revoke-tokens) and disable / enable', () => {
  it('revoke-tokens ends sign-ins but keeps the password', async () => {
    const tokens = await tokensFor(t, alice, 'cli');
    later();
    expect(await t.store.revokeUserTokens('alice', now())).toBe(true);
    expect((await userinfo(tokens.access_token)).statusCode).toBe(401);
    expect((await refresh(t, 'cli', tokens.refresh_token!)).json().error).toBe('invalid_grant');
    const browser = new Browser(injectTransport(t.app));
    expect((await signIn(browser, await browser.get('/login'), 'alice', 'alice-password')).status).toBe(303);
  });

  it('enabling a disabled account again does not bring its old tokens back', async () => {
    const tokens = await tokensFor(t, alice, 'cli');
    later();
    await t.store.setUserDisabled('alice', true, now());
    expect((await userinfo(tokens.access_token)).statusCode).toBe(401);
    later();
    await t.store.setUserDisabled('alice', false, now());
    expect((await userinfo(tokens.access_token)).statusCode).toBe(401);
    expect((await refresh(t, 'cli', tokens.refresh_token!)).json().error).toBe('invalid_grant');
    later();
    const fresh = await tokensFor(t, alice, 'cli');
    expect((await userinfo(fresh.access_token)).statusCode).toBe(200);
  });
});

describe('a removed client leaves no live token behind', () => {
  it('its access tokens are refused at once, and a client registered again under its id inherits none', async () => {
    const tokens = await tokensFor(t, alice, 'cli', { audience: api });
    expect((await userinfo(tokens.access_token)).statusCode).toBe(200);
    later();
    expect(await t.store.removeClient('cli', now())).toBe(true);
    expect((await userinfo(tokens.access_token)).statusCode).toBe(401);
    expect((await introspect(tokens.access_token)).json()).toEqual({ active: false });
    // The same client_id again (anyone who may register clients could pick it).
    await addClient(t.store, 'cli');
    expect((await userinfo(tokens.access_token)).statusCode).toBe(401);
    expect((await introspect(tokens.access_token)).json()).toEqual({ active: false });
    later();
    const fresh = await tokensFor(t, alice, 'cli', { audience: api });
    expect((await userinfo(fresh.access_token)).statusCode).toBe(200);
    expect((await introspect(fresh.access_token)).json().active).toBe(true);
  });
});

describe('introspection answers only those the token concerns (RFC 7662 §4)', () => {
  it('a removed client is taken off the APIs it could introspect for: the same id registered again cannot', async () => {
    const tokens = await tokensFor(t, alice, 'cli', { audience: api });
    await t.store.removeClient('resource-server', now());
    expect((await t.store.findApi(api))?.introspectionClients).toEqual([]);
    const again = (await addClient(t.store, 'resource-server', { confidential: true, grantTypes: ['device_code'] })).secret!;
    expect((await introspect(tokens.access_token, 'resource-server', again)).json()).toEqual({ active: false });
  });

  it("the API registered for the token's audience: active", async () => {
    const tokens = await tokensFor(t, alice, 'cli', { audience: api });
    expect((await introspect(tokens.access_token)).json()).toMatchObject({ active: true, aud: api, client_id: 'cli' });
  });

  it('any other confidential client: {"active": false}, whatever the token', async () => {
    const tokens = await tokensFor(t, alice, 'cli', { audience: api });
    expect((await introspect(tokens.access_token, 'nosy', otherSecret)).json()).toEqual({ active: false });
    const billing = await tokensFor(t, alice, 'cli', { audience: 'https://billing.example.com' });
    expect((await introspect(billing.access_token)).json()).toEqual({ active: false });
    const userinfoOnly = await tokensFor(t, alice, 'cli');
    expect((await introspect(userinfoOnly.access_token)).json()).toEqual({ active: false });
  });

  it("the token's own (confidential) client: active, whatever the audience", async () => {
    const own = await tokensFor(t, alice, 'nosy', { clientSecret: otherSecret, audience: 'https://billing.example.com' });
    expect((await introspect(own.access_token, 'nosy', otherSecret)).json()).toMatchObject({ active: true, client_id: 'nosy' });
  });
});
