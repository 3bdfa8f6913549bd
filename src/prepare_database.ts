/**
 * What the server (the primary of a cluster), and every admin command, makes sure of about the
 * database before anything else, and tells the operator: the configured secret key belongs to the database (crypto/stored_secrets.ts),
 * secrets an older version stored in the clear are sealed (only in a database that holds no sealed
 * value yet: elsewhere they are refused by name), and what the start did — the migrations it ran,
 * a key file it made, secrets it sealed — is said in plain words, since an upgrade must never
 * change the database without a word.
 */
import { existsSync } from 'node:fs';
import type { Config } from './config.js';
import { openConfiguredStore } from './store/open.js';
import type { SecretBox } from './crypto/secret_box.js';
import { openSecretBox } from './crypto/secret_key_file.js';
import { sealPlaintextSecrets } from './crypto/server_secrets.js';
import { checkStoredSecrets, clearValuesRefused } from './crypto/stored_secrets.js';
import type { MigrationRun } from './store/migration_history.js';
import type { Store } from './store/store.js';

export interface PreparedDatabase {
  secretBox: SecretBox;
  /** What the start did to the database and its key, one sentence each, for the terminal and the log. */
  notices: string[];
}

/**
 * `refuseClearValues`: the server refuses to start on a sealed database holding values in the
 * clear; an admin command leaves them be (it uses none of them, and `secret-key rotate` is how an
 * operator encrypts them on purpose).
 */
export async function prepareDatabase(
  config: Pick<Config, 'secretKeys' | 'secretKeyFile'>,
  store: Store,
  options: { refuseClearValues: boolean },
): Promise<PreparedDatabase> {
  const keyFile = config.secretKeys === undefined ? config.secretKeyFile : undefined;
  const keyFileExisted = keyFile === undefined || existsSync(keyFile);
  const secretBox = await openSecretBox(config, store);
  const stored = await checkStoredSecrets(store, secretBox);
  let sealed = 0;
  if (stored.inTheClear.length > 0) {
    if (stored.keyIds.length === 0) sealed = await sealPlaintextSecrets(store, secretBox);
    else if (options.refuseClearValues) throw clearValuesRefused(stored.inTheClear);
  }
  const notices = upgradeNotices(store.migrationRun);
  if (!keyFileExisted && existsSync(keyFile)) {
    notices.push(`Created the secret key file ${keyFile}: it encrypts the secrets in the database; back it up, and keep it apart from the database's backups`);
  }
  if (sealed > 0)
    notices.push(`Encrypted ${sealed} stored secret${sealed === 1 ? '' : 's'} that an older version kept in the clear (key ${secretBox.currentKeyId})`);
  return { secretBox, notices };
}

/** The rule for going back after any upgrade, said wherever the start says it upgraded. */
const goingBack = 'to go back to an older build, restore the backup made before this upgrade';

/**
 * What the migrations did, one sentence each, with what going back means: there are no
 * down-migrations, and an older build on the upgraded database either refuses it (those that check
 * the record of migrations) or starts on it and misreads it (the earliest 0.1.0 builds, which know
 * only scrypt password hashes: everyone whose password is now stored with Argon2id is refused).
 */
export function upgradeNotices(run: MigrationRun): string[] {
  const notices: string[] = [];
  // The one-way step of this upgrade: the build before reads the rewritten record as a newer one's.
  if (run.renumbered) {
    notices.push(
      "Renumbered the database's record of migrations to the one history SQLite and PostgreSQL now share: " +
        `${goingBack}. Builds that check the record refuse this database; the earliest 0.1.0 builds do not check, start on it, and refuse everyone whose password is now stored with Argon2id (see Upgrades in docs/operating.md)`,
    );
  }
  // A new database is nothing to report; an upgraded one is.
  if (run.applied.length > 0 && run.from > 0) {
    notices.push(
      `Upgraded the database from schema version ${run.from} to ${run.to}: ${run.applied.map((name) => name.replace(/\.sql$/, '')).join(', ')}; ${goingBack}`,
    );
  }
  return notices;
}

/** A server process's one store, opened and prepared: what the configuration file at start and then the server use. */
export interface ServerDatabase extends PreparedDatabase {
  store: Store;
}

/**
 * Opens the database a server process serves, once: the configuration file is applied on this
 * store and the server then runs on it. A second store in the same process would be a second
 * SQLite connection to the file, and anything but SQLite opening and closing the file drops the
 * POSIX locks every connection of the process holds on it (sqlite.org, "How To Corrupt An SQLite
 * Database File", §2.2): another process — `sqlite3 DB .backup` above all — would then think
 * itself the file's last user and delete the live WAL.
 *
 * `server`: the long-running store (group commit, background checkpoints); false for a cluster's
 * primary, which serves no request. `worker`: a cluster worker, which only opens the secret box
 * (the primary prepared the database).
 */
export async function openServerDatabase(config: Config, options: { server: boolean; worker?: boolean }): Promise<ServerDatabase> {
  const store = await openConfiguredStore(config, { server: options.server, convertVacuum: options.worker !== true });
  try {
    const prepared =
      options.worker === true
        ? { secretBox: await openSecretBox(config, store), notices: [] }
        : await prepareDatabase(config, store, { refuseClearValues: true });
    return { store, ...prepared };
  } catch (err) {
    // A store left open (a PostgreSQL pool's connections) would keep the failed process alive.
    await store.close();
    throw err;
  }
}
