/**
 * LATCHKEY_WORKERS=N: N server processes share the port through node:cluster, so a machine with
 * more cores answers more requests, all on the same database (a SQLite file in WAL mode: readers
 * never wait, writers take turns a commit at a time; or PostgreSQL).
 *
 * The primary process does what must happen once: migrations, the first user and the built-in
 * client, the signing keys, the banner and housekeeping. Then it forks the workers, restarts one
 * that dies, answers their requests for the cluster-wide metrics, and on SIGTERM/SIGINT stops them
 * all gracefully before it exits.
 */
import cluster, { type Worker } from 'node:cluster';
import { AggregatorRegistry } from 'prom-client';
import { pino } from 'pino';
import { unsplittableLimits } from './limits/rate_limiters.js';
import { bootstrap, type BootstrapResult } from './bootstrap.js';
import { systemClock } from './clock.js';
import { errorMessage } from './errors.js';
import { retiredKeyRetention, type Config } from './config.js';
import { createSigner } from './crypto/signer.js';
import { loadServerSecrets } from './crypto/server_secrets.js';
import { openServerDatabase, type ServerDatabase } from './prepare_database.js';
import { startupWarnings } from './startup_warnings.js';
import { startHousekeeping } from './housekeeping.js';
import { loggerOptions, resolveLogFormat } from './logging.js';
import { reportStart } from './banner.js';
import { recordServerIssuer } from './server_issuer.js';

/** Set in the environment of the workers this primary forks: how a worker knows it is ours. */
export const clusterWorkerMarker = 'LATCHKEY_CLUSTER_WORKER';

const metricsRequest = 'latchkey:metrics-request';
const metricsResponse = 'latchkey:metrics-response';

/** How soon a worker that died is replaced, so a crash loop does not spin. */
const restartDelayMs = 1000;

export interface RunningCluster {
  close(): Promise<void>;
  /** Settles with the reason when the cluster cannot run: a worker died before it ever listened. */
  failed: Promise<Error>;
}

/**
 * `terminal`: where a person reads the start (stderr), as for startServer. `database`: the
 * primary's one store, already opened with openServerDatabase (the configuration file at start was
 * applied on it); opened here when absent, and closed by the cluster either way.
 */
export async function startCluster(
  config: Config,
  terminal: NodeJS.WritableStream & { isTTY?: boolean } = process.stderr,
  database?: ServerDatabase,
): Promise<RunningCluster> {
  const format = resolveLogFormat(config.logFormat, terminal.isTTY);
  const log = pino(loggerOptions(config.logLevel, undefined, { sync: true, format }) as pino.LoggerOptions).child({ role: 'primary' });
  // The primary serves no request: its store has neither group commit nor background checkpoints.
  const { store, secretBox, notices } = database ?? (await openServerDatabase(config, { server: false }));
  let result: BootstrapResult;
  try {
    result = await bootstrap(store, config, systemClock, undefined, secretBox);
    // Keys and secrets are created (and sealed) here, once, not raced by N workers starting together.
    await createSigner(store, systemClock, {
      issuer: config.issuer,
      accessTokenAlgorithm: config.signingAlg,
      retiredKeyRetention: retiredKeyRetention(config),
      secretBox,
    });
    await loadServerSecrets(store, secretBox);
  } catch (err) {
    // A store left open (a PostgreSQL pool's connections) would keep the failed process alive.
    await store.close();
    throw err;
  }
  const warnings = startupWarnings(config, store);
  if (store.vacuumConversion === 'converted')
    log.info({ event: 'startup.vacuum_converted' }, 'the database now gives freed space back (converted to incremental vacuum)');
  const housekeeping = startHousekeeping(store, systemClock, log, config.housekeepingInterval, config.auditRetention);
  const unsplittable = unsplittableLimits(config);
  // Limits counted in a shared store are not split between workers.
  if (unsplittable.length > 0 && !store.sharedAcrossInstances) {
    log.warn(
      { limits: unsplittable, workers: config.workers },
      'these rate limits are lower than LATCHKEY_WORKERS: each worker allows 1, so the cluster allows up to one per worker',
    );
  }

  const aggregator = new AggregatorRegistry();
  let stopping = false;
  let bannerShown = false;
  const live = new Set<Worker>();
  let fail!: (reason: Error) => void;
  const failed = new Promise<Error>((resolve) => (fail = resolve));

  const fork = () => {
    const worker = cluster.fork({ [clusterWorkerMarker]: '1' });
    let listened = false;
    live.add(worker);
    worker.on('message', (message: { type?: string; id?: number } | null) => {
      if (message?.type !== metricsRequest) return;
      aggregator.clusterMetrics().then(
        (text) => worker.isConnected() && worker.send({ type: metricsResponse, id: message.id, text }),
        (err: unknown) => worker.isConnected() && worker.send({ type: metricsResponse, id: message.id, error: errorMessage(err) }),
      );
    });
    worker.once('listening', (address) => {
      listened = true;
      if (bannerShown) return;
      bannerShown = true;
      recordServerIssuer(store, config, systemClock).catch((err: unknown) => log.warn({ err }, 'could not record the issuer for the admin commands'));
      reportStart(format, { stderr: terminal, log }, config, address.port, result, { notices, warnings }, config.workers);
    });
    // Node gives a null code to a worker ended by a signal (and a null signal to one that exited).
    worker.once('exit', (code: number | null, signal: string | null) => {
      live.delete(worker);
      if (stopping) return;
      // A worker that never listened (port taken, bad configuration) would only fail again.
      if (!listened) {
        fail(new Error(`a worker process could not start (exit code ${code ?? signal}); its error is above`));
        return;
      }
      log.warn({ workerPid: worker.process.pid, exitCode: code, signal }, 'worker exited; starting another');
      setTimeout(() => {
        if (!stopping) fork();
      }, restartDelayMs).unref();
    });
  };
  for (let i = 0; i < config.workers; i++) fork();

  let closing: Promise<void> | undefined;
  return {
    failed,
    close() {
      closing ??= (async () => {
        stopping = true;
        log.info({ workers: live.size }, 'shutting down');
        const exited = [...live].map((worker) => new Promise<void>((resolve) => (worker.isDead() ? resolve() : worker.once('exit', () => resolve()))));
        // Each worker closes as a single server does: in-flight requests finish within the shutdown timeout.
        for (const worker of live) worker.process.kill('SIGTERM');
        const deadline = setTimeout(
          () => {
            for (const worker of live) worker.process.kill('SIGKILL');
          },
          (config.shutdownTimeout + 5) * 1000,
        );
        deadline.unref();
        await Promise.all(exited);
        clearTimeout(deadline);
        await housekeeping.stop();
        await store.close();
      })();
      return closing;
    },
  };
}

const pendingMetrics = new Map<number, { resolve(text: string): void; reject(err: Error): void }>();
let nextMetricsRequest = 0;
let listeningForMetrics = false;

/**
 * In a worker: the cluster-wide metrics text, gathered by the primary from every worker. The wait
 * outlasts prom-client's own 5 s, so a slow worker surfaces as the primary's error, not a race.
 */
export function clusterMetricsFromPrimary(timeoutMs = 6000): Promise<string> {
  if (!listeningForMetrics) {
    listeningForMetrics = true;
    process.on('message', (message: { type?: string; id?: number; text?: string; error?: string } | null) => {
      if (message?.type !== metricsResponse || message.id === undefined) return;
      const pending = pendingMetrics.get(message.id);
      if (!pending) return;
      pendingMetrics.delete(message.id);
      if (message.error !== undefined) pending.reject(new Error(message.error));
      else pending.resolve(message.text ?? '');
    });
  }
  return new Promise((resolve, reject) => {
    const id = nextMetricsRequest++;
    const timer = setTimeout(() => {
      pendingMetrics.delete(id);
      reject(new Error('the primary did not answer with the metrics'));
    }, timeoutMs);
    pendingMetrics.set(id, {
      resolve: (text) => {
        clearTimeout(timer);
        resolve(text);
      },
      reject: (err) => {
        clearTimeout(timer);
        reject(err);
      },
    });
    process.send?.({ type: metricsRequest, id });
  });
}

/** This process is a worker forked by startCluster (not merely some node:cluster worker, as under PM2). */
export const isClusterWorker = (): boolean => cluster.isWorker && process.env[clusterWorkerMarker] === '1';
