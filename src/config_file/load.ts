/**
 * Reading a configuration file: YAML or JSON (by the extension, else by the content), validated
 * by the file's schema, its cross-references checked against itself and the database, and its
 * secret references read. Every problem is reported at once, one line each, naming its place in
 * the file (`clients[2].redirect_uris[0]: "x" is not an absolute URI`): an operator fixes a file in
 * one pass, not one error per run.
 */
import { readFile } from 'node:fs/promises';
import { dirname, extname, isAbsolute, resolve } from 'node:path';
import { parseDocument } from 'yaml';
import type { z } from 'zod';
import { resolvePermission } from '../directory/roles.js';
import { AdminInputError } from '../directory/validation.js';
import type { ApiRecord, ClientRecord } from '../store/store.js';
import { configurationFileSchema, type ConfigurationFile, type SecretReference } from './schema.js';
import { readReferencedFile } from './secret_reference.js';
import { referenceRefusal, valueRefusal, type ServerKeyMaterial } from './server_key_material.js';

/** A file that cannot be applied, with every reason. */
export class ConfigurationFileError extends Error {
  constructor(
    readonly file: string,
    readonly problems: readonly string[],
  ) {
    super(`${file}: ${problems.length} problem${problems.length === 1 ? '' : 's'}\n${problems.map((p) => `  ${p}`).join('\n')}`);
    this.name = 'ConfigurationFileError';
  }
}

/** A file read and checked: its absolute path (what managed objects record), its content, its secrets' values. */
export interface LoadedConfiguration {
  path: string;
  file: ConfigurationFile;
  /** The value of each secret reference, by secretKey(). */
  secrets: ReadonlyMap<string, string>;
}

/** What the file's cross-references may also point at: the database's objects. */
export interface DatabaseObjects {
  apis: readonly ApiRecord[];
  clients: readonly ClientRecord[];
  /** The identifiers of the built-in API (`{issuer}/api/v1`) for the issuers the server is known by. */
  builtInApis?: readonly string[];
}

/** Where a value sits in the file, as a person reads it: `clients[2].redirect_uris[0]`. */
export function filePath(path: readonly PropertyKey[]): string {
  let text = '';
  for (const key of path) text += typeof key === 'number' ? `[${key}]` : `${text === '' ? '' : '.'}${String(key)}`;
  return text === '' ? '(the file)' : text;
}

function issueLines(issues: readonly z.core.$ZodIssue[]): string[] {
  const lines: string[] = [];
  for (const issue of issues) {
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) lines.push(`${filePath([...issue.path, key])}: unknown field`);
    } else if (issue.code === 'invalid_type' && issue.input === undefined) {
      lines.push(`${filePath(issue.path)}: is required`);
    } else {
      lines.push(`${filePath(issue.path)}: ${issue.message}`);
    }
  }
  return lines;
}

/** YAML or JSON: the extension says which; without one, a first `{` says JSON. */
function readDocument(text: string, fileName: string): { ok: true; value: unknown } | { ok: false; problems: string[] } {
  const extension = extname(fileName).toLowerCase();
  const json = extension === '.json' || (extension !== '.yaml' && extension !== '.yml' && text.trimStart().startsWith('{'));
  if (json) {
    try {
      return { ok: true, value: JSON.parse(text) as unknown };
    } catch (err) {
      return { ok: false, problems: [`not valid JSON: ${(err as Error).message}`] };
    }
  }
  // uniqueKeys: a key given twice is a mistake (the second would silently win).
  const document = parseDocument(text, { uniqueKeys: true, prettyErrors: true });
  if (document.errors.length > 0) {
    return {
      ok: false,
      problems: document.errors.map(
        (e) => `line ${e.linePos?.[0]?.line ?? '?'}: ${(e.message.split('\n')[0] ?? e.message).replace(/ at line \d+, column \d+:?$/, '')}`,
      ),
    };
  }
  return { ok: true, value: document.toJS() as unknown };
}

/** The file's text parsed and validated by its schema; every problem, each with its path. */
export function parseConfigurationText(text: string, fileName: string): { ok: true; file: ConfigurationFile } | { ok: false; problems: string[] } {
  const document = readDocument(text, fileName);
  if (!document.ok) return document;
  // An empty YAML document is an empty configuration.
  const parsed = configurationFileSchema.safeParse(document.value ?? {});
  if (!parsed.success) return { ok: false, problems: issueLines(parsed.error.issues) };
  return { ok: true, file: parsed.data };
}

/** Two declarations of one object: the second is named, pointing at the first. */
function duplicates<T>(items: readonly T[], key: (item: T) => string, where: (index: number) => string, what: string): string[] {
  const first = new Map<string, number>();
  const problems: string[] = [];
  items.forEach((item, index) => {
    const id = key(item);
    const earlier = first.get(id);
    if (earlier === undefined) first.set(id, index);
    else problems.push(`${where(index)}: ${what} "${id.slice(0, 200)}" is declared twice (also ${where(earlier)})`);
  });
  return problems;
}

/** The APIs as they will be once the file is applied: the database's, with the file's replacing those of the same identifier. */
export function apisAfterApply(file: ConfigurationFile, database: DatabaseObjects): ApiRecord[] {
  const byIdentifier = new Map(database.apis.map((api) => [api.identifier, api]));
  for (const api of file.apis) {
    byIdentifier.set(api.identifier, {
      identifier: api.identifier,
      name: api.name ?? api.identifier,
      scopes: api.scopes,
      introspectionClients: api.introspection_clients,
      createdAt: 0,
      managedBy: undefined,
    });
  }
  return [...byIdentifier.values()];
}

/**
 * What the schema cannot see alone: duplicate ids, a role permission or a client grant naming an
 * API or scope that neither the file nor the database has, an introspection client that is not a
 * confidential client, a built-in client redeclared.
 */
export function checkReferences(file: ConfigurationFile, database: DatabaseObjects): string[] {
  const problems = [
    ...duplicates(
      file.apis,
      (a) => a.identifier,
      (i) => `apis[${i}].identifier`,
      'API',
    ),
    ...duplicates(
      file.roles,
      (r) => r.name,
      (i) => `roles[${i}].name`,
      'role',
    ),
    ...duplicates(
      file.clients,
      (c) => c.client_id,
      (i) => `clients[${i}].client_id`,
      'client',
    ),
    ...duplicates(
      file.connectors,
      (c) => c.id,
      (i) => `connectors[${i}].id`,
      'connector',
    ),
  ];
  const apis = apisAfterApply(file, database);
  file.roles.forEach((role, r) => {
    role.permissions.forEach((text, p) => {
      try {
        resolvePermission(apis, text);
      } catch (err) {
        if (!(err instanceof AdminInputError)) throw err;
        problems.push(
          `roles[${r}].permissions[${p}]: ${err.message.replace('a registered API identifier', 'the identifier of an API of the file or the database')}`,
        );
      }
    });
  });
  const confidential = new Map(database.clients.map((c) => [c.clientId, c.secretHash !== undefined || c.jwksUri !== undefined || c.jwks !== undefined]));
  for (const client of file.clients) confidential.set(client.client_id, client.confidential);
  const builtIn = new Set(database.clients.filter((c) => c.builtIn).map((c) => c.clientId));
  // A client registered with a stored key set (clients add --jwks-file) keeps it: the file declares no key sets.
  const storedKeys = new Set(database.clients.filter((c) => c.jwks !== undefined).map((c) => c.clientId));
  file.clients.forEach((client, c) => {
    if (builtIn.has(client.client_id)) problems.push(`clients[${c}].client_id: "${client.client_id}" is built in: it cannot be declared`);
    if (client.confidential && client.jwks_uri === undefined && client.client_secret === undefined && !storedKeys.has(client.client_id))
      problems.push(`clients[${c}].client_secret: a confidential client needs client_secret ({ env: NAME } or { file: PATH }) or jwks_uri`);
    client.grants.forEach((grant, g) => {
      const api = apis.find((a) => a.identifier === grant.api);
      if (api === undefined) {
        problems.push(`clients[${c}].grants[${g}].api: no API "${grant.api.slice(0, 200)}" in the file or the database`);
        return;
      }
      grant.scopes.forEach((scope, s) => {
        if (!api.scopes.includes(scope))
          problems.push(`clients[${c}].grants[${g}].scopes[${s}]: API ${api.identifier} declares no scope "${scope.slice(0, 80)}"`);
      });
    });
  });
  const builtInApis = new Set(database.builtInApis ?? []);
  file.apis.forEach((api, a) => {
    // The server makes the built-in API, with every management scope, at each start: a file that
    // managed it could narrow or remove it (prune), and the next start would quietly undo that.
    if (builtInApis.has(api.identifier))
      problems.push(
        `apis[${a}].identifier: "${api.identifier}" is built in (the management API): it cannot be declared; the server makes it at every start (add scopes of your own with latchkey apis update)`,
      );
    api.introspection_clients.forEach((clientId, i) => {
      const known = confidential.get(clientId);
      if (known === undefined) problems.push(`apis[${a}].introspection_clients[${i}]: no client "${clientId.slice(0, 128)}" in the file or the database`);
      else if (!known)
        problems.push(`apis[${a}].introspection_clients[${i}]: "${clientId.slice(0, 128)}" is a public client: only a confidential client may introspect`);
    });
  });
  return problems;
}

/** The key of a secret in LoadedConfiguration.secrets. */
export function secretKey(object: 'client' | 'connector', id: string): string {
  return `${object} ${id}`;
}

/** Where the file references secrets: its path in the file, the key, the reference. */
function secretReferences(file: ConfigurationFile): { where: string; key: string; reference: SecretReference }[] {
  const references: { where: string; key: string; reference: SecretReference }[] = [];
  file.clients.forEach((client, c) => {
    if (client.client_secret)
      references.push({ where: `clients[${c}].client_secret`, key: secretKey('client', client.client_id), reference: client.client_secret });
  });
  file.connectors.forEach((connector, c) => {
    const reference = connector.type === 'ldap' ? connector.bind_password : connector.client_secret;
    const field = connector.type === 'ldap' ? 'bind_password' : 'client_secret';
    if (reference) references.push({ where: `connectors[${c}].${field}`, key: secretKey('connector', connector.id), reference });
  });
  return references;
}

/** A file reference's path: relative ones from the configuration file's directory. */
function referencedPath(file: string, configPath: string): string {
  return isAbsolute(file) ? file : resolve(dirname(configPath), file);
}

/**
 * Reads each secret reference: an environment variable, or a file (relative to the configuration
 * file's directory; one trailing newline dropped, as `echo` and editors leave one). The server's own
 * key material and settings are refused before they are read (server_key_material.ts), and a value
 * that holds the server's key after.
 */
export function readSecrets(
  file: ConfigurationFile,
  configPath: string,
  env: NodeJS.ProcessEnv,
  material: ServerKeyMaterial,
): { secrets: Map<string, string>; problems: string[] } {
  const secrets = new Map<string, string>();
  const problems: string[] = [];
  for (const { where, key, reference } of secretReferences(file)) {
    const refused = referenceRefusal(reference, 'file' in reference ? referencedPath(reference.file, configPath) : undefined, material);
    if (refused !== undefined) {
      problems.push(`${where}: ${refused}`);
      continue;
    }
    let value: string;
    if ('env' in reference) {
      const found = env[reference.env];
      if (found === undefined || found === '') {
        problems.push(`${where}: environment variable ${reference.env} is not set`);
        continue;
      }
      value = found;
    } else {
      const path = referencedPath(reference.file, configPath);
      try {
        value = readReferencedFile(path).replace(/\r?\n$/, '');
      } catch (err) {
        problems.push(`${where}: cannot read ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
        continue;
      }
    }
    // Control characters too: a secret is typed text, and a binary file (the database, /proc/self/environ) is none.
    if (value === '' || value.length > 4096 || /[\u0000-\u001f\u007f]/.test(value)) {
      problems.push(`${where}: the secret must be one line of 1-4096 printable characters`);
      continue;
    }
    const held = valueRefusal(reference, value, material);
    if (held !== undefined) {
      problems.push(`${where}: ${held}`);
      continue;
    }
    secrets.set(key, value);
  }
  return { secrets, problems };
}

/**
 * Reads, validates and checks the file at `path`; throws ConfigurationFileError with every
 * problem. The database's objects are what cross-references may name besides the file's own;
 * `material` is the server's key material, which no reference may read.
 */
export async function loadConfigurationFile(
  path: string,
  database: DatabaseObjects,
  env: NodeJS.ProcessEnv,
  material: ServerKeyMaterial,
): Promise<LoadedConfiguration> {
  const absolute = resolve(path);
  let text: string;
  try {
    text = await readFile(absolute, 'utf8');
  } catch (err) {
    throw new ConfigurationFileError(absolute, [`cannot read the file: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`]);
  }
  const parsed = parseConfigurationText(text, absolute);
  if (!parsed.ok) throw new ConfigurationFileError(absolute, parsed.problems);
  const { secrets, problems: secretProblems } = readSecrets(parsed.file, absolute, env, material);
  const problems = [...checkReferences(parsed.file, database), ...secretProblems];
  if (problems.length > 0) throw new ConfigurationFileError(absolute, problems);
  return { path: absolute, file: parsed.file, secrets };
}
