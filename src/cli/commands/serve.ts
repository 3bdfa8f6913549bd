import cluster from 'node:cluster';
import { startCluster } from '../../cluster.js';
import { startServer } from '../../server.js';
import type { Command } from '../command.js';

export const serveCommand: Command = {
  path: ['serve'],
  summary: 'Run the identity provider',
  usage: 'latchkey serve',
  positionals: { min: 0, max: 0 },
  options: {},
  async run(context) {
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
    const server = config.workers > 1 && cluster.isPrimary ? undefined : await startServer(config, context.stdout, { worker: cluster.isWorker });
    const running = server ?? (await startCluster(config, context.stdout));
    await new Promise<void>((resolve) => {
      stop = () => {
        server?.app.log.info({ signal: stopSignal }, 'shutting down');
        running.close().then(resolve, resolve);
      };
      if (stopSignal) stop();
    });
    // A worker's IPC channel to the primary would keep this process alive after the server closed.
    if (cluster.isWorker) process.disconnect();
    return 0;
  },
};
