/**
 * The Device Code flow over a real socket and a real SQLite file: the test plays the device
 * (form posts to the API) and the person's browser (pages with a cookie jar). The clock is
 * injected so expiry and slow_down need no sleeping.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRemoteJWKSet, jwtVerify } from 'jose';
import { addApi, addClient, addUser, deviceGrantType, testApp, type TestApp } from '../helpers/app.js';
import { actOnDeviceCode, Browser, fetchTransport } from '../helpers/browser.js';

let t: TestApp;
let base: string;
let dir: string;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'latchkey-e2e-'));
  const port = 0;
  t = await testApp({ PORT: String(port) }, { path: join(dir, 'latchkey.db') });
  await addClient(t.store, 'tv', { name: 'Living Room TV' });
  await addApi(t.store, 'https://api.example.com', 'Example API');
  await addUser(t.store, 'alice', 'alice-password');
  base = await t.app.listen({ port: 0, host: '127.0.0.1' });
});

afterEach(async () => {
  await t.close();
  rmSync(dir, { recursive: true, force: true });
});

async function api(path: string, fields: Record<string, string>) {
  const res = await fetch(base + path, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', 'user-agent': 'smart-tv/3.1' },
    body: new URLSearchParams(fields),
  });
  return { status: res.status, headers: res.headers, body: (await res.json()) as Record<string, unknown> };
}

async function requestDeviceCode() {
  const res = await api('/oauth/device/code', { client_id: 'tv', scope: 'openid email profile offline_access', audience: 'https://api.example.com' });
  expect(res.status).toBe(200);
  return res.body as {
    device_code: string;
    user_code: string;
    verification_uri: string;
    verification_uri_complete: string;
    interval: number;
    expires_in: number;
  };
}

const poll = (deviceCode: string) => api('/oauth/token', { grant_type: deviceGrantType, device_code: deviceCode, client_id: 'tv' });

/** verification_uri_complete uses the configured issuer; the browser talks to the real socket. */
const pathOf = (url: string) => {
  const u = new URL(url);
  return u.pathname + u.search;
};

describe('Device Code flow end to end', () => {
  it('approve: pending polls, the person allows in the browser, the device gets verifiable tokens once', async () => {
    const device = await requestDeviceCode();
    expect((await poll(device.device_code)).body.error).toBe('authorization_pending');

    const browser = new Browser(fetchTransport(base));
    const result = await actOnDeviceCode(browser, pathOf(device.verification_uri_complete), { username: 'alice', password: 'alice-password' }, 'allow');
    expect(result.status).toBe(200);
    expect(result.body).toContain('Return to your device');

    t.clock.advance(device.interval);
    const tokens = await poll(device.device_code);
    expect(tokens.status).toBe(200);
    expect(tokens.headers.get('cache-control')).toBe('no-store');
    expect(tokens.body).toMatchObject({ token_type: 'Bearer', expires_in: 86400, scope: 'openid email profile offline_access' });
    expect(String(tokens.body.refresh_token)).toMatch(/^lk_rt_/);

    const { payload, protectedHeader } = await jwtVerify(String(tokens.body.access_token), createRemoteJWKSet(new URL(`${base}/.well-known/jwks.json`)), {
      issuer: 'http://latchkey.test',
      audience: 'https://api.example.com',
      currentDate: new Date(t.clock() * 1000),
    });
    expect(protectedHeader.typ).toBe('at+jwt');
    expect(payload.client_id).toBe('tv');

    // Spent: polled again, at once, it is invalid_grant.
    expect((await poll(device.device_code)).body.error).toBe('invalid_grant');
    // A device that lost that answer and polls again at its interval recovers it: new tokens, and
    // the first ones revoked, so only one set ever lives.
    t.clock.advance(device.interval);
    const recovered = await poll(device.device_code);
    expect(recovered.status).toBe(200);
    const userinfo = async (token: unknown) => (await fetch(`${base}/userinfo`, { headers: { authorization: `Bearer ${String(token)}` } })).status;
    expect(await userinfo(tokens.body.access_token)).toBe(401);
    expect(await userinfo(recovered.body.access_token)).toBe(200);
  });

  it('the person types the code by hand, in lower case without the dash', async () => {
    const device = await requestDeviceCode();
    const browser = new Browser(fetchTransport(base));
    const typed = device.user_code.replace('-', '').toLowerCase();
    const result = await actOnDeviceCode(browser, `/activate?user_code=${typed}`, { username: 'alice', password: 'alice-password' }, 'allow');
    expect(result.status).toBe(200);
    t.clock.advance(device.interval);
    expect((await poll(device.device_code)).status).toBe(200);
  });

  it('deny: the device gets access_denied', async () => {
    const device = await requestDeviceCode();
    const browser = new Browser(fetchTransport(base));
    const result = await actOnDeviceCode(browser, pathOf(device.verification_uri_complete), { username: 'alice', password: 'alice-password' }, 'deny');
    expect(result.body).toContain('Request denied');
    const res = await poll(device.device_code);
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('access_denied');
  });

  it('expiry: after expires_in the device gets expired_token and the page refuses the code', async () => {
    await t.close();
    t = await testApp({ LATCHKEY_DEVICE_CODE_TTL: '30' }, { path: join(dir, 'short.db') });
    await addClient(t.store, 'tv');
    await addApi(t.store, 'https://api.example.com');
    await addUser(t.store, 'alice', 'alice-password');
    base = await t.app.listen({ port: 0, host: '127.0.0.1' });
    const device = await requestDeviceCode();
    expect(device.expires_in).toBe(30);
    t.clock.advance(30);
    expect((await poll(device.device_code)).body.error).toBe('expired_token');
    const browser = new Browser(fetchTransport(base));
    await expect(
      actOnDeviceCode(browser, pathOf(device.verification_uri_complete), { username: 'alice', password: 'alice-password' }, 'allow'),
    ).rejects.toThrow(/no confirmation page: 400/);
  });

  it('slow_down grows the interval by 5 s, and a client that honours it is not punished again', async () => {
    const device = await requestDeviceCode();
    expect(device.interval).toBe(5);
    expect((await poll(device.device_code)).body.error).toBe('authorization_pending');
    t.clock.advance(1);
    expect((await poll(device.device_code)).body.error).toBe('slow_down');
    t.clock.advance(5); // the old interval is no longer enough
    expect((await poll(device.device_code)).body.error).toBe('slow_down');
    t.clock.advance(15); // 5 + 5 + 5
    expect((await poll(device.device_code)).body.error).toBe('authorization_pending');
    t.clock.advance(15);
    expect((await poll(device.device_code)).body.error).toBe('authorization_pending');
  });

  it('20 simultaneous polls of one approved device code: exactly one gets tokens', async () => {
    const device = await requestDeviceCode();
    const browser = new Browser(fetchTransport(base));
    await actOnDeviceCode(browser, pathOf(device.verification_uri_complete), { username: 'alice', password: 'alice-password' }, 'allow');
    const results = await Promise.all(Array.from({ length: 20 }, () => poll(device.device_code)));
    const winners = results.filter((r) => r.status === 200);
    expect(winners).toHaveLength(1);
    expect(results.filter((r) => r.status === 400 && r.body.error === 'invalid_grant')).toHaveLength(19);
    expect(t.store.db.prepare('SELECT count(*) AS n FROM refresh_tokens').get()).toEqual({ n: 1 });
  });
});
