/**
 * Group commit for the server's SQLite connection. The verbs called during one turn of the event
 * loop are queued and run together when the turn ends (setImmediate), in call order, inside one
 * transaction with one commit; each verb's promise settles only after that commit, so nothing is
 * answered before it is in the WAL (which, with synchronous=NORMAL, survives a killed process;
 * only a power cut can lose the last commits). At thousands of writes a second one commit per
 * write was most of a device authorization's cost: every commit appends its own WAL frames.
 *
 * Where one process serves the file, reads join the batch too. Outside a transaction every
 * statement is a read transaction of its own, and each of those takes and drops SQLite's shared
 * lock with fcntl(2): three system calls a statement, the larger part of a pending poll's. In the
 * batch the turn's reads share one transaction, begun when the turn ends, so a read still sees
 * everything committed before it by any process (as "at once" as before) and the writes queued
 * before it by this one. A batch of reads only is a plain (deferred) read transaction that takes no
 * write lock. With several worker processes reads stay out of batches (they would wait for, and
 * hold up, the write lock the other workers need).
 *
 * Atomicity is unchanged: each write runs inside a savepoint of its own, so a verb whose SQL fails
 * (a duplicate key) is rolled back and fails alone while the rest of the batch commits. If SQLite
 * loses the whole transaction (disk full, I/O error), nothing of the batch is committed and every
 * verb of it fails (and the store forgets what the batch's reads cached). The write lock is held
 * only while the batch's statements run, so other processes (the admin CLI) wait microseconds, not
 * a whole turn.
 */
import type Database from 'better-sqlite3';

interface QueuedWrite {
  /** A read needs no savepoint: it changes nothing to roll back. */
  read: boolean;
  verb: () => Promise<unknown>;
  resolve(value: unknown): void;
  reject(error: unknown): void;
}

export class GroupCommit {
  private queue: QueuedWrite[] = [];
  /** Transaction control, prepared once: parsing these on every verb was a tenth of a device authorization. */
  private readonly control: Record<'begin' | 'beginRead' | 'savepoint' | 'rollbackTo' | 'release' | 'commit' | 'rollback', Database.Statement>;

  /**
   * `sqlErrors` counts the statements of this connection that failed so far: how a verb's failure
   * is seen at once, although an async verb reports it only through its promise.
   */
  constructor(
    private readonly db: Database.Database,
    private readonly sqlErrors: () => number,
    /** Told when a batch is rolled back whole, and why: what its reads cached may never have been committed. */
    private readonly rolledBack: (err: unknown) => void = () => undefined,
    /** The error of this connection's last failed statement. */
    private readonly lastSqlError: () => unknown = () => undefined,
  ) {
    this.control = {
      begin: db.prepare('BEGIN IMMEDIATE'),
      beginRead: db.prepare('BEGIN'),
      savepoint: db.prepare('SAVEPOINT latchkey_verb'),
      rollbackTo: db.prepare('ROLLBACK TO latchkey_verb'),
      release: db.prepare('RELEASE latchkey_verb'),
      commit: db.prepare('COMMIT'),
      rollback: db.prepare('ROLLBACK'),
    };
  }

  /** Queues a write verb for this turn's batch; the promise settles after the batch commits. */
  write<T>(verb: () => Promise<T>): Promise<T> {
    return this.enqueue(verb, false);
  }

  /** Queues a read verb for this turn's batch (one read transaction for the turn's reads). */
  read<T>(verb: () => Promise<T>): Promise<T> {
    return this.enqueue(verb, true);
  }

  private enqueue<T>(verb: () => Promise<T>, read: boolean): Promise<T> {
    // Inside someone else's transaction (a bulk load, or this batch's own) the verb simply joins it.
    if (this.db.inTransaction) return verb();
    return new Promise<T>((resolve, reject) => {
      if (this.queue.length === 0) setImmediate(() => this.flush());
      this.queue.push({ read, verb, resolve, reject });
    });
  }

  /** Runs and commits every queued write now (at the end of a turn, and before closing). */
  flush(): void {
    const batch = this.queue;
    if (batch.length === 0) return;
    this.queue = [];
    const results: Promise<unknown>[] = [];
    const { begin, beginRead, savepoint, rollbackTo, release, commit, rollback } = this.control;
    try {
      (batch.every((queued) => queued.read) ? beginRead : begin).run();
      for (const write of batch) {
        // Every verb of this store does all its SQL before its first await, so all of it runs here.
        if (write.read) {
          results.push(write.verb());
        } else {
          savepoint.run();
          const failuresBefore = this.sqlErrors();
          results.push(write.verb());
          if (this.db.inTransaction && this.sqlErrors() !== failuresBefore) rollbackTo.run();
          if (this.db.inTransaction) release.run();
        }
        // An error SQLite answers by rolling back the whole transaction (a full database, I/O, out
        // of memory): the verbs after it must not run outside the batch, each committing on its
        // own. Every verb of the batch fails with that error, so that its code (SQLITE_FULL …)
        // makes each answer a 503, not a 500.
        if (!this.db.inTransaction) {
          const cause = this.lastSqlError();
          throw cause instanceof Error ? cause : new Error('SQLite rolled the transaction back');
        }
      }
      commit.run();
    } catch (err) {
      try {
        if (this.db.inTransaction) rollback.run();
      } catch {
        // The connection is in trouble; every verb of the batch is failed below all the same.
      }
      this.rolledBack(err);
      for (const result of results) result.catch(() => {});
      for (const write of batch) write.reject(err);
      return;
    }
    for (const [i, write] of batch.entries())
      results[i]?.then(
        (value) => write.resolve(value),
        (err: unknown) => write.reject(err),
      );
  }
}
