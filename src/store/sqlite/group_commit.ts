/**
 * Group commit for the server's SQLite connection. The write verbs called during one turn of the
 * event loop are queued and run together when the turn ends (setImmediate), in call order, inside
 * one IMMEDIATE transaction with one commit; each verb's promise settles only after that commit,
 * so nothing is answered before it is durable. At thousands of writes a second one commit per write
 * was most of a device authorization's cost: every commit appends and syncs its own WAL frames.
 *
 * Atomicity is unchanged: each verb still runs whole (its own transactions become savepoints), a
 * verb that fails (a duplicate key) fails alone, and the write lock is held only while the batch's
 * statements run, so other processes (cluster workers, the admin CLI) wait microseconds, not a
 * whole turn. If the commit fails, every verb of the batch fails with it.
 */
import type Database from 'better-sqlite3';

interface QueuedWrite {
  verb: () => Promise<unknown>;
  resolve(value: unknown): void;
  reject(error: unknown): void;
}

export class GroupCommit {
  private queue: QueuedWrite[] = [];

  constructor(private readonly db: Database.Database) {}

  /** Queues a write verb for this turn's batch; the promise settles after the batch commits. */
  write<T>(verb: () => Promise<T>): Promise<T> {
    // Inside someone else's transaction (a bulk load) the verb simply joins it, as before.
    if (this.db.inTransaction) return verb();
    return new Promise<T>((resolve, reject) => {
      if (this.queue.length === 0) setImmediate(() => this.flush());
      this.queue.push({ verb, resolve: resolve as (value: unknown) => void, reject });
    });
  }

  /** Runs and commits every queued write now (at the end of a turn, and before closing). */
  flush(): void {
    const batch = this.queue;
    if (batch.length === 0) return;
    this.queue = [];
    let results: Promise<unknown>[];
    try {
      this.db.exec('BEGIN IMMEDIATE');
    } catch (err) {
      for (const write of batch) write.reject(err);
      return;
    }
    try {
      // Every verb of this store does its SQL before its first await, so all of it runs here.
      results = batch.map((write) => write.verb());
      this.db.exec('COMMIT');
    } catch (err) {
      if (this.db.inTransaction) this.db.exec('ROLLBACK');
      for (const write of batch) write.reject(err);
      return;
    }
    batch.forEach((write, i) => results[i]?.then(write.resolve, write.reject));
  }
}
