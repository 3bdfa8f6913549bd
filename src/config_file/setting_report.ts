/**
 * Each setting's effective value and where it came from — the environment, the configuration file,
 * or the default — for `latchkey config show`. A secret's value is never shown (only whether it is
 * set), and the database URL's password is masked.
 */
import type { Config, FileSettings, SettingSource } from '../config.js';
import { redactDatabase } from '../store/database_url.js';
import { serverSettings } from './server_settings.js';

export interface SettingReportRow {
  /** The key in the file's `server` section. */
  readonly key: string;
  readonly variable: string;
  /** What is in effect, as text; secrets redacted. */
  readonly value: string;
  readonly source: SettingSource;
  /** The configuration file, when it gave the value. */
  readonly file: string | undefined;
}

export const redactedSecret = '(secret, set)';
const unset = '(unset)';

export function settingReport(config: Config, env: NodeJS.ProcessEnv, file: FileSettings | undefined): SettingReportRow[] {
  return serverSettings.map(({ key, variable, meta }) => {
    const source = config.settingSources[variable] ?? 'default';
    const given = source === 'environment' ? env[variable] : source === 'file' ? file?.values[variable] : undefined;
    let value: string;
    if (given !== undefined) value = meta.secret ? redactedSecret : variable === 'LATCHKEY_DB' ? redactDatabase(given) : given;
    else value = workedOutDefault(config, variable) ?? meta.envDefault ?? unset;
    return { key, variable, value, source, file: source === 'file' ? file?.path : undefined };
  });
}

/** The defaults worked out from other settings (the schema's `whenUnset` says how), as they came out. */
function workedOutDefault(config: Config, variable: string): string | undefined {
  switch (variable) {
    case 'LATCHKEY_ISSUER':
      return config.issuer;
    case 'LATCHKEY_DEFAULT_AUDIENCE':
      return config.defaultAudience;
    case 'LATCHKEY_SECRET_KEY_FILE':
      return config.secretKeyFile;
    case 'LATCHKEY_MAIL_FROM':
      return `${config.mailFrom.name} <${config.mailFrom.address}>`;
    default:
      return undefined;
  }
}
