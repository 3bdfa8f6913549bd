/**
 * The environment `serve --demo` runs with: the caller's tunables kept, its own database, key,
 * issuer and page title in place of the configured ones (named, so the banner can say so), and
 * loopback only.
 */
import { describe, expect, it } from 'vitest';
import { demoEnvironment, isLoopbackHost } from '../../src/cli/demo.js';
import { CommandError } from '../../src/cli/command.js';
import { loadConfig } from '../../src/config.js';

describe('serve --demo environment', () => {
  it('replaces the database, the key, the first user, the issuer and mail, and keeps the tunables', () => {
    const { env, ignored } = demoEnvironment(
      {
        PATH: '/usr/bin',
        PORT: '4100',
        LATCHKEY_DB: 'postgres://prod@db.internal/latchkey',
        LATCHKEY_SECRET_KEY: 'x'.repeat(43),
        LATCHKEY_BOOTSTRAP_PASSWORD: 'operator-password',
        LATCHKEY_ISSUER: 'https://id.example.com',
        LATCHKEY_SMTP_URL: 'smtp://mail.example.com',
        LATCHKEY_DEVICE_INTERVAL: '2',
        LATCHKEY_SECRET_KEY_FILE: '',
      },
      '/tmp/latchkey-demo-x/latchkey.db',
    );
    expect(ignored).toEqual(['LATCHKEY_DB', 'LATCHKEY_SECRET_KEY', 'LATCHKEY_BOOTSTRAP_PASSWORD', 'LATCHKEY_ISSUER', 'LATCHKEY_SMTP_URL']);
    const config = loadConfig(env);
    expect(config).toMatchObject({
      host: '127.0.0.1',
      port: 4100,
      issuer: 'http://localhost:4100',
      databasePath: '/tmp/latchkey-demo-x/latchkey.db',
      secretKeyFile: '/tmp/latchkey-demo-x/latchkey.db.key',
      secretKeys: undefined,
      bootstrapPassword: undefined,
      smtp: undefined,
      productName: 'Latchkey demo',
      deviceInterval: 2,
      logLevel: 'warn',
    });
  });

  it('listens on loopback only', () => {
    for (const host of ['127.0.0.1', '127.0.0.53', '::1', 'localhost']) expect(isLoopbackHost(host)).toBe(true);
    for (const host of ['0.0.0.0', '::', '10.0.0.5', 'id.example.com', '127.0.0.1.example.com']) expect(isLoopbackHost(host)).toBe(false);
    expect(() => demoEnvironment({ HOST: '0.0.0.0' }, '/tmp/x.db')).toThrow(CommandError);
    expect(demoEnvironment({ HOST: '::1' }, '/tmp/x.db').env.HOST).toBe('::1');
  });
});
