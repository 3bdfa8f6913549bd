/** Liveness (the process answers) and readiness (the database answers). */
import type { FastifyInstance } from 'fastify';

export async function healthRoutes(app: FastifyInstance): Promise<void> {
  app.get('/healthz', async (_request, reply) => {
    reply.header('cache-control', 'no-store');
    return { status: 'ok' };
  });

  app.get('/readyz', async (request, reply) => {
    reply.header('cache-control', 'no-store');
    let ready = false;
    try {
      ready = await app.services.store.ping();
    } catch (err) {
      request.log.error({ err }, 'readiness check failed');
    }
    if (!ready) return reply.code(503).send({ status: 'unavailable' });
    return { status: 'ok' };
  });
}
