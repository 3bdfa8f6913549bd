/**
 * Logger options: structured pino lines; authorization headers, cookies and every secret form
 * field redacted; URLs logged without their query strings (user codes and other values travel there).
 */
import type { FastifyServerOptions } from 'fastify';
import { pino } from 'pino';
import type { LogFormat, LogLevel } from './config.js';
import { batchedLogStream, type LogStream } from './http/log_stream.js';

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
  options: { sync?: boolean; format?: 'text' | 'json' } = {},
): NonNullable<FastifyServerOptions['logger']> {
  // Lines go out in batches, a turn of the event loop at a time (http/log_stream.ts), instead of
  // one write(2) each: at thousands of requests a second the synchronous writes were a third of a
  // request's cost. What is still waiting is written when the process exits.
  const destination = stream ?? (options.sync === true ? pino.destination({ dest: 1, sync: true }) : batchedLogStream());
  return {
    level,
    stream: options.format === 'text' ? humanLogStream(destination) : destination,
    redact: { paths: redactedPaths, censor: '[redacted]' },
    serializers: {
      req(req: { method: string; url: string; ip?: string; socket?: { remoteAddress?: string } }) {
        return { method: req.method, url: pathOnly(req.url), remoteAddress: req.ip ?? req.socket?.remoteAddress };
      },
    },
  };
}

/**
 * LATCHKEY_LOG_FORMAT resolved: `auto` is `text` when stderr is a terminal (a person started the
 * server or runs the command), `json` otherwise (a service manager, a container runtime, a script:
 * whatever reads it is a program, and a sentence in the middle of JSON lines breaks it).
 */
export function resolveLogFormat(format: LogFormat, stderrIsTerminal: boolean | undefined): 'text' | 'json' {
  if (format !== 'auto') return format;
  return stderrIsTerminal === true ? 'text' : 'json';
}

const levelNames: Record<number, string> = { 10: 'trace', 20: 'debug', 30: 'info', 40: 'warn', 50: 'error', 60: 'fatal' };

/** What pino puts on every line and a person reading one terminal does not need again. */
const omittedFields = new Set(['level', 'time', 'pid', 'hostname', 'msg']);

/**
 * A control character, a line separator or a bidirectional override in a value (a request path, a
 * user agent) is shown as an escape: a terminal runs what it is sent.
 */
const unprintable = /[\p{Cc}\u2028\u2029\u202a-\u202e\u2066-\u2069]/gu;

const escaped = (c: string) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;

function printable(text: string): string {
  return text.replace(unprintable, escaped);
}

/** What ends a bare logfmt value: whitespace (any), `=`, a quote, a backslash, or an unprintable character. */
const endsBareValue = /[\s="\\\p{Cc}\u2028\u2029\u202a-\u202e\u2066-\u2069]/u;

/** Inside quotes: `\\` and `\"`, then line breaks and tabs by their usual escapes, any other unprintable character as `\uXXXX`. */
function quoted(text: string): string {
  const inner = text
    .replace(/[\\"]/g, (c) => `\\${c}`)
    .replace(/\n/g, '\\n')
    .replace(/\r/g, '\\r')
    .replace(/\t/g, '\\t')
    .replace(unprintable, escaped);
  return `"${inner}"`;
}

/**
 * A value as logfmt writes it: bare when it is one plain word, else double-quoted with `\\` and `\"`
 * escaped and control characters as escapes. A request path or an upstream's text then stays one
 * value: `/x status=200` cannot add a `status` field to the line.
 */
export function logfmtValue(text: string): string {
  return text !== '' && !endsBareValue.test(text) ? text : quoted(text);
}

/** A field's name: ours, always a plain word; anything else in one is made `_`, so no name can hold a value. */
function logfmtKey(key: string): string {
  return key.replace(/[^\w.\-/:@]/g, '_') || '_';
}

/**
 * The message, between the level and the fields: bare while it reads as words (single spaces);
 * quoted as a value when it holds what would look like a field (`=`, quotes) or its end (two spaces).
 */
function logfmtMessage(text: string): string {
  return /[="\\]|\s\s|[^\S ]|^\s|\s$|[\p{Cc}\u2028\u2029\u202a-\u202e\u2066-\u2069]/u.test(text) ? quoted(text) : text;
}

/** One pino JSON line as one line for a person: `12:04:05 warn  message  field=value …` (fields in logfmt). */
export function humanLogLine(json: string): string {
  let entry: Record<string, unknown>;
  try {
    entry = JSON.parse(json) as Record<string, unknown>;
  } catch {
    return `${printable(json.replace(/\n$/, ''))}\n`;
  }
  const time = typeof entry.time === 'number' ? new Date(entry.time).toISOString().slice(11, 19) : '';
  const level = typeof entry.level === 'number' ? (levelNames[entry.level] ?? String(entry.level)) : String(entry.level);
  const details = Object.entries(entry)
    .filter(([key]) => !omittedFields.has(key))
    .map(([key, value]) => `${logfmtKey(key)}=${logfmtValue(typeof value === 'string' ? value : JSON.stringify(value))}`)
    .join(' ');
  const msg = typeof entry.msg === 'string' ? logfmtMessage(entry.msg) : '';
  return `${printable(`${time} ${level.padEnd(5)} ${msg}${details === '' ? '' : `  ${details}`}`)}\n`;
}

/** A log destination that writes each line for a person (LATCHKEY_LOG_FORMAT=text) to `destination`. */
export function humanLogStream(destination: { write(line: string): void; flush?(callback?: (err?: Error) => void): void }): LogStream {
  return {
    write: (line) => destination.write(humanLogLine(line)),
    flush: (callback) => (destination.flush ? destination.flush(callback) : callback?.()),
  };
}

/** The server's log stream for `format`: undefined for JSON (the logger's own), else readable lines on stdout. */
export function serverLogStream(format: 'text' | 'json', options: { sync?: boolean } = {}): LogStream | undefined {
  if (format === 'json') return undefined;
  return humanLogStream(options.sync === true ? pino.destination({ dest: 1, sync: true }) : batchedLogStream());
}
