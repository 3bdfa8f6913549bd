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

    const server = await startServer(context.config(), context.stdout);
    await new Promise<void>((resolve) => {
      stop = () => {
        server.app.log.info({ signal: stopSignal }, 'shutting down');
        server.close().then(resolve, resolve);
      };
      if (stopSignal) stop();
    });
    return 0;
  },
};
