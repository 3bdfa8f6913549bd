/**
 * What each setting of the server's configuration says about itself, kept on the zod schema in
 * config.ts with `.meta()` so that the reference page (config_reference.ts) and any JSON Schema
 * generated from that schema are written from the one place that parses the setting.
 */
import { z } from 'zod';

/** The groups of the reference page, in the order it shows them. */
export const settingGroupIds = [
  'server',
  'database',
  'secrets',
  'first-start',
  'tokens',
  'sign-in',
  'rate-limits',
  'connectors',
  'mail',
  'pages',
  'operations',
] as const;

export type SettingGroup = (typeof settingGroupIds)[number];

/** Each group's heading and the sentence under it (Markdown). */
export const settingGroups: Readonly<Record<SettingGroup, { readonly title: string; readonly summary: string }>> = {
  server: {
    title: 'Server and network',
    summary: 'Where the server listens, the public address it is known by, the proxies in front of it, and how it uses the cores.',
  },
  database: {
    title: 'Database',
    summary: 'Where the data lives, how long database work may take, and how long old rows are kept.',
  },
  secrets: {
    title: 'Keys and secrets',
    summary: 'The key that encrypts the secrets stored in the database, and how access tokens are signed.',
  },
  'first-start': {
    title: 'First start',
    summary: 'The first account, created at start on a database that has no users yet.',
  },
  tokens: {
    title: 'Tokens and lifetimes',
    summary: 'How long codes and tokens live, how a client may recover a lost answer, and what tokens carry.',
  },
  'sign-in': {
    title: 'Sign-in and second factors',
    summary: 'How long a browser stays signed in, and whether people use a second factor.',
  },
  'rate-limits': {
    title: 'Rate limits',
    summary:
      "Limits on guessing and flooding, each `COUNT/SECONDS` or `off`. Past a limit the answer is HTTP 429 with `Retry-After` (a friendly page in the browser, an OAuth error body on the API). IPv6 addresses are counted by their /64; behind a reverse proxy, set `LATCHKEY_TRUST_PROXY` so that the client's own address is counted. On SQLite with `LATCHKEY_WORKERS` above 1, each worker counts in its own memory and allows its share of a limit (the limit divided by the number of workers, rounded down, at least 1); on PostgreSQL the counts live in the database and cover every instance together.",
  },
  connectors: {
    title: 'Connectors and outbound requests',
    summary: 'Requests the server makes to other systems: upstream identity providers, and the addresses registered clients name.',
  },
  mail: {
    title: 'Mail',
    summary: 'The mail server and sender for password reset, email verification and security notices.',
  },
  pages: {
    title: 'Pages',
    summary: 'How the sign-in, consent and account pages look.',
  },
  operations: {
    title: 'Logs and metrics',
    summary: 'What the server logs, and who may read its metrics.',
  },
};

/**
 * The metadata of one setting. Markdown is allowed in the text fields. `env` is the environment
 * variable; a configuration file's `server` section will name the same setting by it in lower
 * case without the `LATCHKEY_` prefix.
 */
export const settingMetaSchema = z.strictObject({
  /** What the setting does, written for an operator: its effect, its unit, and the RFC section a rule comes from. */
  description: z.string().trim().min(20),
  group: z.enum(settingGroupIds),
  /** The environment variable that sets it. */
  env: z.string().regex(/^[A-Z][A-Z0-9_]*$/),
  /** The accepted forms, in a few words. */
  accepts: z.string().trim().min(1),
  /** The value in effect when the variable is unset, written as it would be set: setting it changes nothing. */
  envDefault: z.string().optional(),
  /** What applies when the variable is unset, where `envDefault` alone does not say it (a default worked out from other settings, or what is then off). */
  whenUnset: z.string().trim().min(1).optional(),
  /** A whole number of seconds: the reference adds the duration in words. */
  unit: z.literal('seconds').optional(),
  /** The value is a secret: never logged or printed, and kept out of any file that describes the configuration. */
  secret: z.literal(true).optional(),
});

export type SettingMeta = z.infer<typeof settingMetaSchema>;

/** What a field of the schema declares with `.meta()`; `env` is added from the field's key by `recordEnvironmentNames`. */
export type SettingAbout = Omit<SettingMeta, 'env'>;

/**
 * Records each field's key as its environment variable, so that the name is written once: as the
 * key the schema parses.
 */
export function recordEnvironmentNames(fields: Readonly<Record<string, z.ZodType>>): void {
  for (const [env, field] of Object.entries(fields)) {
    z.globalRegistry.add(field, { ...z.globalRegistry.get(field), env });
  }
}

/** A number of seconds in whole years (of 365 days), days, hours or minutes, e.g. 900 → "15 minutes"; undefined when it is none of these. */
export function durationInWords(seconds: number): string | undefined {
  const units = [
    [365 * 86400, 'year'],
    [86400, 'day'],
    [3600, 'hour'],
    [60, 'minute'],
  ] as const;
  for (const [size, name] of units) {
    if (seconds >= size && seconds % size === 0) {
      const count = seconds / size;
      return `${count} ${name}${count === 1 ? '' : 's'}`;
    }
  }
  return undefined;
}
