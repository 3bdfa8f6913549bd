/**
 * Runs the server: open the store (migrations run there), make sure of the first user and the
 * built-in client, listen, and close cleanly on SIGTERM/SIGINT. With LATCHKEY_WORKERS the primary
 * (cluster.ts) does the once-only parts and each worker runs startServer in worker mode.
 */
import type { FastifyInstance } from 'fastify';
import { AggregatorRegistry } from 'prom-client';
import { buildApp } from './app.js';
import { addressOf, reportStart } from './banner.js';
import { bootstrap, type BootstrapResult } from './bootstrap.js';
import { systemClock } from './clock.js';
import { clusterMetricsFromPrimary } from './cluster.js';
import { startHousekeeping } from './housekeeping.js';
import type { Config } from './config.js';
import { openServerDatabase, type ServerDatabase } from './prepare_database.js';
import { startupWarnings } from './startup_warnings.js';
import { resolveLogFormat, serverLogStream } from './logging.js';
import { recordServerIssuer } from './server_issuer.js';

export interface RunningServer {
  app: FastifyInstance;
  address: string;
  close(): Promise<void>;
}

export interface ServerOptions {
  /** A cluster worker: no bootstrap, banner or housekeeping (the primary does those). */
  worker?: boolean;
  /**
   * The process's one store, already opened with openServerDatabase (the configuration file at
   * start was applied on it); opened here when absent. The server closes it either way.
   */
  database?: ServerDatabase;
}

/**
 * `terminal`: where a person reads the start (stderr); whether it is a terminal decides, with
 * LATCHKEY_LOG_FORMAT=auto, between sentences there and JSON entries in the log.
 */
export async function startServer(
  config: Config,
  terminal: NodeJS.WritableStream & { isTTY?: boolean } = process.stderr,
  options: ServerOptions = {},
): Promise<RunningServer> {
  const format = resolveLogFormat(config.logFormat, terminal.isTTY);
  // Answer the primary's metrics requests from the first moment (with nothing until the app exists),
  // so a scrape while this worker starts does not wait for it to time out.
  if (options.worker) new AggregatorRegistry();
  const database = options.database ?? (await openServerDatabase(config, { server: true, worker: options.worker === true }));
  const { store, secretBox } = database;
  // What the start did to the database and its key (the primary's alone), for the start line.
  const notices = database.notices;
  let result: BootstrapResult | undefined;
  let app: FastifyInstance | undefined;
  try {
    result = options.worker ? undefined : await bootstrap(store, config, systemClock, undefined, secretBox);
    const logStream = serverLogStream(format, { sync: config.workers > 1 });
    app = await buildApp({
      config,
      store,
      secretBox,
      ...(logStream ? { logStream } : {}),
      ...(options.worker ? { metricsText: () => clusterMetricsFromPrimary() } : {}),
    });
    // The primary gathers every worker's registry for /metrics.
    if (options.worker) AggregatorRegistry.setRegistries([app.services.metrics.registry]);
    await app.listen({ port: config.port, host: config.host });
  } catch (err) {
    // A store left open (a PostgreSQL pool's connections) would keep the failed process alive.
    await app?.close();
    await store.close();
    throw err;
  }
  const bound = app.server.address();
  const port = typeof bound === 'object' && bound ? bound.port : config.port;
  const address = addressOf(config, port);
  const warnings = options.worker ? [] : startupWarnings(config, store);
  // Which of environment, configuration file or default gave each setting (values are left out: some are secrets).
  app.log.debug({ event: 'startup.settings', configFile: config.configFile, sources: config.settingSources }, 'where each setting came from');
  if (result) {
    // Recorded once listening, so that a start which failed says nothing about the server's issuer.
    await recordServerIssuer(store, config, systemClock).catch((err: unknown) => app.log.warn({ err }, 'could not record the issuer for the admin commands'));
    reportStart(format, { stderr: terminal, log: app.log }, config, port, result, { notices, warnings });
  }
  if (!options.worker) {
    if (store.vacuumConversion === 'converted')
      app.log.info({ event: 'startup.vacuum_converted' }, 'the database now gives freed space back (converted to incremental vacuum)');
  }

  const housekeeping = options.worker ? undefined : startHousekeeping(store, systemClock, app.log, config.housekeepingInterval, config.auditRetention);

  let closing: Promise<void> | undefined;
  const close = () => {
    closing ??= (async () => {
      // Requests in flight get LATCHKEY_SHUTDOWN_TIMEOUT seconds; then their connections are cut,
      // so one slow client cannot keep the process from stopping (an orchestrator would SIGKILL it).
      const deadline = setTimeout(() => {
        app.log.warn({ timeoutSeconds: config.shutdownTimeout }, 'shutdown deadline reached: closing open connections');
        app.server.closeAllConnections();
      }, config.shutdownTimeout * 1000);
      deadline.unref();
      await housekeeping?.stop();
      await app.close();
      clearTimeout(deadline);
      await store.close();
    })();
    return closing;
  };
  return { app, address, close };
}
