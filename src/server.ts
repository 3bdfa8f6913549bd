/**
 * Runs the server: open the store (migrations run there), make sure of the first user and the
 * built-in client, listen, and close cleanly on SIGTERM/SIGINT.
 */
import type { FastifyInstance } from 'fastify';
import { buildApp } from './app.js';
import { bootstrap } from './bootstrap.js';
import { systemClock } from './clock.js';
import { startHousekeeping } from './housekeeping.js';
import type { Config } from './config.js';
import { openConfiguredStore } from './store/open.js';

export interface RunningServer {
  app: FastifyInstance;
  address: string;
  close(): Promise<void>;
}

export async function startServer(config: Config, out: NodeJS.WritableStream = process.stdout): Promise<RunningServer> {
  const store = openConfiguredStore(config);
  const result = await bootstrap(store, config, systemClock);
  const app = await buildApp({ config, store });
  await app.listen({ port: config.port, host: config.host });
  const bound = app.server.address();
  const port = typeof bound === 'object' && bound ? bound.port : config.port;
  const address = `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${port}`;

  // Printed straight to the terminal, never through the log: the password is shown exactly once.
  const lines = [`Latchkey is listening on ${address} (issuer ${config.issuer}, database ${config.databasePath})`];
  if (result.createdUser) {
    lines.push(
      result.generatedPassword
        ? `Created the first user "${result.createdUser}" with password: ${result.generatedPassword}  (shown only once)`
        : `Created the first user "${result.createdUser}" with the password from LATCHKEY_BOOTSTRAP_PASSWORD`,
    );
  }
  lines.push(
    '',
    'Next, in another terminal:',
    '  npx latchkey users add alice --email alice@example.com      # a person who can sign in',
    '  npx latchkey clients add my-tv --grant-type device_code      # an application',
    `  npx latchkey login --device --issuer ${config.issuer}        # sign in from a terminal`,
  );
  out.write(lines.join('\n') + '\n');

  const housekeeping = startHousekeeping(store, systemClock, app.log, config.housekeepingInterval);

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
      await housekeeping.stop();
      await app.close();
      clearTimeout(deadline);
      await store.close();
    })();
    return closing;
  };
  return { app, address, close };
}
