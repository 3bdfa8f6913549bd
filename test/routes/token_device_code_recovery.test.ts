/**
 * A device code presented again after its redemption (RFC 8628 §3.5: it is spent). The device whose
 * token answer was lost after the redemption committed (the server or the connection died) polls
 * again with the only thing it has, its device code, and recovers the answer: for a few seconds
 * (LATCHKEY_RETRY_WINDOW, default 10: the next poll), and, when the redemption was answered to a
 * DPoP proof, only with a proof by the same key (RFC 9449 §5). Anyone else presenting the code —
 * later, without that key — gets invalid_grant and takes nothing from the device.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { normalizeUserCode, userCodeDigest } from '../../src/oauth/user_code.js';
import type { UserRecord } from '../../src/store/store.js';
import { addApi, addClient, addUser, deviceGrantType, form, testApp, type TestApp } from '../helpers/app.js';
import { dpopProof, newDpopKey, type DpopKey } from '../helpers/dpop.js';

const issuer = 'http://latchkey.test';
let t: TestApp;
let alice: UserRecord;

async function setUp(env: Record<string, string> = {}) {
  t = await testApp(env);
  await addClient(t.store, 'tv', { name: 'Living Room TV' });
  await addApi(t.store, 'https://api.example.com');
  alice = await addUser(t.store, 'alice');
}
beforeEach(() => setUp());
afterEach(() => t.close());

interface TokenAnswer {
  access_token: string;
  refresh_token: string;
  token_type: string;
}

const now = () => Math.floor(t.clock());

/** The token endpoint's current DPoP nonce (RFC 9449 §8), as a client learns it from use_dpop_nonce. */
async function tokenNonce(key: DpopKey): Promise<string> {
  const res = await t.app.inject({
    method: 'POST',
    url: '/oauth/token',
    ...form({ grant_type: 'refresh_token', client_id: 'tv', refresh_token: 'lk_rt_none' }),
    headers: { ...form({}).headers, dpop: await dpopProof(key, { htm: 'POST', htu: `${issuer}/oauth/token`, iat: now() }) },
  });
  expect(res.json().error).toBe('use_dpop_nonce');
  return res.headers['dpop-nonce'] as string;
}

async function tokenRequest(fields: Record<string, string>, key?: DpopKey) {
  const f = form({ client_id: 'tv', ...fields });
  const dpop = key && (await dpopProof(key, { htm: 'POST', htu: `${issuer}/oauth/token`, iat: now(), nonce: await tokenNonce(key) }));
  return t.app.inject({ method: 'POST', url: '/oauth/token', payload: f.payload, headers: { ...f.headers, ...(dpop === undefined ? {} : { dpop }) } });
}

const poll = (deviceCode: string, key?: DpopKey) => tokenRequest({ grant_type: deviceGrantType, device_code: deviceCode }, key);
const refreshWith = (refreshToken: string, key?: DpopKey) => tokenRequest({ grant_type: 'refresh_token', refresh_token: refreshToken }, key);

/** userinfo with the access token, as Bearer or (bound to `key`) with a DPoP proof. */
async function userinfo(accessToken: string, key?: DpopKey) {
  const headers: Record<string, string> = key
    ? { authorization: `DPoP ${accessToken}`, dpop: await dpopProof(key, { htm: 'GET', htu: `${issuer}/userinfo`, iat: now(), accessToken }) }
    : { authorization: `Bearer ${accessToken}` };
  return t.app.inject({ method: 'GET', url: '/userinfo', headers });
}

async function expectInvalidGrant(res: Awaited<ReturnType<typeof poll>>) {
  expect(res.statusCode).toBe(400);
  expect(res.headers['cache-control']).toBe('no-store');
  expect(res.json()).toEqual({ error: 'invalid_grant', error_description: expect.any(String) });
}

/** The device's sign-in still stands: its access token answers at userinfo, its refresh token refreshes. */
async function expectStillWorking(tokens: TokenAnswer, key?: DpopKey) {
  expect((await userinfo(tokens.access_token, key)).statusCode).toBe(200);
  const refreshed = await refreshWith(tokens.refresh_token, key);
  expect(refreshed.statusCode).toBe(200);
  expect((await userinfo(refreshed.json().access_token, key)).statusCode).toBe(200);
}

async function approvedDeviceCode(scope = 'openid email offline_access'): Promise<string> {
  const device = (
    await t.app.inject({ method: 'POST', url: '/oauth/device/code', ...form({ client_id: 'tv', scope, audience: 'https://api.example.com' }) })
  ).json();
  const grant = await t.store.findDeviceGrantByUserCode(userCodeDigest(t.app.services.userCodeKey, normalizeUserCode(device.user_code)!));
  expect(await t.store.approveDeviceGrant(grant!.id, alice.id, now(), ['pwd'], now())).toBe(true);
  return device.device_code;
}

/** A device code redeemed (with a proof by `key`, if given), and the answer the device never saw. */
async function redeemed(key?: DpopKey, scope?: string) {
  const deviceCode = await approvedDeviceCode(scope);
  const lost = await poll(deviceCode, key);
  expect(lost.statusCode).toBe(200);
  expect(lost.json().token_type).toBe(key ? 'DPoP' : 'Bearer');
  return { deviceCode, lost: lost.json<TokenAnswer>() };
}

describe('a redemption whose answer was lost (LATCHKEY_RETRY_WINDOW)', () => {
  it('a poll one interval later recovers: new tokens, and those of the lost answer are revoked', async () => {
    const { deviceCode, lost } = await redeemed();
    t.clock.advance(5);
    const res = await poll(deviceCode);
    expect(res.statusCode).toBe(200);
    const recovered = res.json<TokenAnswer>();
    expect(recovered.refresh_token).not.toBe(lost.refresh_token);
    expect((await userinfo(lost.access_token)).statusCode).toBe(401);
    await expectStillWorking(recovered);
  });

  it("presented again 11 s after the redemption, past the 10 s window: invalid_grant, and the first answer's tokens still work", async () => {
    const { deviceCode, lost } = await redeemed();
    t.clock.advance(11);
    await expectInvalidGrant(await poll(deviceCode));
    await expectStillWorking(lost);
  });

  it('the window is at most 30 s: the last second of it recovers, the next is spent, and the device keeps what it got', async () => {
    await t.close();
    await setUp({ LATCHKEY_RETRY_WINDOW: '30' });
    const { deviceCode } = await redeemed();
    t.clock.advance(30);
    const recovered = await poll(deviceCode);
    expect(recovered.statusCode).toBe(200);
    t.clock.advance(5);
    await expectInvalidGrant(await poll(deviceCode));
    await expectStillWorking(recovered.json());
  });

  it('the lost refresh token turning up later (someone else recovered the device code) is reuse: the whole sign-in is revoked (RFC 9700 §4.14.2)', async () => {
    const { deviceCode, lost } = await redeemed();
    t.clock.advance(5);
    const recovered = (await poll(deviceCode)).json<TokenAnswer>();
    await expectInvalidGrant(await refreshWith(lost.refresh_token));
    await expectInvalidGrant(await refreshWith(recovered.refresh_token));
    expect((await userinfo(recovered.access_token)).statusCode).toBe(401);
  });

  it('recoveries racing each other: one gets tokens, the others invalid_grant, and nothing is taken from it', async () => {
    const { deviceCode } = await redeemed();
    t.clock.advance(5);
    const answers = await Promise.all([poll(deviceCode), poll(deviceCode), poll(deviceCode)]);
    const winners = answers.filter((r) => r.statusCode === 200);
    expect(winners).toHaveLength(1);
    for (const loser of answers.filter((r) => r.statusCode !== 200)) await expectInvalidGrant(loser);
    await expectStillWorking(winners[0]!.json());
  });

  it('polls racing the redemption still get invalid_grant, and take nothing from the winner', async () => {
    const deviceCode = await approvedDeviceCode();
    const answers = await Promise.all([poll(deviceCode), poll(deviceCode), poll(deviceCode)]);
    const winners = answers.filter((r) => r.statusCode === 200);
    expect(winners).toHaveLength(1);
    for (const loser of answers.filter((r) => r.statusCode !== 200)) await expectInvalidGrant(loser);
    t.clock.advance(2); // sooner than the interval: a race or an impatient device, not a lost answer
    await expectInvalidGrant(await poll(deviceCode));
    await expectStillWorking(winners[0]!.json());
  });

  it('no recovery once the lost refresh token was used: its holder is not the device that lost it', async () => {
    const { deviceCode, lost } = await redeemed();
    t.clock.advance(3);
    const used = await refreshWith(lost.refresh_token);
    expect(used.statusCode).toBe(200);
    t.clock.advance(3);
    await expectInvalidGrant(await poll(deviceCode));
    expect((await userinfo(used.json().access_token)).statusCode).toBe(200);
  });

  it('not more than three recoveries, even within the longest window', async () => {
    await t.close();
    await setUp({ LATCHKEY_RETRY_WINDOW: '30' });
    const { deviceCode } = await redeemed();
    let last: TokenAnswer | undefined;
    for (let recovery = 1; recovery <= 3; recovery++) {
      t.clock.advance(5);
      const res = await poll(deviceCode);
      expect(res.statusCode).toBe(200);
      last = res.json();
    }
    t.clock.advance(5);
    await expectInvalidGrant(await poll(deviceCode));
    await expectStillWorking(last!);
  });

  it('LATCHKEY_RETRY_WINDOW=0 turns recovery off: a spent code is invalid_grant at once, and the tokens stay', async () => {
    await t.close();
    await setUp({ LATCHKEY_RETRY_WINDOW: '0' });
    const { deviceCode, lost } = await redeemed();
    t.clock.advance(5);
    await expectInvalidGrant(await poll(deviceCode));
    await expectStillWorking(lost);
  });

  it('without offline_access the lost access token alone is replaced and revoked', async () => {
    const { deviceCode, lost } = await redeemed(undefined, 'openid email');
    expect(lost.refresh_token).toBeUndefined();
    t.clock.advance(5);
    const recovered = (await poll(deviceCode)).json<TokenAnswer>();
    expect(recovered.refresh_token).toBeUndefined();
    expect((await userinfo(lost.access_token)).statusCode).toBe(401);
    expect((await userinfo(recovered.access_token)).statusCode).toBe(200);
  });
});

// The redemption was answered to a DPoP proof: the tokens are bound to the device's key (RFC 9449
// §5), and a lost answer can be recovered only by whoever holds that key — the device.
describe('a redemption answered to a DPoP proof: recovery needs the same key', () => {
  it('within the window with another key: invalid_grant, and the device keeps its sign-in', async () => {
    const device = await newDpopKey();
    const { deviceCode, lost } = await redeemed(device);
    t.clock.advance(5);
    await expectInvalidGrant(await poll(deviceCode, await newDpopKey()));
    await expectStillWorking(lost, device);
  });

  it('within the window without a proof: invalid_grant, and the device keeps its sign-in', async () => {
    const device = await newDpopKey();
    const { deviceCode, lost } = await redeemed(device);
    t.clock.advance(5);
    await expectInvalidGrant(await poll(deviceCode));
    await expectStillWorking(lost, device);
  });

  it('within the window with the same key: recovered, bound to that key, and the lost tokens revoked', async () => {
    const device = await newDpopKey();
    const { deviceCode, lost } = await redeemed(device);
    t.clock.advance(5);
    // Someone else tries first, and changes nothing for the device.
    await expectInvalidGrant(await poll(deviceCode, await newDpopKey()));
    const res = await poll(deviceCode, device);
    expect(res.statusCode).toBe(200);
    const recovered = res.json<TokenAnswer>();
    expect(recovered.token_type).toBe('DPoP');
    expect((await userinfo(lost.access_token, device)).statusCode).toBe(401);
    await expectStillWorking(recovered, device);
  });

  it('a confidential client is held to the key just the same (its refresh token is not bound, the recovery is)', async () => {
    const { secret } = await addClient(t.store, 'tvc', { confidential: true });
    const device = await newDpopKey();
    const start = form({ client_id: 'tvc', client_secret: secret!, scope: 'openid offline_access' });
    const code = (await t.app.inject({ method: 'POST', url: '/oauth/device/code', ...start })).json();
    const grant = await t.store.findDeviceGrantByUserCode(userCodeDigest(t.app.services.userCodeKey, normalizeUserCode(code.user_code)!));
    expect(await t.store.approveDeviceGrant(grant!.id, alice.id, now(), ['pwd'], now())).toBe(true);
    const pollAs = (key?: DpopKey) =>
      tokenRequest({ grant_type: deviceGrantType, device_code: code.device_code, client_id: 'tvc', client_secret: secret! }, key);
    const lost = await pollAs(device);
    expect(lost.statusCode).toBe(200);
    t.clock.advance(5);
    await expectInvalidGrant(await pollAs());
    await expectInvalidGrant(await pollAs(await newDpopKey()));
    expect((await userinfo(lost.json().access_token, device)).statusCode).toBe(200);
    expect((await pollAs(device)).statusCode).toBe(200);
  });
});
