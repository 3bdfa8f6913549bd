/**
 * If-Match (RFC 9110 §13.1.1): a value that is not `*` or a list of entity tags is a 400 problem,
 * never taken for a changed resource (412); POST actions on a resource honour it as PATCH and
 * DELETE do; and the OpenAPI document offers the If-Match parameter on every operation that
 * honours it, and on no creation or read.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ifMatchTags } from '../../src/management/etag.js';
import { addClient, testApp, type TestApp } from '../helpers/app.js';
import { managementHarness } from '../helpers/management.js';

let t: TestApp;
beforeEach(async () => {
  t = await testApp();
  await addClient(t.store, 'web');
  await addClient(t.store, 'svc', { confidential: true, grantTypes: ['client_credentials'] });
});
afterEach(async () => {
  await t.close();
});

describe('If-Match syntax', () => {
  it('parses * and lists of strong and weak tags, a comma inside a tag included; refuses anything else', () => {
    expect(ifMatchTags('*')).toEqual(['*']);
    expect(ifMatchTags('W/"abc"')).toEqual(['W/"abc"']);
    expect(ifMatchTags('W/"a", "b"')).toEqual(['W/"a"', '"b"']);
    expect(ifMatchTags('"a,b"')).toEqual(['"a,b"']);
    expect(ifMatchTags(' , W/"a" ,, ')).toEqual(['W/"a"']);
    for (const bad of ['foo', 'W/abc', '"a" x', '"a""b"', '*, "a"', '', ',', '"a', 'w/"a"']) expect(ifMatchTags(bad), bad).toBeUndefined();
  });

  it('PATCH and DELETE with a malformed If-Match are a 400 problem, not a 412; nothing changes', async () => {
    const { call } = await managementHarness(t);
    for (const ifMatch of ['foo', 'W/abc', '"unterminated']) {
      const patched = await call('PATCH', '/api/v1/clients/web', { body: { name: 'Never' }, headers: { 'if-match': ifMatch } });
      expect(patched.statusCode, ifMatch).toBe(400);
      expect(patched.json()).toMatchObject({ status: 400, type: '/docs/management-api#invalid-if-match' });
      expect((await call('DELETE', '/api/v1/clients/web', { headers: { 'if-match': ifMatch } })).statusCode).toBe(400);
    }
    const after = await call('GET', '/api/v1/clients/web');
    expect(after.json<{ name: string }>().name).not.toBe('Never');
    // A well-formed list still works: a stale tag beside the current one.
    const listed = await call('PATCH', '/api/v1/clients/web', {
      body: { name: 'Listed' },
      headers: { 'if-match': `W/"stale", ${after.headers.etag as string}` },
    });
    expect(listed.statusCode).toBe(200);
  });
});

describe('POST actions honour If-Match', () => {
  it('rotate-secret with a stale ETag is refused 412 and keeps the secret; with the current one it rotates', async () => {
    const { call } = await managementHarness(t);
    const etag = (await call('GET', '/api/v1/clients/svc')).headers.etag as string;
    expect((await call('PATCH', '/api/v1/clients/svc', { body: { name: 'Renamed' } })).statusCode).toBe(200);
    const before = await t.store.findClient('svc');
    const stale = await call('POST', '/api/v1/clients/svc/rotate-secret', { headers: { 'if-match': etag } });
    expect(stale.statusCode).toBe(412);
    expect((await t.store.findClient('svc'))?.secretHash).toBe(before?.secretHash);
    const current = (await call('GET', '/api/v1/clients/svc')).headers.etag as string;
    const rotated = await call('POST', '/api/v1/clients/svc/rotate-secret', { headers: { 'if-match': current } });
    expect(rotated.statusCode).toBe(200);
    expect((await t.store.findClient('svc'))?.secretHash).not.toBe(before?.secretHash);
    expect((await call('POST', '/api/v1/clients/svc/rotate-secret', { headers: { 'if-match': 'nonsense' } })).statusCode).toBe(400);
  });
});

describe('the OpenAPI document', () => {
  it('offers If-Match (and 412) on every operation that changes a resource with an ETag, and on no read or creation', async () => {
    const doc = (await t.app.inject({ method: 'GET', url: '/api/v1/openapi.json' })).json<{
      paths: Record<string, Record<string, { operationId: string; parameters: { name: string; in: string }[]; responses: Record<string, unknown> }>>;
    }>();
    const withIfMatch: string[] = [];
    for (const item of Object.values(doc.paths))
      for (const operation of Object.values(item))
        if (operation.parameters.some((p) => p.in === 'header' && p.name === 'If-Match')) {
          withIfMatch.push(operation.operationId);
          expect(operation.responses['412'], operation.operationId).toBeDefined();
        }
    expect(withIfMatch).toEqual(expect.arrayContaining(['updateClient', 'deleteClient', 'rotateClientSecret', 'updateApi', 'deleteApi']));
    for (const operationId of ['createClient', 'getClient', 'listClients', 'createApi', 'getApi']) expect(withIfMatch).not.toContain(operationId);
  });
});
