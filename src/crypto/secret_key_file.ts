/**
 * Where the secret key comes from: LATCHKEY_SECRET_KEY (one or more keys; for PostgreSQL, where
 * every instance needs the same one), or else a key file beside the SQLite database
 * (LATCHKEY_SECRET_KEY_FILE, default `<database>.key`), created 0600 on first use. The file holds
 * one key per line, the first the current one; `latchkey secret-key rotate` rewrites it.
 */
import { closeSync, existsSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, statSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Config } from '../config.js';
import { randomBytes } from 'node:crypto';
import type { Store } from '../store/store.js';
import { generateSecretKeyText, isSealed, parseSecretKeys, SecretBox, SecretKeyError, secretKeyOf, sealedKeyId, type SecretKey } from './secret_box.js';

export function readKeyFile(path: string): SecretKey[] {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new SecretKeyError(`cannot read the secret key file ${path}: ${(err as Error).message}`);
  }
  const keys = parseSecretKeys(text);
  if (!keys) throw new SecretKeyError(`the secret key file ${path} does not hold a valid key (43 base64url characters per line)`);
  return keys;
}

/** Writes the key file atomically (temporary file, fsync, rename), mode 0600. */
export function writeKeyFile(path: string, keyTexts: string[]): void {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  const temporary = `${path}.${process.pid}.tmp`;
  const fd = openSync(temporary, 'w', 0o600);
  try {
    writeSync(fd, `${keyTexts.join('\n')}\n`);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(temporary, path);
}

/** Creates the key file with a new key unless it exists (several processes may race: one wins). */
function ensureKeyFile(path: string): void {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  let fd: number;
  try {
    fd = openSync(path, 'wx', 0o600);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return;
    throw new SecretKeyError(`cannot create the secret key file ${path}: ${(err as Error).message}`);
  }
  try {
    writeSync(fd, `${generateSecretKeyText()}\n`);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** Whether the key file can be read by other users (group or other bits set). */
export function keyFileIsLoose(path: string): boolean {
  try {
    return (statSync(path).mode & 0o077) !== 0;
  } catch {
    return false;
  }
}

/** An in-memory database lives and dies with this process, and so does its key. */
const processKey = secretKeyOf(randomBytes(32));

/**
 * The box for this configuration: the environment's keys, the key file's, or for an in-memory
 * database a key of this process alone. The key file is made on first use — but never for a
 * database whose secrets are already encrypted (a backup restored without its key file): a new
 * key could not open them, so that is an error telling the operator what to restore.
 */
export async function openSecretBox(config: Pick<Config, 'secretKeys' | 'secretKeyFile'>, store?: Store): Promise<SecretBox> {
  if (config.secretKeys) return new SecretBox(config.secretKeys);
  const path = config.secretKeyFile;
  if (path === undefined) return new SecretBox([processKey]);
  if (!existsSync(path) && store) {
    const sealed = (await store.listSigningKeys()).map((k) => k.privateKeyPem).find(isSealed);
    if (sealed !== undefined) {
      throw new SecretKeyError(
        `the secret key file ${path} is missing, but the database's secrets are encrypted (with key ${sealedKeyId(sealed)}): restore the key file from your backups, or set LATCHKEY_SECRET_KEY`,
      );
    }
  }
  ensureKeyFile(path);
  return new SecretBox(readKeyFile(path), () => readKeyFile(path));
}
