/**
 * LDAP directories behind the ordinary password form (issue 15), against a real OpenLDAP server
 * started by the test (test/helpers/slapd.ts): local accounts first, then each directory in order;
 * the typed name escaped in the filter (RFC 4515); groups from the directory; the sign-in back-off
 * exactly as for local accounts.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { connectorSecretContext } from '../../src/connectors/runtime.js';
import { addUser, testApp, type TestApp } from '../helpers/app.js';
import { Browser, injectTransport, signIn } from '../helpers/browser.js';
import { directory, ldapRequired, slapdAvailable, startSlapd, type RunningSlapd } from '../helpers/slapd.js';

if (!slapdAvailable && ldapRequired) {
  describe('LDAP connector', () => {
    it('has slapd to run against (LATCHKEY_REQUIRE_LDAP=1)', () => {
      expect.fail('LATCHKEY_REQUIRE_LDAP=1 but /usr/sbin/slapd is not installed: apt-get install slapd');
    });
  });
}

(slapdAvailable ? describe : describe.skip)('LDAP connector (a real slapd)', () => {
  let slapd: RunningSlapd;
  let t: TestApp;
  let browser: Browser;

  beforeAll(async () => {
    slapd = await startSlapd();
  }, 30_000);
  afterAll(async () => {
    await slapd?.stop();
  });

  async function addLdap(id: string, config: Record<string, unknown> = {}, bindPassword = directory.bindPassword) {
    await t.store.createConnector({
      id,
      type: 'ldap',
      name: id,
      config: { url: slapd.url, bindDn: directory.bindDn, userBase: directory.userBase, groupBase: directory.groupBase, ...config },
      secret: t.app.services.secretBox.seal(connectorSecretContext(id), bindPassword),
      createdAt: 1_800_000_000,
    });
  }

  beforeEach(async () => {
    t = await testApp({ LATCHKEY_UPSTREAM_TIMEOUT: '2' });
    await addLdap('corp');
    browser = new Browser(injectTransport(t.app));
  });
  afterEach(() => t.close());

  const attempt = async (username: string, password: string, b = browser) => signIn(b, await b.get('/login'), username, password);

  it('a directory user signs in with the ordinary form; a user is made for them, with the directory\'s groups', async () => {
    const res = await attempt('dora', directory.people.dora.password);
    expect(res.status).toBe(303);
    const user = await t.store.findUserByUsername('dora');
    expect(user).toMatchObject({ source: 'corp', email: directory.people.dora.mail, emailVerified: true, name: 'Dora Directory', groups: ['engineers', 'ops'] });
    const identity = (t.store.db.prepare('SELECT subject FROM user_identities WHERE user_id = ?').get(user!.id) as { subject: string }).subject;
    expect(identity).toMatch(/^[0-9a-f-]{36}$/); // entryUUID: stable even if the entry is renamed
    // Again: the same user.
    await browser.post('/logout', {});
    expect((await attempt('DORA', directory.people.dora.password)).status).toBe(303);
    expect((t.store.db.prepare('SELECT count(*) AS n FROM users').get() as { n: number }).n).toBe(2);
  });

  it('a wrong password, or an unknown name, is a wrong password', async () => {
    expect((await attempt('dora', 'not-doras-password')).status).toBe(401);
    expect((await attempt('nobody', 'whatever-password')).status).toBe(401);
    expect(await t.store.findUserByUsername('dora')).toBeUndefined();
  });

  it('filter injection: a name full of filter syntax matches nobody, even with a real password', async () => {
    for (const name of ['*', '*)(uid=*', 'dora)(|(uid=*', 'dora*', '(uid=dora)', 'do\\72a']) {
      expect((await attempt(name, directory.people.dora.password)).status, name).toBe(401);
    }
    expect((t.store.db.prepare('SELECT count(*) AS n FROM users').get() as { n: number }).n).toBe(1);
  });

  it('the sign-in back-off applies as for local accounts', async () => {
    for (let i = 0; i < 5; i++) expect((await attempt('dora', 'guess-guess')).status).toBe(401);
    expect((await attempt('dora', directory.people.dora.password)).status).toBe(429);
  });

  it('local accounts come first: the local password signs in the local user, the directory\'s the directory\'s', async () => {
    const local = await addUser(t.store, 'dora', 'local-dora-password');
    expect((await attempt('dora', 'local-dora-password')).status).toBe(303);
    expect((await t.app.inject({ method: 'GET', url: '/login', headers: { cookie: [...browser.cookies].map(([k, v]) => `${k}=${v}`).join('; ') } })).statusCode).toBe(303);
    await browser.post('/logout', {});
    expect((await attempt('dora', directory.people.dora.password)).status).toBe(303);
    const created = (await t.store.listUsers()).find((u) => u.source === 'corp');
    expect(created).toMatchObject({ username: 'dora@corp' });
    expect(created!.id).not.toBe(local.id);
  });

  it('directories are tried in order; one that is down or refuses the service account is skipped', async () => {
    await t.store.removeConnector('corp');
    await t.store.createConnector({ id: 'down', type: 'ldap', name: 'down', config: { url: 'ldap://127.0.0.1:1', bindDn: directory.bindDn, userBase: directory.userBase }, secret: t.app.services.secretBox.seal(connectorSecretContext('down'), 'x'), createdAt: 1 });
    await addLdap('misconfigured', {}, 'wrong-service-password');
    await addLdap('corp2');
    expect((await attempt('ezra', directory.people.ezra.password)).status).toBe(303);
    expect(await t.store.findUserByUsername('ezra')).toMatchObject({ source: 'corp2', groups: ['ops'] });
  });

  it('a directory user disabled here cannot sign in', async () => {
    await attempt('dora', directory.people.dora.password);
    await t.store.setUserDisabled('dora', true, Math.floor(t.clock()));
    await browser.post('/logout', {});
    expect((await attempt('dora', directory.people.dora.password)).status).toBe(401);
  });
});
