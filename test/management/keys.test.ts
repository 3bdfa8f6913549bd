/**
 * /api/v1/keys through app.inject: the signing keys as `keys list` shows them (never private
 * material), one key, and `POST /keys/rotate`; every answer checked against the served document.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { testApp, type TestApp } from '../helpers/app.js';
import { managementHarness } from '../helpers/management.js';

let t: TestApp;
let api: Awaited<ReturnType<typeof managementHarness>>;

beforeEach(async () => {
  t = await testApp();
  api = await managementHarness(t);
});
afterEach(async () => {
  expect(api.answers.checked).toBeGreaterThan(0);
  await t.close();
});

describe('management API: keys', () => {
  it('lists the signing keys with kid, alg, status and dates, and never their private material', async () => {
    const res = await api.call('GET', '/api/v1/keys');
    expect(res.statusCode, res.body).toBe(200);
    const stored = await t.store.listSigningKeys();
    const { data, next } = res.json<{ data: Array<{ kid: string; status: string; created_at: string }>; next: string | null }>();
    expect(next).toBeNull();
    expect(data.map((k) => k.kid).sort()).toEqual(stored.map((k) => k.kid).sort());
    expect(data.every((k) => k.status === 'active' && /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/.test(k.created_at))).toBe(true);
    for (const key of stored) expect(res.body).not.toContain(key.privateKeyPem.split('\n')[1]);
    expect(res.body).not.toMatch(/PRIVATE KEY|"d":/);
  });

  it('rotates: new active keys answered access-token key first, the old ones retired and still published, audited as key.rotated', async () => {
    const before = await t.store.listSigningKeys();
    t.clock.advance(60);
    const rotated = await api.call('POST', '/api/v1/keys/rotate');
    expect(rotated.statusCode, rotated.body).toBe(200);
    const { keys } = rotated.json<{ keys: Array<{ kid: string; alg: string; status: string }> }>();
    expect(keys.length).toBeGreaterThan(0);
    expect(keys.every((k) => k.status === 'active')).toBe(true);
    expect(keys.map((k) => k.kid)).not.toContain(before[0]!.kid);
    const old = await api.call('GET', `/api/v1/keys/${before[0]!.kid}`);
    expect(old.statusCode).toBe(200);
    expect(old.json()).toMatchObject({ kid: before[0]!.kid, status: 'retired' });
    expect(old.json<{ published_until: string | null }>().published_until).not.toBeNull();
    expect(old.headers.etag).toMatch(/^W\/"/);
    // The newest keys come first in the list.
    const listed = (await api.call('GET', '/api/v1/keys')).json<{ data: Array<{ kid: string }> }>().data;
    expect(
      listed
        .slice(0, keys.length)
        .map((k) => k.kid)
        .sort(),
    ).toEqual(keys.map((k) => k.kid).sort());
    await t.app.services.auditTrail.flush();
    const events = await t.store.listAuditEvents({ event: 'key.rotated', limit: 10 });
    expect(events.map((e) => e.details.kid).sort()).toEqual(keys.map((k) => k.kid).sort());
    expect(events[0]?.actor).toBe('robot');
  });

  it('pages through keys with a cursor, newest first, neither skipping nor repeating one', async () => {
    for (let i = 0; i < 3; i++) {
      t.clock.advance(60);
      expect((await api.call('POST', '/api/v1/keys/rotate')).statusCode).toBe(200);
    }
    const all = (await api.call('GET', '/api/v1/keys')).json<{ data: Array<{ kid: string }> }>().data.map((k) => k.kid);
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const res = await api.call('GET', `/api/v1/keys?limit=1${cursor === null ? '' : `&cursor=${cursor}`}`);
      const body: { data: Array<{ kid: string }>; next: string | null } = res.json();
      seen.push(...body.data.map((k) => k.kid));
      cursor = body.next;
    } while (cursor !== null);
    expect(seen).toEqual(all);
    expect((await api.call('GET', '/api/v1/keys?cursor=%21%21')).statusCode).toBe(400);
  });

  it('refuses: an unknown kid 404, a body on rotate 400, rotate without write:keys 403, a list without read:keys 403', async () => {
    expect((await api.call('GET', '/api/v1/keys/nope')).statusCode).toBe(404);
    expect((await api.call('POST', '/api/v1/keys/rotate', { body: { alg: 'RS256' } })).statusCode).toBe(400);
    const reader = await api.tokenFor('reader', ['read:keys']);
    const refused = await api.call('POST', '/api/v1/keys/rotate', { as: reader });
    expect(refused.statusCode).toBe(403);
    expect(refused.headers['www-authenticate']).toContain('write:keys');
    const none = await api.tokenFor('nobody', ['read:users']);
    expect((await api.call('GET', '/api/v1/keys', { as: none })).statusCode).toBe(403);
  });
});
