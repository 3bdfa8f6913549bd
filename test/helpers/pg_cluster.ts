/**
 * A PostgreSQL cluster of the test's own (Debian's server binaries, initdb in a temporary folder,
 * a free loopback port), which the test may stop, restart and meddle with — what a shared test
 * database must never be put through. PostgreSQL refuses to run as root, so as root it runs as the
 * postgres user, as in scripts/with-postgres.sh. Without the binaries the tests are skipped, unless
 * LATCHKEY_REQUIRE_PG=1 (CI), where that fails the run instead.
 */
import { execFileSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { freePort } from './process.js';

function serverBin(): string | undefined {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root)
    .filter((v) => existsSync(join(root, v, 'bin', 'initdb')))
    .sort((a, b) => Number(b) - Number(a));
  return versions[0] === undefined ? undefined : join(root, versions[0], 'bin');
}

export const pgServerBin = serverBin();
export const pgServerRequired = process.env.LATCHKEY_REQUIRE_PG === '1';

export interface PgCluster {
  /** postgres://… of the cluster's `postgres` database, as the superuser `latchkey`. */
  url: string;
  /** A database of its own, created on the cluster. */
  createDatabase(name: string): Promise<string>;
  /** pg_ctl stop: `fast` rolls back every transaction and ends every connection (a restart), `immediate` is a crash. */
  stop(mode?: 'fast' | 'immediate'): void;
  start(): void;
  /** Runs SQL as the superuser on the `postgres` database. */
  query<R extends pg.QueryResultRow = pg.QueryResultRow>(text: string, values?: unknown[]): Promise<pg.QueryResult<R>>;
  /** Removes the cluster (stopped first). */
  destroy(): void;
}

export async function startPgCluster(): Promise<PgCluster> {
  const bin = pgServerBin;
  if (bin === undefined) throw new Error('no PostgreSQL server binaries under /usr/lib/postgresql');
  const root = process.getuid?.() === 0;
  const dir = mkdtempSync(join(tmpdir(), 'latchkey-pgcluster-'));
  if (root)
    chownSync(dir, Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' })), Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' })));
  const run = (program: string, args: string[]) => {
    const command = join(bin, program);
    execFileSync(root ? 'runuser' : command, root ? ['-u', 'postgres', '--', command, ...args] : args, { stdio: 'pipe' });
  };
  const port = await freePort();
  const data = join(dir, 'data');
  run('initdb', ['-D', data, '-A', 'trust', '-U', 'latchkey', '-E', 'UTF8', '--no-sync']);
  const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=100`;
  const start = () => run('pg_ctl', ['-D', data, '-l', join(dir, 'server.log'), '-w', '-o', options, 'start']);
  start();
  const url = `postgres://latchkey@127.0.0.1:${port}/postgres`;
  let running = true;
  const cluster: PgCluster = {
    url,
    async createDatabase(name) {
      await cluster.query(`CREATE DATABASE ${name}`);
      const u = new URL(url);
      u.pathname = `/${name}`;
      return u.toString();
    },
    stop(mode = 'fast') {
      run('pg_ctl', ['-D', data, '-m', mode, '-w', 'stop']);
      running = false;
    },
    start() {
      start();
      running = true;
    },
    async query(text, values) {
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      try {
        return await client.query(text, values);
      } finally {
        await client.end();
      }
    },
    destroy() {
      try {
        if (running) run('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  };
  return cluster;
}
