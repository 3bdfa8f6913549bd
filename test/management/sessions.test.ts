/**
 * /api/v1/sessions through app.inject: live sign-ins (browser sessions and refresh-token families)
 * as `sessions list` shows them, filtered by person and client, read one, and ended as `sessions
 * revoke` ends them; every answer checked against the served document.
 */
import { createServer } from 'node:http';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { epochSeconds } from '../../src/clock.js';
import { addClient, addUser, pkcePair, testApp, type TestApp } from '../helpers/app.js';
import { Browser, injectTransport, signIn } from '../helpers/browser.js';
import { waitFor } from '../helpers/wait.js';
import { managementHarness } from '../helpers/management.js';
import { refreshToken, session } from '../helpers/records.js';

let t: TestApp;
let api: Awaited<ReturnType<typeof managementHarness>>;
let now: number;

interface Row {
  id: string;
  kind: string;
  user: string;
  client_id: string | null;
  device: string;
  from: string | null;
  software: string | null;
}

beforeEach(async () => {
  t = await testApp();
  api = await managementHarness(t);
  now = Math.floor(epochSeconds(t.clock));
  const erin = await addUser(t.store, 'erin');
  const finn = await addUser(t.store, 'finn');
  await addClient(t.store, 'cli');
  await addClient(t.store, 'tv');
  await t.store.createSession(session({ idHash: 'erin-browser', id: 'sid-erin', userId: erin.id, authTime: now, createdAt: now, expiresAt: now + 3600 }));
  await t.store.createRefreshToken(
    refreshToken({
      id: 'rt-erin',
      tokenHash: 'rt-erin',
      familyId: 'fam-erin-cli',
      clientId: 'cli',
      userId: erin.id,
      createdAt: now,
      authTime: now,
      expiresAt: now + 86400,
      familyExpiresAt: now + 86400 * 30,
    }),
  );
  await t.store.createRefreshToken(
    refreshToken({
      id: 'rt-finn',
      tokenHash: 'rt-finn',
      familyId: 'fam-finn-tv',
      clientId: 'tv',
      userId: finn.id,
      createdAt: now,
      authTime: now,
      expiresAt: now + 86400,
      familyExpiresAt: now + 86400 * 30,
    }),
  );
});
afterEach(async () => {
  expect(api.answers.checked).toBeGreaterThan(0);
  await t.close();
});

describe('management API: sessions', () => {
  it('lists every live sign-in with its person, client, device and address, filtered by ?user= and ?client=', async () => {
    const all = await api.call('GET', '/api/v1/sessions');
    expect(all.statusCode, all.body).toBe(200);
    const rows = all.json<{ data: Row[] }>().data;
    expect(rows.map((r) => r.id).sort()).toEqual(['fam-erin-cli', 'fam-finn-tv', 'sid-erin']);
    expect(rows.find((r) => r.id === 'sid-erin')).toMatchObject({
      kind: 'browser',
      user: 'erin',
      client_id: null,
      device: 'Firefox on Linux',
      from: '198.51.100.7',
    });
    expect(rows.find((r) => r.id === 'fam-finn-tv')).toMatchObject({
      kind: 'app',
      user: 'finn',
      client_id: 'tv',
      from: '203.0.113.9',
      software: 'latchkey-cli/0.1',
    });
    const erins = (await api.call('GET', '/api/v1/sessions?user=erin')).json<{ data: Row[] }>().data;
    expect(erins.map((r) => r.id).sort()).toEqual(['fam-erin-cli', 'sid-erin']);
    const tv = (await api.call('GET', '/api/v1/sessions?client=tv')).json<{ data: Row[] }>().data;
    expect(tv.map((r) => r.id)).toEqual(['fam-finn-tv']);
    const page1 = (await api.call('GET', '/api/v1/sessions?limit=2')).json<{ data: Row[]; next: string }>();
    expect(page1.data).toHaveLength(2);
    const page2 = (await api.call('GET', `/api/v1/sessions?limit=2&cursor=${page1.next}`)).json<{ data: Row[]; next: string | null }>();
    expect([...page1.data, ...page2.data].map((r) => r.id)).toEqual(rows.map((r) => r.id));
    expect(page2.next).toBeNull();
  });

  it('ends a browser session and an app sign-in: gone from the list, audited as session.revoked with the caller', async () => {
    const one = await api.call('GET', '/api/v1/sessions/sid-erin');
    expect(one.statusCode).toBe(200);
    expect(one.headers.etag).toMatch(/^W\//);
    expect((await api.call('DELETE', '/api/v1/sessions/sid-erin', { headers: { 'if-match': one.headers.etag as string } })).statusCode).toBe(204);
    expect((await api.call('DELETE', '/api/v1/sessions/fam-finn-tv')).statusCode).toBe(204);
    expect((await t.store.findRefreshToken('rt-finn'))?.revokedAt).toBeDefined();
    const left = (await api.call('GET', '/api/v1/sessions')).json<{ data: Row[] }>().data;
    expect(left.map((r) => r.id)).toEqual(['fam-erin-cli']);
    expect((await api.call('GET', '/api/v1/sessions/sid-erin')).statusCode).toBe(404);
    await t.app.services.auditTrail.flush();
    const events = await t.store.listAuditEvents({ event: 'session.revoked', limit: 10 });
    expect(events.map((e) => e.details.kind).sort()).toEqual(['app', 'browser']);
    expect(events.every((e) => e.actor === 'robot')).toBe(true);
  });

  it('refuses: an unknown sign-in 404, an unknown person or client in the filter 404, a stale If-Match 412, a bad query 400, without the scope 403', async () => {
    expect((await api.call('DELETE', '/api/v1/sessions/nope')).statusCode).toBe(404);
    expect((await api.call('GET', '/api/v1/sessions?user=nobody')).statusCode).toBe(404);
    expect((await api.call('GET', '/api/v1/sessions?client=nothing')).statusCode).toBe(404);
    const bad = await api.call('GET', '/api/v1/sessions?limit=0');
    expect(bad.statusCode).toBe(400);
    expect(bad.json<{ errors: Array<{ path: string }> }>().errors[0]?.path).toBe('/limit');
    const stale = await api.call('DELETE', '/api/v1/sessions/sid-erin', { headers: { 'if-match': 'W/"stale"' } });
    expect(stale.statusCode).toBe(412);
    expect((await t.store.listSessions(undefined, now)).map((s) => s.id)).toContain('sid-erin');
    const reader = await api.tokenFor('reader', ['read:sessions']);
    expect((await api.call('DELETE', '/api/v1/sessions/sid-erin', { as: reader })).statusCode).toBe(403);
    const other = await api.tokenFor('other', ['read:keys']);
    expect((await api.call('GET', '/api/v1/sessions', { as: other })).statusCode).toBe(403);
  });

  it('ending a browser session tells the clients registered for Back-Channel Logout, as the console does', async () => {
    const received: string[] = [];
    const receiver = createServer((req, res) => {
      let body = '';
      req.on('data', (d: Buffer) => (body += d.toString()));
      req.on('end', () => {
        received.push(body);
        res.writeHead(200).end();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    try {
      await addUser(t.store, 'gail', 'gail-password');
      await addClient(t.store, 'web', {
        redirectUris: ['https://app.example.com/cb'],
        grantTypes: ['authorization_code'],
        firstParty: true,
        backchannelLogoutUri: `http://127.0.0.1:${(receiver.address() as { port: number }).port}/backchannel`,
      });
      // Gail signs in to the client in a browser: the session the client is told about.
      const browser = new Browser(injectTransport(t.app));
      const { challenge } = pkcePair();
      const query = new URLSearchParams({
        response_type: 'code',
        client_id: 'web',
        redirect_uri: 'https://app.example.com/cb',
        scope: 'openid',
        state: 's',
        code_challenge: challenge,
        code_challenge_method: 'S256',
      });
      let res = await browser.get(`/authorize?${query}`);
      if (res.location?.startsWith('/login')) res = await signIn(browser, await browser.get(res.location), 'gail', 'gail-password');
      while (res.location && !res.location.startsWith('https://')) res = await browser.get(res.location);
      expect(new URL(res.location!).searchParams.get('code')).toBeTruthy();
      const rows = (await api.call('GET', '/api/v1/sessions?user=gail')).json<{ data: Row[] }>().data;
      const sessionId = rows.find((r) => r.kind === 'browser')!.id;
      expect((await api.call('DELETE', `/api/v1/sessions/${sessionId}`)).statusCode).toBe(204);
      await waitFor(() => received.length > 0, { what: 'a back-channel logout request' });
      expect(received[0]).toContain('logout_token=');
    } finally {
      await new Promise((resolve) => receiver.close(resolve));
    }
  });
});
