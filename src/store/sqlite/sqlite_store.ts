/**
 * The embedded Store on better-sqlite3: WAL (readers never wait for the writer, and the admin
 * CLI can work while the server runs), foreign keys, a busy timeout for the moments two processes
 * write at once. Statements are prepared once. Every method is synchronous inside, so each one is
 * atomic on its own; multi-statement verbs run in one transaction that never spans an await.
 */
import Database from 'better-sqlite3';
import { chmodSync, closeSync, existsSync, mkdirSync, openSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import { epochSeconds, systemClock } from '../../clock.js';
import { sqliteMigrationsDir } from '../../paths.js';
import { migrate, readMigrations } from './migrate.js';
import type { MigrationRun } from '../migration_history.js';
import { startCheckpointer, type Checkpointer } from './checkpointer.js';
import { GroupCommit } from './group_commit.js';
import { deepFreeze } from '../../deep_freeze.js';
import {
  amrToText,
  claimsToText,
  profileToText,
  clientChangeColumns,
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
  toRateLimitCounter,
  toRefreshFamilySummary,
  toRefreshToken,
  toRole,
  toSession,
  toSigningKey,
  toTotp,
  toUser,
  toUserIdentity,
  toRemovedIdentity,
  toRegistrationToken,
  registeredClientColumns,
  toPushedRequest,
  type Row,
} from '../rows.js';
import {
  DuplicateError,
  type AnotherWayIn,
  type ApiRecord,
  type AuditEventQuery,
  type AuditEventRecord,
  type AuthMethod,
  type AuthorizationCodeRecord,
  type ClientChanges,
  type ClientGrantRecord,
  type ClientRecord,
  type ConnectorRecord,
  type ConsentRecord,
  type DeviceGrantRecord,
  type EmailTokenPurpose,
  type EmailTokenRecord,
  type GraceRefusal,
  type DeviceRecoveryRefusal,
  maxAccessTokenLifetime,
  joinedFamily,
  type PasskeyRecord,
  type Permission,
  type PurgeCounts,
  type RateLimitCounter,
  type RefreshFamilySummary,
  type RefreshTokenRecord,
  type RoleRecord,
  type SealedSecret,
  type SessionRecord,
  type TotpRecord,
  type UpstreamProfileUpdate,
  type UserIdentityRecord,
  type UserRevocationGuard,
  type SigningKeyRecord,
  type Store,
  type UserProfileClaims,
  type UserRecord,
  type RegisteredClientUpdate,
  type RegistrationTokenRecord,
  type PushedRequestRecord,
  type RemovedIdentityRecord,
  MissingReferenceError,
} from '../store.js';


/** A foreign key that names nothing (an API or client removed meanwhile): the caller's MissingReferenceError. */
function missingReference(err: unknown, what: string): unknown {
  return err instanceof Error && 'code' in err && err.code === 'SQLITE_CONSTRAINT_FOREIGNKEY' ? new MissingReferenceError(what) : err;
}

function isUniqueViolation(err: unknown): boolean {
  return (
    err instanceof Error &&
    'code' in err &&
    (err.code === 'SQLITE_CONSTRAINT_UNIQUE' || err.code === 'SQLITE_CONSTRAINT_PRIMARYKEY')
  );
}

/**
 * The condition that refresh token `t` is its family's live one at `now` (a placeholder): neither
 * rotated, revoked nor superseded, unexpired, in a family not revoked. Matches refresh_tokens_live.
 */
export function liveToken(t: string, now: string): string {
  return `${t}.rotated_at IS NULL AND ${t}.revoked_at IS NULL AND ${t}.superseded_at IS NULL AND ${t}.expires_at > ${now}
    AND NOT EXISTS (SELECT 1 FROM revoked_refresh_families r WHERE r.family_id = ${t}.family_id)`;
}

/** listAuditEvents never returns more than this many events at once, whatever the caller asks. */
export const maxAuditEvents = 500;

/** The limit of an audit query: at most maxAuditEvents, none for a negative one. */
export function auditLimit(limit: number): number {
  return Number.isFinite(limit) ? Math.min(Math.max(Math.trunc(limit), 0), maxAuditEvents) : maxAuditEvents;
}

/**
 * The conditions of an audit query (combined with AND), for both stores: `param` gives each value
 * its placeholder, `collate` the collation of byte order. An event prefix ("user.") is a range of
 * the event index rather than a LIKE (whose _ and % would be wildcards, and case-insensitive in
 * SQLite): every name from the prefix up to, not including, the prefix with its final '.' replaced
 * by the next character, '/'.
 */
export function auditEventConditions(q: AuditEventQuery, param: (value: unknown) => string, collate = ''): string[] {
  const where: string[] = [];
  if (q.since !== undefined) where.push(`at >= ${param(q.since)}`);
  if (q.until !== undefined) where.push(`at < ${param(q.until)}`);
  if (q.userId !== undefined) where.push(`user_id = ${param(q.userId)}`);
  if (q.clientId !== undefined) where.push(`client_id = ${param(q.clientId)}`);
  if (q.actor !== undefined) where.push(`actor = ${param(q.actor)}`);
  if (q.event !== undefined && q.event.endsWith('.')) {
    where.push(`event${collate} >= ${param(q.event)}`, `event${collate} < ${param(`${q.event.slice(0, -1)}/`)}`);
  } else if (q.event !== undefined) {
    where.push(`event${collate} = ${param(q.event)}`);
  }
  if (q.beforeId !== undefined) where.push(`id < ${param(q.beforeId)}`);
  return where;
}

/** Seconds after its latest event that a rate-limit counter can be purged. */
export const rateLimitCounterLifetime = 1_000_000 + 7200;

/** Each cache starts over beyond this many records, so memory stays bounded. */
const maxCachedRecords = 10_000;

/**
 * A user row with its roles, sorted, as a JSON array: one statement, so that findUserById (on the
 * token path) stays a single indexed read. Role names sort in byte order (BINARY).
 */
const userWithRoles = `users.*, (SELECT json_group_array(role ORDER BY role) FROM user_roles WHERE user_roles.user_id = users.id) AS roles`;

/** A role row with its permissions (sorted by api, then scope, as a JSON array) and how many hold it. */
const roleWithPermissions = `roles.*,
  (SELECT json_group_array(json_object('api', api, 'scope', scope) ORDER BY api, scope) FROM role_permissions WHERE role_permissions.role = roles.name) AS permissions,
  (SELECT count(*) FROM user_roles WHERE user_roles.role = roles.name) AS members`;

export interface SqliteStoreOptions {
  /** File path, or ':memory:' for tests. */
  path: string;
  now?: number;
  /**
   * Checkpoint the WAL from a worker thread instead of inside commits (the server's store; short
   * CLI commands keep SQLite's automatic checkpoints).
   */
  backgroundCheckpoints?: boolean;
  /** Run the verbs of one event-loop turn together, in one transaction (the server's store; see group_commit.ts). */
  groupCommit?: boolean;
  /** With group commit, let the reads join the batch too (default); false where several processes share the file. */
  batchReads?: boolean;
  /**
   * Convert a file made without incremental vacuum (by an older version) with a one-time VACUUM:
   * the server does it at start, before it listens; short admin commands never do.
   */
  convertToIncrementalVacuum?: boolean;
}

/**
 * The verbs that only read: with group commit they join the turn's batch too (one read transaction
 * for all of them), except scrubFreedSpace, which commits the pending batch itself and then
 * checkpoints (a checkpoint cannot run inside a transaction), and so runs at once.
 */
export const readOnlyVerbs = new Set([
  'scrubFreedSpace',
  'databaseTime',
  'ping',
  'countUsers',
  'findUserById',
  'findUserByUsername',
  'listUsers',
  'findUsersByEmail',
  'findConnector',
  'listConnectors',
  'findIdentity',
  'listIdentities',
  'findRemovedIdentity',
  'listRemovedIdentities',
  'findClient',
  'listClients',
  'findApi',
  'listApis',
  'listSigningKeys',
  'signingKeysFingerprint',
  'findSession',
  'listSessions',
  'findDeviceGrantByDeviceCode',
  'findDeviceGrantByUserCode',
  'findRefreshToken',
  'isRefreshFamilyRevoked',
  'listRefreshFamilies',
  'isAccessTokenRevoked',
  'findConsent',
  'listConsents',
  'clientsOfSession',
  'countEmailTokens',
  'findEmailToken',
  'findAuthorizationCode',
  'findTotp',
  'findPasskey',
  'listPasskeys',
  'countRecoveryCodes',
  'readRateLimitCounter',
  'findRole',
  'listRoles',
  'listRoleMembers',
  'permittedScopes',
  'findClientGrant',
  'listClientGrants',
  'listAuditEvents',
  'findRegistrationToken',
  'sampleStoredSecrets',
]);

/**
 * The verbs that write: with group commit they join the turn's batch. Each must do all its SQL
 * before its first await (a test checks that every verb is in exactly one of the two lists).
 */
export const writeVerbs = new Set([
  'purgeExpired',
  'createUser',
  'setUserDisabled',
  'setUserPassword',
  'revokeUserTokens',
  'createClient',
  'ensureClient',
  'removeClient',
  'createConnector',
  'removeConnector',
  'createUserWithIdentity',
  'linkIdentity',
  'recordUpstreamSignIn',
  'unlinkIdentity',
  'allowRemovedIdentity',
  'createApi',
  'updateApi',
  'removeApi',
  'ensureSigningKey',
  'rotateSigningKeys',
  'serverSecret',
  'resealSecrets',
  'createSession',
  'deleteSession',
  'endSessionById',
  'touchSession',
  'endOtherSignIns',
  'createDeviceGrant',
  'pollDeviceGrant',
  'approveDeviceGrant',
  'denyDeviceGrant',
  'consumeDeviceGrant',
  'redeemDeviceGrant',
  'createRefreshToken',
  'rotateRefreshToken',
  'addGraceSuccessor',
  'retryRotation',
  'recoverDeviceGrant',
  'revokeRefreshFamily',
  'revokeRefreshFamilyOf',
  'revokeAccessToken',
  'saveConsent',
  'withdrawConsent',
  'updateUserProfile',
  'updateUser',
  'updateUserPassword',
  'upgradePasswordHash',
  'createEmailToken',
  'useEmailToken',
  'cancelEmailTokens',
  'markEmailVerified',
  'createAuthorizationCode',
  'consumeAuthorizationCode',
  'saveTotp',
  'useTotpStep',
  'removeTotp',
  'createPasskey',
  'recordPasskeyUse',
  'renamePasskey',
  'removePasskey',
  'replaceRecoveryCodes',
  'useRecoveryCode',
  'resetSecondFactors',
  'countRateLimitEvent',
  'countRateLimitFailure',
  'undoRateLimitEvent',
  'clearRateLimitCounter',
  'reclaimSpace',
  'createRole',
  'updateRole',
  'removeRole',
  'grantRole',
  'revokeRole',
  'saveClientGrant',
  'removeClientGrant',
  'updateClient',
  'rotateClientSecret',
  'setClientDisabled',
  'useOnce',
  'appendAuditEvents',
  'purgeAuditEvents',
  'createRegistrationToken',
  'useRegistrationToken',
  'registerClient',
  'updateRegisteredClient',
  // --- Pushed authorization requests (issue 19) ---
  'createPushedRequest',
  'usePushedRequest',
]);

export class SqliteStore implements Store {
  readonly db: Database.Database;
  readonly appliedMigrations: string[];
  /** What the migrations did when this store opened, for the start log. */
  readonly migrationRun: MigrationRun;
  private readonly statements = new Map<string, Database.Statement>();
  /** One machine: rate limits are counted in each process's memory. */
  readonly sharedAcrossInstances = false;
  private checkpointer: Checkpointer | undefined;
  private groupCommit: GroupCommit | undefined;
  /** Statements that threw (see GroupCommit: a failed verb is rolled back to its savepoint). */
  private failedStatements = 0;
  /** Files other users can read (the database file): for the server to warn about at start. */
  readonly permissionWarnings: string[] = [];
  /** What opening did to the file's vacuum mode, for the server to log. */
  readonly vacuumConversion: VacuumConversion;
  /**
   * Clients, users and APIs read on every token request, kept until directory_version changes
   * (triggers bump it on any write, from any process); one indexed read checks it per lookup.
   */
  private readonly directory = {
    version: -1,
    clients: new Map<string, ClientRecord>(),
    users: new Map<string, UserRecord>(),
    apis: new Map<string, ApiRecord>(),
    connectors: new Map<string, ConnectorRecord[]>(),
  };

  constructor(options: SqliteStoreOptions) {
    if (options.path !== ':memory:') {
      // The file holds the private signing keys: only the server's user may read it. SQLite gives
      // the -wal and -shm files the same permissions as the database file.
      mkdirSync(dirname(options.path), { recursive: true, mode: 0o700 });
      closeSync(openSync(options.path, 'a', 0o600));
    }
    this.db = new Database(options.path);
    this.db.pragma('busy_timeout = 5000');
    // Space freed by purges goes back to the file system (reclaimSpace). A new file gets it before
    // its first table; an older one is converted once with a VACUUM (see ensureIncrementalVacuum).
    this.vacuumConversion = options.path === ':memory:' ? 'not_needed' : ensureIncrementalVacuum(this.db, options.convertToIncrementalVacuum === true);
    if (options.path !== ':memory:') {
      this.db.pragma('journal_mode = WAL');
      // NORMAL in WAL mode survives a killed process; only a power cut can lose the last commits.
      this.db.pragma('synchronous = NORMAL');
    }
    this.db.pragma('foreign_keys = ON');
    this.migrationRun = migrate(this.db, readMigrations(sqliteMigrationsDir), options.now ?? epochSeconds(systemClock));
    this.appliedMigrations = this.migrationRun.applied;
    if (options.path !== ':memory:') this.tightenPermissions(options.path);
    if (options.backgroundCheckpoints && options.path !== ':memory:') {
      this.db.pragma('wal_autocheckpoint = 0');
      // Once a checkpoint has emptied it, the WAL file is cut back to this size.
      this.db.pragma('journal_size_limit = 67108864');
      this.checkpointer = startCheckpointer(options.path, () => {
        if (this.db.open) this.db.pragma('wal_autocheckpoint = 1000');
      });
    }
    if (options.groupCommit) this.enableGroupCommit(options.batchReads !== false);
  }

  /**
   * SQLite gives the -wal and -shm files the mode of the database file, so a database made loose
   * (0644) by hand or by an old version would spread its keys and codes into world-readable side
   * files: those are made 0600 here, and the database file is reported, not changed (an operator
   * may have chosen a group for backups).
   */
  private tightenPermissions(path: string): void {
    for (const file of [`${path}-wal`, `${path}-shm`]) {
      try {
        if (existsSync(file) && (statSync(file).mode & 0o077) !== 0) chmodSync(file, 0o600);
      } catch {
        // Not ours to change (another owner): the database file warning below covers it.
      }
    }
    const mode = statSync(path).mode & 0o777;
    if ((mode & 0o077) !== 0) {
      this.permissionWarnings.push(`the database file ${path} can be read by other users (mode ${mode.toString(8).padStart(4, '0')}): run chmod 600 ${path}`);
    }
  }

  /** Routes every verb of this instance (but scrubFreedSpace) through one GroupCommit. */
  private enableGroupCommit(batchReads: boolean): void {
    const group = new GroupCommit(
      this.db,
      () => this.failedStatements,
      // A batch's reads may have cached records or a directory version it wrote: start over.
      () => {
        this.directory.version = -1;
      },
    );
    this.groupCommit = group;
    const self = this as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>;
    const throughBatch = (names: Iterable<string>, queue: (verb: () => Promise<unknown>) => Promise<unknown>) => {
      for (const name of names) {
        const bound = (self[name] as (...args: unknown[]) => Promise<unknown>).bind(this);
        self[name] = (...args: unknown[]) => queue(() => bound(...args));
      }
    };
    throughBatch(writeVerbs, (verb) => group.write(verb));
    // With several processes on the file (LATCHKEY_WORKERS) reads stay out of the batches: a batch
    // that writes holds the write lock, and the other workers would wait for reads too.
    if (batchReads) throughBatch([...readOnlyVerbs].filter((name) => name !== 'scrubFreedSpace'), (verb) => group.read(verb));
  }

  /** Statements are compiled on first use and kept for the life of the connection. */
  private sql(source: string): Database.Statement {
    let statement = this.statements.get(source);
    if (!statement) {
      statement = this.db.prepare(source);
      this.statements.set(source, statement);
    }
    return statement;
  }

  /** Runs one statement, counting a failure before passing it on. */
  private counted<T>(execute: () => T): T {
    try {
      return execute();
    } catch (err) {
      this.failedStatements++;
      throw err;
    }
  }

  private get(source: string, ...params: unknown[]): Row | undefined {
    return this.counted(() => this.sql(source).get(...params) as Row | undefined);
  }

  private all(source: string, ...params: unknown[]): Row[] {
    return this.counted(() => this.sql(source).all(...params) as Row[]);
  }

  /** A directory record from the cache, or loaded and cached (misses are not cached: ids are caller-chosen). */
  private cached<T extends object>(cache: Map<string, T>, key: string, load: () => T | undefined): T | undefined {
    const version = Number(this.get('SELECT version FROM directory_version WHERE id = 1')?.version ?? -2);
    if (version !== this.directory.version) {
      this.directory.version = version;
      this.directory.clients.clear();
      this.directory.users.clear();
      this.directory.apis.clear();
      this.directory.connectors.clear();
    }
    let record = cache.get(key);
    if (record === undefined) {
      record = load();
      if (record === undefined) return undefined;
      if (cache.size >= maxCachedRecords) cache.clear();
      cache.set(key, deepFreeze(record));
    }
    return record;
  }

  private run(source: string, ...params: unknown[]): number {
    return this.counted(() => this.sql(source).run(...params).changes);
  }

  private insert(what: string, source: string, ...params: unknown[]): void {
    try {
      this.run(source, ...params);
    } catch (err) {
      if (isUniqueViolation(err)) throw new DuplicateError(what);
      throw err;
    }
  }

  /**
   * Runs `work` as one atomic unit: its own transaction, or — inside the group commit's batch,
   * where every verb already runs in a savepoint of its own — directly (a nested transaction would
   * only add a second savepoint, and building its wrapper on every call was a visible cost).
   */
  private atomic<T>(work: () => T): T {
    if (!this.db.inTransaction) return this.db.transaction(work)();
    try {
      return work();
    } catch (err) {
      // Counted as a failed statement, so the group commit rolls this verb back to its savepoint
      // whatever the error (a nested transaction would have rolled back itself).
      this.failedStatements++;
      throw err;
    }
  }

  /**
   * Runs `work` in one transaction. Only for bulk loading (the bench's fixtures): the verbs called
   * inside must not await anything before their SQL, which holds for every verb of this store.
   */
  bulk(work: () => void): void {
    this.atomic(work);
  }

  async databaseTime(): Promise<number> {
    return Number(this.get('SELECT unixepoch() AS now')?.now);
  }

  async ping(): Promise<boolean> {
    return this.get('SELECT 1 AS ok')?.ok === 1;
  }

  async purgeExpired(now: number, batchSize = -1): Promise<PurgeCounts> {
    const grace = 86400;
    // SQLite has no DELETE … LIMIT by default; a rowid sub-select gives the same (LIMIT -1: all).
    const purge = (table: string, condition: string, ...params: unknown[]) =>
      this.run(`DELETE FROM ${table} WHERE rowid IN (SELECT rowid FROM ${table} WHERE ${condition} LIMIT ?)`, ...params, batchSize);
    return this.atomic(() => {
      const counts: PurgeCounts = {
        authorizationCodes: purge('authorization_codes', 'expires_at <= ?', now - grace),
        deviceGrants: purge('device_grants', 'expires_at <= ?', now - grace),
        sessions: purge('sessions', 'expires_at <= ?', now),
        // A rotated or revoked token is kept until its family ends: presenting it again is theft.
        refreshTokens: purge(
          'refresh_tokens',
          'family_expires_at <= ? OR (rotated_at IS NULL AND revoked_at IS NULL AND expires_at <= ?)',
          now - grace,
          now - grace,
        ),
        revokedAccessTokens: purge('revoked_access_tokens', 'expires_at <= ?', now),
        // A used link can do nothing more; an expired one is kept a day, like a code.
        emailTokens: purge('email_tokens', 'expires_at <= ? OR used_at IS NOT NULL', now - grace),
        usedOnce: purge('used_once', 'expires_at <= ?', now),
        // Used or not, an expired initial access token can register nothing.
        registrationTokens: purge('registration_tokens', 'expires_at <= ?', now),
        // Used or not, an expired pushed request can start nothing.
        pushedRequests: purge('pushed_requests', 'expires_at <= ?', now),
      };
      // Access tokens of a revoked family are refused by its id, so the row outlives any of them
      // (access tokens live at most a year).
      purge('revoked_refresh_families', 'revoked_at <= ?', now - 366 * 86400);
      // Likewise a removal only matters while the old client's access tokens could still be live.
      purge('removed_clients', 'removed_at <= ?', now - 366 * 86400);
      // A counter idle longer than the longest window (COUNT/SECONDS allows 999,999 s) or the
      // longest back-off (an hour) means nothing any more.
      purge('rate_limit_counters', 'last_at <= ?', now - rateLimitCounterLifetime);
      return counts;
    });
  }

  async close(): Promise<void> {
    if (this.db.open) this.groupCommit?.flush();
    await this.checkpointer?.stop();
    if (this.db.open) this.db.close();
  }

  async countUsers(): Promise<number> {
    return Number(this.get('SELECT count(*) AS n FROM users')?.n ?? 0);
  }

  private insertUser(u: UserRecord): void {
    this.insert(
      `user ${u.username}`,
      `INSERT INTO users (id, username, email, name, password_hash, disabled, created_at, tokens_revoked_at, source, email_verified, groups,
         profile, updated_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      u.id,
      u.username,
      u.email,
      u.name ?? null,
      u.passwordHash,
      u.disabled ? 1 : 0,
      u.createdAt,
      u.tokensRevokedAt ?? null,
      u.source,
      u.emailVerified ? 1 : 0,
      JSON.stringify(u.groups),
      profileToText(u.profile),
      u.updatedAt,
    );
  }

  async createUser(u: UserRecord): Promise<void> {
    this.insertUser(u);
  }

  async findUsersByEmail(email: string): Promise<UserRecord[]> {
    return this.all(`SELECT ${userWithRoles} FROM users WHERE email = ? COLLATE NOCASE ORDER BY username`, email).map(toUser);
  }

  async createConnector(c: Omit<ConnectorRecord, 'position'>): Promise<void> {
    this.insert(
      `connector ${c.id}`,
      `INSERT INTO connectors (id, type, name, config, secret, position, created_at)
       VALUES (?, ?, ?, ?, ?, (SELECT coalesce(max(position), 0) + 1 FROM connectors), ?)`,
      c.id,
      c.type,
      c.name,
      JSON.stringify(c.config),
      c.secret ?? null,
      c.createdAt,
    );
  }

  /** All connectors, cached like the rest of the directory (read at every sign-in page). */
  private connectors(): ConnectorRecord[] {
    return this.cached(this.directory.connectors, 'all', () => this.all('SELECT * FROM connectors ORDER BY position, id').map(toConnector)) ?? [];
  }

  async findConnector(id: string): Promise<ConnectorRecord | undefined> {
    return this.connectors().find((c) => c.id === id);
  }

  async listConnectors(): Promise<ConnectorRecord[]> {
    return [...this.connectors()];
  }

  async removeConnector(id: string): Promise<boolean> {
    return this.run('DELETE FROM connectors WHERE id = ?', id) === 1;
  }

  async findIdentity(connectorId: string, subject: string): Promise<UserIdentityRecord | undefined> {
    const row = this.get('SELECT * FROM user_identities WHERE connector_id = ? AND subject = ?', connectorId, subject);
    return row && toUserIdentity(row);
  }

  private insertIdentity(i: UserIdentityRecord): void {
    this.insert(
      'identity',
      'INSERT INTO user_identities (connector_id, subject, user_id, created_at, last_sign_in_at) VALUES (?, ?, ?, ?, ?)',
      i.connectorId,
      i.subject,
      i.userId,
      i.createdAt,
      i.lastSignInAt ?? null,
    );
  }

  async createUserWithIdentity(user: UserRecord, identity: UserIdentityRecord): Promise<void> {
    this.atomic(() => {
      this.insertUser(user);
      this.insertIdentity(identity);
    });
  }

  async linkIdentity(identity: UserIdentityRecord): Promise<void> {
    this.insertIdentity(identity);
  }

  async recordUpstreamSignIn(connectorId: string, subject: string, now: number, update: UpstreamProfileUpdate): Promise<boolean> {
    return this.atomic(() => {
      const row = this.get('UPDATE user_identities SET last_sign_in_at = ? WHERE connector_id = ? AND subject = ? RETURNING user_id', now, connectorId, subject);
      if (!row) return false;
      // SET reads the old row: updated_at moves only when the name or the email is really different.
      const email = update.email ?? null;
      const setsName = 'name' in update ? 1 : 0;
      const name = update.name ?? null;
      this.run(
        `UPDATE users SET groups = ?, email = coalesce(?, email), name = CASE WHEN ? THEN ? ELSE name END,
           email_verified = coalesce(?, email_verified),
           updated_at = CASE WHEN (? IS NOT NULL AND ? IS NOT email) OR (? AND ? IS NOT name) THEN ? ELSE updated_at END
         WHERE id = ?`,
        JSON.stringify(update.groups),
        email,
        setsName,
        name,
        update.emailVerified === undefined ? null : update.emailVerified ? 1 : 0,
        email,
        email,
        setsName,
        name,
        now,
        row.user_id,
      );
      return true;
    });
  }

  async listIdentities(userId: string | undefined): Promise<UserIdentityRecord[]> {
    const rows =
      userId === undefined
        ? this.all('SELECT * FROM user_identities ORDER BY created_at, connector_id, subject')
        : this.all('SELECT * FROM user_identities WHERE user_id = ? ORDER BY created_at, connector_id, subject', userId);
    return rows.map(toUserIdentity);
  }

  async unlinkIdentity(userId: string, connectorId: string, now: number, anotherWayIn?: AnotherWayIn): Promise<UserIdentityRecord[] | 'last_way_in'> {
    return this.atomic(() => {
      const bound = this.all('SELECT * FROM user_identities WHERE user_id = ? AND connector_id = ? ORDER BY created_at, subject', userId, connectorId).map(toUserIdentity);
      if (bound.length === 0) return [];
      if (anotherWayIn) {
        // A password this server verifies (crypto/password.ts: Argon2id, or scrypt of earlier versions).
        const other = this.get(
          `SELECT (password_hash LIKE '$argon2id$%' OR password_hash LIKE 'scrypt$%'
             OR EXISTS (SELECT 1 FROM user_identities WHERE user_id = users.id AND connector_id <> ?)
             OR (? AND EXISTS (SELECT 1 FROM webauthn_credentials WHERE user_id = users.id))) AS other
           FROM users WHERE id = ?`,
          connectorId,
          anotherWayIn.passkeysSignIn ? 1 : 0,
          userId,
        );
        if (other?.other !== 1) return 'last_way_in';
      }
      this.run(
        `INSERT INTO removed_identities (connector_id, subject, user_id, linked_at, removed_at)
         SELECT connector_id, subject, user_id, created_at, ? FROM user_identities WHERE user_id = ? AND connector_id = ?
         ON CONFLICT (connector_id, subject) DO UPDATE SET user_id = excluded.user_id, linked_at = excluded.linked_at, removed_at = excluded.removed_at`,
        now,
        userId,
        connectorId,
      );
      this.run('DELETE FROM user_identities WHERE user_id = ? AND connector_id = ?', userId, connectorId);
      this.endEverythingOf(userId, now);
      return bound;
    });
  }

  async findRemovedIdentity(connectorId: string, subject: string): Promise<RemovedIdentityRecord | undefined> {
    const row = this.get('SELECT * FROM removed_identities WHERE connector_id = ? AND subject = ?', connectorId, subject);
    return row && toRemovedIdentity(row);
  }

  async listRemovedIdentities(userId: string): Promise<RemovedIdentityRecord[]> {
    return this.all('SELECT * FROM removed_identities WHERE user_id = ? ORDER BY removed_at DESC, connector_id, subject', userId).map(toRemovedIdentity);
  }

  async allowRemovedIdentity(userId: string, connectorId: string): Promise<number> {
    return this.run('DELETE FROM removed_identities WHERE user_id = ? AND connector_id = ?', userId, connectorId);
  }

  async findUserById(id: string): Promise<UserRecord | undefined> {
    return this.cached(this.directory.users, id, () => {
      const row = this.get(`SELECT ${userWithRoles} FROM users WHERE id = ?`, id);
      return row && toUser(row);
    });
  }

  async findUserByUsername(username: string): Promise<UserRecord | undefined> {
    const row = this.get(`SELECT ${userWithRoles} FROM users WHERE username = ?`, username);
    return row && toUser(row);
  }

  async listUsers(): Promise<UserRecord[]> {
    return this.all(`SELECT ${userWithRoles} FROM users ORDER BY username`).map(toUser);
  }

  /** Inside a transaction: sessions, refresh families and earlier access tokens of the user end. */
  private endEverythingOf(userId: string, now: number): void {
    this.run('UPDATE users SET tokens_revoked_at = max(coalesce(tokens_revoked_at, 0), ?) WHERE id = ?', now, userId);
    this.run('DELETE FROM sessions WHERE user_id = ?', userId);
    this.run(
      'INSERT OR IGNORE INTO revoked_refresh_families (family_id, revoked_at) SELECT DISTINCT family_id, ? FROM refresh_tokens WHERE user_id = ?',
      now,
      userId,
    );
    this.run('UPDATE refresh_tokens SET revoked_at = ? WHERE user_id = ? AND revoked_at IS NULL', now, userId);
  }

  async setUserDisabled(username: string, disabled: boolean, now: number): Promise<boolean> {
    return this.atomic(() => {
      const row = this.get('UPDATE users SET disabled = ? WHERE username = ? RETURNING id', disabled ? 1 : 0, username);
      // A disabled account keeps nothing: enabling it again must not bring old sign-ins back.
      if (row && disabled) this.endEverythingOf(String(row.id), now);
      return row !== undefined;
    });
  }

  async setUserPassword(username: string, passwordHash: string, now: number): Promise<boolean> {
    return this.atomic(() => {
      const row = this.get('UPDATE users SET password_hash = ? WHERE username = ? RETURNING id', passwordHash, username);
      // Whoever knew the old password is signed out everywhere (RFC 6819 §5.2.2.3).
      if (row) this.endEverythingOf(String(row.id), now);
      return row !== undefined;
    });
  }

  async revokeUserTokens(username: string, now: number): Promise<boolean> {
    return this.atomic(() => {
      const row = this.get('SELECT id FROM users WHERE username = ?', username);
      if (row) this.endEverythingOf(String(row.id), now);
      return row !== undefined;
    });
  }

  private clientParams(c: ClientRecord): unknown[] {
    return [
      c.clientId,
      c.name,
      c.secretHash ?? null,
      JSON.stringify(c.redirectUris),
      JSON.stringify(c.grantTypes),
      c.requirePkce ? 1 : 0,
      c.firstParty ? 1 : 0,
      c.builtIn ? 1 : 0,
      c.createdAt,
      JSON.stringify(c.postLogoutRedirectUris),
      c.backchannelLogoutUri ?? null,
      c.jwksUri ?? null,
      c.jwks === undefined ? null : JSON.stringify(c.jwks),
      c.secretSealed ?? null,
      c.previousSecretHash ?? null,
      c.previousSecretSealed ?? null,
      c.previousSecretExpiresAt ?? null,
      c.disabled ? 1 : 0,
      c.requirePar ? 1 : 0,
      c.clientId,
    ];
  }

  async createClient(c: ClientRecord): Promise<void> {
    this.insertClient(c);
  }

  /** createClient's insert, synchronous, so that registerClient can run it inside its transaction. */
  private insertClient(c: ClientRecord): void {
    this.insert(
      `client ${c.clientId}`,
      `INSERT INTO clients (client_id, name, secret_hash, redirect_uris, grant_types, require_pkce, first_party, built_in, created_at, post_logout_redirect_uris,
         backchannel_logout_uri, jwks_uri, jwks, secret_sealed, previous_secret_hash, previous_secret_sealed, previous_secret_expires_at, disabled, require_par, tokens_revoked_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, (SELECT removed_at FROM removed_clients WHERE client_id = ?))`,
      ...this.clientParams(c),
    );
  }

  async ensureClient(c: ClientRecord): Promise<void> {
    this.run(
      `INSERT OR IGNORE INTO clients (client_id, name, secret_hash, redirect_uris, grant_types, require_pkce, first_party, built_in, created_at, post_logout_redirect_uris,
         backchannel_logout_uri, jwks_uri, jwks, secret_sealed, previous_secret_hash, previous_secret_sealed, previous_secret_expires_at, disabled, require_par, tokens_revoked_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, (SELECT removed_at FROM removed_clients WHERE client_id = ?))`,
      ...this.clientParams(c),
    );
  }

  async findClient(clientId: string): Promise<ClientRecord | undefined> {
    return this.cached(this.directory.clients, clientId, () => {
      const row = this.get('SELECT * FROM clients WHERE client_id = ?', clientId);
      return row && toClient(row);
    });
  }

  async listClients(): Promise<ClientRecord[]> {
    return this.all('SELECT * FROM clients ORDER BY client_id').map(toClient);
  }

  /** Its grants (client_grants) go with it by the foreign key's cascade. */
  async removeClient(clientId: string, now: number): Promise<boolean> {
    return this.atomic(() => {
      const removed = this.run('DELETE FROM clients WHERE client_id = ?', clientId) === 1;
      if (removed) {
        this.run(
          `INSERT INTO removed_clients (client_id, removed_at) VALUES (?, ?)
           ON CONFLICT (client_id) DO UPDATE SET removed_at = max(removed_at, excluded.removed_at)`,
          clientId,
          now,
        );
        // A client registered later under this id must not inherit the right to introspect.
        this.run(
          `UPDATE apis SET introspection_clients = (SELECT json_group_array(value) FROM json_each(apis.introspection_clients) WHERE value <> ?)
           WHERE EXISTS (SELECT 1 FROM json_each(apis.introspection_clients) WHERE value = ?)`,
          clientId,
          clientId,
        );
      }
      return removed;
    });
  }

  async createApi(a: ApiRecord): Promise<void> {
    this.insert(
      `API ${a.identifier}`,
      'INSERT INTO apis (identifier, name, created_at, introspection_clients, scopes) VALUES (?, ?, ?, ?, ?)',
      a.identifier,
      a.name,
      a.createdAt,
      JSON.stringify(a.introspectionClients),
      JSON.stringify(a.scopes),
    );
  }

  async updateApi(a: ApiRecord): Promise<boolean> {
    return (
      this.run(
        'UPDATE apis SET name = ?, introspection_clients = ?, scopes = ? WHERE identifier = ?',
        a.name,
        JSON.stringify(a.introspectionClients),
        JSON.stringify(a.scopes),
        a.identifier,
      ) === 1
    );
  }

  async findApi(identifier: string): Promise<ApiRecord | undefined> {
    return this.cached(this.directory.apis, identifier, () => {
      const row = this.get('SELECT * FROM apis WHERE identifier = ?', identifier);
      return row && toApi(row);
    });
  }

  async listApis(): Promise<ApiRecord[]> {
    return this.all('SELECT * FROM apis ORDER BY identifier').map(toApi);
  }

  async removeApi(identifier: string): Promise<boolean> {
    // Its role permissions and client grants go with it by the foreign keys' cascades.
    return this.run('DELETE FROM apis WHERE identifier = ?', identifier) === 1;
  }

  async listSigningKeys(): Promise<SigningKeyRecord[]> {
    return this.all('SELECT * FROM signing_keys ORDER BY created_at, kid').map(toSigningKey);
  }

  private insertSigningKey(key: Omit<SigningKeyRecord, 'retiredAt'>): void {
    this.run(
      'INSERT INTO signing_keys (kid, alg, private_key_pem, public_jwk, created_at) VALUES (?, ?, ?, ?, ?)',
      key.kid,
      key.alg,
      key.privateKeyPem,
      JSON.stringify(key.publicJwk),
      key.createdAt,
    );
  }

  async ensureSigningKey(key: Omit<SigningKeyRecord, 'retiredAt'>): Promise<void> {
    this.db
      .transaction(() => {
        if (!this.get('SELECT 1 FROM signing_keys WHERE retired_at IS NULL AND alg = ?', key.alg)) this.insertSigningKey(key);
      })
      .immediate();
  }

  async rotateSigningKeys(keys: Omit<SigningKeyRecord, 'retiredAt'>[], now: number): Promise<void> {
    this.db
      .transaction(() => {
        this.run('UPDATE signing_keys SET retired_at = ? WHERE retired_at IS NULL', now);
        for (const key of keys) this.insertSigningKey(key);
      })
      .immediate();
  }

  async signingKeysFingerprint(): Promise<string> {
    const row = this.get('SELECT count(*) AS n, max(created_at) AS c, sum(coalesce(retired_at, 0)) AS r FROM signing_keys');
    return `${row?.n}:${row?.c}:${row?.r}`;
  }

  async serverSecret(name: string, generate: () => string): Promise<string> {
    this.run('INSERT OR IGNORE INTO server_secrets (name, value) VALUES (?, ?)', name, generate());
    return String(this.get('SELECT value FROM server_secrets WHERE name = ?', name)?.value);
  }

  async resealSecrets(reseal: (secret: SealedSecret) => string): Promise<number> {
    // Zero the bytes the old values leave behind, instead of leaving them in free space.
    this.db.pragma('secure_delete = ON');
    try {
      return this.resealInTransaction(reseal);
    } finally {
      this.db.pragma('secure_delete = OFF');
    }
  }

  private resealInTransaction(reseal: (secret: SealedSecret) => string): number {
    return this.db
      .transaction(() => {
        let changed = 0;
        for (const row of this.all('SELECT kid, private_key_pem FROM signing_keys')) {
          const value = String(row.private_key_pem);
          const next = reseal({ context: `signing_key:${String(row.kid)}`, value });
          if (next !== value) changed += this.run('UPDATE signing_keys SET private_key_pem = ? WHERE kid = ?', next, row.kid);
        }
        for (const row of this.all('SELECT name, value FROM server_secrets')) {
          const value = String(row.value);
          const next = reseal({ context: `server_secret:${String(row.name)}`, value });
          if (next !== value) changed += this.run('UPDATE server_secrets SET value = ? WHERE name = ?', next, row.name);
        }
        for (const row of this.all('SELECT id, secret FROM connectors WHERE secret IS NOT NULL')) {
          const value = String(row.secret);
          const next = reseal({ context: `connector:${String(row.id)}`, value });
          if (next !== value) changed += this.run('UPDATE connectors SET secret = ? WHERE id = ?', next, row.id);
        }
        for (const row of this.all('SELECT user_id, secret FROM totp_credentials')) {
          const value = String(row.secret);
          const next = reseal({ context: `totp:${String(row.user_id)}`, value });
          if (next !== value) changed += this.run('UPDATE totp_credentials SET secret = ? WHERE user_id = ?', next, row.user_id);
        }
        // Client secrets kept for client_secret_jwt, the current and a rotation's previous one.
        for (const column of ['secret_sealed', 'previous_secret_sealed'] as const) {
          for (const row of this.all(`SELECT client_id, ${column} AS value FROM clients WHERE ${column} IS NOT NULL`)) {
            const value = String(row.value);
            const next = reseal({ context: `client_secret:${String(row.client_id)}`, value });
            if (next !== value) changed += this.run(`UPDATE clients SET ${column} = ? WHERE client_id = ?`, next, row.client_id);
          }
        }
        return changed;
      })
      .immediate();
  }

  async sampleStoredSecrets(): Promise<SealedSecret[]> {
    // A bare column beside min() comes from the row that has the minimum (SQLite's documented rule).
    return this.all(
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
       SELECT min(context) AS context, value FROM secrets WHERE substr(value, 1, 4) = 'lk1.' GROUP BY substr(value, 1, 13)`,
    ).map((row) => ({ context: String(row.context), value: String(row.value) }));
  }

  async scrubFreedSpace(): Promise<void> {
    this.groupCommit?.flush();
    this.db.pragma('wal_checkpoint(TRUNCATE)');
  }

  async createSession(s: SessionRecord, guard?: UserRevocationGuard): Promise<boolean> {
    // SQLite's IS compares NULLs as equal: "tokens_revoked_at is still what the caller read".
    return (
      this.run(
        `INSERT INTO sessions (id_hash, user_id, auth_time, amr, created_at, expires_at, interaction_id, public_id, ip, user_agent, last_seen_at)
         SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ? WHERE ? OR (SELECT tokens_revoked_at FROM users WHERE id = ?) IS ?`,
        s.idHash,
        s.userId,
        s.authTime,
        amrToText(s.amr),
        s.createdAt,
        s.expiresAt,
        s.interactionId ?? null,
        s.id,
        s.ip ?? null,
        s.userAgent ?? null,
        s.lastSeenAt ?? null,
        guard === undefined ? 1 : 0,
        s.userId,
        guard?.userTokensRevokedAt ?? null,
      ) === 1
    );
  }

  async findSession(idHash: string, now: number): Promise<SessionRecord | undefined> {
    const row = this.get('SELECT * FROM sessions WHERE id_hash = ? AND expires_at > ?', idHash, now);
    return row && toSession(row);
  }

  async deleteSession(idHash: string): Promise<void> {
    this.run('DELETE FROM sessions WHERE id_hash = ?', idHash);
  }

  async listSessions(userId: string | undefined, now: number): Promise<SessionRecord[]> {
    const rows =
      userId === undefined
        ? this.all('SELECT * FROM sessions WHERE expires_at > ? ORDER BY created_at DESC, public_id', now)
        : this.all('SELECT * FROM sessions WHERE user_id = ? AND expires_at > ? ORDER BY created_at DESC, public_id', userId, now);
    return rows.map(toSession);
  }

  async endSessionById(id: string, userId: string | undefined): Promise<SessionRecord | undefined> {
    const row =
      userId === undefined
        ? this.get('DELETE FROM sessions WHERE public_id = ? RETURNING *', id)
        : this.get('DELETE FROM sessions WHERE public_id = ? AND user_id = ? RETURNING *', id, userId);
    return row && toSession(row);
  }

  async touchSession(idHash: string, now: number, every: number): Promise<void> {
    // Conditional, so most requests write nothing; and a clock behind another process's never moves it back.
    this.run('UPDATE sessions SET last_seen_at = ? WHERE id_hash = ? AND (last_seen_at IS NULL OR last_seen_at < ?)', now, idHash, now - every);
  }

  async endOtherSignIns(userId: string, keepIdHash: string, now: number): Promise<{ sessions: number; refreshFamilies: number }> {
    return this.atomic(() => {
      const ended = this.all('DELETE FROM sessions WHERE user_id = ? AND id_hash <> ? RETURNING expires_at', userId, keepIdHash);
      const liveFamilies = Number(
        this.get(`SELECT count(DISTINCT family_id) AS n FROM refresh_tokens t WHERE user_id = ? AND ${liveToken('t', '?')}`, userId, now)?.n ?? 0,
      );
      // As revokeRefreshFamily, for every family of the user not revoked yet.
      this.run(
        'INSERT OR IGNORE INTO revoked_refresh_families (family_id, revoked_at) SELECT DISTINCT family_id, ? FROM refresh_tokens WHERE user_id = ? AND revoked_at IS NULL',
        now,
        userId,
      );
      this.run('UPDATE refresh_tokens SET revoked_at = ? WHERE user_id = ? AND revoked_at IS NULL', now, userId);
      // Expired sessions were only waiting for the purge: they are removed, not counted.
      return { sessions: ended.filter((row) => Number(row.expires_at) > now).length, refreshFamilies: liveFamilies };
    });
  }

  async createDeviceGrant(g: DeviceGrantRecord): Promise<void> {
    this.insert(
      'device code or user code',
      `INSERT INTO device_grants (id, device_code_hash, user_code_hash, client_id, scope, audience, status, poll_interval,
         last_polled_at_ms, user_id, auth_time, amr, acr_values, requester_ip, requester_user_agent, created_at, expires_at,
         decided_at, consumed_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
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

  async findDeviceGrantByDeviceCode(deviceCodeHash: string): Promise<DeviceGrantRecord | undefined> {
    const row = this.get('SELECT * FROM device_grants WHERE device_code_hash = ?', deviceCodeHash);
    return row && toDeviceGrant(row);
  }

  async findDeviceGrantByUserCode(userCodeHash: string): Promise<DeviceGrantRecord | undefined> {
    const row = this.get('SELECT * FROM device_grants WHERE user_code_hash = ?', userCodeHash);
    return row && toDeviceGrant(row);
  }

  async pollDeviceGrant(
    deviceCodeHash: string,
    clientId: string,
    polledAtMs: number,
    nextInterval: (before: DeviceGrantRecord) => number,
  ): Promise<DeviceGrantRecord | undefined> {
    return this.atomic(() => {
      const row = this.get('SELECT * FROM device_grants WHERE device_code_hash = ?', deviceCodeHash);
      if (!row) return undefined;
      const before = toDeviceGrant(row);
      if (before.clientId !== clientId) return before;
      this.run('UPDATE device_grants SET last_polled_at_ms = ?, poll_interval = ? WHERE id = ?', polledAtMs, nextInterval(before), before.id);
      return before;
    });
  }

  async approveDeviceGrant(id: string, userId: string, authTime: number, amr: AuthMethod[], now: number): Promise<boolean> {
    return (
      this.run(
        `UPDATE device_grants SET status = 'approved', user_id = ?, auth_time = ?, amr = ?, decided_at = ?
         WHERE id = ? AND status = 'pending' AND expires_at > ?`,
        userId,
        authTime,
        amrToText(amr),
        now,
        id,
        now,
      ) === 1
    );
  }

  async denyDeviceGrant(id: string, now: number): Promise<boolean> {
    return (
      this.run(
        `UPDATE device_grants SET status = 'denied', decided_at = ? WHERE id = ? AND status = 'pending' AND expires_at > ?`,
        now,
        id,
        now,
      ) === 1
    );
  }

  /** approved → consumed in one conditional UPDATE: the grant for the caller that won. */
  private spendDeviceGrant(id: string, now: number): DeviceGrantRecord | undefined {
    const row = this.get(
      `UPDATE device_grants SET status = 'consumed', consumed_at = ?
       WHERE id = ? AND status = 'approved' AND expires_at > ? RETURNING *`,
      now,
      id,
      now,
    );
    return row && toDeviceGrant(row);
  }

  async consumeDeviceGrant(id: string, now: number): Promise<DeviceGrantRecord | undefined> {
    return this.spendDeviceGrant(id, now);
  }

  async redeemDeviceGrant(
    id: string,
    now: number,
    refresh?: { token: RefreshTokenRecord; guard: UserRevocationGuard },
    accessTokenJti?: string,
  ): Promise<{ grant: DeviceGrantRecord; refreshTokenStored: boolean } | undefined> {
    return this.atomic(() => {
      const spent = this.spendDeviceGrant(id, now);
      if (!spent) return undefined;
      const refreshTokenStored = refresh !== undefined && this.insertGuardedRefreshToken(refresh.token, refresh.guard);
      const grant = this.recordDeviceIssuance(id, accessTokenJti, refreshTokenStored ? refresh?.token.familyId : undefined, now) ?? spent;
      return { grant, refreshTokenStored };
    });
  }

  /** Inside a transaction: what a device grant's redemption handed out, for a recovery to replace. */
  private recordDeviceIssuance(id: string, accessTokenJti: string | undefined, refreshFamilyId: string | undefined, now: number): DeviceGrantRecord | undefined {
    if (accessTokenJti === undefined && refreshFamilyId === undefined) return undefined;
    const row = this.get(
      'UPDATE device_grants SET access_token_jti = ?, refresh_family_id = ?, issued_at = ? WHERE id = ? RETURNING *',
      accessTokenJti ?? null,
      refreshFamilyId ?? null,
      now,
      id,
    );
    return row && toDeviceGrant(row);
  }

  async recoverDeviceGrant(
    id: string,
    bounds: { since: number; now: number; minGapSeconds: number; limit: number },
    replacement: { accessTokenJti: string; refresh?: { token: RefreshTokenRecord; guard: UserRevocationGuard } },
  ): Promise<{ grant: DeviceGrantRecord; refreshTokenStored: boolean } | DeviceRecoveryRefusal> {
    const { since, now, minGapSeconds, limit } = bounds;
    return this.atomic((): { grant: DeviceGrantRecord; refreshTokenStored: boolean } | DeviceRecoveryRefusal => {
      const row = this.get('SELECT * FROM device_grants WHERE id = ?', id);
      if (!row) return 'not_redeemed';
      const grant = toDeviceGrant(row);
      if (grant.status !== 'consumed' || grant.consumedAt === undefined || grant.accessTokenJti === undefined) return 'not_redeemed';
      if (grant.consumedAt < since) return 'too_late';
      if ((grant.issuedAt ?? grant.consumedAt) > now - minGapSeconds) return 'too_soon';
      if (grant.recoveries >= limit) return 'limit';
      let refresh = replacement.refresh;
      if (grant.refreshFamilyId !== undefined) {
        // The lost answer's refresh token was used after all: its holder is not the one who lost it.
        if (this.get('SELECT 1 AS used FROM refresh_tokens WHERE family_id = ? AND rotated_at IS NOT NULL LIMIT 1', grant.refreshFamilyId)) return 'used';
        if (this.get('SELECT 1 AS revoked FROM revoked_refresh_families WHERE family_id = ?', grant.refreshFamilyId)) return 'used';
        const lost = this.all(
          'UPDATE refresh_tokens SET superseded_at = ? WHERE family_id = ? AND superseded_at IS NULL AND revoked_at IS NULL RETURNING id, access_token_jti, family_expires_at, created_at',
          now,
          grant.refreshFamilyId,
        ).sort((a, b) => Number(b.created_at) - Number(a.created_at));
        for (const token of lost) if (token.access_token_jti !== null) this.revokeAccessTokenUntil(String(token.access_token_jti), now);
        const newest = lost[0];
        // The new token takes the lost one's place in its family: same family and end, the lost one as its parent.
        if (refresh !== undefined && newest !== undefined) refresh = { ...refresh, token: joinedFamily(refresh.token, grant.refreshFamilyId, String(newest.id), Number(newest.family_expires_at)) };
      }
      this.revokeAccessTokenUntil(grant.accessTokenJti, now);
      const refreshTokenStored = refresh !== undefined && this.insertGuardedRefreshToken(refresh.token, refresh.guard);
      const updated = this.get(
        'UPDATE device_grants SET access_token_jti = ?, refresh_family_id = ?, issued_at = ?, recoveries = recoveries + 1 WHERE id = ? RETURNING *',
        replacement.accessTokenJti,
        refreshTokenStored ? refresh!.token.familyId : null,
        now,
        id,
      );
      return { grant: toDeviceGrant(updated!), refreshTokenStored };
    });
  }

  /** Inside a transaction: the token, only while the user's tokensRevokedAt is what the guard says. */
  private insertGuardedRefreshToken(t: RefreshTokenRecord, guard: UserRevocationGuard | undefined): boolean {
    if (guard !== undefined) {
      const row = this.get('SELECT tokens_revoked_at FROM users WHERE id = ?', t.userId);
      if (!row || (row.tokens_revoked_at === null ? undefined : Number(row.tokens_revoked_at)) !== guard.userTokensRevokedAt) return false;
    }
    this.insertRefreshToken(t);
    return true;
  }

  private insertRefreshToken(t: RefreshTokenRecord): void {
    this.run(
      `INSERT INTO refresh_tokens (id, token_hash, family_id, client_id, user_id, scope, audience, auth_time, amr, created_at,
         expires_at, family_expires_at, rotated_at, revoked_at, parent_id, superseded_at, approved_ip, approved_user_agent, session_id, dpop_jkt, claims,
         access_token_jti)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?,
               coalesce(?, (SELECT revoked_at FROM revoked_refresh_families WHERE family_id = ?)), ?, ?, ?, ?, ?, ?, ?, ?)`,
      t.id,
      t.tokenHash,
      t.familyId,
      t.clientId,
      t.userId,
      t.scope,
      t.audience,
      t.authTime,
      amrToText(t.amr),
      t.createdAt,
      t.expiresAt,
      t.familyExpiresAt,
      t.rotatedAt ?? null,
      t.revokedAt ?? null,
      t.familyId,
      t.parentId ?? null,
      t.supersededAt ?? null,
      t.approvedIp ?? null,
      t.approvedUserAgent ?? null,
      t.sessionId ?? null,
      t.dpopJkt ?? null,
      claimsToText(t.claims),
      t.accessTokenJti ?? null,
    );
  }

  async createRefreshToken(t: RefreshTokenRecord, guard?: UserRevocationGuard): Promise<boolean> {
    return this.atomic(() => this.insertGuardedRefreshToken(t, guard));
  }

  async findRefreshToken(tokenHash: string): Promise<RefreshTokenRecord | undefined> {
    const row = this.get('SELECT * FROM refresh_tokens WHERE token_hash = ?', tokenHash);
    return row && toRefreshToken(row);
  }

  async rotateRefreshToken(id: string, successor: RefreshTokenRecord, now: number): Promise<boolean> {
    return this.atomic(() => {
      const rotated = this.get(
        `UPDATE refresh_tokens SET rotated_at = ?, replaced_by = ?
         WHERE id = ? AND rotated_at IS NULL AND revoked_at IS NULL AND superseded_at IS NULL RETURNING parent_id`,
        now,
        successor.id,
        id,
      );
      if (!rotated) return false;
      // This branch is now the family's only live one: its unused siblings are dead.
      if (rotated.parent_id !== null) {
        this.run(
          'UPDATE refresh_tokens SET superseded_at = ? WHERE parent_id = ? AND id <> ? AND rotated_at IS NULL AND superseded_at IS NULL',
          now,
          rotated.parent_id,
          id,
        );
      }
      this.insertRefreshToken(successor);
      return true;
    });
  }

  async addGraceSuccessor(id: string, successor: RefreshTokenRecord, limit: number): Promise<true | GraceRefusal> {
    return this.atomic((): true | GraceRefusal => {
      const row = this.get('SELECT revoked_at, superseded_at, grace_successors, replaced_by FROM refresh_tokens WHERE id = ?', id);
      if (!row || row.revoked_at !== null) return 'revoked';
      if (row.superseded_at !== null) return 'successor_used';
      if (Number(row.grace_successors) >= limit) return 'limit';
      // Any successor already used (the first, or a grace one) means a live branch exists: another is theft.
      if (this.get('SELECT 1 AS used FROM refresh_tokens WHERE parent_id = ? AND rotated_at IS NOT NULL LIMIT 1', id)) return 'successor_used';
      const first = row.replaced_by === null ? undefined : this.get('SELECT rotated_at FROM refresh_tokens WHERE id = ?', row.replaced_by);
      if (first && first.rotated_at !== null) return 'successor_used';
      this.run('UPDATE refresh_tokens SET grace_successors = grace_successors + 1 WHERE id = ?', id);
      this.insertRefreshToken(successor);
      return true;
    });
  }

  async retryRotation(id: string, successor: RefreshTokenRecord, now: number, limit: number, raceSeconds: number): Promise<true | GraceRefusal> {
    return this.atomic((): true | GraceRefusal => {
      const row = this.get('SELECT revoked_at, superseded_at, retries, rotated_at FROM refresh_tokens WHERE id = ?', id);
      if (!row || row.revoked_at !== null) return 'revoked';
      if (row.superseded_at !== null) return 'successor_used';
      if (row.rotated_at === null) return 'revoked';
      if (this.get('SELECT 1 AS revoked FROM revoked_refresh_families WHERE family_id = ?', successor.familyId)) return 'revoked';
      // A successor was used: its holder has the family, and this is a second branch (theft).
      if (this.get('SELECT 1 AS used FROM refresh_tokens WHERE parent_id = ? AND rotated_at IS NOT NULL LIMIT 1', id)) return 'successor_used';
      if (Number(row.retries) >= limit) return 'limit';
      // What the lost answers carried dies with this retry: one live branch, always.
      for (const lost of this.all(
        'UPDATE refresh_tokens SET superseded_at = ? WHERE parent_id = ? AND rotated_at IS NULL AND superseded_at IS NULL AND created_at < ? RETURNING access_token_jti',
        now,
        id,
        now - raceSeconds,
      )) {
        if (lost.access_token_jti !== null) this.revokeAccessTokenUntil(String(lost.access_token_jti), now);
      }
      this.run('UPDATE refresh_tokens SET retries = retries + 1 WHERE id = ?', id);
      this.insertRefreshToken(successor);
      return true;
    });
  }

  /**
   * Inside a transaction: refuses access token `jti` from now on. Its row is kept while the token
   * could still be valid: it was issued before now, so for at most the configured lifetime (a
   * row kept longer is harmless; see purgeExpired).
   */
  private revokeAccessTokenUntil(jti: string, now: number): void {
    this.run('INSERT OR IGNORE INTO revoked_access_tokens (jti, expires_at) VALUES (?, ?)', jti, now + maxAccessTokenLifetime);
  }

  async isRefreshFamilyRevoked(familyId: string): Promise<boolean> {
    return this.get('SELECT 1 AS revoked FROM revoked_refresh_families WHERE family_id = ?', familyId) !== undefined;
  }

  async revokeRefreshFamily(familyId: string, now: number): Promise<void> {
    this.atomic(() => {
      this.run('INSERT OR IGNORE INTO revoked_refresh_families (family_id, revoked_at) VALUES (?, ?)', familyId, now);
      this.run('UPDATE refresh_tokens SET revoked_at = ? WHERE family_id = ? AND revoked_at IS NULL', now, familyId);
    });
  }

  /** The live family summaries matching `filter` (a condition on token t, with its parameters after `now`). */
  private familySummaries(filter: string, now: number, ...params: unknown[]): RefreshFamilySummary[] {
    return this.all(
      `WITH live AS (
         SELECT t.*, row_number() OVER (PARTITION BY t.family_id ORDER BY t.created_at DESC, t.expires_at DESC, t.id DESC) AS n
         FROM refresh_tokens t WHERE ${liveToken('t', '?')} AND ${filter})
       SELECT l.family_id, l.user_id, l.client_id, l.scope, l.audience, l.expires_at, l.approved_ip, l.approved_user_agent, l.session_id,
         (SELECT min(f.created_at) FROM refresh_tokens f WHERE f.family_id = l.family_id) AS first_created_at,
         (SELECT max(f.created_at) FROM refresh_tokens f WHERE f.family_id = l.family_id) AS last_created_at
       FROM live l WHERE l.n = 1
       ORDER BY last_created_at DESC, l.family_id`,
      now,
      ...params,
    ).map(toRefreshFamilySummary);
  }

  async listRefreshFamilies(userId: string | undefined, now: number): Promise<RefreshFamilySummary[]> {
    return userId === undefined ? this.familySummaries('1', now) : this.familySummaries('t.user_id = ?', now, userId);
  }

  async revokeRefreshFamilyOf(familyId: string, userId: string | undefined, now: number): Promise<RefreshFamilySummary | undefined> {
    return this.atomic(() => {
      const [summary] = this.familySummaries('t.family_id = ?', now, familyId);
      if (summary === undefined || (userId !== undefined && summary.userId !== userId)) return undefined;
      this.run('INSERT OR IGNORE INTO revoked_refresh_families (family_id, revoked_at) VALUES (?, ?)', familyId, now);
      this.run('UPDATE refresh_tokens SET revoked_at = ? WHERE family_id = ? AND revoked_at IS NULL', now, familyId);
      return summary;
    });
  }

  async revokeAccessToken(jti: string, expiresAt: number): Promise<void> {
    this.run('INSERT OR IGNORE INTO revoked_access_tokens (jti, expires_at) VALUES (?, ?)', jti, expiresAt);
  }

  async isAccessTokenRevoked(jti: string): Promise<boolean> {
    return this.get('SELECT 1 AS revoked FROM revoked_access_tokens WHERE jti = ?', jti) !== undefined;
  }

  async findConsent(userId: string, clientId: string, audience: string): Promise<ConsentRecord | undefined> {
    const row = this.get('SELECT * FROM consents WHERE user_id = ? AND client_id = ? AND audience = ?', userId, clientId, audience);
    return row && toConsent(row);
  }

  async saveConsent(c: ConsentRecord): Promise<void> {
    this.run(
      `INSERT INTO consents (user_id, client_id, audience, scope, granted_at) VALUES (?, ?, ?, ?, ?)
       ON CONFLICT (user_id, client_id, audience) DO UPDATE SET scope = excluded.scope, granted_at = excluded.granted_at`,
      c.userId,
      c.clientId,
      c.audience,
      c.scope,
      c.grantedAt,
    );
  }

  async clientsOfSession(sessionId: string): Promise<string[]> {
    // Codes are purged a day after they expire; refresh families live on (sessions may outlast a day).
    const rows = this.all(
      'SELECT client_id FROM authorization_codes WHERE session_id = ? UNION SELECT client_id FROM refresh_tokens WHERE session_id = ? ORDER BY client_id',
      sessionId,
      sessionId,
    );
    return rows.map((r) => String(r.client_id));
  }

  async listConsents(userId: string): Promise<ConsentRecord[]> {
    return this.all('SELECT * FROM consents WHERE user_id = ? ORDER BY granted_at DESC, client_id, audience', userId).map(toConsent);
  }

  async withdrawConsent(userId: string, clientId: string, now: number): Promise<number> {
    return this.atomic(() => {
      const removed = this.run('DELETE FROM consents WHERE user_id = ? AND client_id = ?', userId, clientId);
      // As revokeRefreshFamily, for every family of the user and client not revoked yet.
      this.run(
        `INSERT OR IGNORE INTO revoked_refresh_families (family_id, revoked_at)
         SELECT DISTINCT family_id, ? FROM refresh_tokens WHERE user_id = ? AND client_id = ? AND revoked_at IS NULL`,
        now,
        userId,
        clientId,
      );
      this.run('UPDATE refresh_tokens SET revoked_at = ? WHERE user_id = ? AND client_id = ? AND revoked_at IS NULL', now, userId, clientId);
      return removed;
    });
  }

  async updateUserProfile(userId: string, profile: { name: string | undefined; email: string }, now: number): Promise<boolean> {
    // SET reads the old row: the flag stays only when the address is the same but for ASCII case (as
    // findUsersByEmail compares), and updated_at moves only when the name or the email really changes.
    return (
      this.run(
        `UPDATE users SET name = ?, email = ?, email_verified = CASE WHEN email = ? COLLATE NOCASE THEN email_verified ELSE 0 END,
           updated_at = CASE WHEN ? IS NOT name OR ? IS NOT email THEN ? ELSE updated_at END WHERE id = ?`,
        profile.name ?? null,
        profile.email,
        profile.email,
        profile.name ?? null,
        profile.email,
        now,
        userId,
      ) === 1
    );
  }

  async updateUser(username: string, change: { email?: string; name?: string | null; profile?: UserProfileClaims }, now: number): Promise<boolean> {
    // One statement; SET reads the old row. An operator's new address counts as verified; the same
    // address but for ASCII case keeps the flag it had.
    return (
      this.run(
        `UPDATE users SET email = coalesce(?, email),
           email_verified = CASE WHEN ? IS NULL OR email = ? COLLATE NOCASE THEN email_verified ELSE 1 END,
           name = CASE WHEN ? THEN ? ELSE name END,
           profile = coalesce(?, profile),
           updated_at = ?
         WHERE username = ?`,
        change.email ?? null,
        change.email ?? null,
        change.email ?? null,
        change.name !== undefined ? 1 : 0,
        change.name ?? null,
        change.profile === undefined ? null : profileToText(change.profile),
        now,
        username,
      ) === 1
    );
  }

  async updateUserPassword(userId: string, passwordHash: string): Promise<boolean> {
    return this.run('UPDATE users SET password_hash = ? WHERE id = ?', passwordHash, userId) === 1;
  }

  async upgradePasswordHash(userId: string, expectedHash: string, passwordHash: string): Promise<boolean> {
    return this.run('UPDATE users SET password_hash = ? WHERE id = ? AND password_hash = ?', passwordHash, userId, expectedHash) === 1;
  }

  async createEmailToken(t: EmailTokenRecord): Promise<void> {
    this.insert(
      'email token',
      'INSERT INTO email_tokens (token_hash, user_id, purpose, email, created_at, expires_at, used_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
      t.tokenHash,
      t.userId,
      t.purpose,
      t.email,
      t.createdAt,
      t.expiresAt,
      t.usedAt ?? null,
    );
  }

  async findEmailToken(tokenHash: string, purpose: EmailTokenPurpose, now: number): Promise<EmailTokenRecord | undefined> {
    const row = this.get('SELECT * FROM email_tokens WHERE token_hash = ? AND purpose = ? AND used_at IS NULL AND expires_at > ?', tokenHash, purpose, now);
    return row && toEmailToken(row);
  }

  async useEmailToken(tokenHash: string, purpose: EmailTokenPurpose, now: number): Promise<EmailTokenRecord | undefined> {
    const row = this.get(
      'UPDATE email_tokens SET used_at = ? WHERE token_hash = ? AND purpose = ? AND used_at IS NULL AND expires_at > ? RETURNING *',
      now,
      tokenHash,
      purpose,
      now,
    );
    return row && toEmailToken(row);
  }

  async cancelEmailTokens(userId: string, purpose: EmailTokenPurpose, now: number): Promise<number> {
    return this.run('UPDATE email_tokens SET used_at = ? WHERE user_id = ? AND purpose = ? AND used_at IS NULL AND expires_at > ?', now, userId, purpose, now);
  }

  async markEmailVerified(userId: string, email: string): Promise<boolean> {
    return this.run('UPDATE users SET email_verified = 1 WHERE id = ? AND email = ? COLLATE NOCASE', userId, email) === 1;
  }

  async countEmailTokens(userId: string, purpose: EmailTokenPurpose, since: number): Promise<number> {
    // A token created after `since` expires after it too: "unexpired" needs no other bound here.
    return Number(
      this.get('SELECT count(*) AS n FROM email_tokens WHERE user_id = ? AND purpose = ? AND created_at > ? AND used_at IS NULL', userId, purpose, since)?.n ?? 0,
    );
  }

  async createAuthorizationCode(c: AuthorizationCodeRecord): Promise<void> {
    this.run(
      `INSERT INTO authorization_codes (code_hash, client_id, user_id, redirect_uri, scope, audience, nonce, code_challenge,
         auth_time, amr, created_at, expires_at, consumed_at, access_token_jti, refresh_family_id, approved_ip, approved_user_agent, session_id, dpop_jkt,
         claims)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
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
    const row = this.get('SELECT * FROM authorization_codes WHERE code_hash = ?', codeHash);
    return row && toAuthorizationCode(row);
  }

  async consumeAuthorizationCode(
    codeHash: string,
    now: number,
    issued: { accessTokenJti: string; refreshFamilyId: string },
  ): Promise<AuthorizationCodeRecord | undefined> {
    const row = this.get(
      `UPDATE authorization_codes SET consumed_at = ?, access_token_jti = ?, refresh_family_id = ?
       WHERE code_hash = ? AND consumed_at IS NULL AND expires_at > ? RETURNING *`,
      now,
      issued.accessTokenJti,
      issued.refreshFamilyId,
      codeHash,
      now,
    );
    return row && toAuthorizationCode(row);
  }

  async findTotp(userId: string): Promise<TotpRecord | undefined> {
    const row = this.get('SELECT * FROM totp_credentials WHERE user_id = ?', userId);
    return row && toTotp(row);
  }

  async saveTotp(t: TotpRecord): Promise<void> {
    this.run(
      `INSERT INTO totp_credentials (user_id, secret, last_step, created_at) VALUES (?, ?, ?, ?)
       ON CONFLICT (user_id) DO UPDATE SET secret = excluded.secret, last_step = excluded.last_step, created_at = excluded.created_at`,
      t.userId,
      t.secret,
      t.lastStep,
      t.createdAt,
    );
  }

  async useTotpStep(userId: string, step: number): Promise<boolean> {
    // One conditional statement: of two requests with the same code, only one moves last_step.
    return this.run('UPDATE totp_credentials SET last_step = ? WHERE user_id = ? AND last_step < ?', step, userId, step) === 1;
  }

  async removeTotp(userId: string): Promise<boolean> {
    return this.run('DELETE FROM totp_credentials WHERE user_id = ?', userId) === 1;
  }

  async createPasskey(p: PasskeyRecord): Promise<void> {
    this.insert(
      'passkey',
      `INSERT INTO webauthn_credentials (id, user_id, public_key, counter, transports, name, backed_up, created_at, last_used_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      p.id,
      p.userId,
      p.publicKey,
      p.counter,
      JSON.stringify(p.transports),
      p.name,
      p.backedUp ? 1 : 0,
      p.createdAt,
      p.lastUsedAt ?? null,
    );
  }

  async findPasskey(id: string): Promise<PasskeyRecord | undefined> {
    const row = this.get('SELECT * FROM webauthn_credentials WHERE id = ?', id);
    return row && toPasskey(row);
  }

  async listPasskeys(userId: string): Promise<PasskeyRecord[]> {
    return this.all('SELECT * FROM webauthn_credentials WHERE user_id = ? ORDER BY created_at, id', userId).map(toPasskey);
  }

  async recordPasskeyUse(id: string, counter: number, now: number): Promise<boolean> {
    return this.run('UPDATE webauthn_credentials SET counter = ?, last_used_at = ? WHERE id = ? AND (counter < ? OR (counter = 0 AND ? = 0))', counter, now, id, counter, counter) === 1;
  }

  async renamePasskey(userId: string, id: string, name: string): Promise<boolean> {
    return this.run('UPDATE webauthn_credentials SET name = ? WHERE id = ? AND user_id = ?', name, id, userId) === 1;
  }

  async removePasskey(userId: string, id: string): Promise<boolean> {
    return this.run('DELETE FROM webauthn_credentials WHERE id = ? AND user_id = ?', id, userId) === 1;
  }

  async replaceRecoveryCodes(userId: string, codeHashes: string[], now: number): Promise<void> {
    this.atomic(() => {
      this.run('DELETE FROM recovery_codes WHERE user_id = ?', userId);
      // A digest given twice is one code (it could only be spent once anyway).
      for (const codeHash of codeHashes) {
        this.run('INSERT OR IGNORE INTO recovery_codes (user_id, code_hash, created_at) VALUES (?, ?, ?)', userId, codeHash, now);
      }
    });
  }

  async useRecoveryCode(userId: string, codeHash: string, now: number): Promise<boolean> {
    return this.run('UPDATE recovery_codes SET used_at = ? WHERE user_id = ? AND code_hash = ? AND used_at IS NULL', now, userId, codeHash) === 1;
  }

  async countRecoveryCodes(userId: string): Promise<number> {
    return Number(this.get('SELECT count(*) AS n FROM recovery_codes WHERE user_id = ? AND used_at IS NULL', userId)?.n ?? 0);
  }

  async resetSecondFactors(userId: string): Promise<boolean> {
    return this.atomic(() => {
      const removed =
        this.run('DELETE FROM totp_credentials WHERE user_id = ?', userId) +
        this.run('DELETE FROM webauthn_credentials WHERE user_id = ?', userId) +
        this.run('DELETE FROM recovery_codes WHERE user_id = ?', userId);
      return removed > 0;
    });
  }

  async countRateLimitEvent(bucket: string, key: string, now: number, windowSeconds: number): Promise<RateLimitCounter> {
    const row = this.get(
      `INSERT INTO rate_limit_counters (bucket, key, count, started_at, last_at) VALUES (?, ?, 1, ?, ?)
       ON CONFLICT (bucket, key) DO UPDATE SET
         count = CASE WHEN started_at + ? <= excluded.started_at THEN 1 ELSE count + 1 END,
         started_at = CASE WHEN started_at + ? <= excluded.started_at THEN excluded.started_at ELSE started_at END,
         last_at = excluded.last_at
       RETURNING *`,
      bucket,
      key,
      now,
      now,
      windowSeconds,
      windowSeconds,
    );
    return toRateLimitCounter(row ?? {});
  }

  async countRateLimitFailure(bucket: string, key: string, now: number, forgetAfterSeconds: number): Promise<RateLimitCounter> {
    const row = this.get(
      `INSERT INTO rate_limit_counters (bucket, key, count, started_at, last_at) VALUES (?, ?, 1, ?, ?)
       ON CONFLICT (bucket, key) DO UPDATE SET
         count = CASE WHEN last_at + ? <= excluded.last_at THEN 1 ELSE count + 1 END,
         started_at = CASE WHEN last_at + ? <= excluded.last_at THEN excluded.started_at ELSE last_at END,
         last_at = excluded.last_at
       RETURNING *`,
      bucket,
      key,
      now,
      now,
      forgetAfterSeconds,
      forgetAfterSeconds,
    );
    return toRateLimitCounter(row ?? {});
  }

  async readRateLimitCounter(bucket: string, key: string): Promise<RateLimitCounter | undefined> {
    const row = this.get('SELECT * FROM rate_limit_counters WHERE bucket = ? AND key = ?', bucket, key);
    return row && toRateLimitCounter(row);
  }

  async undoRateLimitEvent(bucket: string, key: string, lastAt?: number): Promise<void> {
    this.atomic(() => {
      this.run('UPDATE rate_limit_counters SET count = count - 1, last_at = coalesce(?, last_at) WHERE bucket = ? AND key = ?', lastAt ?? null, bucket, key);
      this.run('DELETE FROM rate_limit_counters WHERE bucket = ? AND key = ? AND count <= 0', bucket, key);
    });
  }

  async clearRateLimitCounter(bucket: string, key: string): Promise<void> {
    this.run('DELETE FROM rate_limit_counters WHERE bucket = ? AND key = ?', bucket, key);
  }

  async reclaimSpace(maxPages = 2000): Promise<number> {
    const free = () => Number(this.db.pragma('freelist_count', { simple: true }));
    const before = free();
    if (before === 0) return 0;
    // Each call releases at most maxPages (8 MB at 4 KiB pages), so it never holds the writer long.
    this.db.pragma(`incremental_vacuum(${Math.max(1, Math.floor(maxPages))})`);
    return before - free();
  }

  // --- Roles, API permissions, machine clients (issue 18) ---

  /** Inside a transaction. A permission given twice is one permission; one of an unknown API is refused by its foreign key. */
  private insertPermissions(role: string, permissions: Permission[]): void {
    for (const p of permissions) this.run('INSERT OR IGNORE INTO role_permissions (role, api, scope) VALUES (?, ?, ?)', role, p.api, p.scope);
  }

  async createRole(role: Omit<RoleRecord, 'members' | 'builtIn'>): Promise<void> {
    try {
      this.atomic(() => {
        this.insert(`role ${role.name}`, 'INSERT INTO roles (name, description, built_in, created_at) VALUES (?, ?, 0, ?)', role.name, role.description ?? null, role.createdAt);
        this.insertPermissions(role.name, role.permissions);
      });
    } catch (err) {
      throw missingReference(err, `role ${role.name}`);
    }
  }

  async findRole(name: string): Promise<RoleRecord | undefined> {
    const row = this.get(`SELECT ${roleWithPermissions} FROM roles WHERE name = ?`, name);
    return row && toRole(row);
  }

  async listRoles(): Promise<RoleRecord[]> {
    return this.all(`SELECT ${roleWithPermissions} FROM roles ORDER BY name`).map(toRole);
  }

  async updateRole(name: string, changes: { permissions?: Permission[]; description?: string | undefined }): Promise<boolean> {
    try {
      return this.updateRoleInTransaction(name, changes);
    } catch (err) {
      throw missingReference(err, `role ${name}`);
    }
  }

  private updateRoleInTransaction(name: string, changes: { permissions?: Permission[]; description?: string | undefined }): boolean {
    return this.atomic(() => {
      // A description given as undefined clears it; one not given at all stays.
      const found =
        'description' in changes
          ? this.run('UPDATE roles SET description = ? WHERE name = ?', changes.description ?? null, name) === 1
          : this.get('SELECT 1 AS found FROM roles WHERE name = ?', name) !== undefined;
      if (!found) return false;
      if (changes.permissions !== undefined) {
        this.run('DELETE FROM role_permissions WHERE role = ?', name);
        this.insertPermissions(name, changes.permissions);
      }
      return true;
    });
  }

  async removeRole(name: string): Promise<boolean> {
    // Its permissions and every grant of it go by the foreign keys' cascades.
    return this.run('DELETE FROM roles WHERE name = ? AND built_in = 0', name) === 1;
  }

  async grantRole(userId: string, role: string, now: number): Promise<boolean> {
    // One statement: nothing is inserted unless both the user and the role exist. A grant held
    // already keeps its time; the no-op update only makes RETURNING answer for it.
    return (
      this.get(
        `INSERT INTO user_roles (user_id, role, granted_at)
         SELECT users.id, roles.name, ? FROM users, roles WHERE users.id = ? AND roles.name = ?
         ON CONFLICT (user_id, role) DO UPDATE SET granted_at = granted_at
         RETURNING 1 AS held`,
        now,
        userId,
        role,
      ) !== undefined
    );
  }

  async revokeRole(userId: string, role: string): Promise<boolean> {
    return this.run('DELETE FROM user_roles WHERE user_id = ? AND role = ?', userId, role) === 1;
  }

  async listRoleMembers(role: string): Promise<UserRecord[]> {
    return this.all(`SELECT ${userWithRoles} FROM users WHERE id IN (SELECT user_id FROM user_roles WHERE role = ?) ORDER BY username`, role).map(toUser);
  }

  async permittedScopes(userId: string, api: string): Promise<string[]> {
    // Both primary keys lead: user_roles by user, then role_permissions by (role, api).
    const rows = this.all(
      `SELECT DISTINCT p.scope FROM user_roles m JOIN role_permissions p ON p.role = m.role
       WHERE m.user_id = ? AND p.api = ? ORDER BY p.scope`,
      userId,
      api,
    );
    return rows.map((r) => String(r.scope));
  }

  async saveClientGrant(g: ClientGrantRecord): Promise<void> {
    try {
      this.run(
        `INSERT INTO client_grants (client_id, api, scopes, created_at) VALUES (?, ?, ?, ?)
         ON CONFLICT (client_id, api) DO UPDATE SET scopes = excluded.scopes, created_at = excluded.created_at`,
        g.clientId,
        g.api,
        JSON.stringify(g.scopes),
        g.createdAt,
      );
    } catch (err) {
      throw missingReference(err, `grant of ${g.clientId}`);
    }
  }

  async findClientGrant(clientId: string, api: string): Promise<ClientGrantRecord | undefined> {
    const row = this.get('SELECT * FROM client_grants WHERE client_id = ? AND api = ?', clientId, api);
    return row && toClientGrant(row);
  }

  async listClientGrants(clientId: string | undefined): Promise<ClientGrantRecord[]> {
    const rows =
      clientId === undefined
        ? this.all('SELECT * FROM client_grants ORDER BY client_id, api')
        : this.all('SELECT * FROM client_grants WHERE client_id = ? ORDER BY api', clientId);
    return rows.map(toClientGrant);
  }

  async removeClientGrant(clientId: string, api: string): Promise<boolean> {
    return this.run('DELETE FROM client_grants WHERE client_id = ? AND api = ?', clientId, api) === 1;
  }

  async updateClient(clientId: string, changes: ClientChanges): Promise<boolean> {
    const columns = clientChangeColumns(changes, (value) => (value ? 1 : 0));
    if (columns.length === 0) return this.get('SELECT 1 AS found FROM clients WHERE client_id = ?', clientId) !== undefined;
    // Column names come from clientChangeColumns, never from the caller; one statement per set of keys.
    return (
      this.run(`UPDATE clients SET ${columns.map(([column]) => `${column} = ?`).join(', ')} WHERE client_id = ?`, ...columns.map(([, value]) => value), clientId) === 1
    );
  }

  async rotateClientSecret(clientId: string, secret: { hash: string; sealed: string | undefined }, keepOldUntil: number | undefined): Promise<boolean> {
    // SET reads the row as it was, so the current secret becomes the previous one in the same step.
    // A client without a secret has nothing to keep (nor an expiry for it).
    const keep = keepOldUntil === undefined ? 0 : 1;
    return (
      this.run(
        `UPDATE clients SET
           previous_secret_hash = CASE WHEN ? THEN secret_hash END,
           previous_secret_sealed = CASE WHEN ? AND secret_hash IS NOT NULL THEN secret_sealed END,
           previous_secret_expires_at = CASE WHEN ? AND secret_hash IS NOT NULL THEN ? END,
           secret_hash = ?, secret_sealed = ?
         WHERE client_id = ?`,
        keep,
        keep,
        keep,
        keepOldUntil ?? null,
        secret.hash,
        secret.sealed ?? null,
        clientId,
      ) === 1
    );
  }

  async setClientDisabled(clientId: string, disabled: boolean): Promise<boolean> {
    return this.run('UPDATE clients SET disabled = ? WHERE client_id = ?', disabled ? 1 : 0, clientId) === 1;
  }

  async useOnce(purpose: string, key: string, expiresAt: number): Promise<boolean> {
    // One statement: the primary key decides between simultaneous callers, in any process. A row
    // past its expiry is as good as purged and is taken over; "past" by the database's clock, since
    // the caller gives no time and every process on the file shares that one.
    return (
      this.run(
        `INSERT INTO used_once (purpose, key, expires_at) VALUES (?, ?, ?)
         ON CONFLICT (purpose, key) DO UPDATE SET expires_at = excluded.expires_at WHERE used_once.expires_at <= unixepoch()`,
        purpose,
        key,
        expiresAt,
      ) === 1
    );
  }

  async appendAuditEvents(events: Omit<AuditEventRecord, 'id'>[]): Promise<void> {
    this.atomic(() => {
      for (const e of events) {
        this.run(
          'INSERT INTO audit_events (at, event, actor, user_id, client_id, ip, details) VALUES (?, ?, ?, ?, ?, ?, ?)',
          e.at,
          e.event,
          e.actor ?? null,
          e.userId ?? null,
          e.clientId ?? null,
          e.ip ?? null,
          JSON.stringify(e.details ?? {}),
        );
      }
    });
  }

  async listAuditEvents(query: AuditEventQuery): Promise<AuditEventRecord[]> {
    const params: unknown[] = [];
    const where = auditEventConditions(query, (value) => (params.push(value), '?'));
    // Newest first by id, which follows the index of each filter (SQLite appends the rowid to every index).
    return this.all(
      `SELECT * FROM audit_events ${where.length === 0 ? '' : `WHERE ${where.join(' AND ')}`} ORDER BY id DESC LIMIT ?`,
      ...params,
      auditLimit(query.limit),
    ).map(toAuditEvent);
  }

  async purgeAuditEvents(before: number, batchSize = -1): Promise<number> {
    // The oldest first, so a batch that stops short leaves the newer events (LIMIT -1: all).
    return this.run('DELETE FROM audit_events WHERE rowid IN (SELECT rowid FROM audit_events WHERE at < ? ORDER BY at LIMIT ?)', before, batchSize);
  }

  // --- Dynamic client registration (issue 19) ---

  async createRegistrationToken(t: RegistrationTokenRecord): Promise<void> {
    this.insert(
      'registration token',
      'INSERT INTO registration_tokens (token_hash, created_at, expires_at, used_at, client_id) VALUES (?, ?, ?, ?, ?)',
      t.tokenHash,
      t.createdAt,
      t.expiresAt,
      t.usedAt ?? null,
      t.clientId ?? null,
    );
  }

  async findRegistrationToken(tokenHash: string): Promise<RegistrationTokenRecord | undefined> {
    const row = this.get('SELECT * FROM registration_tokens WHERE token_hash = ?', tokenHash);
    return row && toRegistrationToken(row);
  }

  /** One conditional UPDATE: the single caller whose statement finds the token unused wins. */
  private spendRegistrationToken(tokenHash: string, now: number, clientId: string | undefined): boolean {
    return this.run('UPDATE registration_tokens SET used_at = ?, client_id = ? WHERE token_hash = ? AND used_at IS NULL AND expires_at > ?', now, clientId ?? null, tokenHash, now) === 1;
  }

  async useRegistrationToken(tokenHash: string, now: number): Promise<boolean> {
    return this.spendRegistrationToken(tokenHash, now, undefined);
  }

  async registerClient(c: ClientRecord, initialTokenHash: string, now: number): Promise<boolean> {
    return this.atomic(() => {
      if (!this.spendRegistrationToken(initialTokenHash, now, c.clientId)) return false;
      // A duplicate client_id throws here and rolls the spending back with it.
      this.insertClient(c);
      this.run(
        'UPDATE clients SET registration_access_token_hash = ?, token_endpoint_auth_method = ? WHERE client_id = ?',
        c.registrationAccessTokenHash ?? null,
        c.tokenEndpointAuthMethod ?? null,
        c.clientId,
      );
      return true;
    });
  }

  async updateRegisteredClient(clientId: string, update: RegisteredClientUpdate): Promise<boolean> {
    const columns = registeredClientColumns(update, (value) => (value ? 1 : 0));
    // Column names come from registeredClientColumns, never from the caller.
    return (
      this.run(`UPDATE clients SET ${columns.map(([column]) => `${column} = ?`).join(', ')} WHERE client_id = ?`, ...columns.map(([, value]) => value), clientId) === 1
    );
  }

  // --- Pushed authorization requests (issue 19) ---

  async createPushedRequest(r: PushedRequestRecord): Promise<void> {
    this.insert(
      'pushed request',
      'INSERT INTO pushed_requests (request_hash, client_id, parameters, created_at, expires_at, used_at) VALUES (?, ?, ?, ?, ?, ?)',
      r.requestHash,
      r.clientId,
      JSON.stringify(r.parameters),
      r.createdAt,
      r.expiresAt,
      r.usedAt ?? null,
    );
  }

  /** One conditional UPDATE … RETURNING: the single caller whose statement finds it unused wins. */
  async usePushedRequest(requestHash: string, clientId: string, now: number): Promise<PushedRequestRecord | undefined> {
    const row = this.get(
      'UPDATE pushed_requests SET used_at = ? WHERE request_hash = ? AND client_id = ? AND used_at IS NULL AND expires_at > ? RETURNING *',
      now,
      requestHash,
      clientId,
      now,
    );
    return row && toPushedRequest(row);
  }
}

export type VacuumConversion = 'not_needed' | 'converted' | 'postponed' | 'busy';

/**
 * auto_vacuum=INCREMENTAL keeps a list of free pages that reclaimSpace can cut off the end of the
 * file; without it a file that once grew (a flood, a backlog of expired rows) never shrinks. The
 * mode takes effect on an empty database at once, on an existing one only through a VACUUM, which
 * rewrites the file: done once, by the server at start (`convert`), never by a short admin command
 * (a VACUUM of a large file would hold the write lock longer than a running server waits).
 */
function ensureIncrementalVacuum(db: Database.Database, convert: boolean): VacuumConversion {
  const incremental = 2;
  if (Number(db.pragma('auto_vacuum', { simple: true })) === incremental) return 'not_needed';
  const hasTables = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' LIMIT 1").get() !== undefined;
  if (hasTables && !convert) return 'postponed';
  db.pragma('auto_vacuum = INCREMENTAL');
  if (!hasTables) return 'not_needed';
  try {
    db.exec('VACUUM');
    return 'converted';
  } catch {
    // Another process is writing: the next start tries again.
    return 'busy';
  }
}

export function openStore(path: string, options: { backgroundCheckpoints?: boolean; groupCommit?: boolean; batchReads?: boolean; convertToIncrementalVacuum?: boolean } = {}): SqliteStore {
  return new SqliteStore({ path, ...options });
}
