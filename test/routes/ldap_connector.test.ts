/**
 * LDAP directories behind the ordinary password form, against a real OpenLDAP server
 * started by the test (test/helpers/slapd.ts): local accounts first, then each directory in order;
 * the typed name escaped in the filter (RFC 4515); groups from the directory; the sign-in back-off
 * exactly as for local accounts, whatever spelling of a name the directory takes for it; what the
 * directory says of a person checked before it is stored.
 */
import { Client } from 'ldapts';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { connectorSecretContext } from '../../src/connectors/runtime.js';
import { addClient, addUser, testApp, type TestApp } from '../helpers/app.js';
import { tokensFor } from '../helpers/flows.js';
import { Browser, injectTransport, signIn } from '../helpers/browser.js';
import { directory, ldapRequired, slapdAvailable, startSlapd, type RunningSlapd } from '../helpers/slapd.js';
import { startSilentDirectory, startStallingStartTlsDirectory } from '../helpers/upstreams.js';

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

  it("a directory user signs in with the ordinary form; a user is made for them, with the directory's groups", async () => {
    const res = await attempt('dora', directory.people.dora.password);
    expect(res.status).toBe(303);
    const user = await t.store.findUserByUsername('dora');
    expect(user).toMatchObject({
      source: 'corp',
      email: directory.people.dora.mail,
      emailVerified: true,
      name: 'Dora Directory',
      groups: ['engineers', 'ops'],
    });
    const identity = (t.store.db.prepare('SELECT subject FROM user_identities WHERE user_id = ?').get(user!.id) as { subject: string }).subject;
    expect(identity).toMatch(/^[0-9a-f-]{36}$/); // entryUUID: stable even if the entry is renamed
    // Again: the same user.
    await browser.post('/logout', {});
    expect((await attempt('DORA', directory.people.dora.password)).status).toBe(303);
    expect((t.store.db.prepare('SELECT count(*) AS n FROM users').get() as { n: number }).n).toBe(2);
  });

  it("a role naming one of the directory's groups is held after the sign-in, and lost at the next one once no group of the person grants it", async () => {
    await t.store.createRole({ name: 'oncall', description: undefined, permissions: [], groups: ['ops'], createdAt: 1_800_000_000 });
    expect((await attempt('dora', directory.people.dora.password)).status).toBe(303);
    const dora = (await t.store.findUserByUsername('dora'))!;
    expect(dora.roles).toEqual(['oncall']);
    await t.store.updateRole('oncall', { groups: ['sre'] });
    await browser.post('/logout', {});
    expect((await attempt('dora', directory.people.dora.password)).status).toBe(303);
    expect((await t.store.findUserById(dora.id))?.roles).toEqual([]);
    await t.app.services.auditTrail.flush();
    const events = (await t.store.listAuditEvents({ event: 'upstream.', limit: 50 })).filter((e) => e.event.startsWith('upstream.group_roles_'));
    expect(events.map((e) => [e.event, e.details.roles])).toEqual([
      ['upstream.group_roles_revoked', ['oncall']],
      ['upstream.group_roles_granted', ['oncall']],
    ]);
  });

  it('a wrong password, or an unknown name, is a wrong password', async () => {
    expect((await attempt('dora', 'not-doras-password')).status).toBe(401);
    expect((await attempt('nobody', 'whatever-password')).status).toBe(401);
    expect(await t.store.findUserByUsername('dora')).toBeUndefined();
  });

  // Were a name the directory has to cost it more work than one it does not, the time a wrong
  // password takes would tell which names exist. What slapd logs is compared — connections, binds
  // and searches, in order — rather than a timing a busy machine blurs.
  it('a wrong password costs the directory the same work whether or not it has the name: the same connections, binds and search', async () => {
    const marker = new Client({ url: slapd.url });
    let markers = 0;
    /** A search of our own that slapd logs after everything answered before it. */
    const mark = async () => {
      const name = `latchkey-test-marker-${++markers}`;
      await marker.search(directory.userBase, { filter: `(uid=${name})`, scope: 'one' }).catch(() => undefined);
      return slapd.loggedUpTo(name);
    };
    /** What the directory was asked for while `run` ran, per connection, in order (closing ones aside: they come after the answer). */
    const workOf = async (run: () => Promise<unknown>) => {
      const start = (await mark()).length;
      await run();
      const logged = await mark();
      const markerConnection = logged.at(-1)!.conn;
      const byConnection = new Map<number, string[]>();
      for (const { conn, text } of logged.slice(start)) {
        if (conn === markerConnection || text === 'UNBIND') continue;
        byConnection.set(conn, [...(byConnection.get(conn) ?? []), text]);
      }
      return [...byConnection.values()];
    };
    try {
      const known = await workOf(async () => expect((await attempt('dora', 'not-doras-password')).status).toBe(401));
      const unknown = await workOf(async () => expect((await attempt('nobody', 'not-anyones-password')).status).toBe(401));
      const service = ['ACCEPT', `BIND dn="${directory.bindDn}"`, 'BIND err=0'];
      expect(known).toEqual([
        [...service, `SRCH base="${directory.userBase}" filter="(uid=dora)"`],
        ['ACCEPT', `BIND dn="uid=dora,${directory.userBase}"`, 'BIND err=49'],
      ]);
      expect(unknown).toEqual([
        [...service, `SRCH base="${directory.userBase}" filter="(uid=nobody)"`],
        ['ACCEPT', expect.stringMatching(new RegExp(`^BIND dn="cn=latchkey-no-such-entry-[\\w-]{43},${directory.userBase}"$`)), 'BIND err=49'],
      ]);
      // The same shape of work: each operation of the one where the other has one of its kind.
      const shape = (work: string[][]) => work.map((ops) => ops.map((op) => op.replace(/ .*$/, (rest) => (rest.startsWith(' err=') ? rest : ''))));
      expect(shape(unknown)).toEqual(shape(known));
    } finally {
      await marker.unbind().catch(() => undefined);
    }
  });

  // The typed name is escaped (RFC 4515) before it is put in the filter: were it not, `*` or
  // `*)(uid=*` would match dora's entry and her password would sign these names in.
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

  // The directory prepares names before it compares them (RFC 4518): fullwidth letters, case and
  // surrounding spaces do not matter to it, so they must not give a guesser a fresh back-off.
  it('every spelling the directory takes for one name counts against one back-off', async () => {
    for (const spelling of ['ｄｏｒａ', ' dora', 'DORA ', 'ｄｏｒａ', ' dora']) {
      expect((await attempt(spelling, 'guess-guess')).status, spelling).toBe(401);
    }
    for (const spelling of ['DORA ', 'dora', 'Ｄｏｒａ']) {
      expect((await attempt(spelling, directory.people.dora.password)).status, spelling).toBe(429);
    }
    expect((await t.store.listUsers()).filter((u) => u.source === 'corp')).toEqual([]);
  });

  it('names that reach one directory entry through different attributes share its back-off', async () => {
    await t.store.removeConnector('corp');
    await addLdap('corp', { userFilter: '(|(uid={username})(mail={username}))' });
    for (const name of ['dora', directory.people.dora.mail, 'dora', directory.people.dora.mail, 'dora']) {
      expect((await attempt(name, 'guess-guess')).status, name).toBe(401);
    }
    expect((await attempt(directory.people.dora.mail, directory.people.dora.password)).status).toBe(429);
    // Another entry is not held back by dora's.
    expect((await attempt('ezra', directory.people.ezra.password)).status).toBe(303);
  });

  it('a local account owns every spelling of its name: no directory user is made for ｄｏｒａ when a local dora exists', async () => {
    const local = await addUser(t.store, 'dora', 'local-dora-password');
    // The same name, however it is spelled: the local account's password signs its owner in.
    expect((await attempt('ｄｏｒａ', 'local-dora-password')).status).toBe(303);
    await t.app.services.auditTrail.flush();
    expect((await t.store.listAuditEvents({ event: 'signin.success', limit: 10 })).map((e) => e.userId)).toEqual([local.id]);
    await browser.post('/logout', {});
    // And the directory's password for it is wrong, as for the plain spelling: no user is made.
    for (const spelling of ['ｄｏｒａ', 'Ｄｏｒａ', ' dora', 'DORA ', 'do\u00adra']) {
      expect((await attempt(spelling, directory.people.dora.password)).status, spelling).toBe(401);
    }
    expect((await t.store.listUsers()).filter((u) => u.source === 'corp')).toEqual([]);
    const metrics = (await t.app.inject({ method: 'GET', url: '/metrics' })).body;
    expect(metrics).not.toMatch(/latchkey_upstream_signins_total\{connector="corp"/);
  });

  it("an entry's displayName with terminal escapes and a mail with CR LF are not stored, and /userinfo does not assert them", async () => {
    const res = await attempt('mallory', directory.people.mallory.password);
    expect(res.status).toBe(303);
    const user = await t.store.findUserByUsername('mallory');
    expect(user).toMatchObject({ source: 'corp', email: '', emailVerified: false, name: undefined });
    await addClient(t.store, 'tv');
    const tokens = await tokensFor(t, user!, 'tv', { scope: 'openid email profile' });
    const userinfo = await t.app.inject({ method: 'GET', url: '/userinfo', headers: { authorization: `Bearer ${tokens.access_token}` } });
    expect(userinfo.statusCode).toBe(200);
    const claims = userinfo.json();
    expect(claims.email_verified).not.toBe(true);
    expect(JSON.stringify(claims)).not.toContain('mallory@example.org');
    expect(Object.values(claims).join(' ')).not.toMatch(/[\u0000-\u001f\u007f-\u009f]/);
    await t.app.services.auditTrail.flush();
    const [refused] = await t.store.listAuditEvents({ event: 'upstream.attributes_refused', limit: 10 });
    expect(refused).toMatchObject({ userId: user!.id, details: { connectorId: 'corp', attributes: ['email', 'name'] } });
  });

  it('a local account with a password owns its name: the directory is not asked for it, so its entry is no second way in', async () => {
    const local = await addUser(t.store, 'dora', 'local-dora-password');
    expect((await attempt('dora', 'local-dora-password')).status).toBe(303);
    const signedIn = await t.store.findUserByUsername('dora');
    expect(signedIn!.id).toBe(local.id);
    await browser.post('/logout', {});
    // The directory's password for dora is not the local account's: wrong, and no user is made.
    expect((await attempt('dora', directory.people.dora.password)).status).toBe(401);
    expect((await t.store.listUsers()).filter((u) => u.source === 'corp')).toEqual([]);
    const metrics = (await t.app.inject({ method: 'GET', url: '/metrics' })).body;
    expect(metrics).not.toMatch(/latchkey_upstream_signins_total\{connector="corp"/);
  });

  it('the first directory that knows the name answers for it: a wrong password there is not tried at the next', async () => {
    // "alt" maps any name to ezra's entry: were dora's wrong password passed on, ezra's would sign in as her name.
    await addLdap('alt', { userFilter: '(|(uid=ezra)(cn={username}))' });
    expect((await attempt('dora', directory.people.ezra.password)).status).toBe(401);
    expect((await t.store.listUsers()).filter((u) => u.source !== 'local')).toEqual([]);
    // A name the first directory does not know passes on.
    expect((await attempt('nobody-at-corp', directory.people.ezra.password)).status).toBe(303);
    expect((await t.store.listUsers()).find((u) => u.source === 'alt')).toMatchObject({ username: 'ezra' });
  });

  it('a user made by another upstream does not own its name: the directory entry of that name signs in as a user of its own', async () => {
    const upstreamMade = await addUser(t.store, 'ezra', 'unused');
    t.store.db.prepare("UPDATE users SET password_hash = 'upstream', source = 'elsewhere' WHERE id = ?").run(upstreamMade.id);
    expect((await attempt('ezra', directory.people.ezra.password)).status).toBe(303);
    const made = (await t.store.listUsers()).find((u) => u.source === 'corp');
    expect(made).toMatchObject({ username: 'ezra@corp' });
    expect(made!.id).not.toBe(upstreamMade.id);
  });

  it('a directory that never answers, or stalls in the StartTLS handshake, costs at most the time limit; the next one signs the person in', async () => {
    const silent = await startSilentDirectory();
    const stalling = await startStallingStartTlsDirectory();
    try {
      await t.store.removeConnector('corp');
      await addLdap('silent', { url: silent.url });
      await addLdap('stalling', { url: stalling.url, startTls: true });
      await addLdap('corp');
      const started = Date.now();
      expect((await attempt('dora', directory.people.dora.password)).status).toBe(303);
      // Two directories of 2 s each, and not a hang.
      expect(Date.now() - started).toBeLessThan(8000);
      const metrics = (await t.app.inject({ method: 'GET', url: '/metrics' })).body;
      expect(metrics).toMatch(/latchkey_upstream_signins_total\{connector="silent",outcome="unreachable"\} 1/);
      expect(metrics).toMatch(/latchkey_upstream_signins_total\{connector="stalling",outcome="unreachable"\} 1/);
      expect(metrics).toMatch(/latchkey_upstream_signins_total\{connector="corp",outcome="success"\} 1/);
    } finally {
      await silent.close();
      await stalling.close();
    }
  }, 20_000);

  it('a bind password that cannot be opened (sealed under another key) makes that directory unavailable, not the sign-in page a 500', async () => {
    await t.store.removeConnector('corp');
    await t.store.createConnector({
      id: 'unreadable',
      type: 'ldap',
      name: 'unreadable',
      config: { url: slapd.url, bindDn: directory.bindDn, userBase: directory.userBase },
      secret: t.app.services.secretBox.seal(connectorSecretContext('someone-else'), directory.bindPassword),
      createdAt: 1_800_000_000,
    });
    await addLdap('corp');
    expect((await attempt('dora', directory.people.dora.password)).status).toBe(303);
    expect(await t.store.findUserByUsername('dora')).toMatchObject({ source: 'corp' });
  });

  it('directories are tried in order; one that is down or refuses the service account is skipped', async () => {
    await t.store.removeConnector('corp');
    await t.store.createConnector({
      id: 'down',
      type: 'ldap',
      name: 'down',
      config: { url: 'ldap://127.0.0.1:1', bindDn: directory.bindDn, userBase: directory.userBase },
      secret: t.app.services.secretBox.seal(connectorSecretContext('down'), 'x'),
      createdAt: 1,
    });
    await addLdap('misconfigured', {}, 'wrong-service-password');
    await addLdap('corp2');
    expect((await attempt('ezra', directory.people.ezra.password)).status).toBe(303);
    expect(await t.store.findUserByUsername('ezra')).toMatchObject({ source: 'corp2', groups: ['ops'] });
  });

  describe('a directory that cannot be asked: people are told so, not that their password is wrong', () => {
    let lines: string[];
    beforeEach(async () => {
      await t.close();
      lines = [];
      t = await testApp({ LATCHKEY_UPSTREAM_TIMEOUT: '2' }, { logLines: lines });
      browser = new Browser(injectTransport(t.app));
    });
    const logged = () => lines.map((line) => JSON.parse(line) as Record<string, unknown>);

    it('a service account whose bind is refused: the page says the sign-in method is not set up correctly, with a reference the warn line carries, which names invalidCredentials', async () => {
      await addLdap('corp', {}, 'wrong-service-password');
      const res = await attempt('dora', directory.people.dora.password);
      expect(res.status).toBe(502);
      expect(res.body).not.toContain('Wrong username or password');
      const reference = res.body.match(/This sign-in method is not set up correctly; tell your administrator \(reference ([^)]+)\)\./)?.[1];
      expect(reference).toBeDefined();
      const failure = logged().find((l) => l.event === 'upstream.signin_failure');
      expect(failure).toMatchObject({
        level: 40,
        connectorId: 'corp',
        reason: 'misconfigured',
        reference,
        detail: "the LDAP server refused the service account's bind (invalidCredentials, 0x31): check --bind-dn and the bind password",
      });
      expect(failure?.reqId).toBe(reference);
      expect(lines.join('\n')).not.toContain('wrong-service-password');
      expect(lines.join('\n')).not.toContain(directory.people.dora.password);
      const metrics = (await t.app.inject({ method: 'GET', url: '/metrics' })).body;
      expect(metrics).toMatch(/latchkey_upstream_signins_total\{connector="corp",outcome="misconfigured"\} 1/);
    });

    it("the person's own wrong password is still a wrong password, logged at info", async () => {
      await addLdap('corp');
      const res = await attempt('dora', 'not-doras-password');
      expect(res.status).toBe(401);
      expect(res.body).toContain('Wrong username or password.');
      expect(logged().find((l) => l.event === 'upstream.signin_failure')).toBeUndefined();
      expect(logged().find((l) => l.event === 'signin.failure')).toMatchObject({ level: 30, connectorId: 'corp', reason: 'password' });
    });

    it('a directory on a closed port: the page says it could not be reached, the warn line says connection refused', async () => {
      const closed = await startSilentDirectory();
      await closed.close();
      await addLdap('down', { url: closed.url });
      const res = await attempt('dora', directory.people.dora.password);
      expect(res.status).toBe(502);
      expect(res.body).toContain('The directory that checks this password could not be reached. Try again in a moment.');
      expect(logged().find((l) => l.event === 'upstream.signin_failure')).toMatchObject({
        level: 40,
        reason: 'unreachable',
        detail: `cannot connect to ${closed.url}: connection refused`,
      });
    });

    it('a user base that does not exist: not set up correctly, and the warn line names noSuchObject and the base', async () => {
      await addLdap('corp', { userBase: 'ou=nobody,dc=example,dc=org' });
      const res = await attempt('dora', directory.people.dora.password);
      expect(res.status).toBe(502);
      expect(res.body).toContain('This sign-in method is not set up correctly; tell your administrator');
      expect(logged().find((l) => l.event === 'upstream.signin_failure')).toMatchObject({
        level: 40,
        detail: 'the user base ou=nobody,dc=example,dc=org does not exist in the directory (noSuchObject, 0x20): check --user-base',
      });
    });
  });

  it('a directory user disabled here cannot sign in', async () => {
    await attempt('dora', directory.people.dora.password);
    await t.store.setUserDisabled('dora', true, Math.floor(t.clock()));
    await browser.post('/logout', {});
    expect((await attempt('dora', directory.people.dora.password)).status).toBe(401);
  });
});
