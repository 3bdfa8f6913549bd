/**
 * Opens the store LATCHKEY_DB names: PostgreSQL for a postgres:// or postgresql:// URL, else a
 * SQLite file. A database that cannot be opened (or migrated) is a configuration error, reported
 * without the password the URL may carry.
 */
import { ConfigError, type Config } from '../config.js';
import { hidePassword, isPostgresUrl, redactDatabase } from './database_url.js';
import { PostgresStore } from './postgres/postgres_store.js';
import { openStore } from './sqlite/sqlite_store.js';
import type { Store } from './store.js';

/** `server`: the long-running server's store (SQLite: background WAL checkpoints and group commit). */
export async function openConfiguredStore(config: Config, options: { server?: boolean } = {}): Promise<Store> {
  const database = config.databasePath;
  try {
    if (isPostgresUrl(database)) return await PostgresStore.open({ url: database });
    return openStore(database, { backgroundCheckpoints: options.server === true, groupCommit: options.server === true });
  } catch (err) {
    throw new ConfigError([`LATCHKEY_DB: cannot open the database ${redactDatabase(database)}: ${hidePassword((err as Error).message, database)}`]);
  }
}
