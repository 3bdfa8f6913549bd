/** GET /metrics in the Prometheus text format; behind a bearer secret when LATCHKEY_METRICS_TOKEN is set. */
import type { FastifyInstance } from 'fastify';
import { constantTimeEqual } from '../crypto/secrets.js';

export async function metricsRoutes(app: FastifyInstance): Promise<void> {
  const { config, metrics } = app.services;
  app.get('/metrics', async (request, reply) => {
    reply.header('cache-control', 'no-store');
    if (config.metricsToken !== undefined) {
      const header = request.headers.authorization ?? '';
      const presented = /^bearer /i.test(header) ? header.slice(7).trim() : '';
      if (!constantTimeEqual(presented, config.metricsToken)) {
        return reply
          .code(401)
          .header('www-authenticate', 'Bearer realm="latchkey-metrics"')
          .send({ error: 'invalid_token', error_description: 'The metrics need the configured bearer token.' });
      }
    }
    reply.type(metrics.registry.contentType);
    return metrics.registry.metrics();
  });
}
