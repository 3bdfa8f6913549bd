import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { orderedSecretDigest } from '../../src/crypto/ordered_secrets.js';
import { secretPrefix } from '../../src/crypto/secrets.js';
import { normalizeUserCode, userCodeDigest } from '../../src/oauth/user_code.js';
import { addApi, addClient, form, testApp, type TestApp } from '../helpers/app.js';

const deviceKey = (code: string) => orderedSecretDigest(code, secretPrefix.deviceCode);

let t: TestApp;
beforeEach(async () => {
  t = await testApp();
  await addClient(t.store, 'tv', { name: 'Living Room TV' });
  await addApi(t.store, 'https://api.example.com', 'Example API');
});
afterEach(() => t.close());

const post = (fields: Record<string, string>, headers: Record<string, string> = {}) => {
  const f = form(fields);
  return t.app.inject({ method: 'POST', url: '/oauth/device/code', payload: f.payload, headers: { ...f.headers, ...headers } });
};

describe('POST /oauth/device/code', () => {
  it('answers the device authorization response of RFC 8628 §3.2', async () => {
    const res = await post(
      { client_id: 'tv', scope: 'openid email profile offline_access', audience: 'https://api.example.com' },
      { 'user-agent': 'tv-firmware/1.2' },
    );
    expect(res.statusCode).toBe(200);
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    const body = res.json();
    expect(Object.keys(body).sort()).toEqual(['device_code', 'expires_in', 'interval', 'user_code', 'verification_uri', 'verification_uri_complete']);
    // The type prefix, the milliseconds it was made in 12 hex digits, 32 random bytes (crypto/ordered_secrets.ts).
    expect(body.device_code).toMatch(/^lk_dc_[0-9a-f]{12}[A-Za-z0-9_-]{43}$/);
    expect(parseInt(body.device_code.slice(6, 18), 16)).toBe(Math.floor(t.clock() * 1000));
    expect(body.user_code).toMatch(/^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$/);
    expect(body.verification_uri).toBe('http://latchkey.test/activate');
    expect(body.verification_uri_complete).toBe(`http://latchkey.test/activate?user_code=${body.user_code}`);
    expect(body.expires_in).toBe(900);
    expect(body.interval).toBe(5);

    // Stored only as digests, with the requester's address and user agent for the person to see.
    const grant = await t.store.findDeviceGrantByDeviceCode(deviceKey(body.device_code));
    expect(grant).toMatchObject({
      clientId: 'tv',
      scope: 'openid email profile offline_access',
      audience: 'https://api.example.com',
      status: 'pending',
      interval: 5,
      requesterIp: '127.0.0.1',
      requesterUserAgent: 'tv-firmware/1.2',
      expiresAt: Math.floor(t.clock()) + 900,
    });
    expect(grant!.userCodeHash).toBe(userCodeDigest(t.app.services.userCodeKey, normalizeUserCode(body.user_code)!));
    const raw = t.store.db.prepare('SELECT * FROM device_grants').all();
    expect(JSON.stringify(raw)).not.toContain(body.device_code);
    expect(JSON.stringify(raw)).not.toContain(body.user_code);
    expect(JSON.stringify(raw)).not.toContain(body.user_code.replace('-', ''));
  });

  it('uses the configured lifetimes and interval', async () => {
    await t.close();
    t = await testApp({ LATCHKEY_DEVICE_CODE_TTL: '120', LATCHKEY_DEVICE_INTERVAL: '7' });
    const res = await post({ client_id: 'latchkey-cli' });
    expect(res.json()).toMatchObject({ expires_in: 120, interval: 7 });
  });

  it('defaults the scope to openid and the audience to the userinfo endpoint', async () => {
    const body = (await post({ client_id: 'tv' })).json();
    const grant = await t.store.findDeviceGrantByDeviceCode(deviceKey(body.device_code));
    expect(grant).toMatchObject({ scope: 'openid', audience: 'http://latchkey.test/userinfo' });
  });

  it('drops offline_access for a client without the refresh_token grant', async () => {
    await addClient(t.store, 'kiosk', { grantTypes: ['device_code'] });
    const body = (await post({ client_id: 'kiosk', scope: 'openid offline_access' })).json();
    expect((await t.store.findDeviceGrantByDeviceCode(deviceKey(body.device_code)))!.scope).toBe('openid');
  });

  const errors: [string, Record<string, string>, number, string][] = [
    ['unknown client', { client_id: 'nobody' }, 401, 'invalid_client'],
    ['missing client_id', { scope: 'openid' }, 400, 'invalid_request'],
    ['unknown scope', { client_id: 'tv', scope: 'openid admin' }, 400, 'invalid_scope'],
    ['unknown audience', { client_id: 'tv', audience: 'https://nope.example' }, 400, 'invalid_target'],
  ];
  for (const [name, fields, status, error] of errors) {
    it(`${name} → ${status} ${error}`, async () => {
      const res = await post(fields);
      expect(res.statusCode).toBe(status);
      expect(res.headers['cache-control']).toBe('no-store');
      expect(Object.keys(res.json()).sort()).toEqual(['error', 'error_description']);
      expect(res.json().error).toBe(error);
    });
  }

  it('an unknown client gets a Basic challenge', async () => {
    const res = await post({ client_id: 'nobody' });
    expect(res.headers['www-authenticate']).toMatch(/^Basic realm="latchkey"/);
  });

  it('a client without the device_code grant → unauthorized_client', async () => {
    await addClient(t.store, 'web', { grantTypes: ['authorization_code'] });
    const res = await post({ client_id: 'web' });
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toBe('unauthorized_client');
  });

  it('a repeated parameter → invalid_request', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/oauth/device/code',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: 'client_id=tv&scope=openid&scope=email',
    });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ error: 'invalid_request', error_description: 'A parameter is repeated.' });
  });

  describe('confidential clients', () => {
    it('must authenticate: no secret → 401 invalid_client', async () => {
      await addClient(t.store, 'server', { confidential: true });
      const res = await post({ client_id: 'server' });
      expect(res.statusCode).toBe(401);
      expect(res.json().error).toBe('invalid_client');
    });

    it('client_secret_basic and client_secret_post both work', async () => {
      const { secret } = await addClient(t.store, 'server', { confidential: true });
      const basic = Buffer.from(`server:${secret}`).toString('base64');
      expect((await post({}, { authorization: `Basic ${basic}` })).statusCode).toBe(200);
      expect((await post({ client_id: 'server', client_secret: secret! })).statusCode).toBe(200);
    });

    it('a wrong secret → 401 invalid_client', async () => {
      await addClient(t.store, 'server', { confidential: true });
      const res = await post({ client_id: 'server', client_secret: 'lk_cs_wrong' });
      expect(res.statusCode).toBe(401);
      expect(res.json().error).toBe('invalid_client');
    });
  });
});
