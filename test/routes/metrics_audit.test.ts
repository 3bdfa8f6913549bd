import { afterEach, describe, expect, it } from 'vitest';
import { addApi, addClient, addUser, deviceGrantType, form, testApp, type TestApp } from '../helpers/app.js';
import { actOnDeviceCode, Browser, injectTransport, signIn } from '../helpers/browser.js';

let t: TestApp;
afterEach(() => t.close());

const metricsText = async (headers: Record<string, string> = {}) => (await t.app.inject({ method: 'GET', url: '/metrics', headers })).body;

async function deviceFlow(decision: 'allow' | 'deny') {
  const device = (await t.app.inject({ method: 'POST', url: '/oauth/device/code', ...form({ client_id: 'tv', scope: 'openid offline_access' }) })).json();
  await actOnDeviceCode(
    new Browser(injectTransport(t.app)),
    `/activate?user_code=${device.user_code}`,
    { username: 'alice', password: 'alice-password' },
    decision,
  );
  return device as { device_code: string; user_code: string };
}
const poll = (deviceCode: string) =>
  t.app.inject({ method: 'POST', url: '/oauth/token', ...form({ grant_type: deviceGrantType, client_id: 'tv', device_code: deviceCode }) });

const everythingButUsernames = (lines: string[]) => lines.join('\n');

describe('GET /metrics', () => {
  it('without a token answers only private addresses', async () => {
    t = await testApp({ LATCHKEY_TRUST_PROXY: '1' });
    const from = (ip: string) => t.app.inject({ method: 'GET', url: '/metrics', headers: { 'x-forwarded-for': ip } });
    expect((await from('10.1.2.3')).statusCode).toBe(200);
    expect((await from('fd00::1')).statusCode).toBe(200);
    const outside = await from('203.0.113.9');
    expect(outside.statusCode).toBe(403);
    expect(outside.json().error).toBe('access_denied');
  });

  it('counts requests by route and status, tokens by grant, device outcomes, sign-in failures and rate-limit hits', async () => {
    t = await testApp({ LATCHKEY_RATE_LIMIT_UNKNOWN_DEVICE_CODE: '1/60' });
    await addUser(t.store, 'alice', 'alice-password');
    await addClient(t.store, 'tv');
    const approved = await deviceFlow('allow');
    expect((await poll(approved.device_code)).statusCode).toBe(200);
    await deviceFlow('deny');
    const expiring = (await t.app.inject({ method: 'POST', url: '/oauth/device/code', ...form({ client_id: 'tv' }) })).json();
    t.clock.advance(901);
    await poll(expiring.device_code);
    await poll(expiring.device_code); // counted once
    const browser = new Browser(injectTransport(t.app));
    await signIn(browser, await browser.get('/login'), 'alice', 'wrong-password');
    await poll('lk_dc_unknown1');
    await poll('lk_dc_unknown2'); // 429

    const text = await metricsText();
    expect(text).toContain('# TYPE latchkey_http_requests_total counter');
    expect(text).toMatch(/latchkey_http_requests_total\{method="POST",route="\/oauth\/device\/code",status="200"\} 3/);
    expect(text).toMatch(/latchkey_http_request_duration_seconds_bucket\{le="0.1",method="POST",route="\/oauth\/token",status="200"\} 1/);
    expect(text).toMatch(/latchkey_tokens_issued_total\{grant_type="device_code"\} 1/);
    expect(text).toMatch(/latchkey_device_authorizations_total\{outcome="requested"\} 3/);
    expect(text).toMatch(/latchkey_device_authorizations_total\{outcome="approved"\} 1/);
    expect(text).toMatch(/latchkey_device_authorizations_total\{outcome="denied"\} 1/);
    expect(text).toMatch(/latchkey_device_authorizations_total\{outcome="expired"\} 1/);
    expect(text).toMatch(/latchkey_signin_failures_total 1/);
    expect(text).toMatch(/latchkey_rate_limit_hits_total\{route="\/oauth\/token"\} 1/);
    expect(text).toMatch(/latchkey_process_resident_memory_bytes \d+/);
  });

  it('can be protected by a bearer secret (LATCHKEY_METRICS_TOKEN)', async () => {
    t = await testApp({ LATCHKEY_METRICS_TOKEN: 'metrics-secret-0123456789' });
    const denied = await t.app.inject({ method: 'GET', url: '/metrics' });
    expect(denied.statusCode).toBe(401);
    expect(denied.headers['www-authenticate']).toBe('Bearer realm="latchkey-metrics"');
    expect((await t.app.inject({ method: 'GET', url: '/metrics', headers: { authorization: 'Bearer wrong' } })).statusCode).toBe(401);
    const ok = await t.app.inject({ method: 'GET', url: '/metrics', headers: { authorization: 'Bearer metrics-secret-0123456789' } });
    expect(ok.statusCode).toBe(200);
    expect(ok.headers['content-type']).toMatch(/^text\/plain/);
  });
});

describe('audit events', () => {
  it('each flow leaves structured lines with a stable event, who and from where, and never a secret', async () => {
    const lines: string[] = [];
    t = await testApp({}, { logLines: lines });
    await addUser(t.store, 'alice', 'alice-password');
    await addApi(t.store, 'https://api.example.com');
    await addClient(t.store, 'tv');
    const secrets: string[] = ['alice-password'];
    const browser = new Browser(injectTransport(t.app));
    await signIn(browser, await browser.get('/login'), 'alice', 'not-her-password');
    const device = await deviceFlow('allow');
    secrets.push(device.device_code, device.user_code);
    const tokens = (await poll(device.device_code)).json();
    secrets.push(tokens.access_token, tokens.refresh_token);
    const rotated = (
      await t.app.inject({
        method: 'POST',
        url: '/oauth/token',
        ...form({ grant_type: 'refresh_token', client_id: 'tv', refresh_token: tokens.refresh_token }),
      })
    ).json();
    secrets.push(rotated.refresh_token);
    t.clock.advance(10);
    // The rightful client rotates on; the first token presented again is then theft.
    const onwards = (
      await t.app.inject({
        method: 'POST',
        url: '/oauth/token',
        ...form({ grant_type: 'refresh_token', client_id: 'tv', refresh_token: rotated.refresh_token }),
      })
    ).json();
    secrets.push(onwards.refresh_token);
    await t.app.inject({ method: 'POST', url: '/oauth/token', ...form({ grant_type: 'refresh_token', client_id: 'tv', refresh_token: tokens.refresh_token }) });

    const events = lines.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => typeof l.event === 'string');
    const byEvent = (name: string) => events.filter((e) => e.event === name);
    expect(byEvent('signin.failure')[0]).toMatchObject({ reason: 'password', ip: '127.0.0.1' });
    expect(byEvent('signin.failure')[0]!.userId).toMatch(/^[0-9a-f-]{36}$/);
    expect(everythingButUsernames(lines)).not.toContain('"username"'); // never the typed name: people type passwords there
    expect(byEvent('signin.success')[0]).toMatchObject({ ip: '127.0.0.1' });
    expect(byEvent('device.authorization_requested')[0]).toMatchObject({ clientId: 'tv', ip: '127.0.0.1' });
    expect(byEvent('device.approved')[0]).toMatchObject({ clientId: 'tv' });
    expect(byEvent('token.issued').map((e) => e.grant)).toEqual(['device_code', 'refresh_token', 'refresh_token']);
    expect(byEvent('refresh_token.reuse_detected')[0]).toMatchObject({ clientId: 'tv', level: 40 });
    const everything = lines.join('\n');
    for (const secret of secrets) expect({ secret, logged: everything.includes(secret) }).toEqual({ secret, logged: false });
    expect(everything).not.toContain(device.user_code.replace('-', ''));
  });
});

describe('the access log', () => {
  it('one line per request: method, path without the query, status, time, address, and the OAuth error of a refusal', async () => {
    const lines: string[] = [];
    t = await testApp({}, { logLines: lines });
    await addClient(t.store, 'tv');
    const device = (await t.app.inject({ method: 'POST', url: '/oauth/device/code', ...form({ client_id: 'tv' }) })).json();
    lines.length = 0;
    await poll(device.device_code);
    await t.app.inject({ method: 'GET', url: `/activate?user_code=${device.user_code}` });
    const access = lines.map((line) => JSON.parse(line) as Record<string, unknown>).filter((line) => line.msg === 'request');
    expect(access).toHaveLength(2);
    expect(lines.filter((line) => /incoming request|request completed|request refused/.test(line))).toEqual([]);
    expect(access[0]).toMatchObject({ method: 'POST', url: '/oauth/token', status: 400, ip: '127.0.0.1', error: 'authorization_pending' });
    expect(typeof access[0]?.ms).toBe('number');
    expect(access[1]).toMatchObject({ method: 'GET', url: '/activate', status: 200 });
    expect(lines.join('\n')).not.toContain(device.user_code);
    expect(lines.join('\n')).not.toContain(device.device_code);
  });
});
