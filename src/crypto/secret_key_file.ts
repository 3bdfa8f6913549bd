/**
 * Where the secret key comes from: LATCHKEY_SECRET_KEY (one or more keys; for PostgreSQL, where
 * every instance needs the same one), or else a key file beside the SQLite database
 * (LATCHKEY_SECRET_KEY_FILE, default `<database>.key`), created 0600 on first use. The file holds
 * one key per line, the first the current one; `latchkey secret-key rotate` rewrites it.
 */
import { closeSync, existsSync, fsyncSync, linkSync, mkdirSync, openSync, readFileSync, renameSync, statSync, unlinkSync, writeSync } from 'node:fs';
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

/**
 * Creates the key file with a new key unless it exists. The key is written to a temporary file
 * first and linked into place, which fails if the file exists: so the key file is never seen empty
 * or half-written, and of several processes racing, exactly one key wins.
 */
function ensureKeyFile(path: string): void {
  if (existsSync(path)) return;
  const temporary = `${path}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  let fd: number;
  try {
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
    fd = openSync(temporary, 'wx', 0o600);
  } catch (err) {
    // A key meant to be mounted (a container's /run/secrets) that is not there lands here.
    throw new SecretKeyError(
      `the secret key file ${path} does not exist and cannot be created (${(err as Error).message}): mount the key file there, or set LATCHKEY_SECRET_KEY (make one with: latchkey secret-key generate)`,
    );
  }
  try {
    writeSync(fd, `${generateSecretKeyText()}\n`);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  try {
    linkSync(temporary, path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw new SecretKeyError(`cannot create the secret key file ${path}: ${(err as Error).message}`);
  } finally {
    unlinkSync(temporary);
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Runs `work` holding `<key file>.lock`, so that `secret-key rotate` and `keys rotate` never
 * interleave (a signing key sealed under a key that a rotation is removing would be lost). A lock
 * left by a process that died is taken over.
 */
export async function withKeyFileLock<T>(path: string, work: () => Promise<T>, timeoutMs = 30_000): Promise<T> {
  const lock = `${path}.lock`;
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const fd = openSync(lock, 'wx', 0o600);
      writeSync(fd, String(process.pid));
      closeSync(fd);
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const holder = Number(readFileSync(lock, 'utf8').trim());
      if (!isAlive(holder)) {
        unlinkSync(lock);
        continue;
      }
      if (Date.now() > deadline) throw new SecretKeyError(`${lock} is held by process ${holder}: another key rotation is running`);
      await sleep(100);
    }
  }
  try {
    return await work();
  } finally {
    unlinkSync(lock);
  }
}

function isAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
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
  let readAs = fileIdentity(path);
  return new SecretBox(readKeyFile(path), {
    reload: () => {
      readAs = fileIdentity(path);
      return readKeyFile(path);
    },
    // `secret-key rotate` replaces the file (a rename) once the database is re-encrypted: a value
    // sealed afterwards must use the new key, never one the file no longer holds.
    stale: () => fileIdentity(path) !== readAs,
  });
}

/** What changes when the key file is replaced or rewritten (inode, size, modification time). */
function fileIdentity(path: string): string {
  try {
    const stat = statSync(path);
    return `${stat.ino}:${stat.size}:${stat.mtimeMs}`;
  } catch {
    return 'missing';
  }
}
