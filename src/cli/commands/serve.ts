import { startServer } from '../../server.js';
import type { Command } from '../command.js';

export const serveCommand: Command = {
  path: ['serve'],
  summary: 'Run the identity provider',
  usage: 'latchkey serve',
  positionals: { min: 0, max: 0 },
  options: {},
  async run(context) {
    const server = await startServer(context.config(), context.stdout);
    await new Promise<void>((resolve) => {
      const stop = (signal: string) => {
        server.app.log.info({ signal }, 'shutting down');
        server.close().then(resolve, resolve);
      };
      process.once('SIGTERM', () => stop('SIGTERM'));
      process.once('SIGINT', () => stop('SIGINT'));
    });
    return 0;
  },
};
