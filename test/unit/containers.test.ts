/**
 * compose.yaml and the image's environment, read as Docker would read them (no Docker engine runs
 * here): the services, the secret key as a compose secret mounted at /run/secrets and read through
 * LATCHKEY_SECRET_KEY_FILE, never on a volume beside the database, and every instance's
 * environment accepted by the server's own configuration loader.
 */
import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { environmentSchema, loadConfig } from '../../src/config.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const read = (name: string) => readFileSync(join(root, name), 'utf8');

interface Service {
  image?: string;
  build?: string;
  command?: string[];
  environment?: Record<string, string>;
  secrets?: string[];
  volumes?: string[];
  tmpfs?: string[];
  ports?: string[];
  read_only?: boolean;
  depends_on?: Record<string, { condition: string }> | string[];
}
interface ComposeFile {
  services: Record<string, Service>;
  secrets: Record<string, { file: string }>;
  volumes: Record<string, unknown>;
}

// `merge: true`: the `<<: *latchkey` keys, which Compose resolves the same way.
const compose = parse(read('compose.yaml'), { merge: true }) as ComposeFile;
const instances = Object.entries(compose.services).filter(([, service]) => service.environment?.LATCHKEY_DB !== undefined);

/** `${VAR:?message}` as Compose interpolates it, from a stand-in .env. */
function interpolate(environment: Record<string, string>, dotenv: Record<string, string>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(environment).map(([name, value]) => [name, value.replace(/\$\{(\w+)(?::\?[^}]*)?\}/g, (_, variable: string) => dotenv[variable] ?? '')]),
  );
}

/** The runtime stage's ENV block of the Dockerfile. */
function imageEnvironment(): Record<string, string> {
  const runtime = read('Dockerfile')
    .split(/^FROM /m)
    .at(-1)!;
  const block = runtime.match(/^ENV ([\s\S]*?)\n(?!\s)/m)![1]!;
  return Object.fromEntries(
    block
      .split(/\\\n|\s+(?=[A-Z_]+=)/)
      .map((part) => part.trim())
      .filter(Boolean)
      .map((part) => part.split('=') as [string, string]),
  );
}

describe('compose.yaml', () => {
  it('runs PostgreSQL, two Latchkey instances on it and one proxy in front of both', () => {
    expect(Object.keys(compose.services).sort()).toEqual(['latchkey-1', 'latchkey-2', 'postgres', 'proxy']);
    expect(compose.services.postgres!.image).toMatch(/^postgres:\d+/);
    expect(compose.services.postgres!.volumes).toEqual(['postgres-data:/var/lib/postgresql/data']);
    expect(instances.map(([name]) => name)).toEqual(['latchkey-1', 'latchkey-2']);
    for (const [, service] of instances) {
      expect(service.build).toBe('.');
      expect(service.depends_on).toEqual({ postgres: { condition: 'service_healthy' } });
    }
    // One issuer for both: the proxy's published address, which sends requests to either instance.
    const proxy = compose.services.proxy!;
    const issuers = new Set(instances.map(([, service]) => service.environment!.LATCHKEY_ISSUER));
    expect([...issuers]).toEqual(['http://localhost:3000']);
    expect(proxy.ports).toEqual(['127.0.0.1:3000:3000']);
    const targets = proxy.command!.flatMap((word, i, words) => (words[i - 1] === '--to' ? [word] : []));
    expect(targets).toEqual(['latchkey-1:3000', 'latchkey-2:3000']);
  });

  it('gives every instance the secret key as a compose secret file, never on a volume, and no secret in the environment', () => {
    expect(compose.secrets.latchkey_secret_key).toEqual({ file: './secrets/latchkey_secret_key' });
    for (const [, service] of instances) {
      expect(service.secrets).toEqual(['latchkey_secret_key']);
      const environment = service.environment!;
      expect(environment.LATCHKEY_SECRET_KEY_FILE).toBe('/run/secrets/latchkey_secret_key');
      expect(environment.LATCHKEY_SECRET_KEY).toBeUndefined();
      // The database password is not in the URL (the pg driver takes PGPASSWORD), and is no literal here.
      expect(environment.LATCHKEY_DB).toBe('postgres://latchkey@postgres:5432/latchkey');
      expect(environment.PGPASSWORD).toMatch(/^\$\{POSTGRES_PASSWORD:\?/);
      // No volume of the instance holds the key's folder (nor any data: it all lives in PostgreSQL).
      expect(service.volumes ?? []).toEqual([]);
      expect(service.read_only).toBe(true);
    }
    expect(compose.services.postgres!.environment!.POSTGRES_PASSWORD).toMatch(/^\$\{POSTGRES_PASSWORD:\?/);
    // The secret files stay out of git and out of the image's build context.
    for (const ignoreFile of ['.gitignore', '.dockerignore']) {
      const lines = read(ignoreFile).split('\n');
      expect(lines.some((line) => /^\/?secrets\/?$/.test(line.trim()))).toBe(true);
      expect(lines.some((line) => line.trim() === '.env')).toBe(true);
    }
  });

  it("each instance's environment is one the server accepts: PostgreSQL, the key file, one trusted proxy", () => {
    const known = new Set(Object.keys(environmentSchema.shape));
    for (const [, service] of instances) {
      const names = Object.keys(service.environment!).filter((name) => name.startsWith('LATCHKEY_'));
      expect(names.filter((name) => !known.has(name))).toEqual([]);
      const config = loadConfig({ ...imageEnvironment(), ...interpolate(service.environment!, { POSTGRES_PASSWORD: 'from-dotenv' }) });
      expect(config.databasePath).toBe('postgres://latchkey@postgres:5432/latchkey');
      expect(config.secretKeyFile).toBe('/run/secrets/latchkey_secret_key');
      expect(config.secretKeys).toBeUndefined();
      expect(config.issuer).toBe('http://localhost:3000');
      expect(config.trustProxy).toBe(1);
      expect(config.host).toBe('0.0.0.0');
    }
  });
});

describe('the container image', () => {
  it('reads the secret key from a mounted secret, not from the data volume beside the database', () => {
    const environment = imageEnvironment();
    const volumes = [...read('Dockerfile').matchAll(/^VOLUME \[(.*)\]$/gm)].flatMap((match) => JSON.parse(`[${match[1]}]`) as string[]);
    expect(volumes).toEqual(['/data']);
    const config = loadConfig(environment);
    expect(config.databasePath).toBe('/data/latchkey.db');
    expect(config.secretKeyFile).toBe('/run/secrets/latchkey_secret_key');
    for (const volume of volumes) expect(config.secretKeyFile!.startsWith(`${volume}/`)).toBe(false);
  });

  it('is built and run on a maintained Node.js LTS line, the one package.json asks for', () => {
    const engines = (JSON.parse(read('package.json')) as { engines: { node: string } }).engines.node;
    const lines = engines.split('||').map((range) => Number(/\^(\d+)/.exec(range)?.[1]));
    expect(lines).toEqual([22]);
    const bases = [...read('Dockerfile').matchAll(/^FROM node:(\d+)-/gm)].map((match) => Number(match[1]));
    expect(bases).toHaveLength(2);
    for (const base of bases) expect(lines).toContain(base);
  });
});
