/** The console's own stylesheet (read once at start), beside latchkey.css and like it cacheable briefly. */
import type { FastifyInstance } from 'fastify';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { viewsDir } from '../../paths.js';

export async function adminAssetRoutes(app: FastifyInstance): Promise<void> {
  const stylesheet = readFileSync(join(viewsDir, 'assets', 'admin.css'), 'utf8');
  app.get('/assets/admin.css', async (_request, reply) => {
    reply.header('cache-control', 'public, max-age=3600').type('text/css; charset=utf-8');
    return stylesheet;
  });
}
