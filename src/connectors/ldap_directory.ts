/**
 * An LDAP directory (OpenLDAP, Active Directory) behind the ordinary password form, with ldapts:
 * bind as the service account, find the person by the configured filter (the typed name escaped,
 * RFC 4515), bind as the entry found with the typed password, then read the groups that name the
 * entry. StartTLS when asked (or ldaps://). Every step has a time limit (LATCHKEY_UPSTREAM_TIMEOUT), and an empty
 * password never reaches the directory (an empty simple bind is an anonymous bind, RFC 4513 §5.1.2).
 */
import { isIP } from 'node:net';
import { Client, InvalidCredentialsError } from 'ldapts';
import type { LdapConfig } from './connector_config.js';
import { escapeFilterValue, userFilter } from './ldap_filter.js';
import { cleanGroups, UpstreamError, type UpstreamProfile } from './upstream_profile.js';

export type LdapOutcome = { kind: 'signed_in'; profile: UpstreamProfile } | { kind: 'no_such_user' } | { kind: 'wrong_password' } | { kind: 'unavailable'; detail: string };

function first(value: unknown): string | undefined {
  const v = Array.isArray(value) ? value[0] : value;
  if (typeof v === 'string') return v === '' ? undefined : v;
  if (Buffer.isBuffer(v)) return v.toString('utf8') || undefined;
  return undefined;
}

async function connect(settings: LdapConfig, timeoutMs: number): Promise<Client> {
  const client = new Client({ url: settings.url, timeout: timeoutMs, connectTimeout: timeoutMs, strictDN: false });
  if (settings.startTls) {
    // The certificate is checked against the directory's own name (ldapts would check "localhost").
    const host = new URL(settings.url.replace(/^ldaps?:/, 'http:')).hostname.replace(/^\[|\]$/g, '');
    await client.startTLS({ minVersion: 'TLSv1.2', host, ...(isIP(host) ? {} : { servername: host }) });
  }
  return client;
}

export async function ldapSignIn(settings: LdapConfig, bindPassword: string, username: string, password: string, timeoutSeconds: number): Promise<LdapOutcome> {
  const timeoutMs = timeoutSeconds * 1000;
  if (username === '' || password === '') return { kind: 'wrong_password' };
  let service: Client | undefined;
  let person: Client | undefined;
  try {
    service = await connect(settings, timeoutMs);
    await service.bind(settings.bindDn, bindPassword);
    const { searchEntries } = await service.search(settings.userBase, {
      scope: 'sub',
      filter: userFilter(settings.userFilter, username),
      attributes: ['uid', 'cn', 'displayName', 'mail', 'entryUUID', 'sAMAccountName', 'objectGUID'],
      sizeLimit: 2,
    });
    // Nobody, or more than one entry for a name: no sign-in (a broad filter must not pick one).
    if (searchEntries.length !== 1) return { kind: 'no_such_user' };
    const entry = searchEntries[0]!;
    person = await connect(settings, timeoutMs);
    try {
      await person.bind(entry.dn, password);
    } catch (err) {
      if (err instanceof InvalidCredentialsError) return { kind: 'wrong_password' };
      throw err;
    }
    let groups: string[] = [];
    if (settings.groupBase !== undefined) {
      const dn = escapeFilterValue(entry.dn);
      const uid = escapeFilterValue(first(entry.uid) ?? username);
      const found = await service.search(settings.groupBase, {
        scope: 'sub',
        filter: `(|(member=${dn})(uniqueMember=${dn})(memberUid=${uid}))`,
        attributes: ['cn'],
        sizeLimit: 500,
      });
      // A directory returns entries in no particular order: sorted, tokens do not change for nothing.
      groups = cleanGroups(found.searchEntries.map((g) => first(g.cn))).sort();
    }
    const guid = entry.objectGUID;
    return {
      kind: 'signed_in',
      profile: {
        subject: first(entry.entryUUID) ?? (Buffer.isBuffer(guid) ? guid.toString('hex') : undefined) ?? entry.dn,
        username: first(entry.uid) ?? first(entry.sAMAccountName) ?? username,
        email: first(entry.mail),
        // A directory's mail attribute is set by its administrators, as our own entries are.
        emailVerified: first(entry.mail) !== undefined,
        name: first(entry.displayName) ?? first(entry.cn),
        groups,
      },
    };
  } catch (err) {
    return { kind: 'unavailable', detail: (err as Error).message?.slice(0, 300) ?? String(err) };
  } finally {
    await person?.unbind().catch(() => undefined);
    await service?.unbind().catch(() => undefined);
  }
}

export { UpstreamError };
