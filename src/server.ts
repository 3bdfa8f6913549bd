/**
 * Runs the server: open the store (migrations run there), make sure of the first user and the
 * built-in client, listen, and close cleanly on SIGTERM/SIGINT.
 */
import type { FastifyInstance } from 'fastify';
import { buildApp } from './app.js';
import { bootstrap } from './bootstrap.js';
import { epochSeconds, systemClock } from './clock.js';
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
  const address = await app.listen({ port: config.port, host: config.host });

  // Printed straight to the terminal, never through the log: the password is shown exactly once.
  const lines = [`Latchkey is listening on ${address} (issuer ${config.issuer}, database ${config.databasePath})`];
  if (result.createdUser) {
    lines.push(
      result.generatedPassword
        ? `Created the first user "${result.createdUser}" with password: ${result.generatedPassword}  (shown only once)`
        : `Created the first user "${result.createdUser}" with the password from LATCHKEY_BOOTSTRAP_PASSWORD`,
    );
  }
  out.write(lines.join('\n') + '\n');

  // Housekeeping: expired rows go once a minute, in one short transaction.
  const purge = setInterval(() => {
    store.purgeExpired(epochSeconds(systemClock)).then(
      (counts) => app.log.debug({ event: 'housekeeping.purged', ...counts }),
      (err: unknown) => app.log.error({ err }, 'housekeeping failed'),
    );
  }, 60_000);
  purge.unref();

  let closing: Promise<void> | undefined;
  const close = () => {
    clearInterval(purge);
    closing ??= app.close().then(() => store.close());
    return closing;
  };
  return { app, address, close };
}
