/** Opens the store LATCHKEY_DB names; a database that cannot be opened is a configuration error. */
import { ConfigError, type Config } from '../config.js';
import { openStore, type SqliteStore } from './sqlite/sqlite_store.js';

/** `server`: the long-running server's store, which checkpoints the WAL in the background. */
export function openConfiguredStore(config: Config, options: { server?: boolean } = {}): SqliteStore {
  try {
    return openStore(config.databasePath, { backgroundCheckpoints: options.server === true, groupCommit: options.server === true });
  } catch (err) {
    throw new ConfigError([`LATCHKEY_DB: cannot open the database ${config.databasePath}: ${(err as Error).message}`]);
  }
}
