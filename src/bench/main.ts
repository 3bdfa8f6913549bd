/**
 * `npm run bench`: the built server in production mode on a temporary SQLite file, pinned to one
 * core, driven over a real socket by autocannon in a second process pinned to the other core.
 * Prints a table per run and, last, one JSON line with every figure.
 *
 *   node dist/bench/main.js [--duration 10] [--warmup 2] [--connections 64] [--alg RS256,ES256]
 *                           [--workers 1,2] [--scales 1000,100000,1000000] [--scenarios all|name,…] [--quick]
 *
 * An empty list (--scales '' or --workers '') skips those runs. BENCH_SERVER_NODE_ARGS goes on the
 * server's node command line, e.g. '--cpu-prof --cpu-prof-dir=/tmp/prof' for a CPU profile.
 */
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { configFrom, type Config } from '../config.js';
import { signingAlgorithms, type SigningAlgorithm } from '../crypto/keys.js';
import { SqliteStore } from '../store/sqlite/sqlite_store.js';
import type { LoadResult, LoadSpec } from './load.js';
import { checkTargets, formatReport, type BenchReport, type RunReport, type ScenarioFigures } from './report.js';
import {
  codeExchangeRequest,
  deviceAuthorizationRequest,
  devicePollRequest,
  jwksRequest,
  refreshRequest,
  userinfoRequest,
  type ScenarioName,
  type ScenarioRequest,
} from './scenarios.js';
import { seedAuthorizationCodes, seedBase, seedDeviceGrants, seedRefreshTokens } from './seed.js';
import { hasTaskset, pinned, startBenchServer, type BenchServer } from './server_process.js';

const { values: options } = parseArgs({
  options: {
    duration: { type: 'string', default: '10' },
    warmup: { type: 'string', default: '2' },
    connections: { type: 'string', default: '64' },
    alg: { type: 'string', default: 'RS256,ES256' },
    workers: { type: 'string', default: '1,2' },
    scales: { type: 'string', default: '1000,100000,1000000' },
    scenarios: { type: 'string', default: 'all' },
    quick: { type: 'boolean', default: false },
  },
});

const quick = options.quick;
const duration = quick ? 1 : Number(options.duration);
const warmup = quick ? 0.5 : Number(options.warmup);
const connections = Number(options.connections);
const algorithms = options.alg.split(',').map((a) => a.trim()) as SigningAlgorithm[];
const list = (value: string) => value.split(',').map((v) => v.trim()).filter(Boolean);
const workerCounts = list(options.workers).map(Number);
const scales = list(quick ? '1000,20000' : options.scales).map(Number);
for (const alg of algorithms) if (!signingAlgorithms.includes(alg)) throw new Error(`--alg: unknown algorithm ${alg}`);

const twoCores = cpus().length >= 2;
const serverCores = twoCores ? '0' : undefined;
const loadCores = twoCores ? '1' : undefined;
/** Enough pending codes for this many polls a second with none polled faster than its interval (above it, slow_down shows as unexpected). */
const maxPollRate = 20_000;
/** Seeded secrets per expected request: generous in --quick runs, whose short figures swing widely. */
const margin = quick ? 3 : 1.3;

function childJson<T>(args: string[], cores: string | undefined): Promise<T> {
  const [command, ...rest] = pinned(cores, [process.execPath, ...args]);
  return new Promise((resolve, reject) => {
    const child = spawn(command ?? process.execPath, rest, { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.on('exit', (code) => {
      if (code !== 0) return reject(new Error(`${args.join(' ')} exited with ${code}`));
      try {
        resolve(JSON.parse(out.trim().split('\n').pop() ?? '') as T);
      } catch (err) {
        reject(err);
      }
    });
  });
}

const here = (file: string) => fileURLToPath(new URL(file, import.meta.url));

async function signingRate(alg: SigningAlgorithm): Promise<number> {
  const result = await childJson<{ signaturesPerSecond: number }>([here('./signing_rate.js'), alg, quick ? '1' : '3'], serverCores);
  return result.signaturesPerSecond;
}

async function drive(server: BenchServer, request: ScenarioRequest, seconds: number, bodies?: string[]): Promise<LoadResult> {
  const dir = mkdtempSync(join(tmpdir(), 'latchkey-load-'));
  const spec: LoadSpec = {
    url: `${server.url}${request.path}`,
    method: request.method,
    headers: request.headers,
    connections,
    durationSeconds: seconds,
    ...(bodies ? { bodies } : request.body !== undefined ? { bodies: [request.body] } : {}),
  };
  writeFileSync(join(dir, 'spec.json'), JSON.stringify(spec));
  try {
    return await childJson<LoadResult>([here('./load.js'), join(dir, 'spec.json')], loadCores);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A warm-up (its own secrets), then the measured run with CPU and peak RSS around it. */
async function measure(server: BenchServer, name: ScenarioName, warm: ScenarioRequest, measured: ScenarioRequest): Promise<ScenarioFigures> {
  if (warmup > 0) await drive(server, warm, warmup, warm.bodies);
  server.resetPeakRss();
  const cpuBefore = server.cpuSeconds();
  const load = await drive(server, measured, duration, measured.bodies);
  const cpu = server.cpuSeconds() - cpuBefore;
  const expected = measured.expected.error === undefined ? (load.statuses[measured.expected.status] ?? 0) : (load.errors[measured.expected.error] ?? 0);
  return {
    scenario: name,
    requestsPerSecond: load.requestsPerSecond,
    p50Ms: load.p50Ms,
    p99Ms: load.p99Ms,
    non2xx: load.non2xx,
    unexpected: load.requests - expected + load.socketErrors + load.timeouts,
    answers: { ...load.statuses, ...Object.fromEntries(Object.entries(load.errors).map(([k, v]) => [`error:${k}`, v])) },
    serverCpuCores: cpu / duration,
    cpuMicrosecondsPerRequest: load.requests > 0 ? (cpu * 1e6) / load.requests : 0,
    peakRssMb: server.peakRssBytes() / 1024 / 1024,
  };
}

interface Fixtures {
  pendingWarm: string[];
  pending: string[];
  approvedWarm: string[];
  approved: string[];
  codesWarm: string[];
  codes: string[];
  refreshWarm: string[];
  refresh: string[];
  /** Kept back to get a real access token for /userinfo. */
  reserved: string;
}

interface Sizes {
  issuance: number;
  exchange: number;
  withCodeFlow: boolean;
}

/** A port nobody listens on now: bound by the OS, then released for the server. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      probe.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

function serverEnv(dir: string, port: number, alg: SigningAlgorithm, workers: number): Record<string, string> {
  return {
    NODE_ENV: 'production',
    HOST: '127.0.0.1',
    PORT: String(port),
    LATCHKEY_ISSUER: `http://127.0.0.1:${port}`,
    LATCHKEY_DB: join(dir, 'latchkey.db'),
    LATCHKEY_SIGNING_ALG: alg,
    LATCHKEY_WORKERS: String(workers),
    // Every request comes from one address: the per-address limits would answer 429, not the endpoint.
    LATCHKEY_RATE_LIMIT_DEVICE_AUTHORIZATION: 'off',
    LATCHKEY_RATE_LIMIT_UNKNOWN_DEVICE_CODE: 'off',
  };
}

/** Seeds everything a run presents (plus `filler` extra device grants) before the server starts. */
async function seed(config: Config, sizes: Sizes, filler: number): Promise<Fixtures> {
  const store = new SqliteStore({ path: config.databasePath });
  const now = Math.floor(Date.now() / 1000);
  const count = (rate: number, seconds: number) => Math.ceil(rate * seconds * margin) + 100;
  try {
    await seedBase(store, now);
    if (filler > 0) await seedDeviceGrants(store, { count: filler, status: 'pending', now, config, keep: false });
    // No code may come round again within its interval (that poll would be slow_down): enough codes
    // for the polls of a whole interval, or of the whole run when it is shorter (--quick).
    const pendingCount = Math.max(count(maxPollRate, Math.min(config.deviceInterval + 1, duration)), 1000);
    const fixtures: Fixtures = {
      pendingWarm: await seedDeviceGrants(store, { count: count(maxPollRate, warmup), status: 'pending', now, config }),
      pending: await seedDeviceGrants(store, { count: pendingCount, status: 'pending', now, config }),
      approvedWarm: await seedDeviceGrants(store, { count: count(sizes.issuance, warmup), status: 'approved', now, config }),
      approved: await seedDeviceGrants(store, { count: count(sizes.issuance, duration), status: 'approved', now, config }),
      codesWarm: sizes.withCodeFlow ? await seedAuthorizationCodes(store, count(sizes.exchange, warmup), now, config) : [],
      codes: sizes.withCodeFlow ? await seedAuthorizationCodes(store, count(sizes.exchange, duration), now, config) : [],
      refreshWarm: sizes.withCodeFlow ? await seedRefreshTokens(store, count(sizes.issuance, warmup), now, config) : [],
      refresh: sizes.withCodeFlow ? await seedRefreshTokens(store, count(sizes.issuance, duration), now, config) : [],
      reserved: (await seedDeviceGrants(store, { count: 1, status: 'approved', now, config }))[0] ?? '',
    };
    return fixtures;
  } finally {
    await store.close();
  }
}

async function accessTokenFor(server: BenchServer, deviceCode: string): Promise<string> {
  const request = devicePollRequest([deviceCode], { status: 200 });
  const response = await fetch(`${server.url}${request.path}`, { method: 'POST', headers: request.headers, body: request.bodies?.[0] ?? '' });
  const body = (await response.json()) as { access_token?: string };
  if (!response.ok || !body.access_token) throw new Error(`could not get an access token for /userinfo: ${JSON.stringify(body)}`);
  return body.access_token;
}

interface RunPlan {
  label: string;
  alg: SigningAlgorithm;
  workers: number;
  filler: number;
  scenarios: ScenarioName[];
  sizes: Sizes;
  /** Pin the server to one core (false: cluster runs spread over all cores). */
  pin: boolean;
}

async function run(plan: RunPlan): Promise<RunReport> {
  const dir = mkdtempSync(join(tmpdir(), 'latchkey-bench-'));
  const port = await freePort();
  const env = serverEnv(dir, port, plan.alg, plan.workers);
  const config = configFrom(env);
  try {
    const seeding = Date.now();
    const fixtures = await seed(config, plan.sizes, plan.filler);
    const seedSeconds = (Date.now() - seeding) / 1000;
    const server = await startBenchServer({ env, port, cores: plan.pin ? serverCores : undefined, logPath: join(dir, 'server.log') });
    const figures: ScenarioFigures[] = [];
    try {
      const pendingExpected = { status: 400, error: 'authorization_pending' };
      const requests: Record<ScenarioName, () => Promise<[ScenarioRequest, ScenarioRequest]>> = {
        device_authorization: async () => [deviceAuthorizationRequest(), deviceAuthorizationRequest()],
        device_poll_pending: async () => [devicePollRequest(fixtures.pendingWarm, pendingExpected), devicePollRequest(fixtures.pending, pendingExpected)],
        device_token_issuance: async () => [devicePollRequest(fixtures.approvedWarm, { status: 200 }), devicePollRequest(fixtures.approved, { status: 200 })],
        code_exchange: async () => [codeExchangeRequest(fixtures.codesWarm), codeExchangeRequest(fixtures.codes)],
        refresh: async () => [refreshRequest(fixtures.refreshWarm), refreshRequest(fixtures.refresh)],
        userinfo: async () => {
          const token = await accessTokenFor(server, fixtures.reserved);
          return [userinfoRequest(token), userinfoRequest(token)];
        },
        jwks: async () => [jwksRequest(), jwksRequest()],
      };
      for (const name of plan.scenarios) {
        const [warm, measured] = await requests[name]();
        const result = await measure(server, name, warm, measured);
        figures.push(result);
        process.stderr.write(`  ${plan.label}: ${name} ${Math.round(result.requestsPerSecond)}/s p99 ${result.p99Ms} ms\n`);
      }
    } finally {
      await server.stop();
    }
    rmSync(dir, { recursive: true, force: true });
    return { label: plan.label, alg: plan.alg, workers: plan.workers, storedDeviceGrants: plan.filler, seedSeconds, scenarios: figures };
  } catch (err) {
    process.stderr.write(`The run "${plan.label}" failed; its database and server log are kept in ${dir}\n`);
    throw err;
  }
}

async function main(): Promise<void> {
  const started = new Date();
  const rates: Partial<Record<SigningAlgorithm, number>> = {};
  for (const alg of new Set<SigningAlgorithm>([...algorithms, 'RS256'])) {
    rates[alg] = await signingRate(alg);
    process.stderr.write(`raw signing rate ${alg}: ${Math.round(rates[alg] ?? 0)}/s\n`);
  }
  const rsa = rates.RS256 ?? 1000;
  const sizesFor = (alg: SigningAlgorithm, withCodeFlow: boolean): Sizes => {
    const sign = Math.min(rates[alg] ?? rsa, 12_000);
    // A code exchange with openid signs an access token and an RS256 id_token.
    return { issuance: sign, exchange: 1 / (1 / sign + 1 / rsa), withCodeFlow };
  };
  const every: ScenarioName[] = ['device_authorization', 'device_poll_pending', 'device_token_issuance', 'code_exchange', 'refresh', 'userinfo', 'jwks'];
  const chosen = options.scenarios === 'all' ? every : (list(options.scenarios) as ScenarioName[]);
  for (const name of chosen) if (!every.includes(name)) throw new Error(`--scenarios: unknown scenario ${name}`);
  const all = chosen;
  const only = (names: ScenarioName[]) => names.filter((name) => chosen.includes(name));
  const runs: RunReport[] = [];
  for (const alg of algorithms) {
    runs.push(await run({ label: `${alg}, 1 worker`, alg, workers: 1, filler: 0, scenarios: all, sizes: sizesFor(alg, true), pin: true }));
  }
  const first = algorithms[0] ?? 'RS256';
  for (const filler of scales) {
    runs.push(
      await run({
        label: `${first}, ${filler.toLocaleString('en')} stored grants`,
        alg: first,
        workers: 1,
        filler,
        scenarios: only(['device_poll_pending', 'device_token_issuance']),
        sizes: sizesFor(first, false),
        pin: true,
      }),
    );
  }
  for (const workers of workerCounts) {
    // Cluster runs are not pinned: the workers and the load generator share every core.
    runs.push(
      await run({
        label: `${first}, ${workers} worker${workers === 1 ? '' : 's'}, unpinned`,
        alg: first,
        workers,
        filler: 0,
        scenarios: only(['device_authorization', 'device_poll_pending', 'device_token_issuance', 'userinfo']),
        sizes: sizesFor(first, false),
        pin: false,
      }),
    );
  }
  const machine = {
    cpu: cpus()[0]?.model ?? 'unknown',
    cores: cpus().length,
    memoryGb: Math.round(totalmem() / 2 ** 30),
    node: process.version,
    pinned: hasTaskset && twoCores,
  };
  const report: BenchReport = { date: started.toISOString(), machine, connections, durationSeconds: duration, signingRates: rates, runs };
  process.stdout.write(formatReport(report));
  process.stdout.write(`${JSON.stringify({ ...report, targets: checkTargets(report) })}\n`);
}

await main();
