/** The stylesheet (read once at start) and the theme (from the configuration), both cacheable briefly. */
import type { FastifyInstance } from 'fastify';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { viewsDir } from '../paths.js';
import { themeCss } from '../http/theme.js';

export async function assetRoutes(app: FastifyInstance): Promise<void> {
  const stylesheet = readFileSync(join(viewsDir, 'assets', 'latchkey.css'), 'utf8');
  app.get('/assets/latchkey.css', async (_request, reply) => {
    reply.header('cache-control', 'public, max-age=3600').type('text/css; charset=utf-8');
    return stylesheet;
  });

  const theme = themeCss(app.services.config.accentColor);
  app.get('/assets/theme.css', async (_request, reply) => {
    reply.header('cache-control', 'public, max-age=3600').type('text/css; charset=utf-8');
    return theme;
  });
}
