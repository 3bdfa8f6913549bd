/**
 * Reads the configuration file LATCHKEY_CONFIG (or `serve --config`) names, for the settings of
 * its `server` section only: parsed as YAML (JSON is YAML too), checked with serverSettingsSchema,
 * its references resolved — `{ env: NAME }` from this process's environment, `{ file: PATH }`
 * from a file (relative to the configuration file's folder) — and each resolved value checked by
 * its variable's rule. Every problem of the file is reported at once, each at its path; a secret's
 * value is never repeated in a message. A reference never reads a LATCHKEY_* variable, and only the
 * secret key's own setting may read the server's key material (server_key_material.ts).
 */
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { parse, YAMLParseError } from 'yaml';
import { ConfigError, environmentSchema, loadConfig, type Config, type FileSettings } from '../config.js';
import { readReferencedFile } from './secret_reference.js';
import { noKeyMaterial, referenceRefusal, serverKeyMaterial, valueRefusal } from './server_key_material.js';
import {
  isSettingReference,
  serverSettings,
  serverSettingsSchema,
  settingProblems,
  settingText,
  type ServerSetting,
  type SettingReference,
} from './server_settings.js';

/** The file to read: the one given on the command line, else LATCHKEY_CONFIG; undefined when neither. */
export function configurationFilePath(env: NodeJS.ProcessEnv, given?: string): string | undefined {
  const path = given?.trim() || env.LATCHKEY_CONFIG?.trim();
  return path ? resolve(path) : undefined;
}

/** The file's `server` settings as variables' text; undefined when no file is configured. Throws ConfigError. */
export function readServerSettings(env: NodeJS.ProcessEnv, given?: string): FileSettings | undefined {
  const path = configurationFilePath(env, given);
  if (path === undefined) return undefined;
  const document = readDocument(path);
  const section: unknown = isObject(document) ? (document.server ?? {}) : undefined;
  if (!isObject(document) && document !== null && document !== undefined) {
    throw new ConfigError([`${path}: the file must be a mapping of sections (server, apis, roles, clients, connectors)`]);
  }
  const parsed = serverSettingsSchema.safeParse(section ?? {});
  const problems = parsed.success ? [] : parsed.error.issues.map((issue) => `${path}: ${['server', ...issue.path.map(String)].join('.')}: ${issue.message}`);
  // References are followed even when other settings are wrong, so that one run names every problem.
  const written: Record<string, unknown> = isObject(section) ? section : {};
  const values: Record<string, string> = {};
  const followed: { setting: ServerSetting; reference: SettingReference; file: string | undefined; text: string }[] = [];
  for (const setting of serverSettings) {
    const value = written[setting.key];
    const where = `${path}: server.${setting.key}`;
    if (!isSettingReference(value)) {
      // A literal was checked by the schema (a secret given as a value among its problems).
      if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') values[setting.variable] = settingText(value);
      continue;
    }
    // The server's own variables are never a setting's source: the environment gives them itself.
    const refused = 'env' in value ? referenceRefusal(value, undefined, noKeyMaterial) : undefined;
    if (refused !== undefined) {
      problems.push(`${where}: ${refused}`);
      continue;
    }
    const text = resolveReference(value, path, env, (problem) => problems.push(`${where}: ${problem}`));
    if (text === undefined) continue;
    // A reference's value is checked once it is known.
    for (const problem of settingProblems(setting, text)) problems.push(`${where}: ${problem}`);
    values[setting.variable] = text;
    followed.push({ setting, reference: value, file: 'file' in value ? referencedFile(value, path) : undefined, text });
  }
  // The key material is known once the database and key settings are (the environment's and the
  // file's): no other setting may read it, as what a setting holds can reach a page or another host.
  const database = environmentSchema.shape.LATCHKEY_DB.safeParse(env.LATCHKEY_DB?.trim() || values.LATCHKEY_DB);
  const material = serverKeyMaterial({
    databasePath: database.success ? database.data : undefined,
    keyFiles: [env.LATCHKEY_SECRET_KEY_FILE, values.LATCHKEY_SECRET_KEY_FILE],
    keyTexts: [env.LATCHKEY_SECRET_KEY, values.LATCHKEY_SECRET_KEY],
  });
  for (const { setting, reference, file, text } of followed) {
    if (setting.variable === 'LATCHKEY_SECRET_KEY') continue;
    const refused = referenceRefusal(reference, file, material) ?? valueRefusal(reference, text, material);
    if (refused === undefined) continue;
    problems.push(`${path}: server.${setting.key}: ${refused}`);
    delete values[setting.variable];
  }
  if (problems.length > 0) throw new ConfigError(problems);
  return Object.freeze({ path, values: Object.freeze(values) });
}

/** The configuration the server and the admin commands run with: the environment over the file's `server` section over the defaults. */
export function loadServerConfig(env: NodeJS.ProcessEnv, given?: string): Config {
  return loadConfig(env, readServerSettings(env, given));
}

function readDocument(path: string): unknown {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new ConfigError([`LATCHKEY_CONFIG: cannot read ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`]);
  }
  try {
    return parse(text);
  } catch (err) {
    if (err instanceof YAMLParseError) {
      const at = err.linePos?.[0];
      throw new ConfigError([`${path}${at ? `:${at.line}:${at.col}` : ''}: not valid YAML or JSON: ${err.message.split('\n')[0] ?? ''}`]);
    }
    throw err;
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A file reference's path: relative ones from the configuration file's folder. */
function referencedFile(value: { readonly file: string }, configPath: string): string {
  return resolve(dirname(configPath), value.file);
}

/** A reference's value, read from where it points (a missing variable or an unreadable file is a problem, not an empty value). */
function resolveReference(value: SettingReference, configPath: string, env: NodeJS.ProcessEnv, problem: (message: string) => void): string | undefined {
  if ('env' in value) {
    const text = env[value.env];
    if (text === undefined || text.trim() === '') {
      problem(`the environment variable ${value.env} it refers to is not set`);
      return undefined;
    }
    return text;
  }
  const file = referencedFile(value, configPath);
  try {
    // A mounted secret usually ends with a newline that is no part of the value.
    const text = readReferencedFile(file).replace(/\r?\n$/, '');
    if (text.trim() === '') {
      problem(`the file ${file} it refers to is empty`);
      return undefined;
    }
    return text;
  } catch (err) {
    problem(`cannot read the file ${file} it refers to: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
    return undefined;
  }
}
