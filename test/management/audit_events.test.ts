/**
 * /api/v1/audit-events through app.inject: the audit log read-only, newest first, with the
 * console's filters, a cursor that stays put while new events arrive, and one event by id; every
 * answer checked against the served document.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { addUser, testApp, type TestApp } from '../helpers/app.js';
import { managementHarness } from '../helpers/management.js';

let t: TestApp;
let api: Awaited<ReturnType<typeof managementHarness>>;
let aliceId: string;
const base = Date.parse('2026-11-20T10:00:00Z');

interface Event {
  id: number;
  time: string;
  event: string;
  actor: string | null;
  user_id: string | null;
  username: string | null;
  client_id: string | null;
}

function event(at: number, name: string, extra: { actor?: string; userId?: string; clientId?: string } = {}) {
  return { at, event: name, actor: extra.actor, userId: extra.userId, clientId: extra.clientId, ip: '192.0.2.1', details: { n: at } };
}

beforeEach(async () => {
  t = await testApp();
  api = await managementHarness(t);
  aliceId = (await addUser(t.store, 'alice')).id;
  await t.store.appendAuditEvents([
    event(base, 'user.created', { actor: 'cli', userId: aliceId }),
    event(base + 3600_000, 'signin.succeeded', { userId: aliceId, clientId: 'web' }),
    event(base + 7200_000, 'client.created', { actor: 'erin', clientId: 'web' }),
    event(base + 86400_000, 'user.disabled', { actor: 'erin', userId: aliceId }),
  ]);
});
afterEach(async () => {
  expect(api.answers.checked).toBeGreaterThan(0);
  await t.close();
});

async function list(query: string): Promise<{ data: Event[]; next: string | null }> {
  const res = await api.call('GET', `/api/v1/audit-events${query}`);
  expect(res.statusCode, res.body).toBe(200);
  return res.json();
}

describe('management API: audit-events', () => {
  it('lists events newest first, filtered by event (name or prefix), actor, user (username), client, since and until', async () => {
    const ours = (await list('?since=2026-11-20T00:00:00Z&until=2026-11-22T00:00:00Z')).data;
    expect(ours.map((e) => e.event)).toEqual(['user.disabled', 'client.created', 'signin.succeeded', 'user.created']);
    expect(ours[0]).toMatchObject({ time: '2026-11-21T10:00:00Z', actor: 'erin', user_id: aliceId, username: 'alice' });
    expect((await list('?event=user.')).data.map((e) => e.event)).toEqual(['user.disabled', 'user.created']);
    expect((await list('?event=client.created')).data.map((e) => e.client_id)).toEqual(['web']);
    expect((await list('?actor=erin')).data.map((e) => e.event)).toEqual(['user.disabled', 'client.created']);
    expect((await list('?user=alice&since=2026-11-20T11:30:00%2B01:00')).data.map((e) => e.event)).toEqual(['user.disabled', 'signin.succeeded']);
    expect((await list('?client=web&until=2026-11-20T12:00:00Z')).data.map((e) => e.event)).toEqual(['signin.succeeded']);
  });

  it('pages with a cursor that neither skips nor repeats an event while new ones arrive, and reads one event by id', async () => {
    const first = await list('?limit=2&until=2026-11-22T00:00:00Z');
    expect(first.data.map((e) => e.event)).toEqual(['user.disabled', 'client.created']);
    // A new event arrives between pages: the next page still follows on from the last one read.
    await t.store.appendAuditEvents([event(base + 2 * 86400_000, 'key.rotated', { actor: 'cli' })]);
    const second = await list(`?limit=2&until=2026-11-22T00:00:00Z&cursor=${first.next}`);
    expect(second.data.map((e) => e.event)).toEqual(['signin.succeeded', 'user.created']);
    expect(second.next).toBeNull();
    const one = await api.call('GET', `/api/v1/audit-events/${first.data[1]!.id}`);
    expect(one.statusCode).toBe(200);
    expect(one.json()).toMatchObject({ event: 'client.created', details: { n: base + 7200_000 } });
    expect(one.headers.etag).toMatch(/^W\//);
  });

  it("the API's own changes appear, with the caller as actor", async () => {
    expect((await api.call('POST', '/api/v1/keys/rotate')).statusCode).toBe(200);
    const rotated = (await list('?event=key.rotated&actor=robot')).data;
    expect(rotated.length).toBeGreaterThan(0);
  });

  it('refuses: bad times and event names 400 naming the filter, a forged cursor 400, an unknown id 404, no write operation, without read:audit-events 403', async () => {
    const badTime = await api.call('GET', '/api/v1/audit-events?since=yesterday');
    expect(badTime.statusCode).toBe(400);
    expect(badTime.json<{ errors: Array<{ path: string }> }>().errors[0]?.path).toBe('/since');
    const backwards = await api.call('GET', '/api/v1/audit-events?since=2026-11-21&until=2026-11-20');
    expect(backwards.json<{ errors: Array<{ path: string }> }>().errors[0]?.path).toBe('/until');
    const badEvent = await api.call('GET', '/api/v1/audit-events?event=DROP%20TABLE');
    expect(badEvent.json<{ errors: Array<{ path: string }> }>().errors[0]?.path).toBe('/event');
    expect((await api.call('GET', '/api/v1/audit-events?cursor=LTE')).statusCode).toBe(400);
    expect((await api.call('GET', '/api/v1/audit-events/999999')).statusCode).toBe(404);
    expect((await api.call('GET', '/api/v1/audit-events/abc')).statusCode).toBe(400);
    // Events are written by the server only.
    const posted = await t.app.inject({
      method: 'POST',
      url: '/api/v1/audit-events',
      headers: { authorization: `Bearer ${api.token}`, 'content-type': 'application/json' },
      payload: '{}',
    });
    expect(posted.statusCode).toBe(404);
    const writer = await api.tokenFor('writer', ['write:audit-events']);
    expect((await api.call('GET', '/api/v1/audit-events', { as: writer })).statusCode).toBe(403);
  });
});
