/** The lines the terminal shows once the server listens. */
import type { BootstrapResult } from './bootstrap.js';
import type { Config } from './config.js';
import { redactDatabase } from './store/database_url.js';

export function addressOf(config: Config, port: number): string {
  return `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${port}`;
}

/** What the start did and what an operator should fix, in plain words (each is also in the log). */
export interface StartReport {
  notices: string[];
  warnings: string[];
}

/** Printed straight to the terminal, never through the log: the password is shown exactly once. */
export function banner(config: Config, port: number, result: BootstrapResult, report: StartReport = { notices: [], warnings: [] }, workers = 1): string {
  const lines = [
    `Latchkey is listening on ${addressOf(config, port)} (issuer ${config.issuer}, database ${redactDatabase(config.databasePath)}${workers > 1 ? `, ${workers} worker processes` : ''})`,
    ...report.notices,
    ...report.warnings.map((warning) => `warning: ${warning}`),
  ];
  if (result.createdUser) {
    lines.push(
      result.generatedPassword
        ? `Created the first user "${result.createdUser}" with password: ${result.generatedPassword}  (shown only once)`
        : `Created the first user "${result.createdUser}" with the password from LATCHKEY_BOOTSTRAP_PASSWORD`,
    );
    // The console wants a second factor, and a password alone cannot add an administrator's first one.
    if (config.mfa !== 'off') {
      lines.push(
        `To open the admin console (${config.issuer}/admin), get ${result.createdUser} a one-time link to set up a second factor: npx latchkey users mfa-enroll ${result.createdUser}`,
      );
    }
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
