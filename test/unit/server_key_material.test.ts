/**
 * A configuration file arrives by pull request, and a secret reference's value goes where the file
 * sends it (a connector's secret to the upstream the file names, a setting onto every page): no
 * reference may read the server's own key — the key file beside the database or the one
 * LATCHKEY_SECRET_KEY_FILE names, however the path reaches it — nor LATCHKEY_SECRET_KEY or any other
 * LATCHKEY_* variable, nor the database's password. Each refusal names the reference's place and
 * the reference, never a value.
 */
import { execFileSync } from 'node:child_process';
import { closeSync, copyFileSync, linkSync, mkdirSync, mkdtempSync, openSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/config.js';
import { parseConfigurationText, readSecrets } from '../../src/config_file/load.js';
import { readServerSettings } from '../../src/config_file/read_server_settings.js';
import { configuredKeyMaterial, serverKeyMaterial } from '../../src/config_file/server_key_material.js';
import { parseSecretKeys } from '../../src/crypto/secret_box.js';

const key = 'Qk9PVHNUUkFQX2tleV9mb3JfdGVzdHNfb25seV8wMDA'; // 43 base64url characters
let folder: string;
/** The server's database and its key file beside it, as a SQLite server keeps them. */
let database: string;
let keyFile: string;
/** The folder of the configuration file (the repository checkout a pull request changes). */
let checkout: string;

beforeEach(() => {
  folder = mkdtempSync(join(tmpdir(), 'latchkey-key-material-'));
  mkdirSync(join(folder, 'data'));
  mkdirSync(join(folder, 'checkout'));
  database = join(folder, 'data', 'latchkey.db');
  keyFile = `${database}.key`;
  writeFileSync(keyFile, `${key}\n`, { mode: 0o600 });
  checkout = join(folder, 'checkout');
});
afterEach(() => rmSync(folder, { recursive: true, force: true }));

/** The server as it runs on this database: its key from the file beside it. */
const material = () => configuredKeyMaterial({ databasePath: database, secretKeys: undefined, secretKeyFile: keyFile }, {});

/** A file declaring one OIDC connector whose client secret is `reference` (YAML flow text). */
function connectorFile(reference: string): string {
  return `connectors:\n  - id: corp\n    type: oidc\n    issuer: https://idp.attacker.example\n    client_id: latchkey\n    client_secret: ${reference}\n`;
}

function secretsOf(text: string, env: NodeJS.ProcessEnv = {}, keys = material()) {
  const parsed = parseConfigurationText(text, 'latchkey.yaml');
  if (!parsed.ok) throw new Error(parsed.problems.join('\n'));
  return readSecrets(parsed.file, join(checkout, 'latchkey.yaml'), env, keys);
}

describe('secret references of clients and connectors', () => {
  it('refuse the key file beside the database, by its path, through .., a symbolic link, a hard link or /proc/self/fd', () => {
    symlinkSync(keyFile, join(checkout, 'innocent.txt'));
    linkSync(keyFile, join(checkout, 'hard-link.txt'));
    // A file this process holds open (the server holds its database and key files): /proc/self/fd/N.
    const fd = openSync(keyFile, 'r');
    const ways = [
      keyFile,
      '../data/latchkey.db.key',
      '../checkout/../data/./latchkey.db.key',
      'innocent.txt',
      'hard-link.txt',
      join(checkout, 'innocent.txt'),
      `/proc/self/fd/${fd}`,
    ];
    for (const way of ways) {
      const { secrets, problems } = secretsOf(connectorFile(`{ file: "${way}" }`));
      expect(problems, way).toEqual([
        `connectors[0].client_secret: { file: ${way} } is the server's secret key file (${keyFile}): the server's key is never read as a secret of the file (its value would go wherever the file sends it)`,
      ]);
      expect(secrets.size).toBe(0);
    }
    closeSync(fd);
  });

  it('refuse the file LATCHKEY_SECRET_KEY_FILE names, and the key file beside the database while the key comes from elsewhere', () => {
    const mounted = join(folder, 'mounted.key');
    writeFileSync(mounted, `${key}\n`);
    const keys = configuredKeyMaterial({ databasePath: database, secretKeys: undefined, secretKeyFile: mounted }, { LATCHKEY_SECRET_KEY_FILE: mounted });
    expect(secretsOf(connectorFile(`{ file: ${mounted} }`), {}, keys).problems).toEqual([
      expect.stringContaining(`is the server's secret key file (${mounted})`),
    ]);
    // LATCHKEY_SECRET_KEY in use: the file beside the database is still the server's.
    const fromEnvironment = configuredKeyMaterial(
      { databasePath: database, secretKeys: parseSecretKeys(key), secretKeyFile: undefined },
      { LATCHKEY_SECRET_KEY: key },
    );
    expect(secretsOf(connectorFile('{ file: ../data/latchkey.db.key }'), {}, fromEnvironment).problems).toEqual([
      expect.stringContaining(`is the server's secret key file (${keyFile})`),
    ]);
  });

  it('refuse a copy of the key anywhere, in any form a key is written in', () => {
    copyFileSync(keyFile, join(checkout, 'copy.txt'));
    writeFileSync(join(checkout, 'hex.txt'), Buffer.from(key, 'base64url').toString('hex').toUpperCase());
    writeFileSync(join(checkout, 'wrapped.txt'), `prefix-${key}-suffix`);
    for (const name of ['copy.txt', 'hex.txt', 'wrapped.txt']) {
      expect(secretsOf(connectorFile(`{ file: ${name} }`)).problems, name).toEqual([
        `connectors[0].client_secret: the value of { file: ${name} } holds the server's secret key, which is never read as a secret of the file (its value would go wherever the file sends it)`,
      ]);
    }
  });

  it('refuse LATCHKEY_SECRET_KEY and every other LATCHKEY_* variable, and the database password, before reading them', () => {
    const env = {
      LATCHKEY_SECRET_KEY: key,
      LATCHKEY_SMTP_URL: 'smtp://mailer:hunter22@mail.example.com',
      LATCHKEY_CLIENT_CORP_SECRET: 'an-old-export-name',
      PGPASSWORD: 'database-password',
    };
    const names = ['LATCHKEY_SECRET_KEY', 'latchkey_secret_key', 'LATCHKEY_SMTP_URL', 'LATCHKEY_CLIENT_CORP_SECRET'];
    const refusals = names.map((name) => secretsOf(connectorFile(`{ env: ${name} }`), env));
    const never = 'is never read as a secret of the file (its value would go wherever the file sends it)';
    expect(refusals.map((r) => r.problems)).toEqual([
      [`connectors[0].client_secret: { env: LATCHKEY_SECRET_KEY } is the server's secret key, which ${never}`],
      [`connectors[0].client_secret: { env: latchkey_secret_key } is the server's secret key, which ${never}`],
      [`connectors[0].client_secret: { env: LATCHKEY_SMTP_URL } is the server's own setting LATCHKEY_SMTP_URL, which ${never}`],
      [
        `connectors[0].client_secret: { env: LATCHKEY_CLIENT_CORP_SECRET } names a LATCHKEY_* variable, which ${never}: the server's settings have such names; keep this secret in a variable of another name, e.g. CLIENT_CORP_SECRET`,
      ],
    ]);
    expect(secretsOf(connectorFile('{ env: PGPASSWORD }'), env).problems).toEqual([
      "connectors[0].client_secret: { env: PGPASSWORD } is the database's password, which is never read as a secret of the file (its value would go wherever the file sends it)",
    ]);
    for (const { problems, secrets } of refusals) {
      expect(problems.join('\n')).not.toMatch(new RegExp(`${key}|hunter22|an-old-export-name`));
      expect(secrets.size).toBe(0);
    }
  });

  it('refuse what is not one line of text: /proc/self/environ (every variable of the process), a FIFO or a device, without waiting', () => {
    const environ = secretsOf(connectorFile('{ file: /proc/self/environ }'));
    expect(environ.problems).toEqual(['connectors[0].client_secret: the secret must be one line of 1-4096 printable characters']);
    execFileSync('mkfifo', [join(checkout, 'pipe')]);
    expect(secretsOf(connectorFile('{ file: pipe }')).problems).toEqual([
      `connectors[0].client_secret: cannot read ${join(checkout, 'pipe')}: not a regular file`,
    ]);
    expect(secretsOf(connectorFile('{ file: /dev/zero }')).problems).toEqual(['connectors[0].client_secret: cannot read /dev/zero: not a regular file']);
  });

  it('still read an ordinary secret, from a file or a variable of another name', () => {
    writeFileSync(join(checkout, 'corp-secret.txt'), 'corp-client-secret\n');
    expect(secretsOf(connectorFile('{ file: corp-secret.txt }'))).toEqual({ secrets: new Map([['connector corp', 'corp-client-secret']]), problems: [] });
    expect(secretsOf(connectorFile('{ env: CORP_SECRET }'), { CORP_SECRET: 'from-env', LATCHKEY_SECRET_KEY: key })).toEqual({
      secrets: new Map([['connector corp', 'from-env']]),
      problems: [],
    });
  });

  it('knows the key material of a server on PostgreSQL or in memory: only the configured key and file', () => {
    expect(serverKeyMaterial({ databasePath: 'postgres://db.example.com/latchkey', keyFiles: [], keyTexts: [key] }).files).toEqual([]);
    expect(serverKeyMaterial({ databasePath: ':memory:', keyFiles: [undefined], keyTexts: [undefined] })).toEqual({ files: [], keys: [] });
  });
});

describe('references of the server section', () => {
  function settingsProblems(text: string, env: NodeJS.ProcessEnv): string[] {
    const path = join(checkout, 'latchkey.yaml');
    writeFileSync(path, text);
    try {
      readServerSettings({ LATCHKEY_CONFIG: path, ...env });
    } catch (err) {
      if (err instanceof ConfigError) return err.problems.map((p) => p.slice(path.length + 2));
      throw err;
    }
    return [];
  }

  it('refuse the key material for any setting but the key itself (a product name is on every page)', () => {
    symlinkSync(keyFile, join(checkout, 'brand.txt'));
    expect(settingsProblems(`server:\n  db: ${database}\n  product_name: { file: brand.txt }\n`, {})).toEqual([
      `server.product_name: { file: brand.txt } is the server's secret key file (${keyFile}): the server's key is never read as a secret of the file (its value would go wherever the file sends it)`,
    ]);
    expect(settingsProblems('server:\n  product_name: { file: ../data/latchkey.db.key }\n', { LATCHKEY_DB: database })).toEqual([
      expect.stringContaining("server.product_name: { file: ../data/latchkey.db.key } is the server's secret key file"),
    ]);
    // The secret key's own setting may read a key file: that is what it is for.
    expect(settingsProblems('server:\n  secret_key: { file: ../data/latchkey.db.key }\n', { LATCHKEY_DB: database })).toEqual([]);
  });

  it('refuse a LATCHKEY_* variable as a setting’s source: the environment sets a setting itself', () => {
    expect(settingsProblems('server:\n  product_name: { env: LATCHKEY_SECRET_KEY }\n', { LATCHKEY_SECRET_KEY: key })).toEqual([
      "server.product_name: { env: LATCHKEY_SECRET_KEY } is the server's secret key, which is never read as a secret of the file (its value would go wherever the file sends it)",
    ]);
  });
});
