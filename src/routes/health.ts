/**
 * Liveness (the process answers) and readiness: the database answers, its token tables can be
 * written, and the server can sign. A readiness probe gets its answer within a bound even when the
 * database hangs, so an orchestrator or load balancer takes the instance out of rotation instead
 * of waiting on it. Readiness follows what a request would get: a database that answers reads but
 * refuses writes (disk full, I/O error) is not ready. That costs no write per probe: the store
 * knows the outcome of its last writes and probes with a write of its own only after one failed
 * for want of storage (store/sql/write_readiness.ts).
 */
import type { FastifyInstance } from 'fastify';

/** How long /readyz waits for the database before answering 503 (probes commonly give up after 1–2 s). */
const readinessWaitMs = 1_500;

function within<T>(ms: number, work: Promise<T>): Promise<T | 'timeout'> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), ms);
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}

export async function healthRoutes(app: FastifyInstance): Promise<void> {
  app.get('/healthz', async (_request, reply) => {
    reply.header('cache-control', 'no-store');
    return { status: 'ok' };
  });

  app.get('/readyz', async (request, reply) => {
    reply.header('cache-control', 'no-store');
    const { store, signer } = app.services;
    let reason: string | undefined;
    try {
      const answer = await within(readinessWaitMs, (async () => (await store.ping()) && (await store.writesAccepted()))());
      if (answer === 'timeout') reason = 'database';
      else if (!answer) reason = 'database';
      else if ((await signer.signingProblem()) !== undefined) reason = 'signing';
    } catch (err) {
      request.log.warn({ event: 'readiness.failed', detail: (err as Error).message }, 'readiness check failed');
      reason = 'database';
    }
    if (reason !== undefined) return reply.code(503).header('retry-after', '2').send({ status: 'unavailable', reason });
    return { status: 'ok' };
  });
}
