/**
 * The stylesheet (read once at start), the theme (from the configuration), and the two scripts of
 * the passkey pages — ours, and the WebAuthn browser library served from its npm package (no CDN:
 * the pages' CSP allows scripts from this server only) — all cacheable briefly.
 */
import type { FastifyInstance } from 'fastify';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { viewsDir } from '../paths.js';
import { themeCss } from '../http/theme.js';

export async function assetRoutes(app: FastifyInstance): Promise<void> {
  const stylesheet = readFileSync(join(viewsDir, 'assets', 'latchkey.css'), 'utf8');
  app.get('/assets/latchkey.css', async (_request, reply) => {
    reply.header('cache-control', 'public, max-age=3600').type('text/css; charset=utf-8');
    return stylesheet;
  });

  const scripts: Record<string, string> = {
    '/assets/passkey.js': readFileSync(join(viewsDir, 'assets', 'passkey.js'), 'utf8'),
    '/assets/simplewebauthn-browser.js': readFileSync(webauthnBrowserBundle(), 'utf8'),
  };
  for (const [path, source] of Object.entries(scripts)) {
    app.get(path, async (_request, reply) => {
      reply.header('cache-control', 'public, max-age=3600').type('text/javascript; charset=utf-8');
      return source;
    });
  }

  const theme = themeCss(app.services.config.accentColor);
  app.get('/assets/theme.css', async (_request, reply) => {
    reply.header('cache-control', 'public, max-age=3600').type('text/css; charset=utf-8');
    return theme;
  });
}

/** @simplewebauthn/browser's self-contained UMD build (it defines `SimpleWebAuthnBrowser`). */
function webauthnBrowserBundle(): string {
  const entry = createRequire(import.meta.url).resolve('@simplewebauthn/browser');
  return join(dirname(entry), '..', 'dist', 'bundle', 'index.umd.min.js');
}
