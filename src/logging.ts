/**
 * Logger options: structured pino lines; authorization headers, cookies and every secret form
 * field redacted; URLs logged without their query strings (user codes and other values travel there).
 */
import type { FastifyServerOptions } from 'fastify';
import type { LogLevel } from './config.js';

export const redactedPaths = [
  'req.headers.authorization',
  'req.headers.cookie',
  'res.headers["set-cookie"]',
  '*.password',
  '*.client_secret',
  '*.device_code',
  '*.user_code',
  '*.code',
  '*.refresh_token',
  '*.access_token',
  '*.id_token',
  '*.csrf_token',
];

function pathOnly(url: string): string {
  const q = url.indexOf('?');
  return q < 0 ? url : url.slice(0, q);
}

export function loggerOptions(level: LogLevel, stream?: { write(line: string): void }): NonNullable<FastifyServerOptions['logger']> {
  return {
    level,
    ...(stream ? { stream } : {}),
    redact: { paths: redactedPaths, censor: '[redacted]' },
    serializers: {
      req(req: { method: string; url: string; ip?: string; socket?: { remoteAddress?: string } }) {
        return { method: req.method, url: pathOnly(req.url), remoteAddress: req.ip ?? req.socket?.remoteAddress };
      },
    },
  };
}
