import { isClusterWorker, startCluster } from '../../cluster.js';
import { startServer } from '../../server.js';
import { applyConfigurationAtStart, configurationFileAtStart } from '../../config_file/start.js';
import { CommandError, defineCommand, exitCodes, type CommandContext } from '../command.js';
import type { Config } from '../../config.js';
import { openServerDatabase, type ServerDatabase } from '../../prepare_database.js';

/** LATCHKEY_WORKERS > 1: this process is the cluster's primary until a signal, or until a worker cannot start. */
async function runPrimary(
  context: CommandContext,
  config: Config,
  database: ServerDatabase | undefined,
  onStop: (stop: () => void) => void,
  signalled: () => NodeJS.Signals | undefined,
): Promise<number> {
  const running = await startCluster(config, context.stderr, database);
  return new Promise<number>((resolve) => {
    const stop = () =>
      void running.close().then(
        () => resolve(0),
        () => resolve(0),
      );
    onStop(stop);
    if (signalled()) stop();
    void running.failed.then((reason) => {
      context.stderr.write(`latchkey: ${reason.message}\n`);
      running.close().then(
        () => resolve(1),
        () => resolve(1),
      );
    });
  });
}

/** A listen that failed, said with the setting to change; undefined for any other error. */
function cannotListen(err: unknown, config: Config): CommandError | undefined {
  const where = `port ${config.port} on ${config.host}`;
  switch ((err as NodeJS.ErrnoException).code) {
    case 'EADDRINUSE':
      return new CommandError(`PORT: ${where} is already in use by another program (another Latchkey?): stop it, or set PORT to a free port`);
    case 'EACCES':
      return new CommandError(`PORT: this user may not listen on ${where} (ports below 1024 need privileges): set PORT to 1024 or above`);
    case 'EADDRNOTAVAIL':
      return new CommandError(`HOST: ${config.host} is not an address of this machine: set HOST to one of its addresses, or 0.0.0.0 for all of them`);
    default:
      return undefined;
  }
}

export const serveCommand = defineCommand({
  usage: 'latchkey serve [--config FILE] [--demo]',
  help: [
    'Options:',
    '  --config FILE   the configuration file (as LATCHKEY_CONFIG): its server section gives settings the',
    '                  environment does not (see latchkey config show)',
    '  --demo   a server to try: a throwaway database and key, demo people, clients and an API, on',
    '           loopback only, and a printed walk-through; all of it deleted when it stops',
    '',
  ].join('\n'),
  positionals: { min: 0, max: 0 },
  options: { demo: { type: 'boolean' }, config: { type: 'string' } },
  async run(context) {
    if (context.values.demo === true) return (await import('../demo.js')).serveDemo(context);
    // Handlers go in before anything starts: a SIGTERM that arrives while the server is still
    // starting must also end in a clean close, not in the default "die at once".
    let stopSignal: NodeJS.Signals | undefined;
    let stop: (() => void) | undefined;
    const onSignal = (signal: NodeJS.Signals) => {
      stopSignal ??= signal;
      stop?.();
    };
    process.once('SIGTERM', onSignal);
    process.once('SIGINT', onSignal);

    const config = context.config();
    // LATCHKEY_WORKERS > 1: this process becomes the cluster's primary, and each forked worker
    // runs this same command again as a worker.
    const worker = isClusterWorker();

    const primary = config.workers > 1 && !worker;
    // The file's APIs, roles, clients and connectors, applied once (by the primary) before anything
    // is served, on the store the server then runs on: one store per process (see openServerDatabase).
    const configFile = worker ? undefined : configurationFileAtStart(context.values.config, context.env);
    let database: ServerDatabase | undefined;
    if (configFile !== undefined) {
      database = await openServerDatabase(config, { server: !primary });
      const opened = database;
      let outcome: 'applied' | 'refused';
      try {
        outcome = await applyConfigurationAtStart({ ...context, store: async () => opened.store, secretBox: async () => opened.secretBox }, configFile);
      } catch (err) {
        await opened.store.close();
        throw err;
      }
      if (outcome === 'refused') {
        // What opening did (an upgrade, a key file made) is said even though the start stops here.
        for (const notice of opened.notices) context.stderr.write(`${notice}\n`);
        await opened.store.close();
        return exitCodes.config;
      }
    }
    if (primary)
      return runPrimary(
        context,
        config,
        database,
        (s) => (stop = s),
        () => stopSignal,
      );
    let server;
    try {
      server = await startServer(config, context.stderr, { worker, ...(database ? { database } : {}) });
    } catch (err) {
      throw cannotListen(err, config) ?? err;
    } finally {
      // A worker that could not start must exit (its IPC channel to the primary would keep it alive).
      if (worker && !server && process.connected) process.disconnect();
    }
    const running = server;
    await new Promise<void>((resolve) => {
      stop = () => {
        running.app.log.info({ signal: stopSignal }, 'shutting down');
        running.close().then(resolve, resolve);
      };
      if (stopSignal) stop();
    });
    if (worker && process.connected) process.disconnect();
    return 0;
  },
});
