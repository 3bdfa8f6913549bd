/**
 * Logger options: structured pino lines; authorization headers, cookies and every secret form
 * field redacted; URLs logged without their query strings (user codes and other values travel there).
 */
import type { FastifyServerOptions } from 'fastify';
import { pino } from 'pino';
import type { LogLevel } from './config.js';
import { batchedLogStream } from './http/log_stream.js';

const secretFields = [
  'password',
  'client_secret',
  'device_code',
  'user_code',
  'code',
  'refresh_token',
  'access_token',
  'id_token',
  'csrf_token',
  'token',
  'new_password',
  'current_password',
  'id_token_hint',
  'logout_token',
];

/**
 * A safety net only: no log call passes a secret (a test scans the log of whole flows for every
 * secret handed out). Fixed paths, not `*.field` wildcards: fast-redact compiles fixed paths into
 * plain property checks, while wildcards walk every logged object and cost a fifth of a request.
 */
export const redactedPaths = [
  'req.headers.authorization',
  'req.headers.cookie',
  'res.headers["set-cookie"]',
  ...secretFields,
  ...secretFields.map((field) => `body.${field}`),
  ...secretFields.map((field) => `params.${field}`),
  ...secretFields.map((field) => `query.${field}`),
];

export function pathOnly(url: string): string {
  const q = url.indexOf('?');
  return q < 0 ? url : url.slice(0, q);
}

/**
 * `sync`: one write(2) per line. Several processes sharing one stdout (LATCHKEY_WORKERS) need it:
 * a line written in one piece up to PIPE_BUF never interleaves with another process's, while the
 * batched writes of one process can be larger and split.
 */
export function loggerOptions(
  level: LogLevel,
  stream?: { write(line: string): void },
  options: { sync?: boolean } = {},
): NonNullable<FastifyServerOptions['logger']> {
  return {
    level,
    // Lines go out in batches, a turn of the event loop at a time (http/log_stream.ts), instead of
    // one write(2) each: at thousands of requests a second the synchronous writes were a third of a
    // request's cost. What is still waiting is written when the process exits.
    stream: stream ?? (options.sync === true ? pino.destination({ dest: 1, sync: true }) : batchedLogStream()),
    redact: { paths: redactedPaths, censor: '[redacted]' },
    serializers: {
      req(req: { method: string; url: string; ip?: string; socket?: { remoteAddress?: string } }) {
        return { method: req.method, url: pathOnly(req.url), remoteAddress: req.ip ?? req.socket?.remoteAddress };
      },
    },
  };
}
