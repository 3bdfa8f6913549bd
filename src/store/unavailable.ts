/**
 * A database that is away, slow or locked is a passing fault, not a bug: the request that met it
 * gets 503 with Retry-After (RFC 9110 §15.6.4) and the process carries on. This names those faults,
 * whichever driver raised them, so the error handler and the readiness check agree on what they are.
 */

/** Thrown by a store when the database did not answer in time or the connection to it broke. */
export class StoreUnavailableError extends Error {
  constructor(
    message: string,
    /** `timeout`: a statement or a wait for a connection ran past the time limit; `connection`: the database is unreachable or went away. */
    readonly reason: 'timeout' | 'connection',
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'StoreUnavailableError';
  }
}

/**
 * PostgreSQL SQLSTATEs of a database that is not there for us right now (Appendix A): class 08
 * (connection exception), 53 (insufficient resources: too many connections, disk full, out of
 * memory), 57 (operator intervention: shutdown, statement timeout, recovery), 55P03
 * (lock_not_available: a lock_timeout or NOWAIT), 25006 (read_only_sql_transaction: a failover
 * that left us on a standby), and a deadlock or serialisation failure still failing after retries.
 */
const postgresClasses = ['08', '53', '57'];
const postgresCodes = new Set(['55P03', '25006', '40P01', '40001']);

/** SQLite's primary result codes for a database another process holds, or that cannot be written now. */
const sqliteCodes = /^SQLITE_(BUSY|LOCKED|FULL|IOERR|READONLY|CANTOPEN|PROTOCOL)(_|$)/;

/** Node's socket errors, as node-postgres passes them on. */
const socketCodes = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'ECONNABORTED']);

/**
 * node-postgres reports a broken or timed-out connection with plain Errors and no code: these are
 * its messages (pg 8, pg-pool 3).
 */
const postgresDriverMessages = [
  'Connection terminated',
  'timeout exceeded when trying to connect',
  'Query read timeout',
  'Client has encountered a connection error and is not queryable',
  'Client was closed and is not queryable',
  'Cannot use a pool after calling end on the pool',
];

/**
 * Whether an error node-postgres raised means the database is away, slow or locked, as opposed to
 * a bug or a refused write. The PostgreSQL store turns these into StoreUnavailableError; a socket
 * error from anywhere else (an upstream, the mail server) is not the database's.
 */
export function isPostgresFault(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string') {
    if (code.length === 5 && (postgresClasses.includes(code.slice(0, 2)) || postgresCodes.has(code))) return true;
    if (socketCodes.has(code)) return true;
  }
  return postgresDriverMessages.some((message) => err.message.startsWith(message));
}

/** Whether the connection itself is broken or stuck (no ROLLBACK can be sent on it), rather than a statement refused. */
export function isBrokenConnection(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string' && (socketCodes.has(code) || code.startsWith('08') || code === '57P01' || code === '57P02')) return true;
  return postgresDriverMessages.some((message) => err.message.startsWith(message));
}

/** Whether `err` is a store's passing fault: a StoreUnavailableError, or SQLite's busy, full or I/O codes. */
export function isStoreUnavailable(err: unknown): boolean {
  if (err instanceof StoreUnavailableError) return true;
  if (!(err instanceof Error)) return false;
  const code = (err as { code?: unknown }).code;
  return typeof code === 'string' && sqliteCodes.test(code);
}

/** How a StoreUnavailableError names what happened, from the driver's error. */
export function unavailableReason(err: unknown): 'timeout' | 'connection' {
  if (err instanceof StoreUnavailableError) return err.reason;
  const code = err instanceof Error ? (err as { code?: unknown }).code : undefined;
  const message = err instanceof Error ? err.message : '';
  return code === '57014' || code === '55P03' || code === 'ETIMEDOUT' || /timeout/i.test(message) ? 'timeout' : 'connection';
}

/** SQLite's result codes of a file that cannot take a write now: full (disk or max_page_count), an I/O error, read-only, gone. */
const sqliteStorageCodes = /^SQLITE_(FULL|IOERR|READONLY|CANTOPEN)(_|$)/;
/** PostgreSQL's: disk_full, out_of_memory and insufficient_resources (class 53 but too_many_connections), io_error, a standby. */
const postgresStorageCodes = new Set(['53100', '53200', '53000', '58030', '25006']);

/**
 * Whether `err` says the database cannot store what it is given (disk full, I/O error, read-only),
 * as opposed to one that is busy or away for a moment: a fault that stays until someone acts, and
 * that the readiness check must report although a read still answers.
 */
export function isStorageFault(err: unknown): boolean {
  const cause = err instanceof StoreUnavailableError && err.cause !== undefined ? err.cause : err;
  if (!(cause instanceof Error)) return false;
  const code = (cause as { code?: unknown }).code;
  return typeof code === 'string' && (sqliteStorageCodes.test(code) || postgresStorageCodes.has(code));
}
