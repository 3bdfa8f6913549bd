/**
 * Every authorised call of /api/v1 leaves one audit event naming who made it, from where, and the
 * operation (operationId, method, path, status): a read as `management.read`, a change under its
 * own event (not doubled), a refusal as `management.refused` with its status. A call whose token
 * names no live caller writes nothing. No token, secret or request body is in any event.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { AuditEventRecord } from '../../src/store/store.js';
import { addClient, testApp, type TestApp } from '../helpers/app.js';
import { managementHarness } from '../helpers/management.js';

let t: TestApp;
let logLines: string[];

beforeEach(async () => {
  logLines = [];
  t = await testApp({ LATCHKEY_RATE_LIMIT_MANAGEMENT: '40/60' }, { logLines });
  await addClient(t.store, 'web');
});
afterEach(async () => {
  await t.close();
});

/** The stored events of the API's calls, oldest first. */
async function callEvents(): Promise<AuditEventRecord[]> {
  await t.app.services.auditTrail.flush();
  const events = await t.store.listAuditEvents({ limit: 500 });
  return events.filter((e) => e.details.operationId !== undefined).reverse();
}

describe('every call of the management API is audited', () => {
  it('a read leaves one management.read event with the caller, its address and the operation', async () => {
    const { call } = await managementHarness(t);
    expect((await call('GET', '/api/v1/clients?limit=5')).statusCode).toBe(200);
    expect((await call('GET', '/api/v1/clients/web')).statusCode).toBe(200);
    const events = await callEvents();
    expect(events).toHaveLength(2);
    expect(events[0]).toMatchObject({
      event: 'management.read',
      actor: 'robot',
      ip: '127.0.0.1',
      details: { via: 'api', callerClientId: 'robot', operationId: 'listClients', method: 'GET', path: '/api/v1/clients', status: 200 },
    });
    expect(events[1]).toMatchObject({ event: 'management.read', details: { operationId: 'getClient', path: '/api/v1/clients/web', status: 200 } });
  });

  it('a change keeps its own event, once, now with the operation; no read event is added', async () => {
    const { call } = await managementHarness(t);
    const res = await call('PATCH', '/api/v1/clients/web', { body: { name: 'Shop front' } });
    expect(res.statusCode).toBe(200);
    const events = await callEvents();
    expect(events.map((e) => e.event)).toEqual(['client.updated']);
    expect(events[0]).toMatchObject({
      actor: 'robot',
      clientId: 'web',
      details: { changed: ['name'], operationId: 'updateClient', method: 'PATCH', path: '/api/v1/clients/web', callerClientId: 'robot' },
    });
  });

  it('refusals are audited once each with their status: 400, 403 insufficient_scope, 404, 409, 412, 429', async () => {
    const { call, tokenFor } = await managementHarness(t);
    const reader = await tokenFor('reader', ['read:clients']);
    const statuses = [
      (await call('PATCH', '/api/v1/clients/web', { body: { redirect_uris: 'not a list' } })).statusCode,
      (await call('PATCH', '/api/v1/clients/web', { body: { name: 'Nope' }, as: reader })).statusCode,
      (await call('GET', '/api/v1/clients/nobody')).statusCode,
      (await call('DELETE', '/api/v1/clients/latchkey-cli')).statusCode,
      (await call('PATCH', '/api/v1/clients/web', { body: { name: 'Stale' }, headers: { 'if-match': 'W/"stale"' } })).statusCode,
    ];
    expect(statuses).toEqual([400, 403, 404, 409, 412]);
    const events = await callEvents();
    expect(events.map((e) => [e.event, e.actor, e.details.operationId, e.details.status])).toEqual([
      ['management.refused', 'robot', 'updateClient', 400],
      ['management.refused', 'reader', 'updateClient', 403],
      ['management.refused', 'robot', 'getClient', 404],
      ['management.refused', 'robot', 'deleteClient', 409],
      ['management.refused', 'robot', 'updateClient', 412],
    ]);

    // Past the caller's limit (40 calls a minute): each 429 is audited under who made it.
    let answered = 0;
    let status = 200;
    while (status !== 429 && answered < 60) {
      status = (await call('GET', '/api/v1/clients/web')).statusCode;
      answered++;
    }
    expect(status).toBe(429);
    const limited = (await callEvents()).filter((e) => e.details.status === 429);
    expect(limited).toHaveLength(1);
    expect(limited[0]).toMatchObject({ event: 'management.refused', actor: 'robot', details: { operationId: 'getClient', status: 429 } });
  });

  it('a call with no token, or a token naming no live caller, writes nothing to the audit log', async () => {
    await managementHarness(t);
    for (const authorization of [undefined, 'Bearer not-a-token']) {
      const res = await t.app.inject({ method: 'GET', url: '/api/v1/clients', headers: authorization === undefined ? {} : { authorization } });
      expect(res.statusCode).toBe(401);
    }
    expect(await callEvents()).toEqual([]);
  });

  it('no token, secret or request body reaches an event or a log line', async () => {
    const { call, token } = await managementHarness(t);
    const created = await call('POST', '/api/v1/clients', {
      body: { client_id: 'svc', name: 'Body-only name', confidential: true, grant_types: ['client_credentials'] },
    });
    expect(created.statusCode).toBe(201);
    const secret = created.json<{ client_secret: string }>().client_secret;
    expect((await call('GET', '/api/v1/clients/svc')).statusCode).toBe(200);
    expect((await call('PATCH', '/api/v1/clients/svc', { body: { name: 'Body-only again' }, headers: { 'if-match': 'W/"stale"' } })).statusCode).toBe(412);
    const stored = JSON.stringify(await callEvents());
    expect(stored).toContain('createClient');
    for (const text of [token, secret, 'Body-only']) {
      expect(stored).not.toContain(text);
      expect(logLines.join('\n')).not.toContain(text);
    }
  });
});
