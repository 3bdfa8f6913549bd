/**
 * A real OpenLDAP server (Debian's slapd) for the LDAP connector tests, started by the test on a
 * free loopback port with a small directory and a self-signed certificate for StartTLS, and
 * stopped with it. Without slapd installed the tests are skipped, unless LATCHKEY_REQUIRE_LDAP=1
 * (as in .ci/run, which installs it), where that fails the run instead.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './process.js';

export const slapdPath = '/usr/sbin/slapd';
export const slapdAvailable = existsSync(slapdPath) && existsSync('/usr/sbin/slapadd');
export const ldapRequired = process.env.LATCHKEY_REQUIRE_LDAP === '1';

export const directory = {
  suffix: 'dc=example,dc=org',
  bindDn: 'cn=latchkey,dc=example,dc=org',
  bindPassword: 'service-password',
  userBase: 'ou=people,dc=example,dc=org',
  groupBase: 'ou=groups,dc=example,dc=org',
  people: {
    dora: { password: 'dora-password', mail: 'dora@example.org', name: 'Dora Directory' },
    ezra: { password: 'ezra-password', mail: 'ezra@example.org', name: 'Ezra Entry' },
    /**
     * An entry whose attributes would rewrite an operator's terminal: a displayName that clears
     * the screen and sets the window title, a mail with a line break and a header after it.
     */
    mallory: { password: 'mallory-password', mail: 'mallory@example.org\r\nX-Injected: yes', name: '\x1b[2J\x1b[HMallory\x1b]0;pwned\x07' },
  },
};

/** An LDIF line of a value that is not a safe string (control characters): base64 (RFC 2849). */
const ldifValue = (attribute: string, value: string) => `${attribute}:: ${Buffer.from(value, 'utf8').toString('base64')}`;

const seed = `dn: dc=example,dc=org
objectClass: dcObject
objectClass: organization
o: Example
dc: example

dn: cn=latchkey,dc=example,dc=org
objectClass: organizationalRole
objectClass: simpleSecurityObject
cn: latchkey
userPassword: ${directory.bindPassword}

dn: ou=people,dc=example,dc=org
objectClass: organizationalUnit
ou: people

dn: uid=dora,ou=people,dc=example,dc=org
objectClass: inetOrgPerson
uid: dora
cn: Dora Directory
sn: Directory
mail: ${directory.people.dora.mail}
userPassword: ${directory.people.dora.password}

dn: uid=ezra,ou=people,dc=example,dc=org
objectClass: inetOrgPerson
uid: ezra
cn: Ezra Entry
sn: Entry
mail: ${directory.people.ezra.mail}
userPassword: ${directory.people.ezra.password}

dn: uid=mallory,ou=people,dc=example,dc=org
objectClass: inetOrgPerson
uid: mallory
cn: Mallory
sn: Mallory
${ldifValue('displayName', directory.people.mallory.name)}
${ldifValue('mail', directory.people.mallory.mail)}
userPassword: ${directory.people.mallory.password}

dn: ou=groups,dc=example,dc=org
objectClass: organizationalUnit
ou: groups

dn: cn=engineers,ou=groups,dc=example,dc=org
objectClass: groupOfNames
cn: engineers
member: uid=dora,ou=people,dc=example,dc=org

dn: cn=ops,ou=groups,dc=example,dc=org
objectClass: groupOfNames
cn: ops
member: uid=dora,ou=people,dc=example,dc=org
member: uid=ezra,ou=people,dc=example,dc=org
`;

export interface SlapdOperation {
  /** slapd's connection number. */
  conn: number;
  text: string;
}

export interface RunningSlapd {
  url: string;
  /** The self-signed certificate's file, for NODE_EXTRA_CA_CERTS (StartTLS). */
  caFile: string;
  /**
   * What slapd has logged so far at its `stats` level, in order: each connection accepted and
   * each operation, by connection — `ACCEPT`, `BIND dn="uid=dora,ou=people,dc=example,dc=org"`,
   * `BIND err=49` (a bind's result), `SRCH base="…" filter="(uid=dora)"`, `EXT oid=…` (StartTLS),
   * `UNBIND`.
   */
  operations(): SlapdOperation[];
  /**
   * The operations up to slapd's log of a search whose filter holds `marker` (a search the test
   * makes with a client of its own): every operation of a request answered before it is there.
   */
  loggedUpTo(marker: string): Promise<SlapdOperation[]>;
  stop(): Promise<void>;
}

function waitForPort(port: number, timeoutMs: number): Promise<void> {
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const attempt = () => {
      const socket = connect(port, '127.0.0.1');
      socket.once('connect', () => {
        socket.destroy();
        resolve();
      });
      socket.once('error', () => {
        socket.destroy();
        if (Date.now() - started > timeoutMs) reject(new Error(`slapd did not listen on ${port}`));
        else setTimeout(attempt, 50);
      });
    };
    attempt();
  });
}

export async function startSlapd(): Promise<RunningSlapd> {
  const dir = mkdtempSync(join(tmpdir(), 'latchkey-slapd-'));
  mkdirSync(join(dir, 'db'));
  const cert = join(dir, 'cert.pem');
  const key = join(dir, 'key.pem');
  const made = spawnSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-keyout',
      key,
      '-out',
      cert,
      '-days',
      '2',
      '-subj',
      '/CN=127.0.0.1',
      '-addext',
      'subjectAltName=IP:127.0.0.1',
    ],
    { stdio: 'pipe' },
  );
  if (made.status !== 0) throw new Error(`openssl failed: ${made.stderr.toString()}`);
  const conf = join(dir, 'slapd.conf');
  writeFileSync(
    conf,
    [
      'include /etc/ldap/schema/core.schema',
      'include /etc/ldap/schema/cosine.schema',
      'include /etc/ldap/schema/inetorgperson.schema',
      'include /etc/ldap/schema/nis.schema',
      'modulepath /usr/lib/ldap',
      'moduleload back_mdb',
      `pidfile ${join(dir, 'slapd.pid')}`,
      `TLSCertificateFile ${cert}`,
      `TLSCertificateKeyFile ${key}`,
      'database mdb',
      'maxsize 10485760',
      `suffix "${directory.suffix}"`,
      `rootdn "cn=admin,${directory.suffix}"`,
      'rootpw admin-secret',
      `directory ${join(dir, 'db')}`,
      'access to attrs=userPassword by self write by anonymous auth by * none',
      `access to * by dn.exact="${directory.bindDn}" read by self read by * none`,
      '',
    ].join('\n'),
  );
  writeFileSync(join(dir, 'seed.ldif'), seed);
  const loaded = spawnSync('/usr/sbin/slapadd', ['-f', conf, '-l', join(dir, 'seed.ldif')], { stdio: 'pipe' });
  if (loaded.status !== 0) throw new Error(`slapadd failed: ${loaded.stderr.toString()}`);
  const port = await freePort();
  // -d 256: the `stats` level (connections and operations) on stderr, read below.
  const child: ChildProcess = spawn(slapdPath, ['-f', conf, '-h', `ldap://127.0.0.1:${port}/`, '-d', '256'], { stdio: ['ignore', 'ignore', 'pipe'] });
  const operations: SlapdOperation[] = [];
  const waiting = new Set<() => void>();
  let partial = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    const lines = (partial + chunk.toString('utf8')).split('\n');
    partial = lines.pop() ?? '';
    for (const line of lines) {
      // `conn=1001 fd=12 ACCEPT from …`, `conn=1001 op=0 BIND dn="…" method=128`, `conn=1001 op=0 RESULT tag=97 err=49 …`,
      // `conn=1001 op=1 SRCH base="…" scope=2 deref=0 filter="(uid=dora)"`, `conn=1001 op=2 UNBIND`.
      const found =
        / conn=(\d+) (?:fd=\d+ (ACCEPT) |op=\d+ (?:(BIND dn="[^"]*") method=|RESULT tag=97 (err=\d+)|(SRCH base="[^"]*").*?( filter="[^"]*")|(UNBIND)$|(EXT oid=\S+)))/.exec(
          line,
        );
      if (!found) continue;
      const [, conn, accept, bind, bindResult, searchBase, filter, unbind, ext] = found;
      const text = accept ?? bind ?? (bindResult ? `BIND ${bindResult}` : undefined) ?? (searchBase ? `${searchBase}${filter}` : undefined) ?? unbind ?? ext;
      if (text !== undefined) operations.push({ conn: Number(conn), text });
    }
    for (const wake of waiting) wake();
  });
  await waitForPort(port, 10_000);
  return {
    url: `ldap://127.0.0.1:${port}`,
    caFile: cert,
    operations: () => [...operations],
    loggedUpTo(marker: string) {
      return new Promise((resolve) => {
        const check = () => {
          const at = operations.findIndex((op) => op.text.startsWith('SRCH') && op.text.includes(marker));
          if (at < 0) return;
          waiting.delete(check);
          resolve(operations.slice(0, at + 1));
        };
        waiting.add(check);
        check();
      });
    },
    async stop() {
      if (child.exitCode === null) {
        const exited = new Promise((resolve) => child.once('exit', resolve));
        child.kill('SIGTERM');
        await exited;
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
