/**
 * An LDAP directory (OpenLDAP, Active Directory) behind the ordinary password form, with ldapts,
 * in two steps: find the entry (bind as the service account, search with the configured filter,
 * the typed name escaped, RFC 4515), then — once the sign-in throttle has counted the attempt
 * against that entry — bind as the entry with the typed password and read the groups that name it.
 * StartTLS when asked (or ldaps://). Each step has one deadline (LATCHKEY_UPSTREAM_TIMEOUT) — a
 * directory that stalls, even in the middle of a TLS handshake, is cut off and its connections
 * destroyed — and an empty password never reaches the directory (an empty simple bind is an
 * anonymous bind, RFC 4513 §5.1.2).
 */
import { isIP } from 'node:net';
import { Client, InvalidCredentialsError } from 'ldapts';
import type { LdapConfig } from './connector_config.js';
import { errorMessage } from '../errors.js';
import { escapeFilterValue, userFilter } from './ldap_filter.js';
import { cleanGroups, UpstreamError, type UpstreamProfile } from './upstream_profile.js';

/** The one entry a name resolved to, before any password is tried against it. */
export interface LdapEntry {
  dn: string;
  /** Names the entry for good (stableIdAttributes, else `dn:` and the DN): the identity's subject. */
  subject: string;
  /** What the entry says of the person, as read by the service account. */
  uid: string | undefined;
  username: string | undefined;
  email: string | undefined;
  name: string | undefined;
}

export type LdapLookup = { kind: 'found'; entry: LdapEntry } | { kind: 'no_such_user' } | { kind: 'unavailable'; detail: string };

export type LdapOutcome = { kind: 'signed_in'; profile: UpstreamProfile } | { kind: 'wrong_password' } | { kind: 'unavailable'; detail: string };

/**
 * Attributes that name an entry for good, whatever it is renamed to: OpenLDAP's entryUUID, Active
 * Directory's objectGUID, 389 Directory Server's nsUniqueId, FreeIPA's ipaUniqueID. Without one the
 * DN is used, which a directory may hand to someone else later.
 */
const stableIdAttributes = ['entryUUID', 'objectGUID', 'nsUniqueId', 'ipaUniqueID'];

function first(value: unknown): string | undefined {
  const v: unknown = Array.isArray(value) ? value[0] : value;
  if (typeof v === 'string') return v === '' ? undefined : v;
  if (Buffer.isBuffer(v)) return v.length === 0 ? undefined : v.toString('utf8');
  return undefined;
}

function stableId(entry: Record<string, unknown>): string | undefined {
  for (const name of stableIdAttributes) {
    const raw = Array.isArray(entry[name]) ? (entry[name] as unknown[])[0] : entry[name];
    if (Buffer.isBuffer(raw) && raw.length > 0) return `${name}:${raw.toString('hex')}`;
    if (typeof raw === 'string' && raw !== '') return name === 'entryUUID' ? raw : `${name}:${raw}`;
  }
  return undefined;
}

/** Destroys what a client holds, whatever state it is in (a stalled TLS handshake included). */
function destroy(client: Client): void {
  (client as unknown as { socket?: { destroy(): void } }).socket?.destroy();
}

/**
 * Runs `work` against the directory under one deadline: connections are opened through `connect`
 * (StartTLS first when asked) and all destroyed once the answer is given, whichever came first.
 */
async function withDirectory<T>(
  settings: LdapConfig,
  timeoutSeconds: number,
  work: (connect: () => Promise<Client>) => Promise<T>,
): Promise<T | { kind: 'unavailable'; detail: string }> {
  const timeoutMs = timeoutSeconds * 1000;
  const clients: Client[] = [];
  // Set once the answer is given (the deadline may win while a step is still under way): no
  // connection is opened after it, so nothing outlives the deadline and no password is sent late.
  let abandoned = false;
  const connect = async (): Promise<Client> => {
    if (abandoned) throw new Error('the sign-in has already been answered');
    const client = new Client({ url: settings.url, timeout: timeoutMs, connectTimeout: timeoutMs, strictDN: false });
    clients.push(client);
    if (settings.startTls) {
      // The certificate is checked against the directory's own name (ldapts would check "localhost").
      const host = new URL(settings.url.replace(/^ldaps?:/, 'http:')).hostname.replace(/^\[|\]$/g, '');
      await client.startTLS({ minVersion: 'TLSv1.2', host, ...(isIP(host) ? {} : { servername: host }) });
    }
    return client;
  };
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<{ kind: 'unavailable'; detail: string }>((resolve) => {
    timer = setTimeout(() => resolve({ kind: 'unavailable', detail: `no answer within ${timeoutSeconds} s` }), timeoutMs);
  });
  try {
    return await Promise.race([work(connect), deadline]);
  } catch (err) {
    return { kind: 'unavailable', detail: errorMessage(err).slice(0, 300) };
  } finally {
    abandoned = true;
    clearTimeout(timer);
    for (const client of clients) {
      // A polite unbind where the connection works, and in any case nothing left open.
      void Promise.race([client.unbind(), new Promise((r) => setTimeout(r, 200))])
        .catch(() => undefined)
        .finally(() => destroy(client));
    }
  }
}

/**
 * Which entry the (prepared) name means: bound as the service account, the configured filter with
 * the name escaped (RFC 4515). Nobody, or more than one entry: no such user (a broad filter must
 * not pick one). No password is sent: the caller counts the attempt against the entry first.
 */
export async function ldapFindEntry(settings: LdapConfig, bindPassword: string, username: string, timeoutSeconds: number): Promise<LdapLookup> {
  if (username === '') return { kind: 'no_such_user' };
  return withDirectory(settings, timeoutSeconds, async (connect): Promise<LdapLookup> => {
    const service = await connect();
    await service.bind(settings.bindDn, bindPassword);
    const { searchEntries } = await service.search(settings.userBase, {
      scope: 'sub',
      filter: userFilter(settings.userFilter, username),
      attributes: ['uid', 'cn', 'displayName', 'mail', 'sAMAccountName', ...stableIdAttributes],
      explicitBufferAttributes: ['objectGUID'],
      sizeLimit: 2,
    });
    const [entry] = searchEntries;
    if (searchEntries.length !== 1 || entry === undefined) return { kind: 'no_such_user' };
    const uid = first(entry.uid);
    return {
      kind: 'found',
      entry: {
        dn: entry.dn,
        subject: stableId(entry) ?? `dn:${entry.dn}`,
        uid,
        username: uid ?? first(entry.sAMAccountName) ?? username,
        email: first(entry.mail),
        name: first(entry.displayName) ?? first(entry.cn),
      },
    };
  });
}

/**
 * Binds as the entry found with the typed password (an empty one never reaches the directory: an
 * empty simple bind is an anonymous bind, RFC 4513 §5.1.2), then reads the groups that name it.
 */
export async function ldapSignIn(settings: LdapConfig, bindPassword: string, entry: LdapEntry, password: string, timeoutSeconds: number): Promise<LdapOutcome> {
  if (password === '') return { kind: 'wrong_password' };
  return withDirectory(settings, timeoutSeconds, async (connect): Promise<LdapOutcome> => {
    const person = await connect();
    try {
      await person.bind(entry.dn, password);
    } catch (err) {
      if (err instanceof InvalidCredentialsError) return { kind: 'wrong_password' };
      throw err;
    }
    let groups: string[] = [];
    if (settings.groupBase !== undefined) {
      const service = await connect();
      await service.bind(settings.bindDn, bindPassword);
      const dn = escapeFilterValue(entry.dn);
      const uid = escapeFilterValue(entry.uid ?? entry.username ?? '');
      const found = await service.search(settings.groupBase, {
        scope: 'sub',
        filter: `(|(member=${dn})(uniqueMember=${dn})(memberUid=${uid}))`,
        attributes: ['cn'],
        sizeLimit: 500,
      });
      // A directory returns entries in no particular order: sorted, tokens do not change for nothing.
      groups = cleanGroups(found.searchEntries.map((g) => first(g.cn))).sort();
    }
    return {
      kind: 'signed_in',
      profile: {
        subject: entry.subject,
        username: entry.username,
        email: entry.email,
        // A directory's mail attribute is set by its administrators, as our own entries are.
        emailVerified: entry.email !== undefined,
        name: entry.name,
        groups,
      },
    };
  });
}

export { UpstreamError };
