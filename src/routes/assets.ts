/** The one stylesheet, read once at start and served with a short cache lifetime. */
import type { FastifyInstance } from 'fastify';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { viewsDir } from '../paths.js';

export async function assetRoutes(app: FastifyInstance): Promise<void> {
  const stylesheet = readFileSync(join(viewsDir, 'assets', 'latchkey.css'), 'utf8');
  app.get('/assets/latchkey.css', async (_request, reply) => {
    reply.header('cache-control', 'public, max-age=3600').type('text/css; charset=utf-8');
    return stylesheet;
  });
}
