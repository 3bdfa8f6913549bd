/**
 * The Store, written once for SQLite and PostgreSQL: every verb is a generator of statements
 * (sql.ts) in PostgreSQL's syntax, which each database's executor runs — SQLite synchronously,
 * inside its group commit, PostgreSQL awaiting each step on a pooled connection — and its dialect
 * compiles once (sqlite_dialect.ts). What the databases do differently is in those two places and
 * in the few statements written for each (`either`); what a database needs that the other does
 * not (SQLite's files and checkpoints, PostgreSQL's pool, time limits and migrations under a lock)
 * is in its subclass. Caching (directory_cache.ts) and SQLite's batching wrap the store; neither
 * reads its SQL.
 *
 * What single use and concurrency rest on, on both databases:
 * - single use (codes, approved device grants, rotation) is one conditional UPDATE … RETURNING,
 *   which PostgreSQL re-checks against the winner's committed row, so exactly one caller wins
 *   (SQLite has one writer at a time, so the same statement is trivially right there);
 * - a read-compute-write locks its row (FOR UPDATE on PostgreSQL; SQLite's IMMEDIATE transaction
 *   holds the database) or stores its result only if the row is still as it was read;
 * - every write to a refresh-token family takes that family's lock first (lockFamily), so a token
 *   inserted while its family is being revoked is still born revoked.
 */
import { randomBytes, randomInt } from 'node:crypto';
import {
  MissingReferenceError,
  joinedFamily,
  maxAccessTokenLifetime,
  type AnotherWayIn,
  type ApiRecord,
  type AuditEventQuery,
  type AuditEventRecord,
  type AuthMethod,
  type AuthorizationCodeRecord,
  type ClientChanges,
  type ClientGrantRecord,
  type ClientRecord,
  type ConfigurationChange,
  type ConnectorRecord,
  type ConsentRecord,
  type DeviceGrantRecord,
  type DeviceRecoveryRefusal,
  type EmailTokenPurpose,
  type EmailTokenRecord,
  type GraceRefusal,
  type GroupRolesChange,
  type ManagedKind,
  type NewRecord,
  type NewRole,
  type PasskeyRecord,
  type Permission,
  type PurgeCounts,
  type PushedRequestRecord,
  type RateLimitCounter,
  type RefreshFamilySummary,
  type RefreshTokenRecord,
  type RegisteredClientUpdate,
  type RegistrationTokenRecord,
  type RemovedIdentityRecord,
  type RoleChanges,
  type RoleRecord,
  type RecordedIssuer,
  type SealedSecret,
  type SessionRecord,
  type SigningKeyRecord,
  type Store,
  type TotpRecord,
  type UpstreamProfileUpdate,
  type UserIdentityRecord,
  type UserProfileClaims,
  type UserRecord,
  type UserRevocationGuard,
} from '../store.js';
import type { MigrationRun } from '../migration_history.js';
import {
  amrToText,
  claimsToText,
  clientChangeColumns,
  profileToText,
  registeredClientColumns,
  toApi,
  toAuditEvent,
  toAuthorizationCode,
  toClient,
  toClientGrant,
  toConnector,
  toConsent,
  toDeviceGrant,
  toEmailToken,
  toPasskey,
  toPushedRequest,
  toRateLimitCounter,
  toRefreshFamilySummary,
  toRefreshToken,
  toRemovedIdentity,
  toRole,
  toSession,
  toSigningKey,
  toTotp,
  toUser,
  toUserIdentity,
  toRegistrationToken,
  toWebOrigins,
  type Row,
} from '../rows.js';
import { either } from './dialect.js';
import { WriteReadiness } from './write_readiness.js';
import { insert, lock, many, one, referring, run, type Mode, type Op, type Verb } from './sql.js';

/** Seconds after its latest event that a rate-limit counter can be purged (the longest window, 999,999 s, or back-off, an hour, and some). */
export const rateLimitCounterLifetime = 1_000_000 + 7200;

/** listAuditEvents never returns more than this many events at once, whatever the caller asks. */
export const maxAuditEvents = 500;

/** The limit of an audit query: at most maxAuditEvents, none for a negative one. */
export function auditLimit(limit: number): number {
  return Number.isFinite(limit) ? Math.min(Math.max(Math.trunc(limit), 0), maxAuditEvents) : maxAuditEvents;
}

/**
 * The conditions of an audit query (combined with AND), their values numbered from `first`. An
 * event prefix ("user.") is a range of the event index rather than a LIKE (whose _ and % would be
 * wildcards): every name from the prefix up to, not including, the prefix with its final '.'
 * replaced by the next character, '/'.
 */
function auditEventConditions(q: AuditEventQuery, params: unknown[]): string[] {
  const param = (value: unknown) => (params.push(value), `$${params.length}`);
  const where: string[] = [];
  if (q.since !== undefined) where.push(`at >= ${param(q.since)}`);
  if (q.until !== undefined) where.push(`at < ${param(q.until)}`);
  if (q.userId !== undefined) where.push(`user_id = ${param(q.userId)}`);
  if (q.clientId !== undefined) where.push(`client_id = ${param(q.clientId)}`);
  if (q.actor !== undefined) where.push(`actor = ${param(q.actor)}`);
  if (q.event !== undefined && q.event.endsWith('.')) {
    where.push(`event COLLATE "C" >= ${param(q.event)}`, `event COLLATE "C" < ${param(`${q.event.slice(0, -1)}/`)}`);
  } else if (q.event !== undefined) {
    where.push(`event COLLATE "C" = ${param(q.event)}`);
  }
  if (q.beforeId !== undefined) where.push(`id < ${param(q.beforeId)}`);
  return where;
}

/**
 * The condition that refresh token `t` is its family's live one at `now` (a placeholder): neither
 * rotated, revoked nor superseded, unexpired, in a family not revoked.
 */
function liveToken(t: string, now: string): string {
  return `${t}.rotated_at IS NULL AND ${t}.revoked_at IS NULL AND ${t}.superseded_at IS NULL AND ${t}.expires_at > ${now}
    AND NOT EXISTS (SELECT 1 FROM revoked_refresh_families r WHERE r.family_id = ${t}.family_id)`;
}

/** A boolean a statement computed: SQLite's 1, PostgreSQL's true. */
const isTrue = (value: unknown): boolean => value === true || value === 1;

/** A device poll that keeps losing its compare-and-set to other polls of the same code then locks the row. */
const pollAttemptsBeforeLocking = 4;

/**
 * A username, equal regardless of the case of ASCII letters only, through each database's index:
 * SQLite's COLLATE NOCASE column, PostgreSQL's unique index on lower() under the "C" collation
 * (which folds A-Z and nothing else).
 */
const usernameIs = (param: string) => either({ sqlite: `username = ${param}`, postgres: `lower(username COLLATE "C") = lower(${param}::text COLLATE "C")` });

/** An email, equal regardless of ASCII case, through each database's index. */
const emailIs = (param: string) => either({ sqlite: `email = ${param} COLLATE NOCASE`, postgres: `lower(email) = lower(${param})` });

/**
 * PostgreSQL text cannot hold U+0000 (SQLite's can), so no stored key contains it. The lookups that
 * take a request's raw input (client_id, username, audience, interaction id) answer "no such record"
 * for such a key, on both databases alike, instead of failing the request with an encoding error.
 */
const storable = (key: string): boolean => !key.includes('\u0000');

/**
 * An audit field as it can be stored: a U+0000 (someone's raw input) becomes U+FFFD, since a
 * record of what happened must not be lost to PostgreSQL's encoding error.
 */
const auditText = (value: string | undefined): string | null => (value === undefined ? null : value.replaceAll('\u0000', '\uFFFD'));

/**
 * A user row with its roles, sorted in byte order, as a JSON array: one statement, so that
 * findUserById (on the token path) stays a single indexed read.
 */
const userWithRoles = `users.*,
  coalesce((SELECT json_agg(role ORDER BY role COLLATE "C")
            FROM (SELECT DISTINCT role FROM user_roles WHERE user_roles.user_id = users.id) AS held)::text, '[]') AS roles`;

/** A role row with its permissions (sorted by api, then scope, as a JSON array) and how many hold it. */
const roleWithPermissions = `roles.*,
  coalesce((SELECT json_agg(json_build_object('api', api, 'scope', scope) ORDER BY api COLLATE "C", scope COLLATE "C")
            FROM role_permissions WHERE role_permissions.role = roles.name)::text, '[]') AS permissions,
  coalesce((SELECT json_agg(group_name ORDER BY group_name COLLATE "C") FROM role_groups WHERE role_groups.role_name = roles.name)::text, '[]') AS group_names,
  (SELECT count(DISTINCT user_id) FROM user_roles WHERE user_roles.role = roles.name) AS members`;

/**
 * Serialises, until the transaction ends, every write to refresh-token family `familyId`: the
 * insert of a token and the revocation of its family. Without it a rotation and a revocation
 * running at once would each miss the other's uncommitted row, and leave a live token in a revoked
 * family. Taken first in each such transaction, before any row lock, so no two can deadlock; the
 * one exception, redeemDeviceGrant, takes it after the grant's row lock for a family it has just
 * made up, which nobody else can be holding or waiting for.
 */
function* lockFamily(familyId: string): Verb<void> {
  yield* lock('refresh_family', familyId);
}

function* insertUser(u: UserRecord): Verb<void> {
  yield* insert(
    `user ${u.username}`,
    `INSERT INTO users (id, username, email, name, password_hash, disabled, created_at, tokens_revoked_at, source, email_verified, groups,
       profile, updated_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
    u.id,
    u.username,
    u.email,
    u.name ?? null,
    u.passwordHash,
    u.disabled,
    u.createdAt,
    u.tokensRevokedAt ?? null,
    u.source,
    u.emailVerified,
    JSON.stringify(u.groups),
    profileToText(u.profile),
    u.updatedAt,
  );
}

function* insertIdentity(i: UserIdentityRecord): Verb<void> {
  yield* insert(
    'identity',
    'INSERT INTO user_identities (connector_id, subject, user_id, created_at, last_sign_in_at) VALUES ($1, $2, $3, $4, $5)',
    i.connectorId,
    i.subject,
    i.userId,
    i.createdAt,
    i.lastSignInAt ?? null,
  );
}
/**
 * Inside a transaction: sessions, refresh families and earlier access tokens of the user end.
 * Each family is revoked under its own lock (lockFamily, in a fixed order), so a rotation racing
 * this cannot leave a live successor behind.
 */
function* endEverythingOf(userId: string, now: number): Verb<void> {
  yield* run('UPDATE users SET tokens_revoked_at = greatest(coalesce(tokens_revoked_at, 0), $1) WHERE id = $2', now, userId);
  yield* run('DELETE FROM sessions WHERE user_id = $1', userId);
  // Only families with a live token need their lock: one wholly revoked cannot grow (a token is
  // added to a family only by rotating a live one), and its access tokens are refused by the
  // user's tokens_revoked_at set above.
  yield* revokeLockedFamilies(yield* lockUnrevokedFamilies(userId), now);
}

function clientParams(c: NewRecord<ClientRecord>): unknown[] {
  return [
    c.clientId,
    c.name,
    c.secretHash ?? null,
    JSON.stringify(c.redirectUris),
    JSON.stringify(c.grantTypes),
    c.requirePkce,
    c.firstParty,
    c.builtIn,
    c.createdAt,
    JSON.stringify(c.postLogoutRedirectUris),
    c.backchannelLogoutUri ?? null,
    c.jwksUri ?? null,
    c.jwks === undefined ? null : JSON.stringify(c.jwks),
    c.secretSealed ?? null,
    c.previousSecretHash ?? null,
    c.previousSecretSealed ?? null,
    c.previousSecretExpiresAt ?? null,
    c.disabled,
    c.requirePar,
    JSON.stringify(c.webOrigins),
    c.managedBy ?? null,
  ];
}
/** A client's row; DuplicateError when the client_id is taken. */
function* insertClient(c: NewRecord<ClientRecord>, ifNew = false): Verb<number> {
  return yield* insert(
    `client ${c.clientId}`,
    `INSERT INTO clients (client_id, name, secret_hash, redirect_uris, grant_types, require_pkce, first_party, built_in, created_at, post_logout_redirect_uris,
       backchannel_logout_uri, jwks_uri, jwks, secret_sealed, previous_secret_hash, previous_secret_sealed, previous_secret_expires_at, disabled, require_par, web_origins, managed_by, tokens_revoked_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, (SELECT removed_at FROM removed_clients WHERE client_id = $1))
     ${ifNew ? 'ON CONFLICT DO NOTHING' : ''}`,
    ...clientParams(c),
  );
}

function* insertSigningKey(key: Omit<SigningKeyRecord, 'retiredAt'>): Verb<void> {
  yield* run(
    'INSERT INTO signing_keys (kid, alg, private_key_pem, public_jwk, created_at) VALUES ($1, $2, $3, $4, $5)',
    key.kid,
    key.alg,
    key.privateKeyPem,
    JSON.stringify(key.publicJwk),
    key.createdAt,
  );
}
/**
 * SQLite's BEGIN IMMEDIATE for the signing keys: one changer at a time (this mode conflicts with
 * itself), while readers go on reading.
 */
function* lockSigningKeys(): Verb<void> {
  yield* lock('signing_keys', '');
}
/**
 * Inside a transaction: takes the lock of each not-yet-revoked family of the user (of one client,
 * when given), in a fixed order as endEverythingOf does, and returns their ids, so that a
 * rotation racing the revocation cannot leave a live successor behind.
 */
function* lockUnrevokedFamilies(userId: string, clientId?: string): Verb<string[]> {
  const rows =
    clientId === undefined
      ? yield* many('SELECT DISTINCT family_id COLLATE "C" AS family_id FROM refresh_tokens WHERE user_id = $1 AND revoked_at IS NULL ORDER BY 1', userId)
      : yield* many(
          'SELECT DISTINCT family_id COLLATE "C" AS family_id FROM refresh_tokens WHERE user_id = $1 AND client_id = $2 AND revoked_at IS NULL ORDER BY 1',
          userId,
          clientId,
        );
  const familyIds = rows.map((row) => String(row.family_id));
  for (const familyId of familyIds) yield* lockFamily(familyId);
  return familyIds;
}
/** As revokeRefreshFamily, for families whose locks this transaction holds. */
function* revokeLockedFamilies(familyIds: string[], now: number): Verb<void> {
  if (familyIds.length === 0) return;
  yield* run(
    // WHERE true: SQLite reads ON CONFLICT after a SELECT without a WHERE as part of a join.
    'INSERT INTO revoked_refresh_families (family_id, revoked_at) SELECT f, $2 FROM unnest($1::text[]) AS f WHERE true ON CONFLICT DO NOTHING',
    familyIds,
    now,
  );
  yield* run('UPDATE refresh_tokens SET revoked_at = $1 WHERE family_id = ANY($2::text[]) AND revoked_at IS NULL', now, familyIds);
}
/**
 * approved → consumed in one conditional UPDATE: the grant for the caller that won, recording
 * what it hands out (the access token's jti, the refresh family) for a recovery to replace, and
 * the DPoP key it was handed out to, which a recovery must prove again.
 */
function* spendDeviceGrant(
  id: string,
  now: number,
  issued: { accessTokenJti?: string | undefined; refreshFamilyId?: string | undefined; dpopJkt?: string | undefined } = {},
): Verb<DeviceGrantRecord | undefined> {
  const row = yield* one(
    `UPDATE device_grants SET status = 'consumed', consumed_at = $1, access_token_jti = $3, refresh_family_id = $4,
       issued_at = CASE WHEN $3::text IS NULL AND $4::text IS NULL THEN issued_at ELSE $1 END, dpop_jkt = $5
     WHERE id = $2 AND status = 'approved' AND expires_at > $1 RETURNING *`,
    now,
    id,
    issued.accessTokenJti ?? null,
    issued.refreshFamilyId ?? null,
    issued.dpopJkt ?? null,
  );
  return row && toDeviceGrant(row);
}

/** Whether the user's tokensRevokedAt is still what the guard says (held so until the transaction ends: see insertGuardedRefreshToken). */
function* guardHolds(userId: string, guard: UserRevocationGuard): Verb<boolean> {
  const row = yield* one('SELECT tokens_revoked_at FROM users WHERE id = $1 FOR SHARE', userId);
  return row !== undefined && (row.tokens_revoked_at === null ? undefined : Number(row.tokens_revoked_at)) === guard.userTokensRevokedAt;
}

/** Inside a transaction: the token, only while the user's tokensRevokedAt is what the guard says. */
function* insertGuardedRefreshToken(t: RefreshTokenRecord, guard: UserRevocationGuard | undefined): Verb<boolean> {
  yield* lockFamily(t.familyId);
  // FOR SHARE waits for a revocation holding the user row (endEverythingOf updates it first),
  // and holds such a revocation back until this family is committed, so it is then revoked too.
  if (guard !== undefined && !(yield* guardHolds(t.userId, guard))) return false;
  yield* insertRefreshToken(t);
  return true;
}
/** Inside a transaction that holds the family's lock (lockFamily). */
function* insertRefreshToken(t: RefreshTokenRecord): Verb<void> {
  yield* run(`INSERT INTO refresh_tokens (${refreshTokenColumns}) VALUES (${refreshTokenValues})`, ...refreshTokenParams(t));
}

/** A refresh token's columns, their values ($1 … $22: refreshTokenParams), born revoked in a family that already is. */
const refreshTokenColumns = `id, token_hash, family_id, client_id, user_id, scope, audience, auth_time, created_at, expires_at, family_expires_at, rotated_at,
  revoked_at, parent_id, superseded_at, amr, approved_ip, approved_user_agent, session_id, dpop_jkt, claims, access_token_jti`;
const refreshTokenValues = `$1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12,
  coalesce($13, (SELECT revoked_at FROM revoked_refresh_families WHERE family_id = $3)), $14, $15, $16, $17, $18, $19, $20, $21, $22`;

function refreshTokenParams(t: RefreshTokenRecord): unknown[] {
  return [
    t.id,
    t.tokenHash,
    t.familyId,
    t.clientId,
    t.userId,
    t.scope,
    t.audience,
    t.authTime,
    t.createdAt,
    t.expiresAt,
    t.familyExpiresAt,
    t.rotatedAt ?? null,
    t.revokedAt ?? null,
    t.parentId ?? null,
    t.supersededAt ?? null,
    amrToText(t.amr),
    t.approvedIp ?? null,
    t.approvedUserAgent ?? null,
    t.sessionId ?? null,
    t.dpopJkt ?? null,
    claimsToText(t.claims),
    t.accessTokenJti ?? null,
  ];
}

/**
 * Refuses access token `jti` from now on. Its row is kept while the token could still be valid:
 * it was issued before now, so for at most the longest lifetime (a row kept longer is harmless).
 */
function* revokeAccessTokenUntil(jti: string, now: number): Verb<void> {
  yield* run('INSERT INTO revoked_access_tokens (jti, expires_at) VALUES ($1, $2) ON CONFLICT DO NOTHING', jti, now + maxAccessTokenLifetime);
}
/** The live family summaries matching `filter` (a condition on token t, on $2 when it has a parameter). */
function* familySummaries(filter: string, now: number, ...params: unknown[]): Verb<RefreshFamilySummary[]> {
  const rows = yield* many(
    `WITH live AS (
       SELECT t.*, row_number() OVER (PARTITION BY t.family_id ORDER BY t.created_at DESC, t.expires_at DESC, t.id COLLATE "C" DESC) AS n
       FROM refresh_tokens t WHERE ${liveToken('t', '$1')} AND ${filter})
     SELECT l.family_id, l.user_id, l.client_id, l.scope, l.audience, l.expires_at, l.approved_ip, l.approved_user_agent, l.session_id,
       (SELECT min(f.created_at) FROM refresh_tokens f WHERE f.family_id = l.family_id) AS first_created_at,
       (SELECT max(f.created_at) FROM refresh_tokens f WHERE f.family_id = l.family_id) AS last_created_at
     FROM live l WHERE l.n = 1
     ORDER BY last_created_at DESC, l.family_id COLLATE "C"`,
    now,
    ...params,
  );
  return rows.map(toRefreshFamilySummary);
}
/**
 * Serialises, until the transaction ends, the changes to a user's whole set of second factors
 * (replacing the recovery codes, a reset): two at once would otherwise each miss the other's
 * uncommitted rows, and leave both new sets of codes behind.
 */
function* lockSecondFactors(userId: string): Verb<void> {
  yield* lock('second_factors', userId);
}
// --- Roles, API permissions, machine clients ---

/** Inside a transaction. A permission given twice is one permission; one of an unknown API is refused by its foreign key. */
function* insertPermissions(role: string, permissions: Permission[]): Verb<void> {
  for (const p of permissions) {
    yield* referring(`role ${role}`, 'INSERT INTO role_permissions (role, api, scope) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING', role, p.api, p.scope);
  }
}

/**
 * One conditional UPDATE: a simultaneous caller of another instance waits for the winner's row
 * and re-checks `used_at IS NULL` against it, so exactly one spends the token.
 */
function* spendRegistrationToken(tokenHash: string, now: number, clientId: string | undefined): Verb<boolean> {
  return (
    (yield* run(
      'UPDATE registration_tokens SET used_at = $1, client_id = $2 WHERE token_hash = $3 AND used_at IS NULL AND expires_at > $1',
      now,
      clientId ?? null,
      tokenHash,
    )) === 1
  );
}

export abstract class SqlStore implements Store {
  abstract readonly sharedAcrossInstances: boolean;
  abstract readonly migrationRun: MigrationRun;
  /**
   * Whether a statement may write through its WITH clauses (PostgreSQL; SQLite may not): the one
   * difference a verb's own steps follow — the device flow's redemption is then one statement.
   */
  protected abstract readonly writableCtes: boolean;
  /**
   * Whether a statement takes whole arrays as parameters and unnests them in order (PostgreSQL).
   * SQLite reads an array parameter from JSON text, which it parses again for each element read:
   * its bulk writes are a loop of one prepared statement inside one transaction instead.
   */
  protected abstract readonly arrayParameters: boolean;

  /** Runs a verb: `plain` statement by statement, `atomic` in one transaction, `bulk` in one without the request deadline. */
  protected abstract execute<T>(mode: Mode, verb: () => Verb<T>): Promise<T>;

  abstract ping(): Promise<boolean>;
  abstract databaseTime(): Promise<number>;

  /** Whether writes are taken (see write_readiness.ts): the probe is the verb at the end of this file. */
  private readonly writeReadiness = new WriteReadiness(() => this.execute('atomic', () => probeWrites(randomBytes(readinessProbeBytes).toString('base64url'))));

  /** Each implementation reports here every statement or transaction that failed. */
  protected noteFailure(err: unknown): void {
    this.writeReadiness.failed(err);
  }

  writesAccepted(): Promise<boolean> {
    return this.writeReadiness.accepted();
  }
  abstract close(): Promise<void>;
  abstract scrubFreedSpace(): Promise<void>;
  abstract reclaimSpace(pages?: number): Promise<number>;

  /** Runs a verb's steps (a generator function made once, at the end of this file) on `args`. */
  protected steps<A extends unknown[], T>(mode: Mode, steps: (...args: A) => Verb<T>, ...args: A): Promise<T> {
    return this.execute(mode, () => steps(...args));
  }

  /**
   * Runs a verb of one statement: its own step, without a generator around it (on SQLite the
   * hottest verbs are single reads, where a generator's steps would be a measurable share).
   */
  protected single(op: Op): Promise<unknown> {
    return this.execute('plain', () => singleStep(op));
  }

  /** The first row of one statement, as a record; undefined when there is none. */
  protected first<T>(record: (row: Row) => T, text: string, ...params: unknown[]): Promise<T | undefined> {
    return this.single({ kind: 'one', text, params }).then((row) => (row === undefined ? undefined : record(row as Row)));
  }

  /** Every row of one statement, as records. */
  protected rows<T>(record: (row: Row) => T, text: string, ...params: unknown[]): Promise<T[]> {
    return this.single({ kind: 'many', text, params }).then((rows) => (rows as Row[]).map(record));
  }

  /** How many rows one write changed. */
  protected write(text: string, ...params: unknown[]): Promise<number> {
    return this.single({ kind: 'run', text, params }) as Promise<number>;
  }

  /** Whether one write changed exactly one row. */
  protected changedOne(text: string, ...params: unknown[]): Promise<boolean> {
    return this.single({ kind: 'run', text, params }).then((changed) => changed === 1);
  }

  async purgeExpired(now: number, batchSize = -1): Promise<PurgeCounts> {
    const grace = 86400;
    // No DELETE … LIMIT in either database; a sub-select of the rows' own ids gives it.
    const limit = batchSize < 0 ? Number.MAX_SAFE_INTEGER : batchSize;
    const purge = (table: string, condition: string, ...params: unknown[]) =>
      run(`DELETE FROM ${table} WHERE ctid IN (SELECT ctid FROM ${table} WHERE ${condition} LIMIT $${params.length + 1})`, ...params, limit);
    return this.execute('bulk', function* () {
      const counts: PurgeCounts = {
        authorizationCodes: yield* purge('authorization_codes', 'expires_at <= $1', now - grace),
        deviceGrants: yield* purge('device_grants', 'expires_at <= $1', now - grace),
        sessions: yield* purge('sessions', 'expires_at <= $1', now),
        // A rotated or revoked token is kept until its family ends: presenting it again is theft.
        refreshTokens: yield* purge(
          'refresh_tokens',
          'family_expires_at <= $1 OR (rotated_at IS NULL AND revoked_at IS NULL AND expires_at <= $2)',
          now - grace,
          now - grace,
        ),
        revokedAccessTokens: yield* purge('revoked_access_tokens', 'expires_at <= $1', now),
        // A used link can do nothing more; an expired one is kept a day, like a code.
        emailTokens: yield* purge('email_tokens', 'expires_at <= $1 OR used_at IS NOT NULL', now - grace),
        usedOnce: yield* purge('used_once', 'expires_at <= $1', now),
        // Used or not, an expired initial access token can register nothing.
        registrationTokens: yield* purge('registration_tokens', 'expires_at <= $1', now),
        // Used or not, an expired pushed request can start nothing.
        pushedRequests: yield* purge('pushed_requests', 'expires_at <= $1', now),
      };
      // Access tokens of a revoked family are refused by its id, so the row outlives any of them
      // (access tokens live at most a year).
      yield* purge('revoked_refresh_families', 'revoked_at <= $1', now - 366 * 86400);
      yield* purge('removed_clients', 'removed_at <= $1', now - 366 * 86400);
      yield* purge('rate_limit_counters', 'last_at <= $1', now - rateLimitCounterLifetime);
      return counts;
    });
  }

  async countUsers(): Promise<number> {
    return this.steps('plain', countUsersSteps);
  }

  async createUser(u: UserRecord): Promise<void> {
    return this.execute('plain', () => insertUser(u));
  }

  async findUsersByEmail(email: string): Promise<UserRecord[]> {
    if (!storable(email)) return [];
    return this.rows(toUser, `SELECT ${userWithRoles} FROM users WHERE ${emailIs('$1')} ORDER BY lower(username COLLATE "C")`, email);
  }

  async createConnector(c: NewRecord<Omit<ConnectorRecord, 'position'>>): Promise<void> {
    return this.steps('atomic', createConnectorSteps, c);
  }

  async findConnector(id: string): Promise<ConnectorRecord | undefined> {
    if (!storable(id)) return undefined;
    return this.first(toConnector, 'SELECT * FROM connectors WHERE id = $1', id);
  }

  async listConnectors(): Promise<ConnectorRecord[]> {
    return this.rows(toConnector, 'SELECT * FROM connectors ORDER BY position, id COLLATE "C"');
  }

  async removeConnector(id: string): Promise<boolean> {
    return this.steps('plain', removeConnectorSteps, id);
  }

  async findIdentity(connectorId: string, subject: string): Promise<UserIdentityRecord | undefined> {
    if (!storable(connectorId) || !storable(subject)) return undefined;
    return this.first(toUserIdentity, 'SELECT * FROM user_identities WHERE connector_id = $1 AND subject = $2', connectorId, subject);
  }

  async createUserWithIdentity(user: UserRecord, identity: UserIdentityRecord): Promise<void> {
    return this.steps('atomic', createUserWithIdentitySteps, user, identity);
  }

  async linkIdentity(identity: UserIdentityRecord): Promise<void> {
    return this.execute('plain', () => insertIdentity(identity));
  }

  async recordUpstreamSignIn(connectorId: string, subject: string, now: number, update: UpstreamProfileUpdate): Promise<boolean> {
    if (!storable(connectorId) || !storable(subject)) return false;
    return this.execute('atomic', function* () {
      const row = yield* one(
        'UPDATE user_identities SET last_sign_in_at = $1 WHERE connector_id = $2 AND subject = $3 RETURNING user_id',
        now,
        connectorId,
        subject,
      );
      if (!row) return false;
      // SET reads the old row: updated_at moves only when the name or the email is really different.
      yield* run(
        `UPDATE users SET groups = $1, email = coalesce($2, email), name = CASE WHEN $3::boolean THEN $4 ELSE name END,
           email_verified = coalesce($5, email_verified),
           updated_at = CASE WHEN ($2::text IS NOT NULL AND $2::text IS DISTINCT FROM email) OR ($3::boolean AND $4::text IS DISTINCT FROM name)
             THEN $7 ELSE updated_at END
         WHERE id = $6`,
        JSON.stringify(update.groups),
        update.email ?? null,
        'name' in update,
        update.name ?? null,
        update.emailVerified ?? null,
        row.user_id,
        now,
      );
      return true;
    });
  }

  async listIdentities(userId: string | undefined): Promise<UserIdentityRecord[]> {
    return this.steps('plain', listIdentitiesSteps, userId);
  }

  async unlinkIdentity(userId: string, connectorId: string, now: number, anotherWayIn?: AnotherWayIn): Promise<UserIdentityRecord[] | 'last_way_in'> {
    if (!storable(userId) || !storable(connectorId)) return [];
    return this.execute('bulk', function* () {
      // The user's row is locked first: two removals of this user's identities at once take
      // turns, so the second sees what the first left (and the last way in stays).
      const user = yield* one('SELECT id FROM users WHERE id = $1 FOR UPDATE', userId);
      if (!user) return [];
      const bound = (yield* many(
        'SELECT * FROM user_identities WHERE user_id = $1 AND connector_id = $2 ORDER BY created_at, subject COLLATE "C"',
        userId,
        connectorId,
      )).map(toUserIdentity);
      if (bound.length === 0) return [];
      if (anotherWayIn) {
        // A password this server verifies (crypto/password.ts: Argon2id, or scrypt of earlier versions).
        const other = yield* one(
          `SELECT (password_hash LIKE '$argon2id$%' OR password_hash LIKE 'scrypt$%'
             OR EXISTS (SELECT 1 FROM user_identities WHERE user_id = users.id AND connector_id <> $1)
             OR ($2::boolean AND EXISTS (SELECT 1 FROM webauthn_credentials WHERE user_id = users.id))) AS other
           FROM users WHERE id = $3`,
          connectorId,
          anotherWayIn.passkeysSignIn,
          userId,
        );
        if (!isTrue(other?.other)) return 'last_way_in';
      }
      yield* run(
        `INSERT INTO removed_identities (connector_id, subject, user_id, linked_at, removed_at)
         SELECT connector_id, subject, user_id, created_at, $1 FROM user_identities WHERE user_id = $2 AND connector_id = $3
         ON CONFLICT (connector_id, subject) DO UPDATE SET user_id = excluded.user_id, linked_at = excluded.linked_at, removed_at = excluded.removed_at`,
        now,
        userId,
        connectorId,
      );
      yield* run('DELETE FROM user_identities WHERE user_id = $1 AND connector_id = $2', userId, connectorId);
      yield* endEverythingOf(userId, now);
      return bound;
    });
  }

  async findRemovedIdentity(connectorId: string, subject: string): Promise<RemovedIdentityRecord | undefined> {
    if (!storable(connectorId) || !storable(subject)) return undefined;
    return this.first(toRemovedIdentity, 'SELECT * FROM removed_identities WHERE connector_id = $1 AND subject = $2', connectorId, subject);
  }

  async listRemovedIdentities(userId: string): Promise<RemovedIdentityRecord[]> {
    if (!storable(userId)) return [];
    return this.rows(
      toRemovedIdentity,
      'SELECT * FROM removed_identities WHERE user_id = $1 ORDER BY removed_at DESC, connector_id COLLATE "C", subject COLLATE "C"',
      userId,
    );
  }

  async allowRemovedIdentity(userId: string, connectorId: string): Promise<number> {
    if (!storable(userId) || !storable(connectorId)) return 0;
    return this.execute('plain', () => run('DELETE FROM removed_identities WHERE user_id = $1 AND connector_id = $2', userId, connectorId));
  }

  async findUserById(id: string): Promise<UserRecord | undefined> {
    if (!storable(id)) return undefined;
    return this.first(toUser, `SELECT ${userWithRoles} FROM users WHERE id = $1`, id);
  }

  async findUserByUsername(username: string): Promise<UserRecord | undefined> {
    if (!storable(username)) return undefined;
    return this.first(toUser, `SELECT ${userWithRoles} FROM users WHERE ${usernameIs('$1')}`, username);
  }

  async listUsers(): Promise<UserRecord[]> {
    // NOCASE order, byte by byte: the order SQLite lists them in.
    return this.rows(toUser, `SELECT ${userWithRoles} FROM users ORDER BY lower(username COLLATE "C")`);
  }

  async setUserDisabled(username: string, disabled: boolean, now: number): Promise<boolean> {
    return this.steps('bulk', setUserDisabledSteps, username, disabled, now);
  }

  async setUserPassword(username: string, passwordHash: string, now: number): Promise<boolean> {
    return this.steps('bulk', setUserPasswordSteps, username, passwordHash, now);
  }

  async removeUser(username: string, now: number): Promise<UserRecord | undefined> {
    if (!storable(username)) return undefined;
    return this.execute('bulk', function* () {
      const locked = yield* one(`SELECT id FROM users WHERE ${usernameIs('$1')} FOR UPDATE`, username);
      if (!locked) return undefined;
      const found = yield* one(`SELECT ${userWithRoles} FROM users WHERE id = $1`, String(locked.id));
      if (!found) return undefined;
      const user = toUser(found);
      // Ended first, in the order every revocation takes its locks, then removed: whatever holds a
      // reference to the person (sessions, refresh families, identities, factors, grants) goes by
      // the foreign keys' cascades.
      yield* endEverythingOf(user.id, now);
      yield* run('DELETE FROM users WHERE id = $1', user.id);
      return user;
    });
  }

  async revokeUserTokens(username: string, now: number): Promise<boolean> {
    if (!storable(username)) return false;
    return this.execute('bulk', function* () {
      const found = yield* one(`SELECT id FROM users WHERE ${usernameIs('$1')} FOR UPDATE`, username);
      if (found) yield* endEverythingOf(String(found.id), now);
      return found !== undefined;
    });
  }

  async createClient(c: NewRecord<ClientRecord>): Promise<void> {
    await this.execute('plain', () => insertClient(c));
  }

  async applyConfiguration(changes: readonly ConfigurationChange[]): Promise<void> {
    return this.steps('bulk', applyConfigurationSteps, changes);
  }

  async ensureClient(c: ClientRecord): Promise<void> {
    await this.execute('plain', () => insertClient(c, true));
  }

  async findClient(clientId: string): Promise<ClientRecord | undefined> {
    if (!storable(clientId)) return undefined;
    return this.first(toClient, 'SELECT * FROM clients WHERE client_id = $1', clientId);
  }

  async listClients(): Promise<ClientRecord[]> {
    // COLLATE "C": byte order, as SQLite sorts, whatever the database's locale.
    return this.rows(toClient, 'SELECT * FROM clients ORDER BY client_id COLLATE "C"');
  }

  async listWebOrigins(): Promise<string[]> {
    const lists = await this.rows(toWebOrigins, 'SELECT web_origins FROM clients WHERE disabled = $1 AND web_origins <> $2', false, '[]');
    // Origins are ASCII, so sort() is byte order.
    return [...new Set(lists.flat())].sort();
  }

  /** Its grants (client_grants) go with it by the foreign key's cascade. */
  async removeClient(clientId: string, now: number): Promise<boolean> {
    return this.steps('atomic', removeClientSteps, clientId, now);
  }

  async createApi(a: NewRecord<ApiRecord>): Promise<void> {
    return this.steps('plain', createApiSteps, a);
  }

  async updateApi(a: ApiRecord): Promise<boolean> {
    return this.steps('plain', updateApiSteps, a);
  }

  async findApi(identifier: string): Promise<ApiRecord | undefined> {
    if (!storable(identifier)) return undefined;
    return this.first(toApi, 'SELECT * FROM apis WHERE identifier = $1', identifier);
  }

  async listApis(): Promise<ApiRecord[]> {
    return this.rows(toApi, 'SELECT * FROM apis ORDER BY identifier COLLATE "C"');
  }

  async removeApi(identifier: string): Promise<boolean> {
    return this.steps('plain', removeApiSteps, identifier);
  }

  async listSigningKeys(): Promise<SigningKeyRecord[]> {
    return this.rows(toSigningKey, 'SELECT * FROM signing_keys ORDER BY created_at, kid COLLATE "C"');
  }

  async ensureSigningKey(key: Omit<SigningKeyRecord, 'retiredAt'>): Promise<void> {
    await this.execute('atomic', function* () {
      yield* lockSigningKeys();
      if (!(yield* one('SELECT 1 FROM signing_keys WHERE retired_at IS NULL AND alg = $1', key.alg))) yield* insertSigningKey(key);
    });
  }

  async rotateSigningKeys(keys: Omit<SigningKeyRecord, 'retiredAt'>[], now: number): Promise<void> {
    await this.execute('atomic', function* () {
      yield* lockSigningKeys();
      yield* run('UPDATE signing_keys SET retired_at = $1 WHERE retired_at IS NULL', now);
      for (const key of keys) yield* insertSigningKey(key);
    });
  }

  async signingKeysFingerprint(): Promise<string> {
    return this.steps('plain', signingKeysFingerprintSteps);
  }

  async serverSecret(name: string, generate: () => string): Promise<string> {
    return this.steps('plain', serverSecretSteps, name, generate);
  }

  async findServerSecret(name: string): Promise<string | undefined> {
    return this.steps('plain', findServerSecretSteps, name);
  }

  async removeServerSecret(name: string): Promise<boolean> {
    return this.steps('plain', removeServerSecretSteps, name);
  }

  async recordIssuer(issuer: string, now: number): Promise<void> {
    return this.steps('plain', recordIssuerSteps, issuer, now);
  }

  async recordedIssuer(): Promise<RecordedIssuer | undefined> {
    return this.steps('plain', recordedIssuerSteps);
  }

  async resealSecrets(reseal: (secret: SealedSecret) => string): Promise<number> {
    return this.steps('bulk', resealSecretsSteps, reseal);
  }

  async sampleStoredSecrets(): Promise<SealedSecret[]> {
    return this.steps('plain', sampleStoredSecretsSteps);
  }

  async createSession(s: SessionRecord, guard?: UserRevocationGuard): Promise<boolean> {
    return this.steps('plain', createSessionSteps, s, guard);
  }

  async findSession(idHash: string, now: number): Promise<SessionRecord | undefined> {
    return this.first(toSession, 'SELECT * FROM sessions WHERE id_hash = $1 AND expires_at > $2', idHash, now);
  }

  async deleteSession(idHash: string): Promise<void> {
    await this.write('DELETE FROM sessions WHERE id_hash = $1', idHash);
  }

  async listSessions(userId: string | undefined, now: number): Promise<SessionRecord[]> {
    return this.steps('plain', listSessionsSteps, userId, now);
  }

  async endSessionById(id: string, userId: string | undefined): Promise<SessionRecord | undefined> {
    return this.steps('plain', endSessionByIdSteps, id, userId);
  }

  async touchSession(idHash: string, now: number, every: number): Promise<void> {
    // Conditional, so most requests write nothing; and a clock behind another instance's never moves it back.
    await this.write('UPDATE sessions SET last_seen_at = $1 WHERE id_hash = $2 AND (last_seen_at IS NULL OR last_seen_at < $3)', now, idHash, now - every);
  }

  async endOtherSignIns(userId: string, keepIdHash: string, now: number): Promise<{ sessions: number; refreshFamilies: number }> {
    if (!storable(userId)) return { sessions: 0, refreshFamilies: 0 };
    return this.execute('bulk', function* () {
      const familyIds = yield* lockUnrevokedFamilies(userId);
      const live = yield* one(
        `SELECT count(DISTINCT family_id) AS n FROM refresh_tokens t WHERE family_id = ANY($2::text[]) AND ${liveToken('t', '$1')}`,
        now,
        familyIds,
      );
      yield* revokeLockedFamilies(familyIds, now);
      const ended = yield* many('DELETE FROM sessions WHERE user_id = $1 AND id_hash <> $2 RETURNING expires_at', userId, keepIdHash);
      // Expired sessions were only waiting for the purge: they are removed, not counted.
      return { sessions: ended.filter((row) => Number(row.expires_at) > now).length, refreshFamilies: Number(live?.n ?? 0) };
    });
  }

  async createDeviceGrant(g: DeviceGrantRecord): Promise<void> {
    return this.steps('plain', createDeviceGrantSteps, g);
  }

  async findDeviceGrantByDeviceCode(deviceCodeHash: string): Promise<DeviceGrantRecord | undefined> {
    return this.first(toDeviceGrant, 'SELECT * FROM device_grants WHERE device_code_hash = $1', deviceCodeHash);
  }

  async findDeviceGrantByUserCode(userCodeHash: string): Promise<DeviceGrantRecord | undefined> {
    return this.first(toDeviceGrant, 'SELECT * FROM device_grants WHERE user_code_hash = $1', userCodeHash);
  }

  async pollDeviceGrant(
    deviceCodeHash: string,
    clientId: string,
    polledAtMs: number,
    nextInterval: (before: DeviceGrantRecord) => number,
  ): Promise<DeviceGrantRecord | undefined> {
    return this.steps('plain', pollDeviceGrantSteps, deviceCodeHash, clientId, polledAtMs, nextInterval).then((outcome) =>
      outcome.lost
        ? this.execute('atomic', function* () {
            // FOR UPDATE: a poll racing this one (another process) waits and then sees this poll's time.
            const row = yield* one('SELECT * FROM device_grants WHERE device_code_hash = $1 FOR UPDATE', deviceCodeHash);
            if (!row) return undefined;
            const before = toDeviceGrant(row);
            if (before.clientId !== clientId || before.status !== 'pending') return before;
            yield* run('UPDATE device_grants SET last_polled_at_ms = $1, poll_interval = $2 WHERE id = $3', polledAtMs, nextInterval(before), before.id);
            return before;
          })
        : outcome.grant,
    );
  }

  async approveDeviceGrant(id: string, userId: string, authTime: number, amr: AuthMethod[], now: number): Promise<boolean> {
    return this.changedOne(
      `UPDATE device_grants SET status = 'approved', user_id = $1, auth_time = $2, amr = $3, decided_at = $4
       WHERE id = $5 AND status = 'pending' AND expires_at > $6`,
      userId,
      authTime,
      amrToText(amr),
      now,
      id,
      now,
    );
  }

  async denyDeviceGrant(id: string, now: number): Promise<boolean> {
    return this.changedOne(
      `UPDATE device_grants SET status = 'denied', decided_at = $1 WHERE id = $2 AND status = 'pending' AND expires_at > $3`,
      now,
      id,
      now,
    );
  }

  async consumeDeviceGrant(id: string, now: number): Promise<DeviceGrantRecord | undefined> {
    return this.execute('plain', () => spendDeviceGrant(id, now));
  }

  async redeemDeviceGrant(
    id: string,
    now: number,
    refresh?: { token: RefreshTokenRecord; guard: UserRevocationGuard },
    issued: { accessTokenJti?: string | undefined; dpopJkt?: string | undefined } = {},
  ): Promise<{ grant: DeviceGrantRecord; refreshTokenStored: boolean } | undefined> {
    const { accessTokenJti, dpopJkt } = issued;
    if (refresh === undefined) {
      return this.execute('plain', function* () {
        const grant = yield* spendDeviceGrant(id, now, { accessTokenJti, dpopJkt });
        return grant && { grant, refreshTokenStored: false };
      });
    }
    if (this.writableCtes) {
      // The device flow's hot path, in one statement (one round trip, and a transaction of its
      // own): the user row held as the guard found it, the grant spent, the refresh token stored.
      // The new family's lock is not taken: nobody else can know of the family yet.
      const t = refresh.token;
      return this.execute('plain', function* () {
        const row = yield* one(
          `WITH guard AS (SELECT 1 FROM users WHERE id = $5 AND tokens_revoked_at IS NOT DISTINCT FROM $26::bigint FOR SHARE),
           spent AS (
             UPDATE device_grants SET status = 'consumed', consumed_at = $23, access_token_jti = $25,
               refresh_family_id = CASE WHEN EXISTS (SELECT 1 FROM guard) THEN $3 END, issued_at = $23, dpop_jkt = $27
             WHERE id = $24 AND status = 'approved' AND expires_at > $23 RETURNING *),
           stored AS (
             INSERT INTO refresh_tokens (${refreshTokenColumns})
             SELECT ${refreshTokenValues} WHERE EXISTS (SELECT 1 FROM spent) AND EXISTS (SELECT 1 FROM guard) RETURNING 1)
           SELECT spent.*, EXISTS (SELECT 1 FROM stored) AS refresh_token_stored FROM spent`,
          ...refreshTokenParams(t),
          now,
          id,
          accessTokenJti ?? null,
          refresh.guard.userTokensRevokedAt ?? null,
          dpopJkt ?? null,
        );
        return row && { grant: toDeviceGrant(row), refreshTokenStored: isTrue(row.refresh_token_stored) };
      });
    }
    return this.execute('atomic', function* () {
      const guarded = yield* guardHolds(refresh.token.userId, refresh.guard);
      const grant = yield* spendDeviceGrant(id, now, { accessTokenJti, dpopJkt, refreshFamilyId: guarded ? refresh.token.familyId : undefined });
      if (!grant) return undefined;
      if (guarded) yield* insertRefreshToken(refresh.token);
      return { grant, refreshTokenStored: guarded };
    });
  }

  async recoverDeviceGrant(
    id: string,
    bounds: { since: number; now: number; minGapSeconds: number; limit: number; dpopJkt: string | undefined },
    replacement: { accessTokenJti: string; refresh?: { token: RefreshTokenRecord; guard: UserRevocationGuard } },
  ): Promise<{ grant: DeviceGrantRecord; refreshTokenStored: boolean } | DeviceRecoveryRefusal> {
    const { since, now, minGapSeconds, limit, dpopJkt } = bounds;
    return this.execute('atomic', function* () {
      // Locks in the order every other writer takes them: the grant's row (recoveries take turns),
      // the user's row (as a revocation of the person's sign-ins takes it before their families),
      // then the family's.
      const row = yield* one('SELECT * FROM device_grants WHERE id = $1 FOR UPDATE', id);
      if (!row) return 'not_redeemed';
      const grant = toDeviceGrant(row);
      if (grant.status !== 'consumed' || grant.consumedAt === undefined || grant.accessTokenJti === undefined) return 'not_redeemed';
      if (grant.consumedAt < since) return 'too_late';
      if (grant.dpopJkt !== undefined && grant.dpopJkt !== dpopJkt) return 'wrong_key';
      if ((grant.issuedAt ?? grant.consumedAt) > now - minGapSeconds) return 'too_soon';
      if (grant.recoveries >= limit) return 'limit';
      let refresh = replacement.refresh;
      if (refresh !== undefined) yield* one('SELECT 1 FROM users WHERE id = $1 FOR SHARE', refresh.token.userId);
      if (grant.refreshFamilyId !== undefined) {
        yield* lockFamily(grant.refreshFamilyId);
        // The lost answer's refresh token was used after all: its holder is not the one who lost it.
        if (yield* one('SELECT 1 AS used FROM refresh_tokens WHERE family_id = $1 AND rotated_at IS NOT NULL LIMIT 1', grant.refreshFamilyId)) return 'used';
        if (yield* one('SELECT 1 AS revoked FROM revoked_refresh_families WHERE family_id = $1', grant.refreshFamilyId)) return 'used';
        const lost = (yield* many(
          'UPDATE refresh_tokens SET superseded_at = $1 WHERE family_id = $2 AND superseded_at IS NULL AND revoked_at IS NULL RETURNING id, access_token_jti, family_expires_at, created_at',
          now,
          grant.refreshFamilyId,
        )).sort((a, b) => Number(b.created_at) - Number(a.created_at));
        for (const token of lost) if (typeof token.access_token_jti === 'string') yield* revokeAccessTokenUntil(token.access_token_jti, now);
        const newest = lost[0];
        // The new token takes the lost one's place in its family: same family and end, the lost one as its parent.
        if (refresh !== undefined && newest !== undefined)
          refresh = { ...refresh, token: joinedFamily(refresh.token, grant.refreshFamilyId, String(newest.id), Number(newest.family_expires_at)) };
      }
      yield* revokeAccessTokenUntil(grant.accessTokenJti, now);
      const refreshTokenStored = refresh !== undefined && (yield* insertGuardedRefreshToken(refresh.token, refresh.guard));
      const updated = yield* one(
        'UPDATE device_grants SET access_token_jti = $1, refresh_family_id = $2, issued_at = $3, recoveries = recoveries + 1 WHERE id = $4 RETURNING *',
        replacement.accessTokenJti,
        refreshTokenStored ? (refresh?.token.familyId ?? null) : null,
        now,
        id,
      );
      if (!updated) throw new Error('the device grant being recovered is gone');
      return { grant: toDeviceGrant(updated), refreshTokenStored };
    });
  }

  async createRefreshToken(t: RefreshTokenRecord, guard?: UserRevocationGuard): Promise<boolean> {
    return this.execute('atomic', () => insertGuardedRefreshToken(t, guard));
  }

  async findRefreshToken(tokenHash: string): Promise<RefreshTokenRecord | undefined> {
    return this.first(toRefreshToken, 'SELECT * FROM refresh_tokens WHERE token_hash = $1', tokenHash);
  }

  async rotateRefreshToken(id: string, successor: RefreshTokenRecord, now: number): Promise<boolean> {
    return this.steps('atomic', rotateRefreshTokenSteps, id, successor, now);
  }

  async addGraceSuccessor(
    id: string,
    successor: RefreshTokenRecord,
    bounds: { limit: number; liveBranches: number; now: number },
  ): Promise<true | GraceRefusal> {
    return this.steps('atomic', addGraceSuccessorSteps, id, successor, bounds);
  }

  async retryRotation(id: string, successor: RefreshTokenRecord, now: number, limit: number, raceSeconds: number): Promise<true | GraceRefusal> {
    return this.steps('atomic', retryRotationSteps, id, successor, now, limit, raceSeconds);
  }

  async isRefreshFamilyRevoked(familyId: string): Promise<boolean> {
    return this.steps('plain', isRefreshFamilyRevokedSteps, familyId);
  }

  async revokeRefreshFamily(familyId: string, now: number): Promise<void> {
    await this.execute('atomic', function* () {
      yield* lockFamily(familyId);
      yield* run('INSERT INTO revoked_refresh_families (family_id, revoked_at) VALUES ($1, $2) ON CONFLICT DO NOTHING', familyId, now);
      yield* run('UPDATE refresh_tokens SET revoked_at = $1 WHERE family_id = $2 AND revoked_at IS NULL', now, familyId);
    });
  }

  async listRefreshFamilies(userId: string | undefined, now: number): Promise<RefreshFamilySummary[]> {
    if (userId === undefined) return this.execute('plain', () => familySummaries('true', now));
    if (!storable(userId)) return [];
    return this.execute('plain', () => familySummaries('t.user_id = $2', now, userId));
  }

  async revokeRefreshFamilyOf(familyId: string, userId: string | undefined, now: number): Promise<RefreshFamilySummary | undefined> {
    if (!storable(familyId) || (userId !== undefined && !storable(userId))) return undefined;
    return this.execute('atomic', function* () {
      yield* lockFamily(familyId);
      const [summary] = yield* familySummaries('t.family_id = $2', now, familyId);
      if (summary === undefined || (userId !== undefined && summary.userId !== userId)) return undefined;
      yield* revokeLockedFamilies([familyId], now);
      return summary;
    });
  }

  async revokeAccessToken(jti: string, expiresAt: number): Promise<void> {
    await this.write('INSERT INTO revoked_access_tokens (jti, expires_at) VALUES ($1, $2) ON CONFLICT DO NOTHING', jti, expiresAt);
  }

  async isAccessTokenRevoked(jti: string): Promise<boolean> {
    return this.steps('plain', isAccessTokenRevokedSteps, jti);
  }

  async findConsent(userId: string, clientId: string, audience: string): Promise<ConsentRecord | undefined> {
    return this.first(toConsent, 'SELECT * FROM consents WHERE user_id = $1 AND client_id = $2 AND audience = $3', userId, clientId, audience);
  }

  async saveConsent(c: ConsentRecord): Promise<void> {
    await this.write(
      `INSERT INTO consents (user_id, client_id, audience, scope, granted_at) VALUES ($1, $2, $3, $4, $5)
       ON CONFLICT (user_id, client_id, audience) DO UPDATE SET scope = excluded.scope, granted_at = excluded.granted_at`,
      c.userId,
      c.clientId,
      c.audience,
      c.scope,
      c.grantedAt,
    );
  }

  async clientsOfSession(sessionId: string): Promise<string[]> {
    return this.steps('plain', clientsOfSessionSteps, sessionId);
  }

  async listConsents(userId: string): Promise<ConsentRecord[]> {
    return this.steps('plain', listConsentsSteps, userId);
  }

  async withdrawConsent(userId: string, clientId: string, now: number): Promise<number> {
    if (!storable(userId) || !storable(clientId)) return 0;
    return this.execute('bulk', function* () {
      const familyIds = yield* lockUnrevokedFamilies(userId, clientId);
      yield* revokeLockedFamilies(familyIds, now);
      return yield* run('DELETE FROM consents WHERE user_id = $1 AND client_id = $2', userId, clientId);
    });
  }

  async updateUserProfile(userId: string, profile: { name: string | undefined; email: string }, now: number): Promise<boolean> {
    return this.steps('plain', updateUserProfileSteps, userId, profile, now);
  }

  async updateUser(username: string, change: { email?: string; name?: string | null; profile?: UserProfileClaims }, now: number): Promise<boolean> {
    return this.steps('plain', updateUserSteps, username, change, now);
  }

  async updateUserPassword(userId: string, passwordHash: string): Promise<boolean> {
    if (!storable(userId)) return false;
    return this.changedOne('UPDATE users SET password_hash = $1 WHERE id = $2', passwordHash, userId);
  }

  async upgradePasswordHash(userId: string, expectedHash: string, passwordHash: string): Promise<boolean> {
    if (!storable(userId) || !storable(expectedHash)) return false;
    return this.changedOne('UPDATE users SET password_hash = $1 WHERE id = $2 AND password_hash = $3', passwordHash, userId, expectedHash);
  }

  async createEmailToken(t: EmailTokenRecord): Promise<void> {
    return this.steps('plain', createEmailTokenSteps, t);
  }

  async findEmailToken(tokenHash: string, purpose: EmailTokenPurpose, now: number): Promise<EmailTokenRecord | undefined> {
    if (!storable(tokenHash)) return undefined;
    return this.first(
      toEmailToken,
      'SELECT * FROM email_tokens WHERE token_hash = $1 AND purpose = $2 AND used_at IS NULL AND expires_at > $3',
      tokenHash,
      purpose,
      now,
    );
  }

  async useEmailToken(tokenHash: string, purpose: EmailTokenPurpose, now: number): Promise<EmailTokenRecord | undefined> {
    return this.steps('plain', useEmailTokenSteps, tokenHash, purpose, now);
  }

  async cancelEmailTokens(userId: string, purpose: EmailTokenPurpose, now: number): Promise<number> {
    if (!storable(userId)) return 0;
    return this.execute('plain', () =>
      run('UPDATE email_tokens SET used_at = $1 WHERE user_id = $2 AND purpose = $3 AND used_at IS NULL AND expires_at > $1', now, userId, purpose),
    );
  }

  async markEmailVerified(userId: string, email: string): Promise<boolean> {
    if (!storable(userId) || !storable(email)) return false;
    return this.changedOne('UPDATE users SET email_verified = true WHERE id = $1 AND lower(email) = lower($2)', userId, email);
  }

  async countEmailTokens(userId: string, purpose: EmailTokenPurpose, since: number): Promise<number> {
    return this.steps('plain', countEmailTokensSteps, userId, purpose, since);
  }

  async createAuthorizationCode(c: AuthorizationCodeRecord): Promise<void> {
    await this.write(
      `INSERT INTO authorization_codes (code_hash, client_id, user_id, redirect_uri, scope, audience, nonce, code_challenge,
         auth_time, amr, created_at, expires_at, consumed_at, access_token_jti, refresh_family_id, approved_ip, approved_user_agent, session_id, dpop_jkt,
         claims)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20)`,
      c.codeHash,
      c.clientId,
      c.userId,
      c.redirectUri,
      c.scope,
      c.audience,
      c.nonce ?? null,
      c.codeChallenge ?? null,
      c.authTime,
      amrToText(c.amr),
      c.createdAt,
      c.expiresAt,
      c.consumedAt ?? null,
      c.accessTokenJti ?? null,
      c.refreshFamilyId ?? null,
      c.approvedIp ?? null,
      c.approvedUserAgent ?? null,
      c.sessionId ?? null,
      c.dpopJkt ?? null,
      claimsToText(c.claims),
    );
  }

  async findAuthorizationCode(codeHash: string): Promise<AuthorizationCodeRecord | undefined> {
    return this.first(toAuthorizationCode, 'SELECT * FROM authorization_codes WHERE code_hash = $1', codeHash);
  }

  async consumeAuthorizationCode(
    codeHash: string,
    now: number,
    issued: { accessTokenJti: string; refreshFamilyId: string },
  ): Promise<AuthorizationCodeRecord | undefined> {
    return this.steps('plain', consumeAuthorizationCodeSteps, codeHash, now, issued);
  }

  async findTotp(userId: string): Promise<TotpRecord | undefined> {
    if (!storable(userId)) return undefined;
    return this.first(toTotp, 'SELECT * FROM totp_credentials WHERE user_id = $1', userId);
  }

  async saveTotp(t: TotpRecord): Promise<void> {
    await this.write(
      `INSERT INTO totp_credentials (user_id, secret, last_step, created_at) VALUES ($1, $2, $3, $4)
       ON CONFLICT (user_id) DO UPDATE SET secret = EXCLUDED.secret, last_step = EXCLUDED.last_step, created_at = EXCLUDED.created_at`,
      t.userId,
      t.secret,
      t.lastStep,
      t.createdAt,
    );
  }

  async useTotpStep(userId: string, step: number): Promise<boolean> {
    return this.steps('plain', useTotpStepSteps, userId, step);
  }

  async removeTotp(userId: string): Promise<boolean> {
    if (!storable(userId)) return false;
    return this.changedOne('DELETE FROM totp_credentials WHERE user_id = $1', userId);
  }

  async createPasskey(p: PasskeyRecord): Promise<void> {
    return this.steps('plain', createPasskeySteps, p);
  }

  async findPasskey(id: string): Promise<PasskeyRecord | undefined> {
    if (!storable(id)) return undefined;
    return this.first(toPasskey, 'SELECT * FROM webauthn_credentials WHERE id = $1', id);
  }

  async listPasskeys(userId: string): Promise<PasskeyRecord[]> {
    return this.steps('plain', listPasskeysSteps, userId);
  }

  async recordPasskeyUse(id: string, counter: number, now: number): Promise<boolean> {
    if (!storable(id)) return false;
    return this.changedOne(
      'UPDATE webauthn_credentials SET counter = $1, last_used_at = $2 WHERE id = $3 AND (counter < $1 OR (counter = 0 AND $1 = 0))',
      counter,
      now,
      id,
    );
  }

  async renamePasskey(userId: string, id: string, name: string): Promise<boolean> {
    if (!storable(userId) || !storable(id)) return false;
    return this.changedOne('UPDATE webauthn_credentials SET name = $1 WHERE id = $2 AND user_id = $3', name, id, userId);
  }

  async removePasskey(userId: string, id: string): Promise<boolean> {
    if (!storable(userId) || !storable(id)) return false;
    return this.changedOne('DELETE FROM webauthn_credentials WHERE id = $1 AND user_id = $2', id, userId);
  }

  async replaceRecoveryCodes(userId: string, codeHashes: string[], now: number): Promise<void> {
    await this.execute('atomic', function* () {
      yield* lockSecondFactors(userId);
      yield* run('DELETE FROM recovery_codes WHERE user_id = $1', userId);
      // A digest given twice is one code (it could only be spent once anyway).
      yield* run(
        `INSERT INTO recovery_codes (user_id, code_hash, created_at) SELECT $1, h, $3 FROM unnest($2::text[]) AS h WHERE true
         ON CONFLICT DO NOTHING`,
        userId,
        codeHashes,
        now,
      );
    });
  }

  async useRecoveryCode(userId: string, codeHash: string, now: number): Promise<boolean> {
    return this.steps('plain', useRecoveryCodeSteps, userId, codeHash, now);
  }

  async countRecoveryCodes(userId: string): Promise<number> {
    return this.steps('plain', countRecoveryCodesSteps, userId);
  }

  async resetSecondFactors(userId: string): Promise<boolean> {
    if (!storable(userId)) return false;
    return this.execute('atomic', function* () {
      yield* lockSecondFactors(userId);
      const removed =
        (yield* run('DELETE FROM totp_credentials WHERE user_id = $1', userId)) +
        (yield* run('DELETE FROM webauthn_credentials WHERE user_id = $1', userId)) +
        (yield* run('DELETE FROM recovery_codes WHERE user_id = $1', userId));
      return removed > 0;
    });
  }

  // ON CONFLICT … DO UPDATE takes the row's lock, so simultaneous events on several instances are
  // each counted once, in some order.
  async countRateLimitEvent(bucket: string, key: string, now: number, windowSeconds: number): Promise<RateLimitCounter> {
    return this.steps('plain', countRateLimitEventSteps, bucket, key, now, windowSeconds);
  }

  async countRateLimitFailure(bucket: string, key: string, now: number, forgetAfterSeconds: number): Promise<RateLimitCounter> {
    return this.steps('plain', countRateLimitFailureSteps, bucket, key, now, forgetAfterSeconds);
  }

  async readRateLimitCounter(bucket: string, key: string): Promise<RateLimitCounter | undefined> {
    return this.first(toRateLimitCounter, 'SELECT count, started_at, last_at FROM rate_limit_counters WHERE bucket = $1 AND key = $2', bucket, key);
  }

  async undoRateLimitEvent(bucket: string, key: string, lastAt?: number): Promise<void> {
    // The row stays locked from the decrement to its removal at zero, so no other instance counts in between.
    await this.execute('atomic', function* () {
      const left = yield* one(
        'UPDATE rate_limit_counters SET count = count - 1, last_at = coalesce($3::double precision, last_at) WHERE bucket = $1 AND key = $2 RETURNING count',
        bucket,
        key,
        lastAt ?? null,
      );
      if (left && Number(left.count) <= 0) yield* run('DELETE FROM rate_limit_counters WHERE bucket = $1 AND key = $2', bucket, key);
    });
  }

  async clearRateLimitCounter(bucket: string, key: string): Promise<void> {
    await this.write('DELETE FROM rate_limit_counters WHERE bucket = $1 AND key = $2', bucket, key);
  }

  /** PostgreSQL's autovacuum makes purged rows' space reusable; nothing to do here. */

  async createRole(role: NewRole): Promise<void> {
    return this.steps('atomic', createRoleSteps, role);
  }

  async findRole(name: string): Promise<RoleRecord | undefined> {
    if (!storable(name)) return undefined;
    return this.first(toRole, `SELECT ${roleWithPermissions} FROM roles WHERE name = $1`, name);
  }

  async listRoles(): Promise<RoleRecord[]> {
    return this.rows(toRole, `SELECT ${roleWithPermissions} FROM roles ORDER BY name COLLATE "C"`);
  }

  async updateRole(name: string, changes: RoleChanges): Promise<boolean> {
    return this.steps('atomic', updateRoleSteps, name, changes);
  }

  async removeRole(name: string): Promise<boolean> {
    return this.steps('plain', removeRoleSteps, name);
  }

  async grantRole(userId: string, role: string, now: number): Promise<boolean> {
    return this.steps('plain', grantRoleSteps, userId, role, now);
  }

  async revokeRole(userId: string, role: string): Promise<boolean> {
    if (!storable(userId) || !storable(role)) return false;
    return this.changedOne("DELETE FROM user_roles WHERE user_id = $1 AND role = $2 AND source = 'direct'", userId, role);
  }

  async setGroupRoles(userId: string, roles: string[], now: number): Promise<GroupRolesChange | false> {
    return this.steps('atomic', setGroupRolesSteps, userId, roles, now);
  }

  async listUserRoleSources(userId: string): Promise<{ direct: string[]; group: string[] }> {
    const sources = { direct: [] as string[], group: [] as string[] };
    if (!storable(userId)) return sources;
    const rows = await this.rows((r) => r, 'SELECT role, source FROM user_roles WHERE user_id = $1 ORDER BY role COLLATE "C"', userId);
    for (const r of rows) (r.source === 'group' ? sources.group : sources.direct).push(String(r.role));
    return sources;
  }

  async setManagedBy(kind: ManagedKind, id: string, managedBy: string | undefined): Promise<boolean> {
    if (!storable(id)) return false;
    return this.steps('plain', setManagedBySteps, kind, id, managedBy);
  }

  async listRoleMembers(role: string): Promise<UserRecord[]> {
    if (!storable(role)) return [];
    return this.rows(
      toUser,
      `SELECT ${userWithRoles} FROM users WHERE id IN (SELECT user_id FROM user_roles WHERE role = $1) ORDER BY lower(username COLLATE "C")`,
      role,
    );
  }

  async permittedScopes(userId: string, api: string): Promise<string[]> {
    return this.steps('plain', permittedScopesSteps, userId, api);
  }

  async saveClientGrant(g: ClientGrantRecord): Promise<void> {
    await this.execute('plain', () => saveClientGrantStep(g));
  }

  async findClientGrant(clientId: string, api: string): Promise<ClientGrantRecord | undefined> {
    if (!storable(clientId) || !storable(api)) return undefined;
    return this.first(toClientGrant, 'SELECT * FROM client_grants WHERE client_id = $1 AND api = $2', clientId, api);
  }

  async listClientGrants(clientId: string | undefined): Promise<ClientGrantRecord[]> {
    return this.steps('plain', listClientGrantsSteps, clientId);
  }

  async removeClientGrant(clientId: string, api: string): Promise<boolean> {
    if (!storable(clientId) || !storable(api)) return false;
    return this.changedOne('DELETE FROM client_grants WHERE client_id = $1 AND api = $2', clientId, api);
  }

  async updateClient(clientId: string, changes: ClientChanges): Promise<boolean> {
    return this.steps('plain', updateClientSteps, clientId, changes);
  }

  async rotateClientSecret(clientId: string, secret: { hash: string; sealed: string | undefined }, keepOldUntil: number | undefined): Promise<boolean> {
    return this.steps('plain', rotateClientSecretSteps, clientId, secret, keepOldUntil);
  }

  async setClientDisabled(clientId: string, disabled: boolean): Promise<boolean> {
    if (!storable(clientId)) return false;
    return this.changedOne('UPDATE clients SET disabled = $1 WHERE client_id = $2', disabled, clientId);
  }

  async useOnce(purpose: string, key: string, expiresAt: number): Promise<boolean> {
    return this.steps('plain', useOnceSteps, purpose, key, expiresAt);
  }

  async takeResourceLease(key: string, holder: string, expiresAt: number): Promise<boolean> {
    return this.steps('plain', takeResourceLeaseSteps, key, holder, expiresAt);
  }

  async releaseResourceLease(key: string, holder: string): Promise<boolean> {
    if (!storable(key) || !storable(holder)) return false;
    return this.changedOne('DELETE FROM resource_leases WHERE resource_key = $1 AND holder = $2', key, holder);
  }

  async appendAuditEvents(events: Omit<AuditEventRecord, 'id'>[]): Promise<void> {
    if (events.length === 0) return;
    const columns = (e: Omit<AuditEventRecord, 'id'>) =>
      // JSON.stringify writes U+0000 as the escape \u0000, which text holds.
      [e.at, auditText(e.event), auditText(e.actor), auditText(e.userId), auditText(e.clientId), auditText(e.ip), JSON.stringify(e.details)] as const;
    if (!this.arrayParameters) {
      // Prepared once, run per event inside one transaction: as fast on SQLite as one statement.
      return this.execute('atomic', function* () {
        for (const e of events) {
          yield* run('INSERT INTO audit_events (at, event, actor, user_id, client_id, ip, details) VALUES ($1, $2, $3, $4, $5, $6, $7)', ...columns(e));
        }
      });
    }
    // One statement, one round trip; ids follow the order given (ORDER BY the ordinality).
    const rows = events.map(columns);
    return this.write(
      `INSERT INTO audit_events (at, event, actor, user_id, client_id, ip, details)
       SELECT e.at, e.event, e.actor, e.user_id, e.client_id, e.ip, e.details
       FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[])
         WITH ORDINALITY AS e(at, event, actor, user_id, client_id, ip, details, n)
       ORDER BY e.n`,
      ...[0, 1, 2, 3, 4, 5, 6].map((i) => rows.map((row) => row[i])),
    ).then(() => undefined);
  }

  async listAuditEvents(query: AuditEventQuery): Promise<AuditEventRecord[]> {
    return this.steps('plain', listAuditEventsSteps, query);
  }

  async purgeAuditEvents(before: number, batchSize = -1): Promise<number> {
    // The oldest first, so a batch that stops short leaves the newer events.
    return this.execute('plain', () =>
      run(
        'DELETE FROM audit_events WHERE id IN (SELECT id FROM audit_events WHERE at < $1 ORDER BY at LIMIT $2)',
        before,
        batchSize < 0 ? Number.MAX_SAFE_INTEGER : batchSize,
      ),
    );
  }

  // --- Dynamic client registration (RFC 7591/7592) ---

  async createRegistrationToken(t: RegistrationTokenRecord): Promise<void> {
    return this.steps('plain', createRegistrationTokenSteps, t);
  }

  async findRegistrationToken(tokenHash: string): Promise<RegistrationTokenRecord | undefined> {
    if (!storable(tokenHash)) return undefined;
    return this.first(toRegistrationToken, 'SELECT * FROM registration_tokens WHERE token_hash = $1', tokenHash);
  }

  async useRegistrationToken(tokenHash: string, now: number): Promise<boolean> {
    if (!storable(tokenHash)) return false;
    return this.execute('plain', () => spendRegistrationToken(tokenHash, now, undefined));
  }

  async registerClient(c: NewRecord<ClientRecord>, initialTokenHash: string, now: number): Promise<boolean> {
    if (!storable(initialTokenHash)) return false;
    return this.execute('atomic', function* () {
      if (!(yield* spendRegistrationToken(initialTokenHash, now, c.clientId))) return false;
      // A duplicate client_id throws here and the transaction rolls the spending back with it.
      yield* insertClient(c);
      yield* run(
        'UPDATE clients SET registration_access_token_hash = $1, token_endpoint_auth_method = $2 WHERE client_id = $3',
        c.registrationAccessTokenHash ?? null,
        c.tokenEndpointAuthMethod ?? null,
        c.clientId,
      );
      return true;
    });
  }

  async updateRegisteredClient(clientId: string, update: RegisteredClientUpdate): Promise<boolean> {
    return this.steps('plain', updateRegisteredClientSteps, clientId, update);
  }

  // --- Pushed authorization requests (RFC 9126) ---

  async createPushedRequest(r: PushedRequestRecord): Promise<void> {
    return this.steps('plain', createPushedRequestSteps, r);
  }

  /**
   * One conditional UPDATE … RETURNING: a simultaneous caller of another instance waits for the
   * winner's row and re-checks `used_at IS NULL` against it, so exactly one gets the request.
   */
  async usePushedRequest(requestHash: string, clientId: string, now: number): Promise<PushedRequestRecord | undefined> {
    if (!storable(requestHash) || !storable(clientId)) return undefined;
    return this.first(
      toPushedRequest,
      'UPDATE pushed_requests SET used_at = $1 WHERE request_hash = $2 AND client_id = $3 AND used_at IS NULL AND expires_at > $1 RETURNING *',
      now,
      requestHash,
      clientId,
    );
  }
}

/** The one step of a verb of one statement. */
function* singleStep(op: Op): Verb<unknown> {
  return yield op;
}

// ─── The verbs' steps ──────────────────────────────────────────────────────────────────────
// One generator function per verb, made once here rather than in the verb at every call: V8 gives
// each generator function it makes a prototype of its own, which made every call ~2 µs dearer.

function* countUsersSteps(): Verb<number> {
  return Number((yield* one('SELECT count(*) AS n FROM users'))?.n ?? 0);
}

function* createUserWithIdentitySteps(user: UserRecord, identity: UserIdentityRecord): Verb<void> {
  yield* insertUser(user);
  yield* insertIdentity(identity);
}

function* listIdentitiesSteps(userId: string | undefined): Verb<UserIdentityRecord[]> {
  if (userId !== undefined && !storable(userId)) return [];
  // Byte order ("C"), as SQLite compares text.
  const order = 'ORDER BY created_at, connector_id COLLATE "C", subject COLLATE "C"';
  const rows =
    userId === undefined
      ? yield* many(`SELECT * FROM user_identities ${order}`)
      : yield* many(`SELECT * FROM user_identities WHERE user_id = $1 ${order}`, userId);
  return rows.map(toUserIdentity);
}

function* setUserDisabledSteps(username: string, disabled: boolean, now: number): Verb<boolean> {
  const changed = yield* one(`UPDATE users SET disabled = $1 WHERE ${usernameIs('$2')} RETURNING id`, disabled, username);
  // A disabled account keeps nothing: enabling it again must not bring old sign-ins back.
  if (changed && disabled) yield* endEverythingOf(String(changed.id), now);
  return changed !== undefined;
}

function* setUserPasswordSteps(username: string, passwordHash: string, now: number): Verb<boolean> {
  const changed = yield* one(`UPDATE users SET password_hash = $1 WHERE ${usernameIs('$2')} RETURNING id`, passwordHash, username);
  // Whoever knew the old password is signed out everywhere (RFC 6819 §5.2.2.3).
  if (changed) yield* endEverythingOf(String(changed.id), now);
  return changed !== undefined;
}

function* createApiSteps(a: NewRecord<ApiRecord>): Verb<void> {
  yield* insert(
    `API ${a.identifier}`,
    'INSERT INTO apis (identifier, name, created_at, introspection_clients, scopes, managed_by) VALUES ($1, $2, $3, $4, $5, $6)',
    a.identifier,
    a.name,
    a.createdAt,
    JSON.stringify(a.introspectionClients),
    JSON.stringify(a.scopes),
    a.managedBy ?? null,
  );
}

function* updateApiSteps(a: NewRecord<ApiRecord>): Verb<boolean> {
  if (!storable(a.identifier)) return false;
  return (
    (yield* run(
      'UPDATE apis SET name = $1, introspection_clients = $2, scopes = $3 WHERE identifier = $4',
      a.name,
      JSON.stringify(a.introspectionClients),
      JSON.stringify(a.scopes),
      a.identifier,
    )) === 1
  );
}

function* removeApiSteps(identifier: string): Verb<boolean> {
  if (!storable(identifier)) return false;
  // Its role permissions and client grants go with it by the foreign keys' cascades.
  return (yield* run('DELETE FROM apis WHERE identifier = $1', identifier)) === 1;
}

function* signingKeysFingerprintSteps(): Verb<string> {
  const row = yield* one('SELECT count(*) AS n, max(created_at) AS c, sum(coalesce(retired_at, 0)) AS r FROM signing_keys');
  return `${String(row?.n)}:${String(row?.c)}:${String(row?.r)}`;
}

function* serverSecretSteps(name: string, generate: () => string): Verb<string> {
  yield* run('INSERT INTO server_secrets (name, value) VALUES ($1, $2) ON CONFLICT DO NOTHING', name, generate());
  return String((yield* one('SELECT value FROM server_secrets WHERE name = $1', name))?.value);
}

function* findServerSecretSteps(name: string): Verb<string | undefined> {
  const row = yield* one('SELECT value FROM server_secrets WHERE name = $1', name);
  return row === undefined ? undefined : String(row.value);
}

function* removeServerSecretSteps(name: string): Verb<boolean> {
  return (yield* run('DELETE FROM server_secrets WHERE name = $1', name)) === 1;
}

function* recordIssuerSteps(issuer: string, now: number): Verb<void> {
  yield* run(
    'INSERT INTO recorded_issuer (id, issuer, recorded_at) VALUES (1, $1, $2) ON CONFLICT (id) DO UPDATE SET issuer = excluded.issuer, recorded_at = excluded.recorded_at',
    issuer,
    now,
  );
}

function* recordedIssuerSteps(): Verb<RecordedIssuer | undefined> {
  const row = yield* one('SELECT issuer, recorded_at FROM recorded_issuer WHERE id = 1');
  return row === undefined ? undefined : { issuer: String(row.issuer), recordedAt: Number(row.recorded_at) };
}

function* resealSecretsSteps(reseal: (secret: SealedSecret) => string): Verb<number> {
  yield* lockSigningKeys();
  yield* lock('server_secrets', '');
  let changed = 0;
  for (const row of yield* many('SELECT kid, private_key_pem FROM signing_keys ORDER BY kid COLLATE "C"')) {
    const value = String(row.private_key_pem);
    const next = reseal({ context: `signing_key:${String(row.kid)}`, value });
    if (next !== value) changed += yield* run('UPDATE signing_keys SET private_key_pem = $1 WHERE kid = $2', next, row.kid);
  }
  for (const row of yield* many('SELECT name, value FROM server_secrets ORDER BY name COLLATE "C"')) {
    const value = String(row.value);
    const next = reseal({ context: `server_secret:${String(row.name)}`, value });
    if (next !== value) changed += yield* run('UPDATE server_secrets SET value = $1 WHERE name = $2', next, row.name);
  }
  for (const row of yield* many('SELECT id, secret FROM connectors WHERE secret IS NOT NULL ORDER BY id COLLATE "C" FOR UPDATE')) {
    const value = String(row.secret);
    const next = reseal({ context: `connector:${String(row.id)}`, value });
    if (next !== value) changed += yield* run('UPDATE connectors SET secret = $1 WHERE id = $2', next, row.id);
  }
  for (const row of yield* many('SELECT user_id, secret FROM totp_credentials ORDER BY user_id COLLATE "C" FOR UPDATE')) {
    const value = String(row.secret);
    const next = reseal({ context: `totp:${String(row.user_id)}`, value });
    if (next !== value) changed += yield* run('UPDATE totp_credentials SET secret = $1 WHERE user_id = $2', next, row.user_id);
  }
  // Client secrets kept for client_secret_jwt, the current and a rotation's previous one.
  for (const column of ['secret_sealed', 'previous_secret_sealed'] as const) {
    for (const row of yield* many(`SELECT client_id, ${column} AS value FROM clients WHERE ${column} IS NOT NULL ORDER BY client_id COLLATE "C" FOR UPDATE`)) {
      const value = String(row.value);
      const next = reseal({ context: `client_secret:${String(row.client_id)}`, value });
      if (next !== value) changed += yield* run(`UPDATE clients SET ${column} = $1 WHERE client_id = $2`, next, row.client_id);
    }
  }
  return changed;
}

function* sampleStoredSecretsSteps(): Verb<SealedSecret[]> {
  const rows = yield* many(
    `WITH secrets(context, value) AS (
       SELECT 'signing_key:' || kid, private_key_pem FROM signing_keys
       UNION ALL SELECT 'server_secret:' || name, value FROM server_secrets
       UNION ALL SELECT 'connector:' || id, secret FROM connectors WHERE secret IS NOT NULL
       UNION ALL SELECT 'totp:' || user_id, secret FROM totp_credentials
       UNION ALL SELECT 'client_secret:' || client_id, secret_sealed FROM clients WHERE secret_sealed IS NOT NULL
       UNION ALL SELECT 'client_secret:' || client_id, previous_secret_sealed FROM clients WHERE previous_secret_sealed IS NOT NULL
     )
     SELECT context, value FROM secrets WHERE substr(value, 1, 4) <> 'lk1.'
     UNION ALL
     ${either({
       // One row per key id: SQLite takes the other column from the row that has the minimum.
       sqlite: `SELECT min(context) AS context, value FROM secrets WHERE substr(value, 1, 4) = 'lk1.' GROUP BY substr(value, 1, 13)`,
       postgres: `(SELECT DISTINCT ON (substr(value, 1, 13)) context, value FROM secrets WHERE substr(value, 1, 4) = 'lk1.' ORDER BY substr(value, 1, 13), context)`,
     })}`,
  );
  return rows.map((row) => ({ context: String(row.context), value: String(row.value) }));
}

function* createSessionSteps(s: SessionRecord, guard?: UserRevocationGuard): Verb<boolean> {
  // One statement: the user row is read under the insert's snapshot; a revocation committing
  // after it deletes this session (it exists by then), one committing before it is seen here.
  return (
    (yield* run(
      `INSERT INTO sessions (id_hash, user_id, auth_time, created_at, expires_at, interaction_id, amr, public_id, ip, user_agent, last_seen_at)
       SELECT $1, $2, $3, $4, $5, $6, $9, $10, $11, $12, $13 WHERE $7::boolean OR EXISTS (
         SELECT 1 FROM users WHERE id = $2 AND tokens_revoked_at IS NOT DISTINCT FROM $8::bigint FOR SHARE)`,
      s.idHash,
      s.userId,
      s.authTime,
      s.createdAt,
      s.expiresAt,
      s.interactionId ?? null,
      guard === undefined,
      guard?.userTokensRevokedAt ?? null,
      amrToText(s.amr),
      s.id,
      s.ip ?? null,
      s.userAgent ?? null,
      s.lastSeenAt ?? null,
    )) === 1
  );
}

function* listSessionsSteps(userId: string | undefined, now: number): Verb<SessionRecord[]> {
  if (userId !== undefined && !storable(userId)) return [];
  // COLLATE "C": ties in byte order, as SQLite sorts.
  const rows =
    userId === undefined
      ? yield* many('SELECT * FROM sessions WHERE expires_at > $1 ORDER BY created_at DESC, public_id COLLATE "C"', now)
      : yield* many('SELECT * FROM sessions WHERE user_id = $1 AND expires_at > $2 ORDER BY created_at DESC, public_id COLLATE "C"', userId, now);
  return rows.map(toSession);
}

function* endSessionByIdSteps(id: string, userId: string | undefined): Verb<SessionRecord | undefined> {
  if (!storable(id) || (userId !== undefined && !storable(userId))) return undefined;
  const row =
    userId === undefined
      ? yield* one('DELETE FROM sessions WHERE public_id = $1 RETURNING *', id)
      : yield* one('DELETE FROM sessions WHERE public_id = $1 AND user_id = $2 RETURNING *', id, userId);
  return row && toSession(row);
}

function* createDeviceGrantSteps(g: DeviceGrantRecord): Verb<void> {
  yield* insert(
    'device code or user code',
    `INSERT INTO device_grants (id, device_code_hash, user_code_hash, client_id, scope, audience, status, poll_interval,
       last_polled_at_ms, user_id, auth_time, amr, acr_values, requester_ip, requester_user_agent, created_at, expires_at,
       decided_at, consumed_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19)`,
    g.id,
    g.deviceCodeHash,
    g.userCodeHash,
    g.clientId,
    g.scope,
    g.audience,
    g.status,
    g.interval,
    g.lastPolledAtMs ?? null,
    g.userId ?? null,
    g.authTime ?? null,
    amrToText(g.amr),
    g.acrValues,
    g.requesterIp,
    g.requesterUserAgent,
    g.createdAt,
    g.expiresAt,
    g.decidedAt ?? null,
    g.consumedAt ?? null,
  );
}

function* pollDeviceGrantSteps(deviceCodeHash: string, clientId: string, polledAtMs: number, nextInterval: (before: DeviceGrantRecord) => number) {
  // Read, then store this poll only if no other poll was stored since (compare and set): two
  // statements, against four for a transaction that locks the row. A poll that loses the race
  // reads again and so sees the one before it; past a few losses it takes the row lock instead.
  // (On SQLite, with one writer, the first set always holds.)
  for (let attempt = 0; attempt < pollAttemptsBeforeLocking; attempt++) {
    const row = yield* one('SELECT * FROM device_grants WHERE device_code_hash = $1', deviceCodeHash);
    if (!row) return { lost: false, grant: undefined };
    const before = toDeviceGrant(row);
    if (before.clientId !== clientId) return { lost: false, grant: before };
    // Only a pending grant is held to the interval (RFC 8628 §3.5): a decided or spent one is
    // answered without its poll times, so its polls are not written (on the device flow's
    // issuing poll, one round trip fewer).
    if (before.status !== 'pending') return { lost: false, grant: before };
    const stored = yield* run(
      `UPDATE device_grants SET last_polled_at_ms = $1, poll_interval = $2
       WHERE id = $3 AND last_polled_at_ms IS NOT DISTINCT FROM $4 AND poll_interval = $5`,
      polledAtMs,
      nextInterval(before),
      before.id,
      before.lastPolledAtMs ?? null,
      before.interval,
    );
    if (stored === 1) return { lost: false, grant: before };
  }
  return { lost: true, grant: undefined };
}

function* rotateRefreshTokenSteps(id: string, successor: RefreshTokenRecord, now: number): Verb<boolean> {
  yield* lockFamily(successor.familyId);
  // Its siblings (the other answers of a race for its parent) are left alone: each is held by a
  // process of its own and goes on as a branch of the family (see addGraceSuccessorSteps).
  const rotated = yield* one(
    `UPDATE refresh_tokens SET rotated_at = $1, replaced_by = $2
     WHERE id = $3 AND rotated_at IS NULL AND revoked_at IS NULL AND superseded_at IS NULL RETURNING id`,
    now,
    successor.id,
    id,
  );
  if (!rotated) return false;
  yield* insertRefreshToken(successor);
  return true;
}

function* addGraceSuccessorSteps(
  id: string,
  successor: RefreshTokenRecord,
  bounds: { limit: number; liveBranches: number; now: number },
): Verb<true | GraceRefusal> {
  yield* lockFamily(successor.familyId);
  const row = yield* one('SELECT revoked_at, superseded_at, grace_successors FROM refresh_tokens WHERE id = $1 FOR UPDATE', id);
  if (!row || row.revoked_at !== null) return 'revoked';
  if (row.superseded_at !== null) return 'successor_used';
  if (Number(row.grace_successors) >= bounds.limit) return 'limit';
  // A successor already used means the race is over and its holder has moved on: the old token
  // again is a replay, not a racing process. (Every write in the family holds its lock, so no
  // successor is rotated while this looks.)
  if (yield* one('SELECT 1 AS used FROM refresh_tokens WHERE parent_id = $1 AND rotated_at IS NOT NULL LIMIT 1', id)) return 'successor_used';
  yield* run('UPDATE refresh_tokens SET grace_successors = grace_successors + 1 WHERE id = $1', id);
  yield* insertRefreshToken(successor);
  // At most `liveBranches` live tokens in the family: past it, those of other branches least
  // recently made are superseded (most likely answers a process overwrote in a shared file, which
  // nobody will present). The answers of this race rank first and are never superseded.
  yield* run(
    `UPDATE refresh_tokens SET superseded_at = $1 WHERE id IN (
       SELECT live.id FROM (
         SELECT t.id, t.parent_id,
           row_number() OVER (ORDER BY CASE WHEN t.parent_id = $3 THEN 0 ELSE 1 END, t.created_at DESC, t.id COLLATE "C" DESC) AS n
         FROM refresh_tokens t WHERE t.family_id = $2 AND ${liveToken('t', '$1')}) AS live
       WHERE live.n > $4 AND live.parent_id IS DISTINCT FROM $3)`,
    bounds.now,
    successor.familyId,
    id,
    bounds.liveBranches,
  );
  return true;
}

function* retryRotationSteps(id: string, successor: RefreshTokenRecord, now: number, limit: number, raceSeconds: number): Verb<true | GraceRefusal> {
  // Every write in the family holds its lock: no successor is rotated while this looks.
  yield* lockFamily(successor.familyId);
  const row = yield* one('SELECT revoked_at, superseded_at, retries, rotated_at FROM refresh_tokens WHERE id = $1 FOR UPDATE', id);
  if (!row || row.revoked_at !== null) return 'revoked';
  if (row.superseded_at !== null) return 'successor_used';
  if (row.rotated_at === null) return 'revoked';
  if (yield* one('SELECT 1 AS revoked FROM revoked_refresh_families WHERE family_id = $1', successor.familyId)) return 'revoked';
  // A successor was used: its holder has the family, and this is a second branch (theft).
  if (yield* one('SELECT 1 AS used FROM refresh_tokens WHERE parent_id = $1 AND rotated_at IS NOT NULL LIMIT 1', id)) return 'successor_used';
  if (Number(row.retries) >= limit) return 'limit';
  // What the lost answers carried dies with this retry: one live branch, always.
  const lost = yield* many(
    'UPDATE refresh_tokens SET superseded_at = $1 WHERE parent_id = $2 AND rotated_at IS NULL AND superseded_at IS NULL AND created_at < $3 RETURNING access_token_jti',
    now,
    id,
    now - raceSeconds,
  );
  for (const token of lost) if (typeof token.access_token_jti === 'string') yield* revokeAccessTokenUntil(token.access_token_jti, now);
  yield* run('UPDATE refresh_tokens SET retries = retries + 1 WHERE id = $1', id);
  yield* insertRefreshToken(successor);
  return true;
}

function* isRefreshFamilyRevokedSteps(familyId: string): Verb<boolean> {
  return (yield* one('SELECT 1 AS revoked FROM revoked_refresh_families WHERE family_id = $1', familyId)) !== undefined;
}

function* isAccessTokenRevokedSteps(jti: string): Verb<boolean> {
  return (yield* one('SELECT 1 AS revoked FROM revoked_access_tokens WHERE jti = $1', jti)) !== undefined;
}

function* clientsOfSessionSteps(sessionId: string): Verb<string[]> {
  if (!storable(sessionId)) return [];
  // Codes are purged a day after they expire; refresh families live on (sessions may outlast a day).
  const rows = yield* many(
    'SELECT client_id FROM (SELECT client_id FROM authorization_codes WHERE session_id = $1 UNION SELECT client_id FROM refresh_tokens WHERE session_id = $1) AS c ORDER BY client_id COLLATE "C"',
    sessionId,
  );
  return rows.map((r) => String(r.client_id));
}

function* listConsentsSteps(userId: string): Verb<ConsentRecord[]> {
  if (!storable(userId)) return [];
  // COLLATE "C": ties in byte order, as SQLite sorts.
  return (yield* many('SELECT * FROM consents WHERE user_id = $1 ORDER BY granted_at DESC, client_id COLLATE "C", audience COLLATE "C"', userId)).map(
    toConsent,
  );
}

function* updateUserProfileSteps(userId: string, profile: { name: string | undefined; email: string }, now: number): Verb<boolean> {
  if (!storable(userId)) return false;
  // SET reads the old row: the flag stays only when the address is the same but for case (as
  // findUsersByEmail compares), and updated_at moves only when the name or the email really changes.
  return (
    (yield* run(
      `UPDATE users SET name = $1, email = $2, email_verified = CASE WHEN lower(email) = lower($2) THEN email_verified ELSE false END,
         updated_at = CASE WHEN $1::text IS DISTINCT FROM name OR $2 IS DISTINCT FROM email THEN $4 ELSE updated_at END WHERE id = $3`,
      profile.name ?? null,
      profile.email,
      userId,
      now,
    )) === 1
  );
}

function* updateUserSteps(username: string, change: { email?: string; name?: string | null; profile?: UserProfileClaims }, now: number): Verb<boolean> {
  if (!storable(username)) return false;
  // One statement; SET reads the old row. An operator's new address counts as verified; the same
  // address but for case keeps the flag it had.
  return (
    (yield* run(
      `UPDATE users SET email = coalesce($1, email),
         email_verified = CASE WHEN $1::text IS NULL OR lower(email) = lower($1::text) THEN email_verified ELSE true END,
         name = CASE WHEN $2::boolean THEN $3 ELSE name END, profile = coalesce($4, profile),
         updated_at = $5
       WHERE ${usernameIs('$6')}`,
      change.email ?? null,
      change.name !== undefined,
      change.name ?? null,
      change.profile === undefined ? null : profileToText(change.profile),
      now,
      username,
    )) === 1
  );
}

function* createEmailTokenSteps(t: EmailTokenRecord): Verb<void> {
  yield* insert(
    'email token',
    'INSERT INTO email_tokens (token_hash, user_id, purpose, email, created_at, expires_at, used_at) VALUES ($1, $2, $3, $4, $5, $6, $7)',
    t.tokenHash,
    t.userId,
    t.purpose,
    t.email,
    t.createdAt,
    t.expiresAt,
    t.usedAt ?? null,
  );
}

function* useEmailTokenSteps(tokenHash: string, purpose: EmailTokenPurpose, now: number): Verb<EmailTokenRecord | undefined> {
  if (!storable(tokenHash)) return undefined;
  // One conditional UPDATE: of two requests with the same link, the second re-checks used_at
  // against the first one's committed row and changes nothing.
  const row = yield* one(
    'UPDATE email_tokens SET used_at = $1 WHERE token_hash = $2 AND purpose = $3 AND used_at IS NULL AND expires_at > $1 RETURNING *',
    now,
    tokenHash,
    purpose,
  );
  return row && toEmailToken(row);
}

function* countEmailTokensSteps(userId: string, purpose: EmailTokenPurpose, since: number): Verb<number> {
  if (!storable(userId)) return 0;
  // A token created after `since` expires after it too: "unexpired" needs no other bound here.
  const row = yield* one(
    'SELECT count(*) AS n FROM email_tokens WHERE user_id = $1 AND purpose = $2 AND created_at > $3 AND used_at IS NULL',
    userId,
    purpose,
    since,
  );
  return Number(row?.n ?? 0);
}

function* consumeAuthorizationCodeSteps(
  codeHash: string,
  now: number,
  issued: { accessTokenJti: string; refreshFamilyId: string },
): Verb<AuthorizationCodeRecord | undefined> {
  const row = yield* one(
    `UPDATE authorization_codes SET consumed_at = $1, access_token_jti = $2, refresh_family_id = $3
     WHERE code_hash = $4 AND consumed_at IS NULL AND expires_at > $5 RETURNING *`,
    now,
    issued.accessTokenJti,
    issued.refreshFamilyId,
    codeHash,
    now,
  );
  return row && toAuthorizationCode(row);
}

function* useTotpStepSteps(userId: string, step: number): Verb<boolean> {
  if (!storable(userId)) return false;
  // One conditional UPDATE: a second request with the same code waits for the first one's row
  // lock, re-checks last_step against the committed row, and changes nothing.
  return (yield* run('UPDATE totp_credentials SET last_step = $1 WHERE user_id = $2 AND last_step < $1', step, userId)) === 1;
}

function* createPasskeySteps(p: PasskeyRecord): Verb<void> {
  yield* insert(
    'passkey',
    `INSERT INTO webauthn_credentials (id, user_id, public_key, counter, transports, name, backed_up, created_at, last_used_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
    p.id,
    p.userId,
    p.publicKey,
    p.counter,
    JSON.stringify(p.transports),
    p.name,
    p.backedUp,
    p.createdAt,
    p.lastUsedAt ?? null,
  );
}

function* listPasskeysSteps(userId: string): Verb<PasskeyRecord[]> {
  if (!storable(userId)) return [];
  // COLLATE "C": ties in byte order, as SQLite sorts.
  return (yield* many('SELECT * FROM webauthn_credentials WHERE user_id = $1 ORDER BY created_at, id COLLATE "C"', userId)).map(toPasskey);
}

function* useRecoveryCodeSteps(userId: string, codeHash: string, now: number): Verb<boolean> {
  if (!storable(userId) || !storable(codeHash)) return false;
  // One conditional UPDATE: of two requests with the same code, the second re-checks used_at
  // against the first one's committed row and changes nothing.
  return (yield* run('UPDATE recovery_codes SET used_at = $1 WHERE user_id = $2 AND code_hash = $3 AND used_at IS NULL', now, userId, codeHash)) === 1;
}

function* countRecoveryCodesSteps(userId: string): Verb<number> {
  if (!storable(userId)) return 0;
  return Number((yield* one('SELECT count(*) AS n FROM recovery_codes WHERE user_id = $1 AND used_at IS NULL', userId))?.n ?? 0);
}

function* countRateLimitEventSteps(bucket: string, key: string, now: number, windowSeconds: number): Verb<RateLimitCounter> {
  const row = yield* one(
    `INSERT INTO rate_limit_counters (bucket, key, count, started_at, last_at) VALUES ($1, $2, 1, $3, $3)
     ON CONFLICT (bucket, key) DO UPDATE SET
       count = CASE WHEN rate_limit_counters.started_at + $4 <= EXCLUDED.started_at THEN 1 ELSE rate_limit_counters.count + 1 END,
       started_at = CASE WHEN rate_limit_counters.started_at + $4 <= EXCLUDED.started_at THEN EXCLUDED.started_at ELSE rate_limit_counters.started_at END,
       last_at = EXCLUDED.last_at
     RETURNING count, started_at, last_at`,
    bucket,
    key,
    now,
    windowSeconds,
  );
  return toRateLimitCounter(row ?? {});
}

function* countRateLimitFailureSteps(bucket: string, key: string, now: number, forgetAfterSeconds: number): Verb<RateLimitCounter> {
  const row = yield* one(
    `INSERT INTO rate_limit_counters (bucket, key, count, started_at, last_at) VALUES ($1, $2, 1, $3, $3)
     ON CONFLICT (bucket, key) DO UPDATE SET
       count = CASE WHEN rate_limit_counters.last_at + $4 <= EXCLUDED.last_at THEN 1 ELSE rate_limit_counters.count + 1 END,
       started_at = CASE WHEN rate_limit_counters.last_at + $4 <= EXCLUDED.last_at THEN EXCLUDED.started_at ELSE rate_limit_counters.last_at END,
       last_at = EXCLUDED.last_at
     RETURNING count, started_at, last_at`,
    bucket,
    key,
    now,
    forgetAfterSeconds,
  );
  return toRateLimitCounter(row ?? {});
}

function* createRoleSteps(role: NewRole): Verb<void> {
  yield* insert(
    `role ${role.name}`,
    'INSERT INTO roles (name, description, built_in, created_at, managed_by) VALUES ($1, $2, false, $3, $4)',
    role.name,
    role.description ?? null,
    role.createdAt,
    role.managedBy ?? null,
  );
  yield* insertPermissions(role.name, role.permissions);
  yield* insertRoleGroups(role.name, role.groups ?? []);
}

/** Inside a transaction. A group given twice is one group. */
function* insertRoleGroups(role: string, groups: string[]): Verb<void> {
  for (const group of new Set(groups)) {
    yield* run('INSERT INTO role_groups (role_name, group_name) VALUES ($1, $2) ON CONFLICT DO NOTHING', role, group);
  }
}

/** Byte order of short identifiers, as the queries sort with COLLATE "C". */
const byCodeUnits = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

function* setGroupRolesSteps(userId: string, roles: string[], now: number): Verb<GroupRolesChange | false> {
  if (!storable(userId)) return false;
  // The user's row lock: two sign-ins of one person at once take turns, so the group roles left
  // are one sign-in's whole set.
  if (!(yield* one('SELECT id FROM users WHERE id = $1 FOR NO KEY UPDATE', userId))) return false;
  const wanted = [...new Set(roles.filter(storable))];
  // The roles that still exist, kept from removal until the end (KEY SHARE), so that the inserts
  // below never name a role removed meanwhile; one removed before is simply not held.
  const existing =
    wanted.length === 0 ? [] : (yield* many('SELECT name FROM roles WHERE name = ANY($1::text[]) FOR KEY SHARE', wanted)).map((r) => String(r.name));
  const held = (yield* many("SELECT role FROM user_roles WHERE user_id = $1 AND source = 'group'", userId)).map((r) => String(r.role));
  const gained = existing.filter((role) => !held.includes(role)).sort(byCodeUnits);
  const lost = held.filter((role) => !existing.includes(role)).sort(byCodeUnits);
  for (const role of lost) {
    yield* run("DELETE FROM user_roles WHERE user_id = $1 AND role = $2 AND source = 'group'", userId, role);
  }
  for (const role of gained) {
    yield* run("INSERT INTO user_roles (user_id, role, granted_at, source) VALUES ($1, $2, $3, 'group')", userId, role, now);
  }
  return { gained, lost };
}

/** setManagedBy, and an apply's record of the file on the objects it updates. */
function* setManagedBySteps(kind: ManagedKind, id: string, managedBy: string | undefined): Verb<boolean> {
  if (!storable(id)) return false;
  return (yield* run(setManagedByStatements[kind], managedBy ?? null, id)) === 1;
}

/** One statement per kind, written out: what a verb writes stays readable (and checkable) in its text. */
const setManagedByStatements: Record<ManagedKind, string> = {
  client: 'UPDATE clients SET managed_by = $1 WHERE client_id = $2',
  api: 'UPDATE apis SET managed_by = $1 WHERE identifier = $2',
  role: 'UPDATE roles SET managed_by = $1 WHERE name = $2',
  connector: 'UPDATE connectors SET managed_by = $1 WHERE id = $2',
};

function* removeRoleSteps(name: string): Verb<boolean> {
  if (!storable(name)) return false;
  // Its permissions and every grant of it go by the foreign keys' cascades.
  return (yield* run('DELETE FROM roles WHERE name = $1 AND NOT built_in', name)) === 1;
}

function* grantRoleSteps(userId: string, role: string, now: number): Verb<boolean> {
  if (!storable(userId) || !storable(role)) return false;
  try {
    // One statement: nothing is inserted unless both the user and the role exist. A grant held
    // already keeps its time; the no-op update only makes RETURNING answer for it, even when a
    // simultaneous grant committed it after this statement's snapshot.
    const held = yield* referring(
      'user or role',
      `INSERT INTO user_roles (user_id, role, granted_at, source)
       SELECT users.id, roles.name, $3, 'direct' FROM users, roles WHERE users.id = $1 AND roles.name = $2
       ON CONFLICT (user_id, role, source) DO UPDATE SET granted_at = user_roles.granted_at`,
      userId,
      role,
      now,
    );
    return held === 1;
  } catch (err) {
    // The user or the role was removed between this statement's snapshot and its insert.
    if (err instanceof MissingReferenceError) return false;
    throw err;
  }
}

function* permittedScopesSteps(userId: string, api: string): Verb<string[]> {
  if (!storable(userId) || !storable(api)) return [];
  // Both primary keys lead: user_roles by user, then role_permissions by (role, api).
  const rows = yield* many(
    `SELECT DISTINCT p.scope COLLATE "C" AS scope FROM user_roles m JOIN role_permissions p ON p.role = m.role
     WHERE m.user_id = $1 AND p.api = $2 ORDER BY 1`,
    userId,
    api,
  );
  return rows.map((r) => String(r.scope));
}

function* listClientGrantsSteps(clientId: string | undefined): Verb<ClientGrantRecord[]> {
  if (clientId !== undefined && !storable(clientId)) return [];
  // COLLATE "C": byte order, as SQLite sorts.
  const rows =
    clientId === undefined
      ? yield* many('SELECT * FROM client_grants ORDER BY client_id COLLATE "C", api COLLATE "C"')
      : yield* many('SELECT * FROM client_grants WHERE client_id = $1 ORDER BY api COLLATE "C"', clientId);
  return rows.map(toClientGrant);
}

function* updateClientSteps(clientId: string, changes: ClientChanges): Verb<boolean> {
  if (!storable(clientId)) return false;
  const columns = clientChangeColumns(changes, (value) => value);
  if (columns.length === 0) return (yield* one('SELECT 1 AS found FROM clients WHERE client_id = $1', clientId)) !== undefined;
  // Column names come from clientChangeColumns, never from the caller.
  const set = columns.map(([column], n) => `${column} = $${n + 1}`).join(', ');
  return (yield* run(`UPDATE clients SET ${set} WHERE client_id = $${columns.length + 1}`, ...columns.map(([, value]) => value), clientId)) === 1;
}

function* rotateClientSecretSteps(clientId: string, secret: { hash: string; sealed: string | undefined }, keepOldUntil: number | undefined): Verb<boolean> {
  if (!storable(clientId)) return false;
  // SET reads the row as it was, so the current secret becomes the previous one in the same step.
  // A client without a secret has nothing to keep (nor an expiry for it).
  return (
    (yield* run(
      `UPDATE clients SET
         previous_secret_hash = CASE WHEN $1::boolean THEN secret_hash END,
         previous_secret_sealed = CASE WHEN $1::boolean AND secret_hash IS NOT NULL THEN secret_sealed END,
         previous_secret_expires_at = CASE WHEN $1::boolean AND secret_hash IS NOT NULL THEN $2::bigint END,
         secret_hash = $3, secret_sealed = $4
       WHERE client_id = $5`,
      keepOldUntil !== undefined,
      keepOldUntil ?? null,
      secret.hash,
      secret.sealed ?? null,
      clientId,
    )) === 1
  );
}

function* useOnceSteps(purpose: string, key: string, expiresAt: number): Verb<boolean> {
  // A key PostgreSQL cannot store (U+0000) is nobody's honest jti: it counts as seen, so it is refused.
  if (!storable(purpose) || !storable(key)) return false;
  // One statement: a simultaneous caller of another instance waits for this one's row and then
  // re-checks the WHERE against it, so exactly one gets the row. A row past its expiry is as good
  // as purged and is taken over; "past" by the database's clock, since the caller gives no time
  // and every instance shares that one.
  return (
    (yield* run(
      `INSERT INTO used_once (purpose, key, expires_at) VALUES ($1, $2, $3)
       ON CONFLICT (purpose, key) DO UPDATE SET expires_at = EXCLUDED.expires_at
       WHERE used_once.expires_at <= extract(epoch FROM clock_timestamp())`,
      purpose,
      key,
      expiresAt,
    )) === 1
  );
}

function* takeResourceLeaseSteps(key: string, holder: string, expiresAt: number): Verb<boolean> {
  // A key PostgreSQL cannot store (U+0000) names no resource: nothing to lock, nothing to wait for.
  if (!storable(key) || !storable(holder)) return true;
  // As useOnce: a simultaneous taker on another instance waits for this row and re-checks the WHERE
  // against it, so exactly one gets the lease; an expired one (by the database's clock, the one
  // every instance shares) is taken over, so a crashed holder blocks the resource only until then.
  return (
    (yield* run(
      `INSERT INTO resource_leases (resource_key, holder, expires_at) VALUES ($1, $2, $3)
       ON CONFLICT (resource_key) DO UPDATE SET holder = EXCLUDED.holder, expires_at = EXCLUDED.expires_at
       WHERE resource_leases.expires_at <= extract(epoch FROM clock_timestamp())`,
      key,
      holder,
      expiresAt,
    )) === 1
  );
}

function* listAuditEventsSteps(query: AuditEventQuery): Verb<AuditEventRecord[]> {
  // No stored field holds U+0000 (see auditText): such a filter matches nothing.
  for (const value of [query.userId, query.clientId, query.event, query.actor]) if (value !== undefined && !storable(value)) return [];
  const params: unknown[] = [];
  const where = auditEventConditions(query, params);
  params.push(auditLimit(query.limit));
  const rows = yield* many(
    `SELECT * FROM audit_events ${where.length === 0 ? '' : `WHERE ${where.join(' AND ')}`} ORDER BY id DESC LIMIT $${params.length}`,
    ...params,
  );
  return rows.map(toAuditEvent);
}

function* createRegistrationTokenSteps(t: RegistrationTokenRecord): Verb<void> {
  yield* insert(
    'registration token',
    'INSERT INTO registration_tokens (token_hash, created_at, expires_at, used_at, client_id) VALUES ($1, $2, $3, $4, $5)',
    t.tokenHash,
    t.createdAt,
    t.expiresAt,
    t.usedAt ?? null,
    t.clientId ?? null,
  );
}

function* updateRegisteredClientSteps(clientId: string, update: RegisteredClientUpdate): Verb<boolean> {
  if (!storable(clientId)) return false;
  const columns = registeredClientColumns(update, (value) => value);
  // Column names come from registeredClientColumns, never from the caller.
  const set = columns.map(([column], n) => `${column} = $${n + 1}`).join(', ');
  return (yield* run(`UPDATE clients SET ${set} WHERE client_id = $${columns.length + 1}`, ...columns.map(([, value]) => value), clientId)) === 1;
}

function* createPushedRequestSteps(r: PushedRequestRecord): Verb<void> {
  yield* insert(
    'pushed request',
    'INSERT INTO pushed_requests (request_hash, client_id, parameters, created_at, expires_at, used_at) VALUES ($1, $2, $3, $4, $5, $6)',
    r.requestHash,
    r.clientId,
    JSON.stringify(r.parameters),
    r.createdAt,
    r.expiresAt,
    r.usedAt ?? null,
  );
}

function* removeClientSteps(clientId: string, now: number): Verb<boolean> {
  if (!storable(clientId)) return false;
  const removed = (yield* run('DELETE FROM clients WHERE client_id = $1', clientId)) === 1;
  if (removed) {
    yield* run(
      `INSERT INTO removed_clients (client_id, removed_at) VALUES ($1, $2)
       ON CONFLICT (client_id) DO UPDATE SET removed_at = greatest(removed_clients.removed_at, EXCLUDED.removed_at)`,
      clientId,
      now,
    );
    // A client registered later under this id must not inherit the right to introspect.
    yield* run(
      either({
        sqlite: `UPDATE apis SET introspection_clients = (SELECT json_group_array(value) FROM json_each(apis.introspection_clients) WHERE value <> $1)
          WHERE EXISTS (SELECT 1 FROM json_each(apis.introspection_clients) WHERE value = $1)`,
        postgres: `UPDATE apis SET introspection_clients = (
            SELECT coalesce(json_agg(v), '[]'::json)::text FROM json_array_elements_text(introspection_clients::json) AS v WHERE v <> $1)
          WHERE introspection_clients::jsonb ? $1`,
      }),
      clientId,
    );
  }
  return removed;
}

function* updateRoleSteps(name: string, changes: RoleChanges): Verb<boolean> {
  if (!storable(name)) return false;
  // The role's row lock makes simultaneous updates take turns, so the permissions left are one
  // caller's whole list. NO KEY: grants of the role (their foreign-key checks) need not wait.
  // A description given as undefined clears it; one not given at all stays.
  const found =
    'description' in changes
      ? yield* one('UPDATE roles SET description = $2 WHERE name = $1 RETURNING name', name, changes.description ?? null)
      : yield* one('SELECT name FROM roles WHERE name = $1 FOR NO KEY UPDATE', name);
  if (!found) return false;
  if (changes.permissions !== undefined) {
    yield* run('DELETE FROM role_permissions WHERE role = $1', name);
    yield* insertPermissions(name, changes.permissions);
  }
  if (changes.groups !== undefined) {
    yield* run('DELETE FROM role_groups WHERE role_name = $1', name);
    yield* insertRoleGroups(name, changes.groups);
  }
  return true;
}

function* createConnectorSteps(c: NewRecord<Omit<ConnectorRecord, 'position'>>): Verb<void> {
  // One at a time, so that two new connectors never take the same position.
  yield* lock('connectors', '');
  yield* insert(
    `connector ${c.id}`,
    `INSERT INTO connectors (id, type, name, config, secret, position, created_at, managed_by)
     VALUES ($1, $2, $3, $4, $5, (SELECT coalesce(max(position), 0) + 1 FROM connectors), $6, $7)`,
    c.id,
    c.type,
    c.name,
    JSON.stringify(c.config),
    c.secret ?? null,
    c.createdAt,
    c.managedBy ?? null,
  );
}

function* removeConnectorSteps(id: string): Verb<boolean> {
  if (!storable(id)) return false;
  return (yield* run('DELETE FROM connectors WHERE id = $1', id)) === 1;
}

function* saveClientGrantStep(g: ClientGrantRecord): Verb<number> {
  return yield* referring(
    `grant of ${g.clientId}`,
    `INSERT INTO client_grants (client_id, api, scopes, created_at) VALUES ($1, $2, $3, $4)
     ON CONFLICT (client_id, api) DO UPDATE SET scopes = EXCLUDED.scopes, created_at = EXCLUDED.created_at`,
    g.clientId,
    g.api,
    JSON.stringify(g.scopes),
    g.createdAt,
  );
}

/** A client's declared settings replaced as a whole; its secret too (a rotation's previous secret is dropped when it changes). */
function* replaceClientSteps(c: ClientRecord, grants: readonly ClientGrantRecord[]): Verb<void> {
  if (!storable(c.clientId)) throw new MissingReferenceError(`client ${c.clientId.slice(0, 80)}`);
  const updated = yield* run(
    `UPDATE clients SET name = $2, redirect_uris = $3, grant_types = $4, require_pkce = $5, first_party = $6, post_logout_redirect_uris = $7,
       backchannel_logout_uri = $8, jwks_uri = $9, jwks = $10, require_par = $11, web_origins = $12,
       previous_secret_hash = CASE WHEN secret_hash IS NOT DISTINCT FROM $13 THEN previous_secret_hash END,
       previous_secret_sealed = CASE WHEN secret_hash IS NOT DISTINCT FROM $13 THEN previous_secret_sealed END,
       previous_secret_expires_at = CASE WHEN secret_hash IS NOT DISTINCT FROM $13 THEN previous_secret_expires_at END,
       secret_sealed = CASE WHEN secret_hash IS NOT DISTINCT FROM $13 THEN secret_sealed ELSE $14 END,
       secret_hash = $13, managed_by = $15
     WHERE client_id = $1`,
    c.clientId,
    c.name,
    JSON.stringify(c.redirectUris),
    JSON.stringify(c.grantTypes),
    c.requirePkce,
    c.firstParty,
    JSON.stringify(c.postLogoutRedirectUris),
    c.backchannelLogoutUri ?? null,
    c.jwksUri ?? null,
    c.jwks === undefined ? null : JSON.stringify(c.jwks),
    c.requirePar,
    JSON.stringify(c.webOrigins),
    c.secretHash ?? null,
    c.secretSealed ?? null,
    c.managedBy ?? null,
  );
  if (updated !== 1) throw new MissingReferenceError(`client ${c.clientId}`);
  yield* replaceClientGrants(c.clientId, grants);
}

function* replaceClientGrants(clientId: string, grants: readonly ClientGrantRecord[]): Verb<void> {
  yield* run('DELETE FROM client_grants WHERE client_id = $1', clientId);
  for (const grant of grants) yield* saveClientGrantStep(grant);
}

/** The connector's name, settings and secret replaced; its place in the order and its identities stay. */
function* replaceConnectorSteps(c: Omit<ConnectorRecord, 'position' | 'createdAt'>): Verb<void> {
  const updated = storable(c.id)
    ? yield* run(
        'UPDATE connectors SET type = $2, name = $3, config = $4, secret = $5, managed_by = $6 WHERE id = $1',
        c.id,
        c.type,
        c.name,
        JSON.stringify(c.config),
        c.secret ?? null,
        c.managedBy ?? null,
      )
    : 0;
  if (updated !== 1) throw new MissingReferenceError(`connector ${c.id.slice(0, 80)}`);
}

/**
 * The steps of a whole configuration apply, in the order given, in the caller's one transaction:
 * a step that fails (a duplicate, a missing reference, a changed row) throws, and with it every
 * step before it is rolled back.
 */
function* applyConfigurationSteps(changes: readonly ConfigurationChange[]): Verb<void> {
  for (const change of changes) {
    switch (change.object) {
      case 'api':
        if (change.kind === 'create') yield* createApiSteps(change.record);
        else if (change.kind === 'update') {
          if (!(yield* updateApiSteps(change.record))) throw new MissingReferenceError(`API ${change.record.identifier.slice(0, 80)}`);
          yield* setManagedBySteps('api', change.record.identifier, change.record.managedBy);
        } else if (!(yield* removeApiSteps(change.id))) throw new MissingReferenceError(`API ${change.id.slice(0, 80)}`);
        break;
      case 'role':
        if (change.kind === 'create') yield* createRoleSteps(change.record);
        else if (change.kind === 'update') {
          const { name, description, permissions, groups, managedBy } = change.record;
          if (!(yield* updateRoleSteps(name, { description, permissions, groups }))) throw new MissingReferenceError(`role ${name.slice(0, 80)}`);
          yield* setManagedBySteps('role', name, managedBy);
        } else if (!(yield* removeRoleSteps(change.id))) throw new MissingReferenceError(`role ${change.id.slice(0, 80)}`);
        break;
      case 'client':
        if (change.kind === 'create') {
          yield* insertClient(change.record);
          yield* replaceClientGrants(change.record.clientId, change.grants);
        } else if (change.kind === 'update') yield* replaceClientSteps(change.record, change.grants);
        else if (!(yield* removeClientSteps(change.id, change.now))) throw new MissingReferenceError(`client ${change.id.slice(0, 80)}`);
        break;
      case 'connector':
        if (change.kind === 'create') yield* createConnectorSteps(change.record);
        else if (change.kind === 'update') yield* replaceConnectorSteps(change.record);
        else if (!(yield* removeConnectorSteps(change.id))) throw new MissingReferenceError(`connector ${change.id.slice(0, 80)}`);
        break;
    }
  }
}

/**
 * Four pages of random text (random: PostgreSQL would compress a repeated one to nothing):
 * inserted and deleted in one committed transaction, the probe needs new pages and WAL space, as a
 * request's write does, and leaves no row behind.
 */
const readinessProbeBytes = 12_288;

function* probeWrites(filler: string): Verb<void> {
  const id = randomInt(1, 2 ** 31 - 1);
  yield* run('INSERT INTO readiness_probe (id, filler) VALUES ($1, $2)', id, filler);
  yield* run('DELETE FROM readiness_probe WHERE id = $1', id);
}
