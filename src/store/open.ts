/**
 * Opens the store LATCHKEY_DB names: PostgreSQL for a postgres:// or postgresql:// URL, else a
 * SQLite file. A database that cannot be opened (or migrated) is a configuration error, reported
 * without the password the URL may carry.
 */
import { existsSync } from 'node:fs';
import { ConfigError, type Config } from '../config.js';
import { hidePassword, isPostgresUrl, redactDatabase } from './database_url.js';
import { openStore } from './sqlite/sqlite_store.js';
import type { Store } from './store.js';

/**
 * `server`: the long-running server's store (SQLite: background WAL checkpoints and group commit;
 * PostgreSQL: the directory cache).
 * `convertVacuum`: the one process that may convert an older SQLite file (see SqliteStore).
 * `readOnly`: a command that only reads. An existing SQLite file is then opened for reading only
 * (nothing written, no migration run: see SqliteStore), so that it works on a file or folder it may
 * not write; a missing file is made as by any command, and PostgreSQL is opened as always.
 */
export async function openConfiguredStore(config: Config, options: { server?: boolean; convertVacuum?: boolean; readOnly?: boolean } = {}): Promise<Store> {
  const database = config.databasePath;
  try {
    if (isPostgresUrl(database)) {
      // Loaded only when used: a SQLite deployment never pays for the driver at each process start.
      const { PostgresStore } = await import('./postgres/postgres_store.js');
      return await PostgresStore.open({
        url: database,
        directoryCache: options.server === true,
        timeoutMs: config.databaseTimeout * 1000,
        transactionDeadline: options.server === true,
      });
    }
    if (options.readOnly === true && database !== ':memory:' && existsSync(database)) return openStore(database, { readOnly: true });
    return openStore(database, {
      backgroundCheckpoints: options.server === true,
      groupCommit: options.server === true,
      batchReads: config.workers <= 1,
      convertToIncrementalVacuum: options.convertVacuum === true,
    });
  } catch (err) {
    throw new ConfigError([`LATCHKEY_DB: cannot open the database ${redactDatabase(database)}: ${hidePassword((err as Error).message, database)}`]);
  }
}
