/**
 * The Store on SQLite (better-sqlite3): the verbs of sql_store.ts, stepped synchronously, so that
 * each verb is one synchronous unit — atomic on its own, and inside the server's group commit a
 * savepoint of the turn's one transaction. What is SQLite's alone is here: the file and its
 * permissions, WAL and checkpoints, incremental vacuum, the group commit, and the directory
 * cache's freshness (directory_version). WAL lets readers go on while one process writes, and the
 * admin CLI work while the server runs; a busy timeout covers the moments two processes write.
 */
import Database from 'better-sqlite3';
import { chmodSync, closeSync, existsSync, mkdirSync, openSync, readFileSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import { epochSeconds, systemClock } from '../../clock.js';
import { sqliteMigrationsDir } from '../../paths.js';
import { checkMigrated, migrate, readMigrations } from './migrate.js';
import type { MigrationRun } from '../migration_history.js';
import { startCheckpointer, type Checkpointer } from './checkpointer.js';
import { GroupCommit } from './group_commit.js';
import { DuplicateError, MissingReferenceError, type SealedSecret } from '../store.js';
import type { Row } from '../rows.js';
import { SqlStore } from '../sql/sql_store.js';
import type { Mode, Op, Verb } from '../sql/sql.js';
import { sqliteDialect } from './sqlite_dialect.js';
import { verbNames, verbTraits } from '../verbs.js';
import { cacheDirectory } from '../cached_directory.js';
import { VersionedCache } from './versioned_cache.js';

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
  /**
   * Open an existing file for reading only (a listing command): nothing is created or written —
   * no WAL switch, no vacuum conversion, no migration — so it works on a file or folder it may not
   * write; a database that needs migrations is refused (see checkMigrated).
   */
  readOnly?: boolean;
}

/** The verbs that only read (with group commit they share the turn's read transaction), and those that write. */
export const readOnlyVerbs = new Set<string>(verbNames.filter((name) => verbTraits[name].kind === 'read'));
export const writeVerbs = new Set<string>(verbNames.filter((name) => verbTraits[name].kind === 'write'));

function sqliteCode(err: unknown): string | undefined {
  return err instanceof Error && 'code' in err && typeof err.code === 'string' ? err.code : undefined;
}

/** The caller's error for a failed statement: DuplicateError or MissingReferenceError where the verb named one. */
function statementError(err: unknown, op: Op): unknown {
  if (op.kind === 'lock') return err;
  const code = sqliteCode(err);
  if (op.duplicate !== undefined && (code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY')) return new DuplicateError(op.duplicate);
  if (op.missing !== undefined && code === 'SQLITE_CONSTRAINT_FOREIGNKEY') return new MissingReferenceError(op.missing);
  return err;
}

export class SqliteStore extends SqlStore {
  readonly db: Database.Database;
  readonly appliedMigrations: string[];
  /** What the migrations did when this store opened, for the start log. */
  readonly migrationRun: MigrationRun;
  private readonly statements = new Map<string, Database.Statement>();
  /** Each verb statement's text, written in PostgreSQL's syntax, to its compiled and prepared form. */
  private readonly prepared = new Map<string, { statement: Database.Statement; params: (values: readonly unknown[]) => unknown[] }>();
  /** One machine: rate limits are counted in each process's memory. */
  readonly sharedAcrossInstances = false;
  protected readonly writableCtes = false;
  protected readonly arrayParameters = false;
  private checkpointer: Checkpointer | undefined;
  private groupCommit: GroupCommit | undefined;
  /** Statements that threw (see GroupCommit: a failed verb is rolled back to its savepoint), and the last one's error. */
  private failedStatements = 0;
  private lastStatementError: unknown;
  readonly readOnly: boolean;
  /** Files other users can read (the database file): for the server to warn about at start. */
  readonly permissionWarnings: string[] = [];
  /** What opening did to the file's vacuum mode, for the server to log. */
  readonly vacuumConversion: VacuumConversion;
  /** The directory cache (every store of this kind has one: one indexed read keeps it honest). */
  private readonly directory: VersionedCache;

  constructor(options: SqliteStoreOptions) {
    super();
    this.readOnly = options.readOnly === true && options.path !== ':memory:';
    if (this.readOnly) {
      this.db = openForReading(options.path);
      this.db.pragma('busy_timeout = 5000');
      this.vacuumConversion = 'not_needed';
      this.migrationRun = checkMigrated(this.db, readMigrations(sqliteMigrationsDir));
      this.appliedMigrations = [];
      this.directory = new VersionedCache(() => Number(this.get('SELECT version FROM directory_version WHERE id = 1')?.version ?? -2));
      cacheDirectory(this, this.directory);
      return;
    }
    if (options.path !== ':memory:') {
      // The file holds the private signing keys: only the server's user may read it. SQLite gives
      // the -wal and -shm files the same permissions as the database file.
      mkdirSync(dirname(options.path), { recursive: true, mode: 0o700 });
      createPrivateFile(options.path);
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
    this.directory = new VersionedCache(() => Number(this.get('SELECT version FROM directory_version WHERE id = 1')?.version ?? -2));
    // The cache inside the group commit: its version read then shares the batch's transaction.
    cacheDirectory(this, this.directory);
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

  /** Routes every verb of this instance (but the ones run outside batches) through one GroupCommit. */
  private enableGroupCommit(batchReads: boolean): void {
    // A batch rolled back whole may have cached records it never committed: start over.
    const group = new GroupCommit(
      this.db,
      () => this.failedStatements,
      (err) => {
        this.noteFailure(err);
        this.directory.invalidate();
      },
      () => this.lastStatementError,
    );
    this.groupCommit = group;
    const self = this as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>;
    for (const name of verbNames) {
      const kind = verbTraits[name].kind;
      // With several processes on the file (LATCHKEY_WORKERS) reads stay out of the batches: a batch
      // that writes holds the write lock, and the other workers would wait for reads too.
      if (kind === 'outside' || (kind === 'read' && !batchReads)) continue;
      const verb = self[name]?.bind(this);
      if (verb === undefined) throw new Error(`the store has no verb ${name}`);
      self[name] = kind === 'write' ? (...args: unknown[]) => group.write(() => verb(...args)) : (...args: unknown[]) => group.read(() => verb(...args));
    }
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

  /** Runs one statement of this store's own (outside the verbs), counting a failure. */
  private get(source: string, ...params: unknown[]): Row | undefined {
    try {
      return this.sql(source).get(...params) as Row | undefined;
    } catch (err) {
      this.failedStatements++;
      this.lastStatementError = err;
      this.noteFailure(err);
      throw err;
    }
  }

  /** One step of a verb. */
  private perform(op: Op): unknown {
    if (op.kind === 'lock') return undefined;
    let prepared = this.prepared.get(op.text);
    if (prepared === undefined) {
      const compiled = sqliteDialect.compile(op.text);
      prepared = { statement: this.sql(compiled.text), params: compiled.params };
      this.prepared.set(op.text, prepared);
    }
    const params = prepared.params(op.params);
    try {
      if (op.kind === 'one') return prepared.statement.get(...params);
      if (op.kind === 'many') return prepared.statement.all(...params);
      return prepared.statement.run(...params).changes;
    } catch (err) {
      this.failedStatements++;
      this.lastStatementError = err;
      this.noteFailure(err);
      throw statementError(err, op);
    }
  }

  protected override single(op: Op): Promise<unknown> {
    try {
      return Promise.resolve(this.perform(op));
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /** Steps a verb to its end, synchronously: a failed statement is thrown into it, where it may be caught. */
  private step<T>(verb: Verb<T>): T {
    let next = verb.next();
    while (next.done !== true) {
      let result: unknown;
      let failure: unknown;
      let failed = false;
      try {
        result = this.perform(next.value);
      } catch (err) {
        failed = true;
        failure = err;
      }
      next = failed ? verb.throw(failure) : verb.next(result);
    }
    return next.value;
  }

  protected execute<T>(mode: Mode, verb: () => Verb<T>): Promise<T> {
    try {
      return Promise.resolve(mode === 'plain' ? this.step(verb()) : this.atomic(() => this.step(verb())));
    } catch (err) {
      // A COMMIT that failed (the WAL could not grow) is seen here, not as a statement's failure.
      this.noteFailure(err);
      return Promise.reject(err);
    }
  }

  /**
   * Runs `work` as one atomic unit: its own IMMEDIATE transaction (it holds the write lock from its
   * first read, so what it read stays as read until it commits), or — inside the group commit's
   * batch, where every verb already runs in a savepoint of its own — directly.
   */
  private atomic<T>(work: () => T): T {
    if (!this.db.inTransaction) return this.db.transaction(work).immediate();
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

  async close(): Promise<void> {
    if (this.db.open) this.groupCommit?.flush();
    await this.checkpointer?.stop();
    if (this.db.open) this.db.close();
  }

  /** Re-encrypted secrets leave zeroes behind, not the old values, in the file's free space. */
  override async resealSecrets(reseal: (secret: SealedSecret) => string): Promise<number> {
    this.db.pragma('secure_delete = ON');
    try {
      return await super.resealSecrets(reseal);
    } finally {
      this.db.pragma('secure_delete = OFF');
    }
  }

  async scrubFreedSpace(): Promise<void> {
    this.groupCommit?.flush();
    this.db.pragma('wal_checkpoint(TRUNCATE)');
  }

  async reclaimSpace(maxPages = 2000): Promise<number> {
    const free = () => Number(this.db.pragma('freelist_count', { simple: true }));
    const before = free();
    if (before === 0) return 0;
    // Each call releases at most maxPages (8 MB at 4 KiB pages), so it never holds the writer long.
    this.db.pragma(`incremental_vacuum(${Math.max(1, Math.floor(maxPages))})`);
    return before - free();
  }
}

/**
 * Creates the database file 0600 when it does not exist yet, so that SQLite opens a file nobody
 * else can read. Only a new file is opened here (O_EXCL): closing a descriptor of an existing
 * database file would drop every POSIX lock this process holds on it — the locks SQLite's other
 * connections rely on (sqlite.org, "How To Corrupt An SQLite Database File", §2.2) — so an
 * existing file is opened by SQLite alone.
 */
function createPrivateFile(path: string): void {
  try {
    closeSync(openSync(path, 'wx', 0o600));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
}

/**
 * A read-only connection to an existing file. SQLite reads a WAL database read-only only where its
 * -wal and -shm files exist or can be made; in a folder that cannot be written (a read-only
 * mount) and with no -wal file — so no writer is live: a WAL writer keeps one while it runs —
 * the file's bytes are read into a private in-memory copy instead, marked as a rollback-journal
 * database (header bytes 18 and 19, which memory databases need). Reading the file outside
 * SQLite cannot drop a lock here: this process holds no other connection to it.
 */
function openForReading(path: string): Database.Database {
  let db: Database.Database | undefined;
  try {
    db = new Database(path, { readonly: true, fileMustExist: true });
    db.prepare('SELECT count(*) FROM sqlite_master').get();
    return db;
  } catch (err) {
    db?.close();
    if (sqliteCode(err) !== 'SQLITE_CANTOPEN' || !existsSync(path) || existsSync(`${path}-wal`)) throw err;
    const image = readFileSync(path);
    if (image[18] === 2 && image[19] === 2) image.fill(1, 18, 20);
    return new Database(image, { readonly: true });
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

export function openStore(
  path: string,
  options: { backgroundCheckpoints?: boolean; groupCommit?: boolean; batchReads?: boolean; convertToIncrementalVacuum?: boolean; readOnly?: boolean } = {},
): SqliteStore {
  return new SqliteStore({ path, ...options });
}
