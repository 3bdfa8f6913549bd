/**
 * `npm run bench`: the built server in production mode on a temporary SQLite file, pinned to one
 * core, driven over a real socket by autocannon in a second process pinned to the other core.
 * Prints a table per run and, last, one JSON line with every figure.
 *
 *   node dist-bench/bench/main.js [--duration 10] [--warmup 2] [--connections 64] [--alg RS256,ES256]
 *                                 [--workers 1,2] [--scales 1000,100000,1000000] [--scenarios all|name,…] [--quick]
 *                                 [--peer] [--postgres postgres://user@host:port/db] [--baseline DIR]
 *
 * The browser_sign_in scenario signs people in through the pages, from /authorize to the token
 * response (sign_in_load.ts: at most 16 browsers at once), and is reported beside the raw password
 * rate of the server's core (password_rate.ts, Argon2id verifications a second), measured before
 * and after it. browser_sign_in_totp does the same with a TOTP second step between the password and
 * the code (accounts enrolled with a TOTP app, as many as may sign in within one 30 s step).
 *
 * --peer measures, in the same run and the same way, oidc-provider (peer_oidc_provider.ts) and a
 * bare Fastify route (peer_bare_fastify.ts) on the device flow's scenarios, right after Latchkey
 * on each, and reports the ratios. --postgres adds runs on PostgreSQL (a database of their own,
 * created on that server and dropped after): one instance, and two instances on the one database;
 * LATCHKEY_DB=postgres://… does the same when --postgres is not given.
 * --baseline DIR measures another build of Latchkey (a checkout with its server and bench built, e.g.
 * a git worktree of main) the same way, scenario by scenario in rounds beside this one, on a
 * database it seeds with its own code (dist-bench/bench/seed.js, or dist/bench/seed.js in checkouts
 * from before the bench had a build of its own): whether a change helped, as a ratio this
 * machine's drift leaves standing.
 *
 * An empty list (--scales '' or --workers '') skips those runs. BENCH_SERVER_NODE_ARGS goes on the
 * server's node command line, e.g. '--cpu-prof --cpu-prof-dir=/tmp/prof' for a CPU profile, and
 * BENCH_SERVER_ENV (a JSON object) adds to the servers' environment, e.g. '{"LATCHKEY_LOG_LEVEL":"warn"}'.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir, totalmem } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { configFrom, type Config } from '../src/config.js';
import { signingAlgorithms, type SigningAlgorithm } from '../src/crypto/keys.js';
import { openConfiguredStore } from '../src/store/open.js';
import pg from 'pg';
import type { LoadResult, LoadSpec } from './load.js';
import {
  baselineComparisons,
  checkTargets,
  comparisons,
  formatReport,
  signInRates,
  type BenchReport,
  type PeerName,
  type PeerRun,
  type RunReport,
  type ScenarioFigures,
} from './report.js';
import {
  browserSignInRequest,
  browserSignInTotpRequest,
  codeExchangeRequest,
  deviceAuthorizationRequest,
  devicePollRequest,
  jwksRequest,
  refreshRequest,
  signInScenarios,
  userinfoRequest,
  type ScenarioName,
  type ScenarioRequest,
} from './scenarios.js';
import {
  seedAuthorizationCodes,
  seedBase,
  seedDeviceGrants,
  seedRefreshTokens,
  seedSignInAccounts,
  seedTotpSignInAccounts,
  type SignInAccount,
} from './seed.js';
import { hasTaskset, pinned, startBenchServer, type BenchServer } from './server_process.js';
import type { PeerSpec } from './peer_oidc_provider.js';
import { benchPostgresUrl } from './postgres_option.js';
import { baselineSeedModule } from './baseline_seed.js';

const { values: options } = parseArgs({
  options: {
    duration: { type: 'string', default: '10' },
    warmup: { type: 'string', default: '2' },
    connections: { type: 'string', default: '64' },
    alg: { type: 'string', default: 'RS256,ES256' },
    workers: { type: 'string', default: '1,2' },
    scales: { type: 'string' },
    scenarios: { type: 'string', default: 'all' },
    quick: { type: 'boolean', default: false },
    peer: { type: 'boolean', default: false },
    rounds: { type: 'string', default: '3' },
    postgres: { type: 'string' },
    baseline: { type: 'string' },
  },
});

const quick = options.quick;
const postgresUrl = benchPostgresUrl(options.postgres, process.env.LATCHKEY_DB);
const duration = quick ? 1 : Number(options.duration);
const warmup = quick ? 0.5 : Number(options.warmup);
const connections = Number(options.connections);
const algorithms = options.alg.split(',').map((a) => a.trim()) as SigningAlgorithm[];
const list = (value: string) =>
  value
    .split(',')
    .map((v) => v.trim())
    .filter(Boolean);
const workerCounts = list(options.workers).map(Number);
const scales = list(options.scales ?? (quick ? '1000,20000' : '1000,100000,1000000')).map(Number);
for (const alg of algorithms) if (!signingAlgorithms.includes(alg)) throw new Error(`--alg: unknown algorithm ${alg}`);

/**
 * Browsers signing in at once in browser_sign_in: enough to keep the server's core busy (a
 * sign-in's password check alone takes 10-20 ms of it), few enough that each one's latency still
 * means something; --connections lowers it.
 */
const signInBrowsers = Math.min(connections, 16);
/** A TOTP code is accepted once per account and 30 s step (RFC 6238 §5.2, mfa/totp.ts). */
const totpStepSeconds = 30;
/**
 * TOTP accounts seeded per sign-in a second the server's core could do at most (its raw password
 * rate), per second of a load process's run up to one step: twice over, for this machine's drift.
 */
const totpAccountHeadroom = 2;

const twoCores = cpus().length >= 2;
const serverCores = twoCores ? '0' : undefined;
const loadCores = twoCores ? '1' : undefined;
/** Enough pending codes for this many polls a second with none polled faster than its interval (above it, slow_down shows as unexpected). */
const maxPollRate = 20_000;
/** On PostgreSQL, where every poll is a round trip to the database and seeding is row by row. */
const maxPostgresPollRate = 8_000;
/** Seeded secrets per expected request: generous in --quick runs, whose short figures swing widely. */
const margin = quick ? 3 : 1.3;
/**
 * With --peer (or --baseline, or --postgres), each scenario the others share is measured in rounds — Latchkey, oidc-provider, bare
 * Fastify, and again — so that the machine's drift over minutes falls on all three alike. A
 * stretch lasts at least two seconds (shorter ones measure the load generator's start-up more
 * than the server), so --quick runs have one round.
 */
const rounds = options.peer || options.baseline || postgresUrl ? Math.max(1, Math.min(Number(options.rounds), Math.floor(duration / 2))) : 1;

function childJson<T>(args: string[], cores: string | undefined): Promise<T> {
  const [command, ...rest] = pinned(cores, [process.execPath, ...args]);
  return new Promise((resolve, reject) => {
    const child = spawn(command ?? process.execPath, rest, { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.on('exit', (code) => {
      if (code !== 0) {
        reject(new Error(`${args.join(' ')} exited with ${code}`));
        return;
      }
      try {
        resolve(JSON.parse(out.trim().split('\n').pop() ?? '') as T);
      } catch (err) {
        reject(err);
      }
    });
  });
}

const here = (file: string) => fileURLToPath(new URL(file, import.meta.url));

/**
 * The raw signing rate on the server core. Also measured around an issuance run (before and after
 * it, or after each round): the issuance target is a ratio to it, and this machine's speed drifts
 * over minutes, so a rate taken at the start of the bench would not be the rate of that moment.
 */
async function signingRate(alg: SigningAlgorithm, seconds = quick ? 1 : 3): Promise<number> {
  const result = await childJson<{ signaturesPerSecond: number }>([here('./signing_rate.js'), alg, String(seconds)], serverCores);
  return result.signaturesPerSecond;
}

/**
 * The raw password rate on the server core (Argon2id verifications a second, and per second of
 * CPU time), measured around the sign-in run as the signing rate is around issuance.
 */
async function passwordRate(seconds: number): Promise<{ verificationsPerSecond: number; verificationsPerCpuSecond: number }> {
  return childJson<{ verificationsPerSecond: number; verificationsPerCpuSecond: number }>([here('./password_rate.js'), String(seconds)], serverCores);
}

function meanOf(values: number[]): number {
  return values.reduce((sum, v) => sum + v, 0) / values.length;
}

async function driveOne(
  url: string,
  request: ScenarioRequest,
  seconds: number,
  share: number,
  bodies: string[] | undefined,
  cores: string | undefined,
): Promise<LoadResult> {
  const dir = mkdtempSync(join(tmpdir(), 'latchkey-load-'));
  const spec: LoadSpec = {
    url: `${url}${request.path}`,
    method: request.method,
    headers: request.headers,
    connections: share,
    durationSeconds: seconds,
    ...(bodies ? { bodies } : request.body !== undefined ? { bodies: [request.body] } : {}),
  };
  writeFileSync(join(dir, 'spec.json'), JSON.stringify(request.signIn ? { ...spec, signIn: request.signIn } : spec));
  try {
    // A sign-in is a flow of requests with cookies and forms between them: its own driver.
    return await childJson<LoadResult>([here(request.signIn ? './sign_in_load.js' : './load.js'), join(dir, 'spec.json')], cores);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Drives the scenario for `seconds`. Several instances (PostgreSQL) each get a load process of
 * their own, an equal share of the connections and their own slice of the secrets, at once (then
 * nothing is pinned: see the PostgreSQL runs); the answers are added up.
 */
async function drive(server: BenchServer, request: ScenarioRequest, seconds: number, bodies?: string[]): Promise<LoadResult> {
  const urls = server.urls ?? [server.url];
  const [only] = urls;
  if (urls.length === 1 && only !== undefined) return driveOne(only, request, seconds, connections, bodies, loadCores);
  const size = bodies ? Math.floor(bodies.length / urls.length) : 0;
  const results = await Promise.all(
    urls.map((url, i) => driveOne(url, request, seconds, Math.ceil(connections / urls.length), bodies?.slice(i * size, (i + 1) * size), undefined)),
  );
  const sum = (pick: (r: LoadResult) => number) => results.reduce((total, r) => total + pick(r), 0);
  const merge = (pick: (r: LoadResult) => Record<string, number>) => {
    const merged: Record<string, number> = {};
    for (const r of results) for (const [k, v] of Object.entries(pick(r))) merged[k] = (merged[k] ?? 0) + v;
    return merged;
  };
  return {
    requests: sum((r) => r.requests),
    requestsPerSecond: sum((r) => r.requestsPerSecond),
    p50Ms: Math.max(...results.map((r) => r.p50Ms)),
    p99Ms: Math.max(...results.map((r) => r.p99Ms)),
    maxMs: Math.max(...results.map((r) => r.maxMs)),
    non2xx: sum((r) => r.non2xx),
    socketErrors: sum((r) => r.socketErrors),
    timeouts: sum((r) => r.timeouts),
    statuses: merge((r) => r.statuses),
    errors: merge((r) => r.errors),
  };
}

/** One measured stretch of a scenario on one server. */
interface Stretch {
  /** How long the load really ran (the load generator's own clock): rates are over this. */
  seconds: number;
  /** How long the server's CPU time was read over (the load generator's start and end included). */
  wallSeconds: number;
  load: LoadResult;
  cpu: number;
  peakRssBytes: number;
}

async function stretch(server: BenchServer, request: ScenarioRequest, seconds: number): Promise<Stretch> {
  server.resetPeakRss();
  const cpuBefore = server.cpuSeconds();
  const started = performance.now();
  const load = await drive(server, request, seconds, request.bodies);
  const wallSeconds = (performance.now() - started) / 1000;
  const ran = load.requestsPerSecond > 0 ? load.requests / load.requestsPerSecond : seconds;
  return { seconds: ran, wallSeconds, load, cpu: server.cpuSeconds() - cpuBefore, peakRssBytes: server.peakRssBytes() };
}

/** The figures of a scenario over its stretches: rates and CPU over the summed time, the worst p99, the median p50. */
function figuresOf(name: ScenarioName, expected: ScenarioRequest['expected'], stretches: Stretch[]): ScenarioFigures {
  const seconds = stretches.reduce((sum, s) => sum + s.seconds, 0);
  const wallSeconds = stretches.reduce((sum, s) => sum + s.wallSeconds, 0);
  const requests = stretches.reduce((sum, s) => sum + s.load.requests, 0);
  const cpu = stretches.reduce((sum, s) => sum + s.cpu, 0);
  const answers: Record<string, number> = {};
  let unexpected = 0;
  for (const { load } of stretches) {
    for (const [status, n] of Object.entries(load.statuses)) answers[status] = (answers[status] ?? 0) + n;
    for (const [error, n] of Object.entries(load.errors)) answers[`error:${error}`] = (answers[`error:${error}`] ?? 0) + n;
    const wanted = expected.error === undefined ? (load.statuses[expected.status] ?? 0) : (load.errors[expected.error] ?? 0);
    unexpected += load.requests - wanted + load.socketErrors + load.timeouts;
  }
  const p50s = stretches.map((s) => s.load.p50Ms).sort((a, b) => a - b);
  return {
    scenario: name,
    requestsPerSecond: requests / seconds,
    p50Ms: p50s[Math.floor(p50s.length / 2)] ?? 0,
    p99Ms: Math.max(...stretches.map((s) => s.load.p99Ms)),
    non2xx: stretches.reduce((sum, s) => sum + s.load.non2xx, 0),
    unexpected,
    answers,
    serverCpuCores: cpu / wallSeconds,
    cpuMicrosecondsPerRequest: requests > 0 ? (cpu * 1e6) / requests : 0,
    peakRssMb: Math.max(...stretches.map((s) => s.peakRssBytes)) / 1024 / 1024,
  };
}

/** The measured request of round `round` of `rounds`: its own slice of the seeded secrets (or of the TOTP accounts). */
function slice(request: ScenarioRequest, round: number, rounds: number): ScenarioRequest {
  if (rounds === 1) return request;
  const signIn = request.signIn;
  if (signIn?.secondFactor === 'totp') {
    // Each round's load process knows only the steps it used itself: its own accounts.
    const size = Math.floor(signIn.accounts.length / rounds);
    return { ...request, signIn: { ...signIn, accounts: signIn.accounts.slice(round * size, (round + 1) * size) } };
  }
  if (!request.bodies) return request;
  const size = Math.floor(request.bodies.length / rounds);
  return { ...request, bodies: request.bodies.slice(round * size, (round + 1) * size) };
}

/** A warm-up (its own secrets), then the measured run with CPU and peak RSS around it. */
async function measure(server: BenchServer, name: ScenarioName, warm: ScenarioRequest, measured: ScenarioRequest): Promise<ScenarioFigures> {
  if (warmup > 0) await drive(server, warm, warmup, warm.bodies);
  return figuresOf(name, measured.expected, [await stretch(server, measured, duration)]);
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
  /** People who sign in through the pages (browser_sign_in), one per simulated browser. */
  signInAccounts: SignInAccount[];
  /** People with a TOTP app (browser_sign_in_totp): the warm-up's and the measured run's, never the same. */
  totpAccountsWarm: SignInAccount[];
  totpAccounts: SignInAccount[];
}

interface Sizes {
  issuance: number;
  exchange: number;
  /** The most polls a second the run could see: enough pending codes are seeded for it. */
  pollRate: number;
  /** The most sign-ins a second the run could see (the raw password rate): enough TOTP accounts are seeded for it. */
  signIns: number;
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

/** The key every PostgreSQL instance shares (LATCHKEY_SECRET_KEY is required there). */
const benchSecretKey = randomBytes(32).toString('base64url');

function serverEnv(dir: string, port: number, alg: SigningAlgorithm, workers: number, database: string | undefined): Record<string, string> {
  return {
    NODE_ENV: 'production',
    HOST: '127.0.0.1',
    PORT: String(port),
    // One issuer for every instance of a run, as behind a load balancer.
    LATCHKEY_ISSUER: `http://127.0.0.1:${port}`,
    LATCHKEY_DB: database ?? join(dir, 'latchkey.db'),
    ...(database === undefined ? {} : { LATCHKEY_SECRET_KEY: benchSecretKey }),
    LATCHKEY_SIGNING_ALG: alg,
    LATCHKEY_WORKERS: String(workers),
    // Every request comes from one address: the per-address limits would answer 429, not the endpoint.
    // (Sign-ins in flight count against their address until they succeed: 64 at once would pass 20.)
    LATCHKEY_RATE_LIMIT_DEVICE_AUTHORIZATION: 'off',
    LATCHKEY_RATE_LIMIT_UNKNOWN_DEVICE_CODE: 'off',
    LATCHKEY_RATE_LIMIT_SIGNIN_ADDRESS: 'off',
    ...extraServerEnv,
  };
}

/** BENCH_SERVER_ENV: more environment for the servers under test (a JSON object of strings). */
const extraServerEnv = ((): Record<string, string> => {
  try {
    return JSON.parse(process.env.BENCH_SERVER_ENV ?? '{}') as Record<string, string>;
  } catch {
    throw new Error('BENCH_SERVER_ENV must be a JSON object, e.g. \'{"LATCHKEY_LOG_LEVEL":"warn"}\'');
  }
})();

/** What a build of Latchkey seeds its fixtures with and runs: this build's own, or a baseline's. */
interface Build {
  configFrom: typeof configFrom;
  openConfiguredStore: typeof openConfiguredStore;
  seedBase: typeof seedBase;
  seedDeviceGrants: typeof seedDeviceGrants;
  seedAuthorizationCodes: typeof seedAuthorizationCodes;
  seedRefreshTokens: typeof seedRefreshTokens;
  /** Absent from builds older than the sign-in scenario: they do not run it. */
  seedSignInAccounts?: typeof seedSignInAccounts | undefined;
  /** Absent from builds older than the sign-in scenario with a TOTP step: they do not run it. */
  seedTotpSignInAccounts?: typeof seedTotpSignInAccounts | undefined;
  /** The built `latchkey` executable (undefined: this build's). */
  cli: string | undefined;
}

const thisBuild: Build = {
  configFrom,
  openConfiguredStore,
  seedBase,
  seedDeviceGrants,
  seedAuthorizationCodes,
  seedRefreshTokens,
  seedSignInAccounts,
  seedTotpSignInAccounts,
  cli: undefined,
};

/** Another checkout's build (--baseline): its own config, store and seeding code, so that its schema may differ. */
async function baselineBuild(root: string): Promise<Build> {
  const load = async <T>(file: string) => (await import(pathToFileURL(join(root, 'dist', file)).href)) as T;
  const config = await load<{ configFrom: typeof configFrom }>('config.js');
  const open = await load<{ openConfiguredStore: typeof openConfiguredStore }>('store/open.js');
  const seeds = (await import(pathToFileURL(baselineSeedModule(root)).href)) as Pick<
    Build,
    'seedBase' | 'seedDeviceGrants' | 'seedAuthorizationCodes' | 'seedRefreshTokens' | 'seedSignInAccounts' | 'seedTotpSignInAccounts'
  >;
  return { configFrom: config.configFrom, openConfiguredStore: open.openConfiguredStore, ...seeds, cli: join(root, 'dist', 'cli', 'main.js') };
}

/** Seeds what the run's scenarios present (plus `filler` extra device grants) before the server starts. */
async function seed(build: Build, config: Config, sizes: Sizes, filler: number, scenarios: readonly ScenarioName[]): Promise<Fixtures> {
  const { seedBase, seedDeviceGrants, seedAuthorizationCodes, seedRefreshTokens } = build;
  const store = await build.openConfiguredStore(config);
  const now = Math.floor(Date.now() / 1000);
  const count = (rate: number, seconds: number) => Math.ceil(rate * seconds * margin) + 100;
  const wanted = (name: ScenarioName, make: () => Promise<string[]>) => (scenarios.includes(name) ? make() : Promise.resolve([]));
  try {
    await seedBase(store, now);
    if (filler > 0) await seedDeviceGrants(store, { count: filler, status: 'pending', now, config, keep: false });
    // No code may come round again within its interval (that poll would be slow_down): enough codes
    // for the polls of a whole interval, or of the whole run when it is shorter (--quick).
    // With --peer the run is cut into rounds, each on its own slice: then no code is polled twice.
    const pendingCount = Math.max(count(sizes.pollRate, rounds > 1 ? duration : Math.min(config.deviceInterval + 1, duration)), 1000);
    const pending = (n: number) => () => seedDeviceGrants(store, { count: n, status: 'pending', now, config });
    const approved = (n: number) => () => seedDeviceGrants(store, { count: n, status: 'approved', now, config });
    // One load process signs each TOTP account in at most once per step: as many accounts as it
    // could sign in within one step (or its whole run, when shorter), and the browsers it holds
    // them in. The rounds of a run each get their own (see slice).
    const totpPool = (seconds: number) => Math.ceil(sizes.signIns * totpAccountHeadroom * Math.min(seconds, totpStepSeconds)) + signInBrowsers;
    const totpWarmCount = warmup > 0 ? totpPool(warmup) : 0;
    const totpCount = rounds * totpPool(duration / rounds);
    const totp =
      scenarios.includes('browser_sign_in_totp') && build.seedTotpSignInAccounts
        ? await build.seedTotpSignInAccounts(store, totpWarmCount + totpCount, now, config)
        : [];
    const fixtures: Fixtures = {
      pendingWarm: await wanted('device_poll_pending', pending(count(sizes.pollRate, warmup))),
      pending: await wanted('device_poll_pending', pending(pendingCount)),
      approvedWarm: await wanted('device_token_issuance', approved(count(sizes.issuance, warmup))),
      approved: await wanted('device_token_issuance', approved(count(sizes.issuance, duration))),
      codesWarm: await wanted('code_exchange', () => seedAuthorizationCodes(store, count(sizes.exchange, warmup), now, config)),
      codes: await wanted('code_exchange', () => seedAuthorizationCodes(store, count(sizes.exchange, duration), now, config)),
      refreshWarm: await wanted('refresh', () => seedRefreshTokens(store, count(sizes.issuance, warmup), now, config)),
      refresh: await wanted('refresh', () => seedRefreshTokens(store, count(sizes.issuance, duration), now, config)),
      reserved: (await seedDeviceGrants(store, { count: 1, status: 'approved', now, config }))[0] ?? '',
      signInAccounts: scenarios.includes('browser_sign_in') && build.seedSignInAccounts ? await build.seedSignInAccounts(store, signInBrowsers, now) : [],
      totpAccountsWarm: totp.slice(0, totpWarmCount),
      totpAccounts: totp.slice(totpWarmCount),
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
  /** Measure the peers too, after Latchkey on each scenario they have. */
  peers?: boolean;
  /** A PostgreSQL server to run on (a database of the run's own is made there), and how many instances share it. */
  postgres?: { url: string; instances: number };
  /**
   * Other set-ups of this build measured in the same rounds, on the scenarios they name (PostgreSQL
   * with two instances, and SQLite, beside PostgreSQL with one): their figures are reports of their own.
   */
  companions?: { plan: RunPlan; scenarios: ScenarioName[] }[];
}

/** A database of its own for a run on PostgreSQL: created, then dropped when the run ends. */
async function postgresDatabase(baseUrl: string): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `latchkey_bench_${randomBytes(6).toString('hex')}`;
  const admin = async (sql: string) => {
    const client = new pg.Client({ connectionString: baseUrl });
    await client.connect();
    try {
      await client.query(sql);
    } finally {
      await client.end();
    }
  };
  await admin(`CREATE DATABASE ${name}`);
  const url = new URL(baseUrl);
  url.pathname = `/${name}`;
  return { url: url.toString(), drop: () => admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`) };
}

/** Several instances on one database, measured as one server: CPU and memory added up. */
function together(servers: BenchServer[]): BenchServer {
  const [first] = servers;
  if (first === undefined) throw new Error('no server to measure');
  return {
    url: first.url,
    urls: servers.map((s) => s.url),
    cpuSeconds: () => servers.reduce((sum, s) => sum + s.cpuSeconds(), 0),
    peakRssBytes: () => servers.reduce((sum, s) => sum + s.peakRssBytes(), 0),
    resetPeakRss: () => servers.forEach((s) => s.resetPeakRss()),
    processCount: () => servers.reduce((sum, s) => sum + s.processCount(), 0),
    pid: () => first.pid(),
    stop: async () => {
      for (const s of servers) await s.stop();
    },
  };
}

/** The scenarios each peer answers: oidc-provider the device flow's, bare Fastify the two without a token to sign. */
const peerScenarios: Record<PeerName, ScenarioName[]> = {
  'oidc-provider': ['device_authorization', 'device_poll_pending', 'device_token_issuance'],
  fastify: ['device_authorization', 'device_poll_pending'],
};

interface Peer {
  name: PeerName;
  server: BenchServer;
  requests: Partial<Record<ScenarioName, [ScenarioRequest, ScenarioRequest]>>;
}

/** Starts the peers for a run, pinned as Latchkey is, with as many seeded codes as Latchkey's fixtures. */
async function startPeers(dir: string, alg: SigningAlgorithm, fixtures: Fixtures): Promise<Peer[]> {
  const pendingExpected = { status: 400, error: 'authorization_pending' };
  const oidcPort = await freePort();
  const spec: PeerSpec = {
    port: oidcPort,
    alg,
    counts: {
      pendingWarm: fixtures.pendingWarm.length,
      pending: fixtures.pending.length,
      approvedWarm: fixtures.approvedWarm.length,
      approved: fixtures.approved.length,
    },
    out: join(dir, 'peer-codes.json'),
  };
  writeFileSync(join(dir, 'peer-spec.json'), JSON.stringify(spec));
  const oidc = await startBenchServer({
    env: { NODE_ENV: 'production' },
    port: oidcPort,
    cores: serverCores,
    logPath: join(dir, 'oidc-provider.log'),
    script: [here('./peer_oidc_provider.js'), join(dir, 'peer-spec.json')],
    readyPath: '/.well-known/openid-configuration',
    readyTimeout: 600,
  });
  const codes = JSON.parse(readFileSync(spec.out, 'utf8')) as Record<'pendingWarm' | 'pending' | 'approvedWarm' | 'approved', string[]>;
  const barePort = await freePort();
  const bare = await startBenchServer({
    env: { NODE_ENV: 'production' },
    port: barePort,
    cores: serverCores,
    logPath: join(dir, 'fastify.log'),
    script: [here('./peer_bare_fastify.js'), String(barePort)],
  });
  return [
    {
      name: 'oidc-provider',
      server: oidc,
      requests: {
        device_authorization: [deviceAuthorizationRequest(), deviceAuthorizationRequest()],
        device_poll_pending: [devicePollRequest(codes.pendingWarm, pendingExpected), devicePollRequest(codes.pending, pendingExpected)],
        device_token_issuance: [devicePollRequest(codes.approvedWarm, { status: 200 }), devicePollRequest(codes.approved, { status: 200 })],
      },
    },
    {
      name: 'fastify',
      server: bare,
      requests: {
        device_authorization: [deviceAuthorizationRequest(), deviceAuthorizationRequest()],
        device_poll_pending: [
          devicePollRequest(fixtures.pendingWarm.slice(0, 100), pendingExpected),
          devicePollRequest(fixtures.pendingWarm.slice(0, 100), pendingExpected),
        ],
      },
    },
  ];
}

/** A server under test with the requests that drive each scenario on it (their secrets seeded in its own database). */
interface Contender {
  name: string;
  server: BenchServer;
  requests: Partial<Record<ScenarioName, () => Promise<[ScenarioRequest, ScenarioRequest]>>>;
}

/** Latchkey's requests for each scenario, from the fixtures seeded for that server (no sign-ins for a build that seeds no accounts). */
function latchkeyRequests(server: BenchServer, fixtures: Fixtures): Partial<Record<ScenarioName, () => Promise<[ScenarioRequest, ScenarioRequest]>>> {
  const pendingExpected = { status: 400, error: 'authorization_pending' };
  return {
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
    ...(fixtures.signInAccounts.length > 0
      ? { browser_sign_in: async () => [browserSignInRequest(fixtures.signInAccounts), browserSignInRequest(fixtures.signInAccounts)] }
      : {}),
    ...(fixtures.totpAccounts.length > 0
      ? {
          browser_sign_in_totp: async () => [
            browserSignInTotpRequest(fixtures.totpAccountsWarm, signInBrowsers),
            browserSignInTotpRequest(fixtures.totpAccounts, signInBrowsers),
          ],
        }
      : {}),
  };
}

/**
 * Seeds a database for `build` and starts its instances on it: one on the server core, or (two,
 * PostgreSQL) one on each core, with the load generators and PostgreSQL where the scheduler puts them.
 */
async function startLatchkey(
  build: Build,
  plan: RunPlan,
  dir: string,
  name: string,
): Promise<{ server: BenchServer; fixtures: Fixtures; seedSeconds: number; drop(): Promise<void> }> {
  const port = await freePort();
  const database = plan.postgres ? await postgresDatabase(plan.postgres.url) : undefined;
  const env = serverEnv(join(dir, name), port, plan.alg, plan.workers, database?.url);
  const config = build.configFrom(env);
  const seeding = Date.now();
  const fixtures = await seed(build, config, plan.sizes, plan.filler, plan.scenarios);
  const seedSeconds = (Date.now() - seeding) / 1000;
  const instances = plan.postgres?.instances ?? 1;
  const servers: BenchServer[] = [];
  try {
    for (let i = 0; i < instances; i++) {
      const instancePort = i === 0 ? port : await freePort();
      const cores = !plan.pin ? undefined : instances === 1 ? serverCores : twoCores ? String(i % 2) : undefined;
      servers.push(
        await startBenchServer({
          env: { ...env, PORT: String(instancePort) },
          port: instancePort,
          cores,
          logPath: join(dir, `${name}-${i}.log`),
          ...(build.cli ? { script: [build.cli, 'serve'] } : {}),
        }),
      );
    }
  } catch (err) {
    for (const s of servers) await s.stop();
    throw err;
  }
  const [only] = servers;
  return { server: servers.length === 1 && only !== undefined ? only : together(servers), fixtures, seedSeconds, drop: async () => database?.drop() };
}

/** The raw password rates measured around a sign-in scenario, as the run report's fields for it. */
function passwordRatesAt<K extends keyof RunReport>(
  samples: { verificationsPerSecond: number; verificationsPerCpuSecond: number }[] | undefined,
  perSecond: K,
  perCpuSecond: K,
): Partial<Record<K, number>> {
  if (!samples || samples.length === 0) return {};
  return {
    [perSecond]: meanOf(samples.map((p) => p.verificationsPerSecond)),
    [perCpuSecond]: meanOf(samples.map((p) => p.verificationsPerCpuSecond)),
  } as Partial<Record<K, number>>;
}

async function run(plan: RunPlan, baseline: Build | undefined): Promise<RunReport[]> {
  const dir = mkdtempSync(join(tmpdir(), 'latchkey-bench-'));
  const started: { server: BenchServer; drop(): Promise<void> }[] = [];
  try {
    const latchkey = await startLatchkey(thisBuild, plan, dir, 'latchkey');
    started.push(latchkey);
    const contenders: Contender[] = [{ name: 'Latchkey', server: latchkey.server, requests: latchkeyRequests(latchkey.server, latchkey.fixtures) }];
    const companions: { plan: RunPlan; seedSeconds: number }[] = [];
    for (const [i, companion] of (plan.companions ?? []).entries()) {
      const other = await startLatchkey(thisBuild, companion.plan, dir, `companion-${i}`);
      started.push(other);
      companions.push({ plan: companion.plan, seedSeconds: other.seedSeconds });
      const requests = latchkeyRequests(other.server, other.fixtures);
      contenders.push({
        name: companion.plan.label,
        server: other.server,
        requests: Object.fromEntries(companion.scenarios.map((scenario) => [scenario, requests[scenario]])),
      });
    }
    if (baseline) {
      const other = await startLatchkey(baseline, plan, dir, 'baseline');
      started.push(other);
      contenders.push({ name: 'baseline', server: other.server, requests: latchkeyRequests(other.server, other.fixtures) });
    }
    // Peers run beside Latchkey (idle while it is measured), so each scenario is measured for all
    // of them within seconds of each other: this machine's speed drifts over minutes.
    const peers = plan.peers ? await startPeers(dir, plan.alg, latchkey.fixtures) : [];
    for (const peer of peers) {
      started.push({ server: peer.server, drop: async () => {} });
      contenders.push({
        name: peer.name,
        server: peer.server,
        requests: Object.fromEntries(
          Object.entries(peer.requests)
            .filter(([scenario]) => peerScenarios[peer.name].includes(scenario as ScenarioName))
            .map(([scenario, pair]) => [scenario, async () => pair]),
        ),
      });
    }
    const figures = new Map<string, ScenarioFigures[]>(contenders.map((c) => [c.name, []]));
    const signingSamples: number[] = [];
    const passwordSamples = new Map<ScenarioName, { verificationsPerSecond: number; verificationsPerCpuSecond: number }[]>();
    for (const name of plan.scenarios) {
      const sharing = await Promise.all(
        contenders.flatMap((c) => {
          const requests = c.requests[name];
          return requests === undefined ? [] : [requests().then((pair) => ({ ...c, pair, stretches: [] as Stretch[] }))];
        }),
      );
      const add = (contender: string, result: ScenarioFigures) => figures.set(contender, [...(figures.get(contender) ?? []), result]);
      // Issuance on one pinned instance is measured against the raw signing rate of that moment, and
      // sign-ins against the raw password rate, on the same core.
      const onePinned = plan.pin && !plan.postgres && plan.workers === 1;
      const bracketSigning = name === 'device_token_issuance' && onePinned;
      const bracketPassword = signInScenarios.includes(name) && onePinned;
      const signingSeconds = Math.max(1, Math.min(3, duration / rounds));
      const bracket = async () => {
        if (bracketSigning) signingSamples.push(await signingRate(plan.alg, signingSeconds));
        if (bracketPassword) passwordSamples.set(name, [...(passwordSamples.get(name) ?? []), await passwordRate(signingSeconds)]);
      };
      const [alone] = sharing;
      if (sharing.length === 1 && alone !== undefined) {
        const [warm, measured] = alone.pair;
        await bracket();
        const result = await measure(latchkey.server, name, warm, measured);
        await bracket();
        add('Latchkey', result);
        process.stderr.write(`  ${plan.label}: ${name} ${Math.round(result.requestsPerSecond)}/s p99 ${result.p99Ms} ms\n`);
        continue;
      }
      // Each warmed up, then round after round: Latchkey, then each other contender, on fresh slices.
      if (warmup > 0) for (const c of sharing) await drive(c.server, c.pair[0], warmup, c.pair[0].bodies);
      for (let round = 0; round < rounds; round++) {
        for (const c of sharing) c.stretches.push(await stretch(c.server, slice(c.pair[1], round, rounds), duration / rounds));
        await bracket();
      }
      for (const c of sharing) {
        const result = figuresOf(name, c.pair[1].expected, c.stretches);
        add(c.name, result);
        process.stderr.write(`  ${plan.label}: ${name} on ${c.name} ${Math.round(result.requestsPerSecond)}/s p99 ${result.p99Ms} ms\n`);
      }
    }
    for (const s of started.splice(0).reverse()) {
      await s.server.stop();
      await s.drop();
    }
    rmSync(dir, { recursive: true, force: true });
    const peerRuns: PeerRun[] = peers.map((p) => ({ peer: p.name, scenarios: figures.get(p.name) ?? [] }));
    const companionRuns: RunReport[] = companions.map((c) => ({
      label: c.plan.label,
      alg: c.plan.alg,
      database: c.plan.postgres ? 'postgresql' : 'sqlite',
      instances: c.plan.postgres?.instances ?? 1,
      workers: c.plan.workers,
      storedDeviceGrants: c.plan.filler,
      seedSeconds: c.seedSeconds,
      scenarios: figures.get(c.plan.label) ?? [],
      measuredAlongside: plan.label,
    }));
    const main: RunReport = {
      label: plan.label,
      alg: plan.alg,
      database: plan.postgres ? 'postgresql' : 'sqlite',
      instances: plan.postgres?.instances ?? 1,
      workers: plan.workers,
      storedDeviceGrants: plan.filler,
      seedSeconds: latchkey.seedSeconds,
      scenarios: figures.get('Latchkey') ?? [],
      ...(peerRuns.length > 0 ? { peers: peerRuns } : {}),
      ...(baseline ? { baseline: figures.get('baseline') ?? [] } : {}),
      ...(signingSamples.length > 0 ? { signingRateAtIssuance: meanOf(signingSamples) } : {}),
      ...passwordRatesAt(passwordSamples.get('browser_sign_in'), 'passwordRateAtSignIn', 'passwordCpuRateAtSignIn'),
      ...passwordRatesAt(passwordSamples.get('browser_sign_in_totp'), 'passwordRateAtTotpSignIn', 'passwordCpuRateAtTotpSignIn'),
    };
    return [main, ...companionRuns];
  } catch (err) {
    for (const s of started.reverse()) await s.server.stop().catch(() => {});
    process.stderr.write(
      `The run "${plan.label}" failed; its databases and server logs are kept in ${dir}${plan.postgres ? ' (PostgreSQL databases latchkey_bench_*)' : ''}\n`,
    );
    throw err;
  }
}

async function main(): Promise<void> {
  const started = new Date();
  const baseline = options.baseline ? await baselineBuild(resolve(options.baseline)) : undefined;
  const rates: Partial<Record<SigningAlgorithm, number>> = {};
  for (const alg of new Set<SigningAlgorithm>([...algorithms, 'RS256'])) {
    rates[alg] = await signingRate(alg);
    process.stderr.write(`raw signing rate ${alg}: ${Math.round(rates[alg] ?? 0)}/s\n`);
  }
  const rsa = rates.RS256 ?? 1000;
  const every: ScenarioName[] = [
    'device_authorization',
    'device_poll_pending',
    'device_token_issuance',
    'code_exchange',
    'refresh',
    'userinfo',
    'jwks',
    'browser_sign_in',
    'browser_sign_in_totp',
  ];
  const chosen = options.scenarios === 'all' ? every : (list(options.scenarios) as ScenarioName[]);
  for (const name of chosen) if (!every.includes(name)) throw new Error(`--scenarios: unknown scenario ${name}`);
  // Sign-ins with a TOTP step cannot outrun the password checks of the server's core: what the TOTP accounts are counted from.
  const signInCeiling = chosen.includes('browser_sign_in_totp') ? (await passwordRate(1)).verificationsPerSecond : 0;
  const sizesFor = (alg: SigningAlgorithm): Sizes => {
    const sign = Math.min(rates[alg] ?? rsa, 12_000);
    // A code exchange with openid signs an access token and an RS256 id_token.
    return { issuance: sign, exchange: 1 / (1 / sign + 1 / rsa), pollRate: maxPollRate, signIns: signInCeiling };
  };
  const all = chosen;
  const only = (names: ScenarioName[]) => names.filter((name) => chosen.includes(name));
  const runs: RunReport[] = [];
  for (const [i, alg] of algorithms.entries()) {
    runs.push(
      ...(await run(
        { label: `${alg}, 1 worker`, alg, workers: 1, filler: 0, scenarios: all, sizes: sizesFor(alg), pin: true, peers: options.peer && i === 0 },
        baseline,
      )),
    );
  }
  const first = algorithms[0] ?? 'RS256';
  for (const filler of scales) {
    runs.push(
      ...(await run(
        {
          label: `${first}, ${filler.toLocaleString('en')} stored grants`,
          alg: first,
          workers: 1,
          filler,
          scenarios: only(['device_poll_pending', 'device_token_issuance']),
          sizes: sizesFor(first),
          pin: true,
        },
        baseline,
      )),
    );
  }
  for (const workers of workerCounts) {
    // Cluster runs are not pinned: the workers and the load generator share every core.
    runs.push(
      ...(await run(
        {
          label: `${first}, ${workers} worker${workers === 1 ? '' : 's'}, unpinned`,
          alg: first,
          workers,
          filler: 0,
          scenarios: only(['device_authorization', 'device_poll_pending', 'device_token_issuance', 'userinfo']),
          sizes: sizesFor(first),
          pin: false,
        },
        baseline,
      )),
    );
  }
  if (postgresUrl) {
    // PostgreSQL: device flow and userinfo on one instance, measured in rounds beside two instances
    // sharing one database (one pinned to each core) and beside SQLite (device authorization and issuance), so
    // that the two ratios asked for come from the same minutes. Fewer seeded codes: every one is a
    // round trip to PostgreSQL, which answers fewer a second.
    const base = sizesFor(first);
    const postgresSizes = { ...base, pollRate: maxPostgresPollRate, issuance: Math.min(base.issuance, 3_000) };
    const postgresScenarios = only(['device_authorization', 'device_poll_pending', 'device_token_issuance', 'userinfo']);
    const onPostgres = (instances: number): RunPlan => ({
      label: `${first}, PostgreSQL, ${instances} instance${instances === 1 ? '' : 's'}`,
      alg: first,
      workers: 1,
      filler: 0,
      scenarios: postgresScenarios,
      sizes: postgresSizes,
      pin: true,
      postgres: { url: postgresUrl, instances },
    });
    const sqliteAlongside: RunPlan = {
      label: `${first}, SQLite, beside PostgreSQL`,
      alg: first,
      workers: 1,
      filler: 0,
      scenarios: only(['device_authorization', 'device_token_issuance']),
      sizes: base,
      pin: true,
    };
    runs.push(
      ...(await run(
        {
          ...onPostgres(1),
          companions: [
            { plan: onPostgres(2), scenarios: postgresScenarios },
            { plan: sqliteAlongside, scenarios: sqliteAlongside.scenarios },
          ],
        },
        baseline,
      )),
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
  process.stdout.write(
    `${JSON.stringify({ ...report, comparisons: comparisons(report), signIns: signInRates(report), ...(baseline ? { againstBaseline: baselineComparisons(report) } : {}), targets: checkTargets(report) })}\n`,
  );
}

await main();
