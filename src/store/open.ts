/** Opens the store LATCHKEY_DB names; a database that cannot be opened is a configuration error. */
import { ConfigError, type Config } from '../config.js';
import { openStore, type SqliteStore } from './sqlite/sqlite_store.js';

export function openConfiguredStore(config: Config): SqliteStore {
  try {
    return openStore(config.databasePath);
  } catch (err) {
    throw new ConfigError([`LATCHKEY_DB: cannot open the database ${config.databasePath}: ${(err as Error).message}`]);
  }
}
