import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, startServerProcess, type ServerProcess } from '../helpers/process.js';

const firstPassword = 'first-password-from-env';
const metricsToken = 'metrics-token-from-a-mounted-file';
let folder: string;
let configPath: string;

beforeAll(() => {
  folder = mkdtempSync(join(tmpdir(), 'latchkey-config-e2e-'));
  writeFileSync(join(folder, 'metrics-token'), `${metricsToken}\n`);
  configPath = join(folder, 'latchkey.yaml');
  writeFileSync(
    configPath,
    [
      'server:',
      '  issuer: https://id.from-file.example',
      `  db: ${join(folder, 'latchkey.db')}`,
      '  log_level: debug',
      '  log_format: json',
      '  access_token_ttl: 600',
      '  bootstrap_password: { env: FIRST_PASSWORD }',
      '  metrics_token: { file: metrics-token }',
      '',
    ].join('\n'),
  );
});
afterAll(() => rmSync(folder, { recursive: true, force: true }));

describe('latchkey serve --config FILE', () => {
  let server: ServerProcess;
  beforeAll(async () => {
    // The helper's own LATCHKEY_ISSUER and LATCHKEY_LOG_LEVEL are emptied: an empty variable is unset, so the file's apply.
    server = await startServerProcess({ LATCHKEY_ISSUER: '', LATCHKEY_LOG_LEVEL: '', FIRST_PASSWORD: firstPassword }, ['--config', configPath]);
  });
  afterAll(async () => {
    await server.stop();
  });

  it('serves with the issuer the file gives', async () => {
    const discovery = (await (await fetch(`${server.base}/.well-known/openid-configuration`)).json()) as { issuer: string; token_endpoint: string };
    expect(discovery.issuer).toBe('https://id.from-file.example');
    expect(discovery.token_endpoint).toBe('https://id.from-file.example/oauth/token');
    // The metrics token came from the file a reference names.
    expect((await fetch(`${server.base}/metrics`)).status).toBe(401);
    expect((await fetch(`${server.base}/metrics`, { headers: { authorization: `Bearer ${metricsToken}` } })).status).toBe(200);
  });

  it('lets the admin commands open the database and key the file names', async () => {
    const listed = await runCli(['users', 'list', '--json'], { LATCHKEY_CONFIG: configPath, FIRST_PASSWORD: firstPassword });
    expect(listed.stderr).toBe('');
    expect((JSON.parse(listed.stdout) as { username: string }[]).map((u) => u.username)).toEqual(['admin']);
  });

  it('logs at debug level where each setting came from, never a secret value', () => {
    const entry = server
      .output()
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as { event?: string; configFile?: string; sources?: Record<string, string> })
      .find((e) => e.event === 'startup.settings');
    expect(entry?.configFile).toBe(configPath);
    expect(entry?.sources).toMatchObject({ LATCHKEY_ISSUER: 'file', LATCHKEY_METRICS_TOKEN: 'file', PORT: 'environment', LATCHKEY_MFA: 'default' });
    expect(server.output()).not.toContain(metricsToken);
    expect(server.output()).not.toContain(firstPassword);
  });
});

describe('latchkey config show', () => {
  it('prints every setting, its value and its source, secrets redacted', async () => {
    const env = { LATCHKEY_CONFIG: configPath, FIRST_PASSWORD: firstPassword, LATCHKEY_MFA: 'required' };
    const shown = await runCli(['config', 'show'], env);
    expect(shown.stderr).toBe('');
    expect(shown.code).toBe(0);
    const rows = shown.stdout.split('\n').map((line) => line.split(/\s{2,}/));
    expect(rows[0]).toEqual(['SETTING', 'VALUE', 'SOURCE']);
    expect(rows).toContainEqual(['issuer', 'https://id.from-file.example', `file ${configPath}`]);
    expect(rows).toContainEqual(['access_token_ttl', '600', `file ${configPath}`]);
    expect(rows).toContainEqual(['mfa', 'required', 'environment']);
    expect(rows).toContainEqual(['refresh_token_ttl', '2592000', 'default']);
    expect(rows).toContainEqual(['metrics_token', '(secret, set)', `file ${configPath}`]);
    expect(rows).toContainEqual(['bootstrap_password', '(secret, set)', `file ${configPath}`]);
    expect(shown.stdout).not.toContain(metricsToken);
    expect(shown.stdout).not.toContain(firstPassword);

    const json = await runCli(['config', 'show', '--json'], env);
    const settings = JSON.parse(json.stdout) as { key: string; variable: string; value: string; source: string; file: string | null }[];
    expect(settings.find((s) => s.key === 'issuer')).toEqual({
      key: 'issuer',
      variable: 'LATCHKEY_ISSUER',
      value: 'https://id.from-file.example',
      source: 'file',
      file: configPath,
    });
  });

  it('reads --config before LATCHKEY_CONFIG, and names every problem of a wrong file (exit code 3)', async () => {
    const wrong = join(folder, 'wrong.yaml');
    writeFileSync(wrong, 'server:\n  isuer: https://id.example.com\n  secret_key: 0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\n');
    const shown = await runCli(['config', 'show', '--config', wrong], { LATCHKEY_CONFIG: configPath });
    expect(shown.code).toBe(3);
    expect(shown.stderr.split('\n').filter(Boolean)).toEqual([
      `latchkey: ${wrong}: server.secret_key: is a secret: give it as a reference { env: NAME } or { file: PATH }, never as a value`,
      `latchkey: ${wrong}: server.isuer: unknown setting: did you mean "issuer"? (the settings are those of docs/configuration.md, named without LATCHKEY_ in lower case)`,
    ]);
    const served = await runCli(['serve', '--config', wrong], { PORT: '0' });
    expect(served.code).toBe(3);
    expect(served.stderr).toContain('server.isuer: unknown setting: did you mean "issuer"?');
    expect(served.stderr).not.toContain('0123456789abcdef');
  });
});
