/**
 * What a configuration file's secret references may never read: the server's own key material and
 * settings. A file arrives by pull request, and the value of a reference goes where the file sends
 * it — a connector's client secret to the upstream the file names, a setting onto every page — so a
 * reference to the secret key (LATCHKEY_SECRET_KEY, the file LATCHKEY_SECRET_KEY_FILE names, the
 * key file beside the SQLite database), to any other LATCHKEY_* variable, or to the database's
 * password would hand it to whoever wrote the file.
 *
 * A file reference is compared with each key file as the file system resolves both (realpath, and
 * the device and inode the path opens), so `..`, a symbolic link, a hard link or /proc/self/fd/N
 * lead to the same refusal; and a value read is refused when it holds one of the keys (a copy of
 * the key file, /proc/self/environ).
 */
import { readFileSync, realpathSync, statSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import type { Config } from '../config.js';
import { parseSecretKeys } from '../crypto/secret_box.js';
import { isPostgresUrl } from '../store/database_url.js';
import { referenceText, type Reference } from './secret_reference.js';
import { serverSettings } from './server_settings.js';

/** A key file as the file system knows it. */
interface KeyFile {
  /** The path as resolved (absolute), for messages. */
  readonly path: string;
  /** Where it really is, symbolic links followed (its folder's, when the file does not exist yet). */
  readonly real: string;
  /** Device and inode, when it exists. */
  readonly identity: string | undefined;
}

export interface ServerKeyMaterial {
  readonly files: readonly KeyFile[];
  /** The keys the server holds, from LATCHKEY_SECRET_KEY and every key file that can be read. */
  readonly keys: readonly Buffer[];
}

function identityOf(path: string): string | undefined {
  try {
    const stat = statSync(path);
    return `${stat.dev}:${stat.ino}`;
  } catch {
    return undefined;
  }
}

function realPathOf(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    // Not there (yet): its folder resolved, so that `data/../data/latchkey.db.key` still names it.
    try {
      return join(realpathSync(dirname(path)), basename(path));
    } catch {
      return path;
    }
  }
}

/** The keys a key file holds (one per line, `#` comments), or none when it cannot be read. */
function keysIn(path: string): Buffer[] {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    return [];
  }
  return keysOfText(text);
}

function keysOfText(text: string): Buffer[] {
  return (parseSecretKeys(text) ?? []).map((k) => k.key);
}

/**
 * The key material of a server with this database and these keys: each key file named (the
 * configured one, LATCHKEY_SECRET_KEY_FILE's, and the one beside a SQLite database whether or not
 * it is in use), with the keys they hold, and the keys given as text (LATCHKEY_SECRET_KEY).
 */
export function serverKeyMaterial(source: {
  databasePath: string | undefined;
  keyFiles: readonly (string | undefined)[];
  keyTexts: readonly (string | undefined)[];
  keys?: readonly Buffer[];
}): ServerKeyMaterial {
  const paths = [...source.keyFiles];
  const database = source.databasePath;
  if (database !== undefined && database !== '' && database !== ':memory:' && !isPostgresUrl(database)) paths.push(`${database}.key`);
  const files: KeyFile[] = [];
  for (const given of paths) {
    if (given === undefined || given.trim() === '') continue;
    const path = resolve(given);
    if (files.some((f) => f.path === path)) continue;
    files.push({ path, real: realPathOf(path), identity: identityOf(path) });
  }
  const keys = [
    ...(source.keys ?? []),
    ...source.keyTexts.flatMap((text) => (text === undefined ? [] : keysOfText(text))),
    ...files.flatMap((f) => keysIn(f.path)),
  ];
  return { files, keys };
}

/** No key material at all (a test, or a caller that holds none). */
export const noKeyMaterial: ServerKeyMaterial = { files: [], keys: [] };

const isServerVariable = (name: string) => /^LATCHKEY_/i.test(name);

/** The server's settings by their variables (PORT and HOST have no prefix, and are no secrets). */
const settingVariables = new Set(serverSettings.map((s) => s.variable).filter(isServerVariable));

/** Variables the PostgreSQL driver reads the database's password from. */
const databasePasswordVariables = new Set(['PGPASSWORD']);

const never = 'is never read as a secret of the file (its value would go wherever the file sends it)';

/**
 * Why a reference may not be followed, before it is: a LATCHKEY_* variable or the database's
 * password variable, or a file that is one of the server's key files; undefined when it may.
 * `path` is the file reference resolved against the configuration file's folder.
 */
export function referenceRefusal(reference: Reference, path: string | undefined, material: ServerKeyMaterial): string | undefined {
  if ('env' in reference) {
    const name = reference.env;
    if (/^LATCHKEY_SECRET_KEY$/i.test(name)) return `${referenceText(reference)} is the server's secret key, which ${never}`;
    if (settingVariables.has(name.toUpperCase())) return `${referenceText(reference)} is the server's own setting ${name.toUpperCase()}, which ${never}`;
    if (isServerVariable(name)) {
      return `${referenceText(reference)} names a LATCHKEY_* variable, which ${never}: the server's settings have such names; keep this secret in a variable of another name, e.g. ${name.replace(/^LATCHKEY_/i, '')}`;
    }
    if (databasePasswordVariables.has(reference.env)) return `${referenceText(reference)} is the database's password, which ${never}`;
    return undefined;
  }
  if (path === undefined) return undefined;
  const real = realPathOf(path);
  const identity = identityOf(path);
  const file = material.files.find((f) => f.real === real || (identity !== undefined && f.identity === identity));
  if (file === undefined) return undefined;
  return `${referenceText(reference)} is the server's secret key file (${file.path}): the server's key ${never}`;
}

/** Why a value read may not be used: it holds one of the server's keys (in any of the forms a key is written in). */
export function valueRefusal(reference: Reference, value: string, material: ServerKeyMaterial): string | undefined {
  const lower = value.toLowerCase();
  const holdsKey = material.keys.some(
    (key) => value.includes(key.toString('base64url')) || value.includes(key.toString('base64').slice(0, 43)) || lower.includes(key.toString('hex')),
  );
  return holdsKey ? `the value of ${referenceText(reference)} holds the server's secret key, which ${never}` : undefined;
}

/** The key material of the server this configuration runs: its key file and keys, and the environment's. */
export function configuredKeyMaterial(config: Pick<Config, 'databasePath' | 'secretKeys' | 'secretKeyFile'>, env: NodeJS.ProcessEnv): ServerKeyMaterial {
  return serverKeyMaterial({
    databasePath: config.databasePath,
    keyFiles: [config.secretKeyFile, env.LATCHKEY_SECRET_KEY_FILE],
    keyTexts: [env.LATCHKEY_SECRET_KEY],
    keys: (config.secretKeys ?? []).map((k) => k.key),
  });
}
