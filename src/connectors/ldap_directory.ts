/**
 * An LDAP directory (OpenLDAP, Active Directory) behind the ordinary password form, with ldapts,
 * in two steps: find the entry (bind as the service account, search with the configured filter,
 * the typed name escaped, RFC 4515), then — once the sign-in throttle has counted the attempt
 * against that entry — bind as the entry with the typed password and read the groups that name it;
 * for a name it does not have, a decoy bind of the same cost (ldapDecoyBind), so that timing does
 * not tell the two apart.
 * StartTLS when asked (or ldaps://). Each step has one deadline (LATCHKEY_UPSTREAM_TIMEOUT) — a
 * directory that stalls, even in the middle of a TLS handshake, is cut off and its connections
 * destroyed — and an empty password never reaches the directory (an empty simple bind is an
 * anonymous bind, RFC 4513 §5.1.2).
 */
import { isIP } from 'node:net';
import { Client, InvalidCredentialsError } from 'ldapts';
import { randomSecret } from '../crypto/secrets.js';
import type { LdapConfig } from './connector_config.js';
import { escapeFilterValue, userFilter } from './ldap_filter.js';
import { ldapCause, networkCause, type LdapStep, type UpstreamCause, type UpstreamFailureKind } from './upstream_cause.js';
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

/**
 * The directory could not answer: `detail` says why for the log (the step, the result code by
 * name, the address), `failure` whether it is down or set up wrong.
 */
export interface LdapUnavailable {
  kind: 'unavailable';
  detail: string;
  failure: UpstreamFailureKind;
}

export type LdapLookup = { kind: 'found'; entry: LdapEntry } | { kind: 'no_such_user' } | LdapUnavailable;

export type LdapOutcome = { kind: 'signed_in'; profile: UpstreamProfile } | { kind: 'wrong_password' } | LdapUnavailable;

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

/** A failure and the step of the conversation it happened at (so the cause can name the step). */
class StepFailure extends Error {
  constructor(
    readonly step: LdapStep,
    readonly error: unknown,
  ) {
    super(step);
  }
}

/** Runs one step of the conversation, labelling what fails with the step. */
async function step<T>(name: LdapStep, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (err) {
    if (err instanceof StepFailure) throw err;
    throw new StepFailure(name, err);
  }
}

/**
 * Runs `work` against the directory under one deadline: connections are opened through `connect`
 * (StartTLS first when asked) and all destroyed once the answer is given, whichever came first.
 * A failure is described with its step (upstream_cause.ts): the log then says "the service
 * account's bind was refused (invalidCredentials, 0x31)", not a bare result code.
 */
async function withDirectory<T>(
  settings: LdapConfig,
  timeoutSeconds: number,
  work: (connect: () => Promise<Client>) => Promise<T>,
): Promise<T | (LdapUnavailable & { step: LdapStep | 'deadline'; network: boolean })> {
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
      await step('starttls', () => client.startTLS({ minVersion: 'TLSv1.2', host, ...(isIP(host) ? {} : { servername: host }) }));
    }
    return client;
  };
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<LdapUnavailable & { step: 'deadline'; network: boolean }>((resolve) => {
    timer = setTimeout(
      () =>
        resolve({
          kind: 'unavailable',
          step: 'deadline',
          network: true,
          failure: 'unreachable',
          detail: `no answer from ${settings.url} within ${timeoutSeconds} s`,
        }),
      timeoutMs,
    );
  });
  try {
    return await Promise.race([work(connect), deadline]);
  } catch (err) {
    const failed = err instanceof StepFailure ? err : new StepFailure('service_bind', err);
    const { kind, cause }: UpstreamCause = ldapCause(failed.error, failed.step, settings, timeoutSeconds);
    const network = networkCause(failed.error, settings.url, timeoutSeconds) !== undefined;
    return { kind: 'unavailable', step: failed.step, network, failure: kind, detail: cause.slice(0, 500) };
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
    await step('service_bind', () => service.bind(settings.bindDn, bindPassword));
    const { searchEntries } = await step('user_search', () =>
      service.search(settings.userBase, {
        scope: 'sub',
        filter: userFilter(settings.userFilter, username),
        attributes: ['uid', 'cn', 'displayName', 'mail', 'sAMAccountName', ...stableIdAttributes],
        explicitBufferAttributes: ['objectGUID'],
        sizeLimit: 2,
      }),
    );
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
 * What a wrong password costs the directory, for a name it does not have: the second connection
 * and bind that ldapSignIn makes for an entry it found, with a DN that cannot exist (a random name
 * under the user base) and a throwaway password — the typed one goes to no entry. Without it a
 * name the directory has answers a wrong password one connection and bind later (~30 ms) than a
 * name it does not, and the answer's timing lists the directory's people (OWASP's Authentication
 * Cheat Sheet: an existing and an absent account answer alike, in the same time). Whatever the directory
 * answers is ignored: the refusal is the same either way.
 */
export async function ldapDecoyBind(settings: LdapConfig, timeoutSeconds: number): Promise<void> {
  await withDirectory(settings, timeoutSeconds, async (connect) => {
    const decoy = await connect();
    try {
      await decoy.bind(`cn=latchkey-no-such-entry-${randomSecret()},${settings.userBase}`, randomSecret());
    } catch {
      // invalidCredentials, as for a wrong password: the answer was never going to be used.
    }
    return { kind: 'done' as const };
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
      throw new StepFailure('user_bind', err);
    }
    let groups: string[] = [];
    if (settings.groupBase !== undefined) {
      const service = await connect();
      await step('service_bind', () => service.bind(settings.bindDn, bindPassword));
      const dn = escapeFilterValue(entry.dn);
      const uid = escapeFilterValue(entry.uid ?? entry.username ?? '');
      const groupBase = settings.groupBase;
      const found = await step('group_search', () =>
        service.search(groupBase, {
          scope: 'sub',
          filter: `(|(member=${dn})(uniqueMember=${dn})(memberUid=${uid}))`,
          attributes: ['cn'],
          sizeLimit: 500,
        }),
      );
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

/** What the service account could do, step by step, when the directory was checked. */
export interface LdapServiceCheck {
  /** The steps that worked, in order. */
  passed: Array<'connect' | LdapStep>;
  failed: { step: 'connect' | LdapStep | 'deadline'; cause: string; failure: UpstreamFailureKind } | undefined;
}

/** A name no directory has: the user search is tried with the filter without finding anyone. */
const probeUsername = 'latchkey-connector-check';

/**
 * What every sign-in through this directory needs, without a person: a connection (StartTLS when
 * asked), the service account's bind, and a search of the user base with the user filter (and of
 * the group base). No person's password is sent.
 */
export async function ldapServiceCheck(settings: LdapConfig, bindPassword: string, timeoutSeconds: number): Promise<LdapServiceCheck> {
  const passed: LdapServiceCheck['passed'] = [];
  const outcome = await withDirectory(settings, timeoutSeconds, async (connect) => {
    const service = await connect();
    if (settings.startTls) passed.push('connect', 'starttls');
    await step('service_bind', () => service.bind(settings.bindDn, bindPassword));
    if (!settings.startTls) passed.push('connect');
    passed.push('service_bind');
    await step('user_search', () =>
      service.search(settings.userBase, { scope: 'sub', filter: userFilter(settings.userFilter, probeUsername), attributes: ['1.1'], sizeLimit: 1 }),
    );
    passed.push('user_search');
    const groupBase = settings.groupBase;
    if (groupBase !== undefined) {
      await step('group_search', () => service.search(groupBase, { scope: 'base', filter: '(objectClass=*)', attributes: ['1.1'] }));
      passed.push('group_search');
    }
    return { kind: 'ok' as const };
  });
  // The answer is given: steps still under way past the deadline no longer count.
  const done = [...passed];
  if (outcome.kind === 'ok') return { passed: done, failed: undefined };
  // ldapts connects on the first operation: a connection that never came about is the
  // connection's failure, whatever step was under way; a refusal means it did come about. A
  // certificate refused after StartTLS is StartTLS's failure.
  const connectFailed = outcome.network && !done.includes('connect') && !(outcome.step === 'starttls' && outcome.detail.startsWith('TLS with'));
  if (!connectFailed && !done.includes('connect')) done.unshift('connect');
  return { passed: done, failed: { step: connectFailed ? 'connect' : outcome.step, cause: outcome.detail, failure: outcome.failure } };
}

export { UpstreamError };
