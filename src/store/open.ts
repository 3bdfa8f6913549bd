/**
 * Opens the store LATCHKEY_DB names: PostgreSQL for a postgres:// or postgresql:// URL, else a
 * SQLite file. A database that cannot be opened (or migrated) is a configuration error, reported
 * without the password the URL may carry.
 */
import { ConfigError, type Config } from '../config.js';
import { hidePassword, isPostgresUrl, redactDatabase } from './database_url.js';
import { openStore } from './sqlite/sqlite_store.js';
import type { Store } from './store.js';

/**
 * `server`: the long-running server's store (SQLite: background WAL checkpoints and group commit;
 * PostgreSQL: the directory cache).
 * `convertVacuum`: the one process that may convert an older SQLite file (see SqliteStore).
 */
export async function openConfiguredStore(config: Config, options: { server?: boolean; convertVacuum?: boolean } = {}): Promise<Store> {
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
