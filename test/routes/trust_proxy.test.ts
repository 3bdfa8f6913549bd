/**
 * The client address behind a reverse proxy: X-Forwarded-For counts only when LATCHKEY_TRUST_PROXY
 * says the peer is a proxy; otherwise the header is ignored (anyone can send it).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { addClient, form, testApp, type TestApp } from '../helpers/app.js';
import { Browser, injectTransport, inputValue } from '../helpers/browser.js';

let t: TestApp;
afterEach(() => t.close());

async function requesterIpOf(forwardedFor: string): Promise<string> {
  const f = form({ client_id: 'tv' });
  const res = await t.app.inject({ method: 'POST', url: '/oauth/device/code', payload: f.payload, headers: { ...f.headers, 'x-forwarded-for': forwardedFor } });
  expect(res.statusCode).toBe(200);
  const rows = t.store.db.prepare('SELECT requester_ip FROM device_grants ORDER BY created_at DESC, rowid DESC LIMIT 1').all() as { requester_ip: string }[];
  return rows[0]!.requester_ip;
}

describe('LATCHKEY_TRUST_PROXY', () => {
  it('unset: X-Forwarded-For is ignored', async () => {
    t = await testApp();
    await addClient(t.store, 'tv');
    expect(await requesterIpOf('203.0.113.7')).toBe('127.0.0.1');
  });

  it('one hop: the address the proxy saw is the client', async () => {
    t = await testApp({ LATCHKEY_TRUST_PROXY: '1' });
    await addClient(t.store, 'tv');
    expect(await requesterIpOf('198.51.100.1, 203.0.113.7')).toBe('203.0.113.7');
  });

  it('a trusted proxy address: forwarded addresses count, per person, for the /activate limit', async () => {
    t = await testApp({ LATCHKEY_TRUST_PROXY: '127.0.0.1' });
    await addClient(t.store, 'tv');
    const attempt = async (browser: Browser, ip: string) => {
      const entry = await browser.get('/activate');
      const res = await t.app.inject({
        method: 'POST',
        url: '/activate',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          'x-forwarded-for': ip,
          cookie: [...browser.cookies].map(([k, v]) => `${k}=${v}`).join('; '),
        },
        payload: new URLSearchParams({ csrf_token: inputValue(entry.body, 'csrf_token')!, user_code: 'BCDF-GHJK' }).toString(),
      });
      return res.statusCode;
    };
    const mallory = new Browser(injectTransport(t.app));
    for (let i = 0; i < 10; i++) expect(await attempt(mallory, '203.0.113.66')).toBe(400);
    expect(await attempt(mallory, '203.0.113.66')).toBe(429);
    // Someone else behind the same proxy is not locked out.
    expect(await attempt(new Browser(injectTransport(t.app)), '198.51.100.5')).toBe(400);
  });
});
