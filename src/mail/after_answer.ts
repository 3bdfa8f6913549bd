/**
 * Mail work that runs after the answer to a request: the answer never waits for a mail server (nor
 * shows, by its timing, whether a mail was sent), and a mail that fails never fails the request.
 * The work in flight is kept per server, so that closing the app — and a test — can wait for it.
 */
import type { FastifyBaseLogger } from 'fastify';
import type { Services } from '../services.js';
import { errorMessage } from '../errors.js';
import { MailError } from './mailer.js';

const inFlight = new WeakMap<Services, Set<Promise<void>>>();

/**
 * Runs `work` on a later turn of the event loop, once the answer is on its way. What it throws is
 * logged as `failed` (a MailError by what failed, anything else by a bounded message), never thrown on.
 */
export function afterTheAnswer(services: Services, log: FastifyBaseLogger, failed: string, work: () => Promise<void>): void {
  let pending = inFlight.get(services);
  if (!pending) inFlight.set(services, (pending = new Set()));
  const task: Promise<void> = new Promise<void>((resolve) => setImmediate(resolve))
    .then(work)
    .catch((err: unknown) => log.error({ err: err instanceof MailError ? err.toLog() : { message: errorMessage(err).slice(0, 300) } }, failed))
    .finally(() => pending.delete(task));
  pending.add(task);
}

/** Resolves when every mail started so far has been sent or has failed (tests; shutdown). */
export async function mailSettled(services: Services): Promise<void> {
  const pending = inFlight.get(services);
  while (pending && pending.size > 0) await Promise.allSettled([...pending]);
}
