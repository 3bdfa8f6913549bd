/** Other methods on the POST-only OAuth endpoints: 405 with Allow, in the OAuth error shape. */
import type { FastifyInstance } from 'fastify';

export function postOnly(app: FastifyInstance, url: string): void {
  app.route({
    method: ['GET', 'PUT', 'DELETE', 'PATCH'],
    url,
    handler: async (_request, reply) =>
      reply
        .code(405)
        .header('allow', 'POST')
        .header('cache-control', 'no-store')
        .send({ error: 'invalid_request', error_description: `Use POST for ${url}.` }),
  });
}
