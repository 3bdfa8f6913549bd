/**
 * The Store on PostgreSQL (node-postgres, one pg.Pool per process), for several servers sharing one
 * database: the verbs of sql_store.ts, each step awaited on a pooled connection, a transaction's
 * on one client. What is PostgreSQL's alone is here: the pool and its time limits (a database that
 * is away, slow or locked fails the request with StoreUnavailableError, never hangs it or ends the
 * process), transactions with their deadline and deadlock retries, the advisory and table locks
 * that make writers of one thing take turns, migrations under a lock, and the directory cache kept
 * honest by LISTEN/NOTIFY (directory_cache.ts).
 */
import pg, { type Pool, type PoolClient } from 'pg';
import { epochSeconds, systemClock } from '../../clock.js';
import { postgresMigrationsDir } from '../../paths.js';
import { readMigrations } from '../migration_files.js';
import { DuplicateError, MissingReferenceError } from '../store.js';
import { migrate, schemaNamePattern } from './migrate.js';
import { DirectoryCache, directoryChannel } from './directory_cache.js';
import { isBrokenConnection, isPostgresFault, StoreUnavailableError, unavailableReason } from '../unavailable.js';
import type { MigrationRun } from '../migration_history.js';
import { SqlStore } from '../sql/sql_store.js';
import { compiledOnce, textFor } from '../sql/dialect.js';
import { one, type LockKind, type Mode, type Op, type Verb } from '../sql/sql.js';
import { cacheDirectory } from '../cached_directory.js';

export interface PostgresStoreOptions {
  /** A postgres:// or postgresql:// URL (LATCHKEY_DB). */
  url: string;
  /**
   * Keep every table in this schema (created when missing) instead of the connection's default
   * search_path: how tests give each store a database of its own.
   */
  schema?: string;
  /** Recorded as the time migrations were applied. */
  now?: number;
  /**
   * Cache clients, users, APIs and connectors, kept honest by LISTEN/NOTIFY (the server's store;
   * see directory_cache.ts). Short admin commands read the database each time.
   */
  directoryCache?: boolean;
  /**
   * The time limit (ms) of each statement, of a wait for a pooled connection and of a transaction
   * up to its COMMIT (LATCHKEY_DB_TIMEOUT). Past it the work is rolled back and the caller gets a
   * StoreUnavailableError: a request fails cleanly instead of hanging, and nothing commits after
   * the client that asked has given up.
   */
  timeoutMs?: number;
  /**
   * Roll back a transaction still short of its COMMIT when the time limit has passed: the server's
   * store, whose clients give up. An admin command's bulk work (re-encrypting every secret) has
   * only the per-statement limit.
   */
  transactionDeadline?: boolean;
}

export const defaultDatabaseTimeoutMs = 5_000;

/** What a statement runs on: the pool (each statement its own transaction) or one client in a transaction. */
interface Queryable {
  query(text: string, values?: unknown[]): Promise<{ rows: Record<string, unknown>[]; rowCount: number | null }>;
}

const uniqueViolation = '23505';
const foreignKeyViolation = '23503';
/** A deadlock victim (or a serialisation failure) was rolled back whole and may simply run again. */
const retryableErrors = new Set(['40P01', '40001']);
const transactionAttempts = 3;

const errorCode = (err: unknown): unknown => (err instanceof Error && 'code' in err ? err.code : undefined);

/** A driver error of a database that is away, slow or locked, as the StoreUnavailableError callers know; anything else as it was. */
function asUnavailable(err: unknown): unknown {
  // A deadlock victim keeps its code: the transaction runs it again (see retryableErrors).
  if (err instanceof StoreUnavailableError || !isPostgresFault(err) || retryableErrors.has(errorCode(err) as string)) return err;
  const reason = unavailableReason(err);
  return new StoreUnavailableError(
    reason === 'timeout' ? `the database did not answer in time: ${(err as Error).message}` : `the database is unreachable: ${(err as Error).message}`,
    reason,
    { cause: err },
  );
}

/** The caller's error for a failed statement: DuplicateError or MissingReferenceError where the verb named one, a fault as unavailable. */
function statementError(err: unknown, op: Op): unknown {
  if (op.kind !== 'lock' && op.duplicate !== undefined && errorCode(err) === uniqueViolation) return new DuplicateError(op.duplicate);
  if (op.kind !== 'lock' && op.missing !== undefined && errorCode(err) === foreignKeyViolation) return new MissingReferenceError(op.missing);
  return asUnavailable(err);
}

/**
 * The statements each lock takes. A family's or a person's second factors: a transaction advisory
 * lock, two keys (a class, and the text hashed). The signing keys, server secrets or connectors: their table in
 * SHARE ROW EXCLUSIVE mode (it conflicts with itself: one changer at a time, while readers read).
 */
const locks: Record<LockKind, string> = {
  refresh_family: 'SELECT pg_advisory_xact_lock(21076, hashtext($1))', // class 0x5254, "RT"
  second_factors: 'SELECT pg_advisory_xact_lock(12870, hashtext($1))', // class 0x3246, "2F"
  signing_keys: 'LOCK TABLE signing_keys IN SHARE ROW EXCLUSIVE MODE',
  server_secrets: 'LOCK TABLE server_secrets IN SHARE ROW EXCLUSIVE MODE',
  connectors: 'LOCK TABLE connectors IN SHARE ROW EXCLUSIVE MODE',
};

/** PostgreSQL takes the statements as written; only `either` texts are resolved, once per text. */
const postgresText = compiledOnce((text) => ({ text: textFor('postgres', text), params: (values) => values as unknown[] }));

/**
 * The URL with `-c search_path=<schema>` added to its `options` parameter: set at connection
 * start-up, so every pooled connection works in the schema from its first statement. (In the URL,
 * since node-postgres lets the URL's parameters win over the pool's own `options`.)
 */
function withSearchPath(url: string, schema: string): string {
  const parsed = new URL(url);
  const options = parsed.searchParams.get('options');
  parsed.searchParams.set('options', `${options === null ? '' : `${options} `}-c search_path=${schema}`);
  return parsed.toString();
}

/**
 * A pool whose connections' 'error' events are always heard. A pooled connection that breaks while
 * idle (a database restart) is dropped by the pool and replaced on next use; one that breaks while
 * checked out (a backend terminated in the middle of a transaction) reports it to the query in
 * progress. Either way an unheard 'error' event would end the process.
 */
function hearErrors(pool: Pool): void {
  pool.on('error', () => undefined);
  pool.on('connect', (client) => client.on('error', () => undefined));
}

/**
 * Runs the migrations on a pool of their own, one connection without the requests' time limits: a
 * migration may rewrite a large table, and instances starting together wait for each other's.
 */
async function migrateOn<T>(connectionString: string, timeoutMs: number, work: (pool: Pool) => Promise<T>): Promise<T> {
  const pool = new pg.Pool({ connectionString, connectionTimeoutMillis: timeoutMs, max: 1 });
  hearErrors(pool);
  try {
    return await work(pool);
  } finally {
    await pool.end();
  }
}

export class PostgresStore extends SqlStore {
  /** Several instances share the database: rate limits are counted in it. */
  readonly sharedAcrossInstances = true;
  protected readonly writableCtes = true;
  protected readonly arrayParameters = true;
  /** The migrations this instance applied when it opened (none when another instance had). */
  readonly appliedMigrations: string[];
  private ended: Promise<void> | undefined;

  private constructor(
    private readonly pool: Pool,
    /** What the migrations did when this store opened (nothing applied when another instance had). */
    readonly migrationRun: MigrationRun,
    /** Clients, users, APIs and connectors (server mode only): see directory_cache.ts. */
    private readonly cache: DirectoryCache | undefined,
    private readonly timeoutMs: number,
    private readonly transactionDeadline: boolean,
  ) {
    super();
    this.appliedMigrations = migrationRun.applied;
    if (cache) cacheDirectory(this, cache);
  }

  /** Whether lookups of clients, users, APIs and connectors are being cached now. */
  get directoryCacheActive(): boolean {
    return this.cache?.active ?? false;
  }

  /** Connects and applies the migrations; the store is ready when the promise resolves. */
  static async open(options: PostgresStoreOptions): Promise<PostgresStore> {
    if (options.schema !== undefined && !schemaNamePattern.test(options.schema)) {
      throw new Error(`invalid schema name "${options.schema}": use lower-case letters, digits and _`);
    }
    const timeoutMs = options.timeoutMs ?? defaultDatabaseTimeoutMs;
    const connectionString = options.schema === undefined ? options.url : withSearchPath(options.url, options.schema);
    const pool = new pg.Pool({
      connectionString,
      // Waiting for a connection (a new one, or a turn when every pooled one is busy) has the same
      // limit as a statement: a database that does not answer fails the request instead of hanging it.
      connectionTimeoutMillis: timeoutMs,
      // Set on the server for each session: a statement past it (a lock held elsewhere, a slow
      // plan) is cancelled and its transaction rolled back (SQLSTATE 57014).
      statement_timeout: timeoutMs,
      // A network that stops answering without closing the connection: the driver gives up a
      // moment after the server would have.
      query_timeout: timeoutMs + 1_000,
      // A session left inside a transaction (a process stopped between statements) does not hold
      // its locks for ever.
      idle_in_transaction_session_timeout: Math.max(timeoutMs * 2, 10_000),
      keepAlive: true,
      // What an operator sees in pg_stat_activity.
      application_name: 'latchkey',
    });
    hearErrors(pool);
    try {
      const run = await migrateOn(connectionString, timeoutMs, (migrationPool) =>
        migrate(migrationPool, readMigrations(postgresMigrationsDir), options.now ?? epochSeconds(systemClock), options.schema),
      );
      let cache: DirectoryCache | undefined;
      if (options.directoryCache === true) {
        cache = new DirectoryCache({
          // Named, so that an operator sees in pg_stat_activity what the long-lived connection is.
          connect: () =>
            new pg.Client({
              connectionString,
              connectionTimeoutMillis: 10_000,
              application_name: `latchkey directory cache${options.schema === undefined ? '' : ` ${options.schema}`}`.slice(0, 63),
            }),
          schema: async () => options.schema ?? String((await pool.query<{ schema: string }>('SELECT current_schema() AS schema')).rows[0]?.schema),
          announce: (payload) => pool.query('SELECT pg_notify($1, $2)', [directoryChannel, payload]),
        });
        await cache.start();
      }
      return new PostgresStore(pool, run, cache, timeoutMs, options.transactionDeadline === true);
    } catch (err) {
      await pool.end();
      throw asUnavailable(err);
    }
  }

  protected execute<T>(mode: Mode, verb: () => Verb<T>): Promise<T> {
    const done =
      mode === 'plain' ? this.drive(verb(), this.pool, false) : this.transaction((client) => this.drive(verb(), client, true), { bulk: mode === 'bulk' });
    return done.catch((err: unknown) => {
      this.noteFailure(err);
      throw err;
    });
  }

  /** Steps a verb to its end: each statement awaited, a failed one thrown into the verb, where it may be caught. */
  private async drive<T>(verb: Verb<T>, target: Queryable, inTransaction: boolean): Promise<T> {
    let next = verb.next();
    while (next.done !== true) {
      const op = next.value;
      let result: unknown;
      let failure: unknown;
      let failed = false;
      try {
        if (op.kind === 'lock') {
          // Outside a transaction a lock would end with its statement: nothing to take.
          if (inTransaction) await target.query(locks[op.lock], op.lock === 'refresh_family' || op.lock === 'second_factors' ? [op.key] : []);
        } else {
          const { rows, rowCount } = await target.query(postgresText(op.text).text, op.params);
          result = op.kind === 'one' ? rows[0] : op.kind === 'many' ? rows : (rowCount ?? 0);
        }
      } catch (err) {
        failed = true;
        failure = statementError(err, op);
      }
      next = failed ? verb.throw(failure) : verb.next(result);
    }
    return next.value;
  }

  /**
   * Runs `work` in one transaction on one pooled client: COMMIT when it resolves, ROLLBACK when it
   * throws, and the client always goes back to the pool. A deadlock victim is run again. The wait
   * for the client has the pool's limit; then the work up to the COMMIT must fit in the time limit
   * too: past it the transaction is rolled back instead of committed, since whoever asked has likely
   * given up and would never learn of a late commit (an approved device grant spent for nobody).
   * `bulk` work (re-encrypting every secret, ending every sign-in of a person, purging) has only the
   * per-statement limit: it is bounded by the data, not by a client waiting, and late is harmless.
   */
  private async transaction<T>(work: (client: PoolClient) => Promise<T>, options: { bulk?: boolean } = {}): Promise<T> {
    const deadlined = this.transactionDeadline && options.bulk !== true;
    for (let attempt = 1; ; attempt++) {
      let client: PoolClient;
      try {
        client = await this.pool.connect();
      } catch (err) {
        throw asUnavailable(err);
      }
      const deadline = Date.now() + this.timeoutMs;
      let broken: Error | undefined;
      try {
        await client.query('BEGIN');
        const result = await work(client);
        if (deadlined && Date.now() > deadline)
          throw new StoreUnavailableError(`the transaction took longer than ${this.timeoutMs} ms: rolled back`, 'timeout');
        await client.query('COMMIT');
        return result;
      } catch (err) {
        const cause = err instanceof StoreUnavailableError && err.cause !== undefined ? err.cause : err;
        if (isBrokenConnection(cause)) {
          // A dead or stuck connection (the database went away, a read timed out with the query
          // still running) would make a ROLLBACK wait behind it: it is closed instead, which ends
          // the transaction on the server just the same.
          broken = cause instanceof Error ? cause : new Error(String(cause));
        } else {
          // A client whose ROLLBACK fails is in an unknown state: it is closed, not reused.
          await client
            .query('ROLLBACK')
            .catch((rollbackError: unknown) => (broken = rollbackError instanceof Error ? rollbackError : new Error(String(rollbackError))));
        }
        if (attempt < transactionAttempts && retryableErrors.has(errorCode(err) as string) && (!deadlined || Date.now() < deadline)) continue;
        throw asUnavailable(err);
      } finally {
        client.release(broken);
      }
    }
  }

  async databaseTime(): Promise<number> {
    return this.execute('plain', function* () {
      return Number((yield* one('SELECT floor(extract(epoch FROM clock_timestamp())) AS now'))?.now);
    });
  }

  /**
   * Ready means the database answers and the tables every token request writes can be written: a
   * lock held on one of them (a migration, a LOCK TABLE, a VACUUM FULL) makes every such request
   * wait. The probe asks for the lock a write takes (ROW EXCLUSIVE, which writers share) and gives
   * up at once if someone holds a lock that excludes it; it changes nothing.
   */
  async ping(): Promise<boolean> {
    return this.transaction(async (client) => {
      await client.query(`SET LOCAL lock_timeout = ${Math.min(this.timeoutMs, 1_000)}`);
      await client.query('LOCK TABLE refresh_tokens, device_grants, authorization_codes, sessions, rate_limit_counters IN ROW EXCLUSIVE MODE');
      return (await client.query<{ ok: number }>('SELECT 1 AS ok')).rows[0]?.ok === 1;
    });
  }

  async close(): Promise<void> {
    this.ended ??= (async () => {
      await this.cache?.stop();
      await this.pool.end();
    })();
    await this.ended;
  }

  async scrubFreedSpace(): Promise<void> {
    // The old rows' versions stay in the table files until rewritten; these tables are tiny.
    await this.pool.query('VACUUM FULL signing_keys, server_secrets').catch((err: unknown) => {
      throw asUnavailable(err);
    });
  }

  /** PostgreSQL gives freed space back by itself (autovacuum). */
  async reclaimSpace(): Promise<number> {
    return 0;
  }
}
