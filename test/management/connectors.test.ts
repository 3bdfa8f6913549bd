/**
 * /api/v1/connectors through app.inject: adding (checked first unless "check": false), reading,
 * listing, changing, testing and removing upstream identity providers with the rules of
 * `connectors add|list|remove|test`; secrets are write-only. Every answer checked against the
 * served document.
 */
import { createServer, type Server } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { connectorSecret } from '../../src/connectors/runtime.js';
import { addUser, testApp, type TestApp } from '../helpers/app.js';
import { managementHarness } from '../helpers/management.js';

let t: TestApp;
let api: Awaited<ReturnType<typeof managementHarness>>;

const oidc = { id: 'acme', type: 'oidc', issuer: 'https://sso.acme.example', client_id: 'latchkey', client_secret: 'oidc-client-secret-1', check: false };
const ldap = {
  id: 'corp',
  type: 'ldap',
  url: 'ldaps://ldap.corp.example:636',
  bind_dn: 'cn=svc,dc=corp',
  bind_password: 'bind-password-1',
  user_base: 'ou=people,dc=corp',
  check: false,
};

/** A port where nothing answers (opened to get a free number, then closed). */
async function deadPort(): Promise<number> {
  const server: Server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

beforeEach(async () => {
  t = await testApp();
  api = await managementHarness(t);
});
afterEach(async () => {
  expect(api.answers.checked).toBeGreaterThan(0);
  await t.close();
});

describe('management API: connectors', () => {
  it("adds an oidc and an ldap connector with the configuration file's fields; secrets sealed and never answered", async () => {
    const created = await api.call('POST', '/api/v1/connectors', { body: oidc });
    expect(created.statusCode, created.body).toBe(201);
    expect(created.json()).toMatchObject({
      id: 'acme',
      type: 'oidc',
      name: 'sso.acme.example',
      issuer: 'https://sso.acme.example',
      client_id: 'latchkey',
      scope: 'openid email profile',
      trust_email: false,
      has_secret: true,
      redirect_uri: 'http://latchkey.test/connectors/acme/callback',
      check: null,
      warnings: [],
    });
    expect(created.headers.location).toBe('/api/v1/connectors/acme');
    expect((await api.call('POST', '/api/v1/connectors', { body: { ...ldap, url: 'ldap://ldap.corp.example:389' } })).json()).toMatchObject({
      warnings: ['passwords would cross the network in the clear: use ldaps:// or --start-tls'],
    });
    const record = await t.store.findConnector('acme');
    expect(record?.secret).not.toContain('oidc-client-secret-1');
    expect(connectorSecret(t.app.services, record!)).toBe('oidc-client-secret-1');
    const listed = await api.call('GET', '/api/v1/connectors');
    expect(listed.json<{ data: Array<{ id: string }> }>().data.map((c) => c.id)).toEqual(['acme', 'corp']);
    const one = await api.call('GET', '/api/v1/connectors/corp');
    expect(one.json()).toMatchObject({
      id: 'corp',
      type: 'ldap',
      bind_dn: 'cn=svc,dc=corp',
      user_filter: '(uid={username})',
      start_tls: false,
      has_secret: true,
    });
    expect(one.json()).not.toHaveProperty('redirect_uri');
    for (const body of [listed.body, one.body, created.body]) expect(body).not.toMatch(/oidc-client-secret-1|bind-password-1/);
    await t.app.services.auditTrail.flush();
    const events = await t.store.listAuditEvents({ event: 'connector.created', limit: 10 });
    expect(events.map((e) => e.details.connectorId).sort()).toEqual(['acme', 'corp']);
    expect(JSON.stringify(events)).not.toMatch(/oidc-client-secret-1|bind-password-1/);
  });

  it('checks the upstream before saving: a failed check is a 422 naming the step and its cause, and nothing is saved', async () => {
    const port = await deadPort();
    const refused = await api.call('POST', '/api/v1/connectors', { body: { ...oidc, issuer: `http://127.0.0.1:${port}`, check: true } });
    expect(refused.statusCode, refused.body).toBe(422);
    const problem = refused.json<{ detail: string; errors: Array<{ message: string }> }>();
    expect(problem.detail).toContain('connector acme not added');
    expect(problem.errors[0]?.message).toMatch(/^discovery document: /);
    expect(await t.store.findConnector('acme')).toBeUndefined();
    // The same check on a stored connector: connectors test.
    await api.call('POST', '/api/v1/connectors', { body: { ...oidc, issuer: `http://127.0.0.1:${port}` } });
    const tested = await api.call('POST', '/api/v1/connectors/acme/test');
    expect(tested.statusCode).toBe(200);
    const result = tested.json<{ ok: boolean; cause: string; checks: Array<{ outcome: string }> }>();
    expect(result.ok).toBe(false);
    expect(result.checks[0]?.outcome).toBe('failed');
    expect(result.cause).toContain(`127.0.0.1:${port}`);
  });

  it('changes a connector (If-Match), re-sealing a new secret; a field of another type is refused with its path', async () => {
    await api.call('POST', '/api/v1/connectors', { body: oidc });
    const read = await api.call('GET', '/api/v1/connectors/acme');
    const changed = await api.call('PATCH', '/api/v1/connectors/acme', {
      body: { name: 'Acme SSO', groups_claim: 'groups', client_secret: 'oidc-client-secret-2', check: false },
      headers: { 'if-match': read.headers.etag as string },
    });
    expect(changed.statusCode, changed.body).toBe(200);
    expect(changed.json()).toMatchObject({ name: 'Acme SSO', groups_claim: 'groups', issuer: 'https://sso.acme.example' });
    expect(connectorSecret(t.app.services, (await t.store.findConnector('acme'))!)).toBe('oidc-client-secret-2');
    const stale = await api.call('PATCH', '/api/v1/connectors/acme', { body: { name: 'Other' }, headers: { 'if-match': read.headers.etag as string } });
    expect(stale.statusCode).toBe(412);
    const foreign = await api.call('PATCH', '/api/v1/connectors/acme', { body: { bind_dn: 'cn=x' } });
    expect(foreign.statusCode).toBe(400);
    expect(foreign.json<{ errors: Array<{ path: string }> }>().errors[0]?.path).toBe('/bind_dn');
    const badIssuer = await api.call('PATCH', '/api/v1/connectors/acme', { body: { issuer: 'ftp://x', check: false } });
    expect(badIssuer.statusCode).toBe(400);
    expect(badIssuer.json<{ errors: Array<{ path: string }> }>().errors[0]?.path).toBe('/issuer');
  });

  it('removes a connector: the users it created stay, signed out; the answer says how many', async () => {
    await api.call('POST', '/api/v1/connectors', { body: oidc });
    await addUser(t.store, 'ursula', 'pw-ursula-123', { source: 'acme' });
    const removed = await api.call('DELETE', '/api/v1/connectors/acme');
    expect(removed.statusCode, removed.body).toBe(200);
    expect(removed.json()).toEqual({ id: 'acme', users_signed_out: 1, not_signed_out: [] });
    expect(await t.store.findConnector('acme')).toBeUndefined();
    expect(await t.store.findUserByUsername('ursula')).toBeDefined();
    expect((await api.call('DELETE', '/api/v1/connectors/acme')).statusCode).toBe(404);
  });

  it('refuses: bad fields 400 with their paths, a taken id 409, a managed connector 409, unknown 404, without the scope 403', async () => {
    const bad = await api.call('POST', '/api/v1/connectors', { body: { id: 'Bad Id', type: 'oidc', issuer: 'nope', client_id: 'x', check: false } });
    expect(bad.statusCode).toBe(400);
    expect(
      bad
        .json<{ errors: Array<{ path: string }> }>()
        .errors.map((e) => e.path)
        .sort(),
    ).toEqual(['/id', '/issuer']);
    const noSecret = await api.call('POST', '/api/v1/connectors', { body: { ...ldap, bind_password: undefined } });
    expect(noSecret.json<{ errors: Array<{ path: string }> }>().errors[0]?.path).toBe('/bind_password');
    expect((await api.call('POST', '/api/v1/connectors', { body: { ...oidc, id: 'local' } })).statusCode).toBe(400);
    expect((await api.call('POST', '/api/v1/connectors', { body: oidc })).statusCode).toBe(201);
    expect((await api.call('POST', '/api/v1/connectors', { body: oidc })).statusCode).toBe(409);
    await t.store.applyConfiguration([
      { kind: 'update', object: 'connector', record: { ...(await t.store.findConnector('acme'))!, managedBy: '/etc/latchkey/config.yaml' } },
    ]);
    const managed = await api.call('DELETE', '/api/v1/connectors/acme');
    expect(managed.statusCode).toBe(409);
    expect(managed.json<{ detail: string }>().detail).toContain('/etc/latchkey/config.yaml');
    expect((await api.call('PATCH', '/api/v1/connectors/acme', { body: { name: 'x' } })).statusCode).toBe(409);
    expect((await api.call('GET', '/api/v1/connectors/nope')).statusCode).toBe(404);
    expect((await api.call('POST', '/api/v1/connectors/nope/test')).statusCode).toBe(404);
    const reader = await api.tokenFor('reader', ['read:connectors']);
    expect((await api.call('POST', '/api/v1/connectors', { body: oidc, as: reader })).statusCode).toBe(403);
    expect((await api.call('POST', '/api/v1/connectors/acme/test', { as: reader })).statusCode).toBe(403);
    const other = await api.tokenFor('other', ['read:keys']);
    expect((await api.call('GET', '/api/v1/connectors', { as: other })).statusCode).toBe(403);
  });
});
