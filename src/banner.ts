/**
 * What a start says once the server listens, for whoever reads it: sentences on a person's
 * terminal (stderr), or the same facts as JSON log entries for a machine (LATCHKEY_LOG_FORMAT,
 * logging.ts) — never the two mixed on one stream. The first user's generated password is only
 * ever in the sentences: a log is copied, shipped and kept, a terminal is the operator's own.
 */
import type { FastifyBaseLogger } from 'fastify';
import type { BootstrapResult } from './bootstrap.js';
import type { Config } from './config.js';
import { redactDatabase } from './store/database_url.js';

export function addressOf(config: Config, port: number): string {
  return `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${port}`;
}

/** What the start did and what an operator should fix, in plain words. */
export interface StartReport {
  notices: string[];
  warnings: string[];
}

const noReport: StartReport = { notices: [], warnings: [] };

function listening(config: Config, port: number, workers: number): string {
  return `Latchkey is listening on ${addressOf(config, port)} (issuer ${config.issuer}, database ${redactDatabase(config.databasePath)}${workers > 1 ? `, ${workers} worker processes` : ''})`;
}

/** How long a generated password keeps being shown, in the words of the terminal. */
function shownUntil(username: string): string {
  return `(shown at each start until ${username} signs in or the password is changed)`;
}

/** The start in sentences, for a person's terminal. */
export function banner(config: Config, port: number, result: BootstrapResult, report: StartReport = noReport, workers = 1): string {
  const lines = [listening(config, port, workers), ...report.notices, ...report.warnings.map((warning) => `warning: ${warning}`)];
  const pending = result.pendingPassword;
  if (pending) {
    lines.push(
      result.createdUser === pending.username
        ? `Created the first user "${pending.username}" with password: ${pending.password}  ${shownUntil(pending.username)}`
        : `The first user "${pending.username}" has not signed in yet; its password: ${pending.password}  ${shownUntil(pending.username)}`,
    );
  } else if (result.createdUser) {
    lines.push(`Created the first user "${result.createdUser}" with the password from LATCHKEY_BOOTSTRAP_PASSWORD`);
  }
  const firstUser = pending?.username ?? result.createdUser;
  // The console wants a second factor, and a password alone cannot add an administrator's first one.
  if (firstUser !== undefined && config.mfa !== 'off') {
    lines.push(
      `To open the admin console (${config.issuer}/admin), get ${firstUser} a one-time link to set up a second factor: npx latchkey users mfa-enroll ${firstUser}`,
    );
  }
  lines.push(
    '',
    'Next, in another terminal:',
    '  npx latchkey users add alice --email alice@example.com      # a person who can sign in',
    '  npx latchkey clients add my-tv --grant-type device_code      # an application',
    `  npx latchkey login --device --issuer ${config.issuer}        # sign in from a terminal`,
  );
  return lines.join('\n') + '\n';
}

/** The start as JSON log entries: the banner's facts, each with a stable `event`, and no password. */
export function logStart(log: FastifyBaseLogger, config: Config, port: number, result: BootstrapResult, report: StartReport = noReport, workers = 1): void {
  // The start is said once whatever LATCHKEY_LOG_LEVEL, as the terminal's banner is: it is what an
  // operator reads to know what runs (its warnings are warnings in any case).
  const start = ['warn', 'error', 'fatal'].includes(log.level) ? log.child({}, { level: 'info' }) : log;
  start.info(
    { event: 'startup.listening', address: addressOf(config, port), issuer: config.issuer, database: redactDatabase(config.databasePath), workers },
    listening(config, port, workers),
  );
  for (const notice of report.notices) start.info({ event: 'startup.notice' }, notice);
  for (const warning of report.warnings) start.warn({ event: 'startup.warning' }, warning);
  const pending = result.pendingPassword;
  if (pending) {
    const how = `it is shown only on a terminal: start latchkey serve with stderr on a terminal (or LATCHKEY_LOG_FORMAT=text) to see it, or set one with: latchkey users passwd ${pending.username}`;
    start.warn(
      { event: 'startup.first_user', username: pending.username, created: result.createdUser === pending.username },
      result.createdUser === pending.username
        ? `Created the first user "${pending.username}" with a generated password: ${how}`
        : `The first user "${pending.username}" has not signed in yet with its generated password: ${how}`,
    );
  } else if (result.createdUser) {
    start.info(
      { event: 'startup.first_user', username: result.createdUser, created: true },
      `Created the first user "${result.createdUser}" with the password from LATCHKEY_BOOTSTRAP_PASSWORD`,
    );
  }
}

/** Says the start in the resolved LATCHKEY_LOG_FORMAT: the banner on stderr, or JSON entries in the log. */
export function reportStart(
  format: 'text' | 'json',
  to: { stderr: NodeJS.WritableStream; log: FastifyBaseLogger },
  config: Config,
  port: number,
  result: BootstrapResult,
  report: StartReport = noReport,
  workers = 1,
): void {
  if (format === 'text') to.stderr.write(banner(config, port, result, report, workers));
  else logStart(to.log, config, port, result, report, workers);
}
