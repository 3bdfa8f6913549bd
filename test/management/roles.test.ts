/**
 * /api/v1/roles through app.inject: roles added, read, listed, changed and removed with the rules
 * of the `roles *` commands, the built-in `admin` role kept whole, managed roles refused, and the
 * people holding a role paged with how they hold it; every answer checked against the served
 * OpenAPI document (helpers/management.ts).
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { addApi, addUser, testApp, type TestApp } from '../helpers/app.js';
import { managementHarness } from '../helpers/management.js';

let t: TestApp;
let h: Awaited<ReturnType<typeof managementHarness>>;
const reports = 'https://reports.example.com';

beforeEach(async () => {
  t = await testApp();
  h = await managementHarness(t);
  await addApi(t.store, reports, 'Reports', [], ['read:reports', 'write:reports']);
});
afterEach(async () => {
  // Each test's answers were all validated; a test that checked none would prove nothing.
  expect(h.answers.checked).toBeGreaterThan(0);
  await t.close();
});

async function events(event: string) {
  await t.app.services.auditTrail.flush();
  return t.store.listAuditEvents({ event, limit: 100 });
}

describe('management API: roles', () => {
  it('adds a role with permissions and groups, reads it with its ETag, lists it, changes it and removes it', async () => {
    const created = await h.call('POST', '/api/v1/roles', {
      body: {
        name: 'analyst',
        description: 'Reads reports',
        permissions: [
          { api: reports, scope: 'read:reports' },
          { api: reports, scope: 'read:reports' },
        ],
        groups: ['data', 'bi'],
      },
    });
    expect(created.statusCode, created.body).toBe(201);
    expect(created.json()).toMatchObject({
      name: 'analyst',
      description: 'Reads reports',
      permissions: [{ api: reports, scope: 'read:reports' }],
      groups: ['bi', 'data'],
      built_in: false,
      members: 0,
      managed_by: null,
    });
    expect(created.headers.location).toBe('/api/v1/roles/analyst');
    expect((await h.call('POST', '/api/v1/roles', { body: { name: 'analyst' } })).statusCode).toBe(409);

    const read = await h.call('GET', '/api/v1/roles/analyst');
    expect(read.headers.etag).toBe(created.headers.etag);
    const list = await h.call('GET', '/api/v1/roles');
    expect(list.json().data.map((r: { name: string }) => r.name)).toEqual(['admin', 'analyst']);

    const changed = await h.call('PATCH', '/api/v1/roles/analyst', {
      body: { description: null, permissions: [{ api: reports, scope: 'write:reports' }], groups: [] },
      headers: { 'if-match': read.headers.etag as string },
    });
    expect(changed.statusCode, changed.body).toBe(200);
    expect(changed.json()).toMatchObject({ description: null, permissions: [{ api: reports, scope: 'write:reports' }], groups: [] });
    const stale = await h.call('PATCH', '/api/v1/roles/analyst', { body: { groups: ['x'] }, headers: { 'if-match': read.headers.etag as string } });
    expect(stale.statusCode).toBe(412);
    expect((await events('role.updated'))[0]?.details).toMatchObject({ role: 'analyst', permissions: [`${reports}:write:reports`], via: 'api' });

    expect((await h.call('DELETE', '/api/v1/roles/analyst')).statusCode).toBe(204);
    expect((await h.call('GET', '/api/v1/roles/analyst')).statusCode).toBe(404);
    expect((await h.call('DELETE', '/api/v1/roles/analyst')).statusCode).toBe(404);
  });

  it('bad input is a 400 naming each field: a bad name, an unknown API, a scope the API does not declare', async () => {
    const res = await h.call('POST', '/api/v1/roles', {
      body: {
        name: '-bad name',
        permissions: [
          { api: 'https://nowhere.example', scope: 'x' },
          { api: reports, scope: 'delete:reports' },
        ],
      },
    });
    expect(res.statusCode).toBe(400);
    expect(res.json().errors.map((e: { path: string }) => e.path)).toEqual(['/name']);
    const perms = await h.call('POST', '/api/v1/roles', {
      body: {
        name: 'ok',
        permissions: [
          { api: 'https://nowhere.example', scope: 'x' },
          { api: reports, scope: 'delete:reports' },
        ],
      },
    });
    expect(perms.json().errors).toEqual([
      { path: '/permissions/0/api', message: 'no API "https://nowhere.example"' },
      { path: '/permissions/1/scope', message: `API ${reports} declares no scope "delete:reports"` },
    ]);
    expect(await t.store.findRole('ok')).toBeUndefined();
    expect((await h.call('PATCH', '/api/v1/roles/admin', { body: { colour: 'red' } })).statusCode).toBe(400);
  });

  it('the admin role cannot be removed nor lose a scope of the management API (409 built-in); other permissions may be added', async () => {
    const removed = await h.call('DELETE', '/api/v1/roles/admin');
    expect(removed.statusCode).toBe(409);
    expect(removed.json().type).toMatch(/#built-in$/);
    const admin = (await h.call('GET', '/api/v1/roles/admin')).json<{ permissions: { api: string; scope: string }[] }>();
    const narrowed = await h.call('PATCH', '/api/v1/roles/admin', { body: { permissions: admin.permissions.filter((p) => p.scope !== 'write:users') } });
    expect(narrowed.statusCode).toBe(409);
    expect(narrowed.json().detail).toContain('write:users');
    expect((await t.store.findRole('admin'))?.permissions).toEqual(admin.permissions);
    const widened = await h.call('PATCH', '/api/v1/roles/admin', { body: { permissions: [...admin.permissions, { api: reports, scope: 'read:reports' }] } });
    expect(widened.statusCode, widened.body).toBe(200);
    expect(widened.json().permissions).toContainEqual({ api: reports, scope: 'read:reports' });
  });

  it('a role managed by a configuration file is refused with 409 naming the file', async () => {
    await h.call('POST', '/api/v1/roles', { body: { name: 'ops' } });
    await t.store.setManagedBy('role', 'ops', '/etc/latchkey/config.yaml');
    for (const [method, body] of [
      ['PATCH', { groups: ['x'] }],
      ['DELETE', undefined],
    ] as const) {
      const res = await h.call(method, '/api/v1/roles/ops', body === undefined ? {} : { body });
      expect(res.statusCode).toBe(409);
      expect(res.json().detail).toContain('/etc/latchkey/config.yaml');
    }
    expect((await h.call('GET', '/api/v1/roles/ops')).json().managed_by).toBe('/etc/latchkey/config.yaml');
  });

  it('members: a page of the people holding a role, by hand or through their groups', async () => {
    await h.call('POST', '/api/v1/roles', { body: { name: 'staff', groups: ['employees'] } });
    const alice = await addUser(t.store, 'alice', undefined, { roles: ['staff'] });
    const bob = await addUser(t.store, 'bob', undefined, { groups: ['employees'], source: 'sso' });
    await t.store.setGroupRoles(bob.id, ['staff'], 1_800_000_000);
    await addUser(t.store, 'carol', undefined, { roles: ['staff'], groups: ['employees'] });
    await t.store.setGroupRoles((await t.store.findUserByUsername('carol'))!.id, ['staff'], 1_800_000_000);
    await addUser(t.store, 'dave');
    const first = await h.call('GET', '/api/v1/roles/staff/members?limit=2');
    expect(first.statusCode, first.body).toBe(200);
    expect(first.json().data).toEqual([
      { username: 'alice', email: 'alice@example.com', name: 'Alice Example', disabled: false, direct: true, through_groups: [] },
      { username: 'bob', email: 'bob@example.com', name: 'Bob Example', disabled: false, direct: false, through_groups: ['employees'] },
    ]);
    const rest = await h.call('GET', `/api/v1/roles/staff/members?limit=2&cursor=${first.json().next}`);
    expect(rest.json()).toMatchObject({ data: [{ username: 'carol', direct: true, through_groups: ['employees'] }], next: null });
    expect((await h.call('GET', '/api/v1/roles/staff')).json().members).toBe(3);
    expect((await h.call('GET', '/api/v1/roles/nothing/members')).statusCode).toBe(404);
    expect(alice.id).toBeDefined();
  });

  it('a caller without write:roles may read but not change (403)', async () => {
    const reader = await h.tokenFor('reader', ['read:roles']);
    expect((await h.call('GET', '/api/v1/roles', { as: reader })).statusCode).toBe(200);
    expect((await h.call('POST', '/api/v1/roles', { as: reader, body: { name: 'x' } })).statusCode).toBe(403);
    expect((await h.call('DELETE', '/api/v1/roles/admin', { as: reader })).statusCode).toBe(403);
    const none = await h.tokenFor('none', ['read:users']);
    expect((await h.call('GET', '/api/v1/roles/admin', { as: none })).statusCode).toBe(403);
    expect(await t.store.findRole('x')).toBeUndefined();
  });
});
