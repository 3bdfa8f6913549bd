/**
 * Objects a configuration file declares (managedBy) in the admin console: every form that would
 * change a managed client, API, role or connector is answered with its page, the sentence naming
 * the file, and 409, and changes nothing; the pages say which file manages the object; objects
 * nobody declared stay editable.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { addApi, addClient, addUser, testApp, type TestApp } from '../helpers/app.js';
import { Browser, decodeEntities, inputValue, injectTransport, signIn } from '../helpers/browser.js';

let t: TestApp;
afterEach(() => t?.close());

const file = '/etc/latchkey/latchkey.yaml';
const reports = 'https://reports.example.com';
const sentence = (kind: string, id: string) => `${kind} "${id}" is managed by ${file}: change it there and run latchkey config apply`;

async function admin(): Promise<Browser> {
  t = await testApp({ LATCHKEY_MFA: 'off' });
  await addUser(t.store, 'root', 'root-password', { roles: ['admin'] });
  await addUser(t.store, 'alice', 'alice-password');
  await addClient(t.store, 'billing', { name: 'Billing', confidential: true, grantTypes: ['client_credentials'] });
  await addClient(t.store, 'tv', { name: 'Living Room TV' });
  await addApi(t.store, reports, 'Reports', [], ['read:reports']);
  await t.store.createRole({ name: 'analyst', description: 'Reads', permissions: [{ api: reports, scope: 'read:reports' }], createdAt: 1_800_000_000 });
  await t.store.createRole({ name: 'free', description: 'Editable', permissions: [], createdAt: 1_800_000_000 });
  await t.store.createConnector({
    id: 'sso',
    type: 'oidc',
    name: 'SSO',
    config: { issuer: 'https://sso.example.com', clientId: 'x' },
    secret: undefined,
    createdAt: 1_800_000_000,
  });
  for (const [kind, id] of [
    ['client', 'billing'],
    ['api', reports],
    ['role', 'analyst'],
    ['connector', 'sso'],
  ] as const) {
    expect(await t.store.setManagedBy(kind, id, file)).toBe(true);
  }
  const browser = new Browser(injectTransport(t.app), 'Mozilla/5.0 (X11; Linux x86_64) Firefox/140.0');
  const res = await signIn(browser, await browser.get(`/login?fresh=1&return_to=${encodeURIComponent('/admin')}`), 'root', 'root-password');
  expect(res.status, res.body).toBe(303);
  return browser;
}

async function csrfOf(browser: Browser, path: string): Promise<string> {
  const page = await browser.get(path);
  expect(page.status, page.body.slice(0, 300)).toBe(200);
  return inputValue(page.body, 'csrf_token')!;
}

describe('managed objects in the admin console', () => {
  it('every change to a managed client, API, role or connector is refused with 409 and the file named; nothing changes', async () => {
    const browser = await admin();
    const token = await csrfOf(browser, '/admin/clients/billing');
    const refusals: [string, Record<string, string>, string][] = [
      ['/admin/clients/billing/update', { name: 'Renamed', redirect_uris: '', post_logout_redirect_uris: '' }, sentence('client', 'billing')],
      ['/admin/clients/billing/rotate-secret', { keep_old_for: '' }, sentence('client', 'billing')],
      ['/admin/clients/billing/disable', {}, sentence('client', 'billing')],
      ['/admin/clients/billing/remove', {}, sentence('client', 'billing')],
      ['/admin/clients/billing/grants', { api: reports, scope: 'read:reports' }, sentence('client', 'billing')],
      ['/admin/apis/update', { identifier: reports, name: 'Renamed', scopes: 'read:reports\nwrite:reports' }, sentence('API', reports)],
      ['/admin/apis/remove', { identifier: reports }, sentence('API', reports)],
      ['/admin/roles/analyst/update', { description: 'Changed' }, sentence('role', 'analyst')],
      ['/admin/roles/analyst/remove', {}, sentence('role', 'analyst')],
      ['/admin/connectors/sso/remove', {}, sentence('connector', 'sso')],
    ];
    for (const [action, fields, text] of refusals) {
      const res = await browser.post(action, { csrf_token: token, ...fields });
      expect(res.status, action).toBe(409);
      expect(decodeEntities(res.body), action).toContain(text);
    }
    expect(await t.store.findClient('billing')).toMatchObject({ name: 'Billing', disabled: false, managedBy: file });
    expect(await t.store.listClientGrants('billing')).toEqual([]);
    expect(await t.store.findApi(reports)).toMatchObject({ name: 'Reports', scopes: ['read:reports'] });
    expect(await t.store.findRole('analyst')).toMatchObject({ description: 'Reads', permissions: [{ api: reports, scope: 'read:reports' }] });
    expect(await t.store.findConnector('sso')).toBeDefined();
  });

  it("a managed object's page says which file manages it; one nobody declared says nothing of the kind", async () => {
    const browser = await admin();
    for (const path of ['/admin/clients/billing', `/admin/apis/edit?identifier=${encodeURIComponent(reports)}`, '/admin/roles/analyst', '/admin/connectors']) {
      const page = await browser.get(path);
      expect(page.status, path).toBe(200);
      expect(decodeEntities(page.body), path).toContain(`Managed by <code>${file}</code>`);
    }
    for (const path of ['/admin/clients/tv', '/admin/roles/free']) {
      expect((await browser.get(path)).body, path).not.toContain('Managed by');
    }
  });

  it('objects without managedBy stay editable, and members of a managed role may still be added', async () => {
    const browser = await admin();
    const token = await csrfOf(browser, '/admin/clients/tv');
    const update = await browser.post('/admin/clients/tv/disable', { csrf_token: token });
    expect(update.status).toBe(303);
    expect(await t.store.findClient('tv')).toMatchObject({ disabled: true });
    expect((await browser.post('/admin/roles/free/update', { csrf_token: token, description: 'Changed' })).status).toBe(303);
    expect(await t.store.findRole('free')).toMatchObject({ description: 'Changed' });
    const alice = (await t.store.findUserByUsername('alice'))!;
    expect((await browser.post('/admin/roles/analyst/members/add', { csrf_token: token, username: 'alice' })).status).toBe(303);
    expect((await t.store.findUserById(alice.id))?.roles).toEqual(['analyst']);
  });
});
