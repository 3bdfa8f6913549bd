import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ConfigError, loadConfig } from '../../src/config.js';
import { loadServerConfig, readServerSettings } from '../../src/config_file/read_server_settings.js';
import { serverSettingsSchema } from '../../src/config_file/server_settings.js';
import { redactedSecret, settingReport } from '../../src/config_file/setting_report.js';

const secretKey = 'a'.repeat(64);
const metricsToken = 'metrics-token-0123456789';
let folder: string;

beforeEach(() => {
  folder = mkdtempSync(join(tmpdir(), 'latchkey-config-'));
});
afterEach(() => rmSync(folder, { recursive: true, force: true }));

function file(text: string, name = 'latchkey.yaml'): string {
  const path = join(folder, name);
  writeFileSync(path, text);
  return path;
}

function problemsOf(run: () => unknown): string[] {
  try {
    run();
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  throw new Error('no ConfigError');
}

describe('the server section of a configuration file', () => {
  it('sets what the environment leaves unset: the environment wins over the file, the file over the defaults', () => {
    const path = file('server:\n  issuer: https://id.example.com\n  mfa: required\n  product_name: Acme Sign-in\n');
    const config = loadServerConfig({ LATCHKEY_CONFIG: path, LATCHKEY_MFA: 'off' });
    expect(config.issuer).toBe('https://id.example.com');
    expect(config.mfa).toBe('off');
    expect(config.productName).toBe('Acme Sign-in');
    expect(config.accessTokenTtl).toBe(86400);
    expect(config.configFile).toBe(path);
    expect(config.settingSources).toMatchObject({
      LATCHKEY_ISSUER: 'file',
      LATCHKEY_MFA: 'environment',
      LATCHKEY_PRODUCT_NAME: 'file',
      LATCHKEY_ACCESS_TOKEN_TTL: 'default',
    });
  });

  it('reads `serve --config FILE` before LATCHKEY_CONFIG, and nothing when neither is given', () => {
    const given = file('server:\n  port: 4100\n', 'given.yaml');
    const other = file('server:\n  port: 4200\n', 'other.json');
    expect(loadServerConfig({ LATCHKEY_CONFIG: other }, given).port).toBe(4100);
    expect(loadServerConfig({ LATCHKEY_CONFIG: other }).port).toBe(4200);
    expect(readServerSettings({})).toBeUndefined();
  });

  it('takes values in their natural YAML and JSON types, checked by the variable’s rule', () => {
    const yaml = file('server:\n  port: 4000\n  access_token_ttl: 600\n  trust_proxy: false\n  workers: 2\n  db: ":memory:"\n');
    const config = loadServerConfig({ LATCHKEY_CONFIG: yaml });
    expect([config.port, config.accessTokenTtl, config.trustProxy, config.workers, config.databasePath]).toEqual([4000, 600, false, 2, ':memory:']);
    const json = file(JSON.stringify({ server: { trust_proxy: 1, refresh_reuse_grace: 0 } }), 'latchkey.json');
    const fromJson = loadServerConfig({ LATCHKEY_CONFIG: json });
    expect([fromJson.trustProxy, fromJson.refreshReuseGrace]).toEqual([1, 0]);
  });

  it('resolves { env } and { file } references, a relative file from the configuration file’s folder', () => {
    writeFileSync(join(folder, 'secret-key'), `${secretKey}\n`);
    const path = file('server:\n  secret_key: { file: secret-key }\n  metrics_token: { env: METRICS }\n  issuer: { env: PUBLIC_URL }\n');
    const config = loadServerConfig({ LATCHKEY_CONFIG: path, METRICS: metricsToken, PUBLIC_URL: 'https://sso.example.com' });
    expect(config.secretKeys?.length).toBe(1);
    expect(config.metricsToken).toBe(metricsToken);
    expect(config.issuer).toBe('https://sso.example.com');
  });

  it('refuses a secret written as a value, without repeating it', () => {
    const path = file(
      `server:\n  secret_key: ${secretKey}\n  smtp_url: smtp://mailer:hunter22@mail.example.com\n  db: postgres://latchkey:pa55word@db.example.com/latchkey\n`,
    );
    const problems = problemsOf(() => readServerSettings({ LATCHKEY_CONFIG: path }));
    expect(problems).toEqual([
      `${path}: server.db: a postgres:// URL with a password is a secret: give it as { env: NAME } or { file: PATH }, or leave the password out (PGPASSWORD or ~/.pgpass)`,
      `${path}: server.secret_key: is a secret: give it as a reference { env: NAME } or { file: PATH }, never as a value`,
      `${path}: server.smtp_url: is a secret: give it as a reference { env: NAME } or { file: PATH }, never as a value`,
    ]);
    expect(problems.join('\n')).not.toMatch(/hunter22|pa55word|aaaaaaaa/);
  });

  it('names the setting an unknown key most likely meant', () => {
    const path = file('server:\n  issuer_url: https://id.example.com\n  LATCHKEY_MFA: required\n  colour: red\n');
    expect(problemsOf(() => readServerSettings({ LATCHKEY_CONFIG: path }))).toEqual([
      expect.stringMatching(/: server\.issuer_url: unknown setting: did you mean "issuer"\?/),
      expect.stringMatching(/: server\.LATCHKEY_MFA: unknown setting: did you mean "mfa"\?/),
      expect.stringMatching(/: server\.colour: unknown setting \(/),
    ]);
  });

  it('reports every problem of the section at once, each at its path, references included', () => {
    const path = file(
      'server:\n  access_token_ttl: soon\n  workers: 0\n  mfa: sometimes\n  log_levl: debug\n  metrics_token: { env: UNSET_TOKEN }\n  accent_color: { file: missing-colour }\n  bootstrap_password: { env: SHORT }\n',
    );
    const problems = problemsOf(() => readServerSettings({ LATCHKEY_CONFIG: path, SHORT: 'short' }));
    // The schema's problems first, then those of each reference's value once read.
    expect(problems.map((p) => p.slice(path.length + 2))).toEqual([
      'server.workers: must be at least 1',
      'server.access_token_ttl: must be a whole number of seconds',
      'server.mfa: must be one of off, optional, required',
      'server.log_levl: unknown setting: did you mean "log_level"? (the settings are those of docs/configuration.md, named without LATCHKEY_ in lower case)',
      'server.bootstrap_password: must be at least 8 characters',
      'server.metrics_token: the environment variable UNSET_TOKEN it refers to is not set',
      `server.accent_color: cannot read the file ${join(folder, 'missing-colour')} it refers to: ENOENT`,
    ]);
    expect(problems.join('\n')).not.toContain('short');
  });

  it('says where a file that cannot be read or parsed is wrong', () => {
    expect(problemsOf(() => readServerSettings({ LATCHKEY_CONFIG: join(folder, 'absent.yaml') }))).toEqual([
      `LATCHKEY_CONFIG: cannot read ${join(folder, 'absent.yaml')}: ENOENT`,
    ]);
    const broken = file('server:\n  issuer: [unclosed\n');
    expect(problemsOf(() => readServerSettings({ LATCHKEY_CONFIG: broken }))).toEqual([
      expect.stringMatching(new RegExp(`^${broken}:\\d+:\\d+: not valid YAML or JSON`)),
    ]);
    const list = file('- server\n');
    expect(problemsOf(() => readServerSettings({ LATCHKEY_CONFIG: list }))).toEqual([expect.stringContaining('must be a mapping of sections')]);
  });

  it('is a zod schema the whole file’s schema can plug in, with the same messages', () => {
    const parsed = serverSettingsSchema.safeParse({ port: 8080, secret_key: { env: 'KEY' }, isuer: 'x' });
    expect(parsed.success).toBe(false);
    expect(parsed.error?.issues.map((i) => [i.path.join('.'), i.message])).toEqual([['isuer', expect.stringContaining('did you mean "issuer"?')]]);
    expect(serverSettingsSchema.safeParse({ port: 8080, secret_key: { file: '/run/secrets/key' }, mfa: 'required' }).success).toBe(true);
    // Its JSON Schema, for editors: no unknown key, and a secret only as a reference.
    const json = z.toJSONSchema(serverSettingsSchema, { io: 'input', unrepresentable: 'any' }) as {
      additionalProperties: unknown;
      properties: Record<string, { anyOf: { type: string }[] }>;
    };
    expect(json.additionalProperties).toBe(false);
    expect(json.properties.secret_key?.anyOf.map((a) => a.type)).toEqual(['object', 'object']);
    expect(json.properties.port?.anyOf.map((a) => a.type)).toEqual(['string', 'number', 'boolean', 'object', 'object']);
  });
});

describe('where each setting came from', () => {
  it('lists every setting with its value and source, secrets redacted and the database password masked', () => {
    const path = file('server:\n  issuer: https://id.example.com\n  metrics_token: { env: METRICS }\n  access_token_ttl: 600\n');
    const env = {
      LATCHKEY_CONFIG: path,
      METRICS: metricsToken,
      LATCHKEY_DB: 'postgres://latchkey:pa55word@db.example.com/latchkey',
      LATCHKEY_SECRET_KEY: secretKey,
    };
    const fileSettings = readServerSettings(env);
    const rows = settingReport(loadConfig(env, fileSettings), env, fileSettings);
    const byKey = Object.fromEntries(rows.map((r) => [r.key, r]));
    expect(byKey.issuer).toMatchObject({ variable: 'LATCHKEY_ISSUER', value: 'https://id.example.com', source: 'file', file: path });
    expect(byKey.access_token_ttl).toMatchObject({ value: '600', source: 'file' });
    expect(byKey.metrics_token).toMatchObject({ value: redactedSecret, source: 'file' });
    expect(byKey.secret_key).toMatchObject({ value: redactedSecret, source: 'environment' });
    expect(byKey.db).toMatchObject({ value: 'postgres://latchkey:***@db.example.com/latchkey', source: 'environment' });
    expect(byKey.refresh_token_ttl).toMatchObject({ value: '2592000', source: 'default' });
    expect(JSON.stringify(rows)).not.toMatch(/pa55word|metrics-token|aaaaaaaa/);
  });
});
