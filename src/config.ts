/**
 * The only reader of process.env. One zod schema over the environment gives one frozen Config;
 * every problem is reported at once, one line per variable, so an operator fixes them in one go.
 */
import { isIP } from 'node:net';
import { z } from 'zod';
import { signingAlgorithms, type SigningAlgorithm } from './crypto/keys.js';

export const mfaPolicies = ['off', 'optional', 'required'] as const;
export type MfaPolicy = (typeof mfaPolicies)[number];
/** Whether id_tokens repeat the email and profile scopes' basic claims (see oauth/claims.ts). */
export const idTokenScopeClaimModes = ['basic', 'none'] as const;
import { isPostgresUrl, isValidPostgresUrl } from './store/database_url.js';
import { parseSecretKeys, type SecretKey } from './crypto/secret_box.js';
import { parseMailAddress, parseSmtpUrl, type MailAddress, type SmtpSettings } from './mail/smtp_settings.js';
import { emptyAllowList, parseOutboundAllowList, type OutboundAllowList } from './net/outbound_policy.js';

const seconds = (name: string, fallback: number, min = 1, max = 10 * 365 * 86400) =>
  z
    .string()
    .trim()
    .regex(/^\d{1,12}$/, `${name} must be a whole number of seconds`)
    .transform(Number)
    .pipe(z.number().int().min(min, `${name} must be at least ${min}`).max(max, `${name} must be at most ${max}`))
    .optional()
    .transform((v) => v ?? fallback);

const optionalText = z
  .string()
  .optional()
  .transform((v) => (v === undefined || v.trim() === '' ? undefined : v));

/** A proxy address or CIDR block, e.g. 10.0.0.1 or 10.0.0.0/8 or fd00::/8. */
function isAddressOrCidr(value: string): boolean {
  const [address = '', bits, extra] = value.split('/');
  const family = isIP(address);
  if (family === 0 || extra !== undefined) return false;
  if (bits === undefined) return true;
  return /^\d{1,3}$/.test(bits) && Number(bits) <= (family === 4 ? 32 : 128);
}

export type TrustProxy = false | number | string[];

const trustProxySchema = z
  .string()
  .trim()
  .transform((value, ctx): TrustProxy => {
    if (value === 'false' || value === '0') return false;
    if (/^\d{1,2}$/.test(value)) return Number(value);
    const entries = value.split(',').map((e) => e.trim()).filter((e) => e !== '');
    if (entries.length > 0 && entries.every(isAddressOrCidr)) return entries;
    ctx.addIssue({
      code: 'custom',
      message: 'LATCHKEY_TRUST_PROXY must be false, a number of proxy hops, or a comma-separated list of proxy addresses/CIDRs',
    });
    return z.NEVER;
  })
  .optional();

/** A rate limit written as "COUNT/SECONDS" (e.g. 10/300), or "off". */
export interface RateLimitSetting {
  limit: number;
  windowSeconds: number;
}

const rateLimit = (name: string, fallback: string) =>
  z
    .string()
    .trim()
    .optional()
    .transform((value, ctx): RateLimitSetting | undefined => {
      const text = value ?? fallback;
      if (text === 'off') return undefined;
      const match = /^(\d{1,6})\/(\d{1,6})$/.exec(text);
      if (!match || Number(match[1]) < 1 || Number(match[2]) < 1) {
        ctx.addIssue({ code: 'custom', message: `${name} must be COUNT/SECONDS (for example ${fallback}) or off` });
        return z.NEVER;
      }
      return { limit: Number(match[1]), windowSeconds: Number(match[2]) };
    });

const logLevels = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

const environmentSchema = z.object({
  PORT: z
    .string()
    .trim()
    .regex(/^\d{1,5}$/, 'PORT must be a port number')
    .transform(Number)
    .pipe(z.number().int().min(0).max(65535, 'PORT must be at most 65535'))
    .optional()
    .transform((v) => v ?? 3000),
  HOST: optionalText.transform((v) => v ?? '127.0.0.1'),
  LATCHKEY_ISSUER: optionalText.pipe(
    z
      .string()
      .refine(isIssuerUrl, 'LATCHKEY_ISSUER must be an http(s) URL with no query or fragment')
      .optional(),
  ),
  // A postgres:// URL, or else the path of a SQLite file. The message never repeats the value: it may hold a password.
  LATCHKEY_DB: optionalText
    .transform((v) => v ?? './data/latchkey.db')
    .refine(
      (v) => !isPostgresUrl(v) || isValidPostgresUrl(v),
      'LATCHKEY_DB is not a valid postgres:// URL (percent-encode any @ : / % in the user name or password)',
    ),
  // Never repeated in a message: it is a secret.
  LATCHKEY_SECRET_KEY: optionalText.pipe(
    z
      .string()
      .refine(
        (v) => parseSecretKeys(v) !== undefined,
        'LATCHKEY_SECRET_KEY must be one or more 256-bit keys, comma-separated, each 43 base64url characters or 64 hex digits (make one with: latchkey secret-key generate)',
      )
      .optional(),
  ),
  LATCHKEY_SECRET_KEY_FILE: optionalText,
  LATCHKEY_BOOTSTRAP_USER: optionalText.pipe(
    z.string().regex(/^[A-Za-z0-9._@-]{1,64}$/, 'LATCHKEY_BOOTSTRAP_USER must be 1-64 letters, digits or ._@-').optional(),
  ),
  LATCHKEY_BOOTSTRAP_PASSWORD: optionalText.pipe(
    z.string().min(8, 'LATCHKEY_BOOTSTRAP_PASSWORD must be at least 8 characters').max(1024).optional(),
  ),
  LATCHKEY_LOG_LEVEL: optionalText.pipe(
    z.enum(logLevels, { error: `LATCHKEY_LOG_LEVEL must be one of ${logLevels.join(', ')}` }).optional(),
  ),
  LATCHKEY_SIGNING_ALG: optionalText.pipe(
    z.enum(signingAlgorithms, { error: `LATCHKEY_SIGNING_ALG must be one of ${signingAlgorithms.join(', ')}` }).optional(),
  ),
  LATCHKEY_WORKERS: optionalText.pipe(
    z
      .string()
      .regex(/^\d{1,3}$/, 'LATCHKEY_WORKERS must be a whole number of processes')
      .transform(Number)
      .pipe(z.number().int().min(1, 'LATCHKEY_WORKERS must be at least 1').max(64, 'LATCHKEY_WORKERS must be at most 64'))
      .optional(),
  ),
  LATCHKEY_DEVICE_CODE_TTL: seconds('LATCHKEY_DEVICE_CODE_TTL', 900, 10, 86400),
  LATCHKEY_DEVICE_INTERVAL: seconds('LATCHKEY_DEVICE_INTERVAL', 5, 1, 600),
  LATCHKEY_ACCESS_TOKEN_TTL: seconds('LATCHKEY_ACCESS_TOKEN_TTL', 86400, 1, 365 * 86400),
  LATCHKEY_REFRESH_TOKEN_TTL: seconds('LATCHKEY_REFRESH_TOKEN_TTL', 30 * 86400, 60, 10 * 365 * 86400),
  LATCHKEY_REFRESH_TOKEN_IDLE_TTL: seconds('LATCHKEY_REFRESH_TOKEN_IDLE_TTL', 14 * 86400, 60, 10 * 365 * 86400),
  LATCHKEY_REFRESH_REUSE_GRACE: seconds('LATCHKEY_REFRESH_REUSE_GRACE', 5, 0, 300),
  LATCHKEY_RETRY_WINDOW: seconds('LATCHKEY_RETRY_WINDOW', 300, 0, 3600),
  LATCHKEY_DB_TIMEOUT: seconds('LATCHKEY_DB_TIMEOUT', 5, 1, 300),
  LATCHKEY_HOUSEKEEPING_INTERVAL: seconds('LATCHKEY_HOUSEKEEPING_INTERVAL', 60, 1, 86400),
  LATCHKEY_AUDIT_RETENTION: seconds('LATCHKEY_AUDIT_RETENTION', 365 * 86400, 86400, 10 * 365 * 86400),
  LATCHKEY_SHUTDOWN_TIMEOUT: seconds('LATCHKEY_SHUTDOWN_TIMEOUT', 8, 1, 600),
  LATCHKEY_UPSTREAM_TIMEOUT: seconds('LATCHKEY_UPSTREAM_TIMEOUT', 10, 1, 120),
  LATCHKEY_MFA: optionalText.pipe(z.enum(mfaPolicies, { error: `LATCHKEY_MFA must be one of ${mfaPolicies.join(', ')}` }).optional()),
  LATCHKEY_ID_TOKEN_SCOPE_CLAIMS: optionalText.pipe(z.enum(idTokenScopeClaimModes, { error: 'LATCHKEY_ID_TOKEN_SCOPE_CLAIMS must be basic or none' }).optional()),
  LATCHKEY_SESSION_TTL: seconds('LATCHKEY_SESSION_TTL', 12 * 3600, 60, 90 * 86400),
  LATCHKEY_DEFAULT_AUDIENCE: optionalText.pipe(z.string().max(2048).optional()),
  LATCHKEY_TRUST_PROXY: trustProxySchema,
  LATCHKEY_OUTBOUND_ALLOW: optionalText.transform((value, ctx): OutboundAllowList => {
    const allow = value === undefined ? emptyAllowList : parseOutboundAllowList(value);
    if (allow !== undefined) return allow;
    ctx.addIssue({
      code: 'custom',
      message: 'LATCHKEY_OUTBOUND_ALLOW must be a comma-separated list of host names, IP addresses and CIDR blocks (for example jwks.corp.example,10.20.0.0/16)',
    });
    return z.NEVER;
  }),
  LATCHKEY_METRICS_TOKEN: optionalText.pipe(z.string().min(16, 'LATCHKEY_METRICS_TOKEN must be at least 16 characters').max(512).optional()),
  LATCHKEY_PRODUCT_NAME: optionalText.pipe(
    z.string().max(60, 'LATCHKEY_PRODUCT_NAME must be at most 60 characters').optional(),
  ),
  LATCHKEY_ACCENT_COLOR: optionalText.pipe(
    z
      .string()
      .regex(/^#([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$/, 'LATCHKEY_ACCENT_COLOR must be a hex colour such as #3451d1')
      .optional(),
  ),
  LATCHKEY_RATE_LIMIT_USER_CODE: rateLimit('LATCHKEY_RATE_LIMIT_USER_CODE', '10/300'),
  LATCHKEY_RATE_LIMIT_UNKNOWN_DEVICE_CODE: rateLimit('LATCHKEY_RATE_LIMIT_UNKNOWN_DEVICE_CODE', '30/300'),
  LATCHKEY_RATE_LIMIT_DEVICE_AUTHORIZATION: rateLimit('LATCHKEY_RATE_LIMIT_DEVICE_AUTHORIZATION', '30/60'),
  LATCHKEY_RATE_LIMIT_SIGNIN_ACCOUNT: rateLimit('LATCHKEY_RATE_LIMIT_SIGNIN_ACCOUNT', '5/30'),
  LATCHKEY_RATE_LIMIT_SIGNIN_ADDRESS: rateLimit('LATCHKEY_RATE_LIMIT_SIGNIN_ADDRESS', '20/30'),
  LATCHKEY_RATE_LIMIT_SIGNIN_ACCOUNT_TOTAL: rateLimit('LATCHKEY_RATE_LIMIT_SIGNIN_ACCOUNT_TOTAL', '20/3600'),
  LATCHKEY_RATE_LIMIT_SECOND_FACTOR: rateLimit('LATCHKEY_RATE_LIMIT_SECOND_FACTOR', '10/60'),
  LATCHKEY_RATE_LIMIT_PASSWORD_RESET: rateLimit('LATCHKEY_RATE_LIMIT_PASSWORD_RESET', '5/900'),
  // Never repeated in a message: it may hold the mail server's password.
  LATCHKEY_SMTP_URL: optionalText.pipe(
    z
      .string()
      .refine(
        (v) => parseSmtpUrl(v) !== undefined,
        'LATCHKEY_SMTP_URL must be smtp://[user:password@]host[:port] or smtps://… with nothing after the port (percent-encode any @ : / % in the user name or password)',
      )
      .optional(),
  ),
  LATCHKEY_MAIL_FROM: optionalText.pipe(
    z
      .string()
      .refine((v) => parseMailAddress(v) !== undefined, 'LATCHKEY_MAIL_FROM must be an address such as no-reply@example.com or Name <no-reply@example.com>')
      .optional(),
  ),
});

export type LogLevel = (typeof logLevels)[number];

export interface Config {
  /** Public base URL, without a trailing slash. */
  readonly issuer: string;
  readonly port: number;
  readonly host: string;
  /** LATCHKEY_DB: a SQLite file path or a postgres:// URL (which may hold a password: print it with redactDatabase). */
  readonly databasePath: string;
  /** LATCHKEY_SECRET_KEY: the keys that encrypt server secrets at rest, the first the current one. */
  readonly secretKeys: SecretKey[] | undefined;
  /**
   * Where the key lives when LATCHKEY_SECRET_KEY is unset: LATCHKEY_SECRET_KEY_FILE, else
   * `<database>.key` beside a SQLite file; undefined for an in-memory database.
   */
  readonly secretKeyFile: string | undefined;
  readonly bootstrapUser: string | undefined;
  readonly bootstrapPassword: string | undefined;
  readonly logLevel: LogLevel;
  /** Algorithm of access tokens (id_tokens are always RS256). */
  readonly signingAlg: SigningAlgorithm;
  /** Server processes sharing the port (node:cluster); 1 = no cluster. */
  readonly workers: number;
  readonly deviceCodeTtl: number;
  readonly deviceInterval: number;
  readonly accessTokenTtl: number;
  /** Absolute lifetime of a refresh-token family, from the sign-in. */
  readonly refreshTokenTtl: number;
  /** A refresh token unused this long expires (each rotation starts a new idle period). */
  readonly refreshTokenIdleTtl: number;
  /** Seconds after a rotation in which reusing the old token gets a fresh pair instead of revoking the family; 0 = off. */
  readonly refreshReuseGrace: number;
  /**
   * Seconds after a refresh token's rotation, or a device code's redemption, in which a client
   * whose answer was lost may present it again: it gets a new pair and the unused one from the
   * lost answer is revoked, so the family keeps one live branch (RFC 9700 §4.14.2); 0 = off.
   */
  readonly retryWindow: number;
  /** Seconds a PostgreSQL statement, a wait for a connection, or a request's transaction may take (LATCHKEY_DB_TIMEOUT). */
  readonly databaseTimeout: number;
  readonly sessionTtl: number;
  /** Seconds between purges of expired rows. */
  readonly housekeepingInterval: number;
  /** How long the stored audit log keeps an event (the console's audit page); older ones are purged. */
  readonly auditRetention: number;
  /** Seconds a shutdown waits for requests in flight before closing their connections. */
  readonly shutdownTimeout: number;
  /** Seconds any one request to an upstream identity provider (OIDC, GitHub, LDAP) may take. */
  readonly upstreamTimeout: number;
  /** Second factors: `off`, `optional` (people with a factor use it), `required` (everyone has one). */
  readonly mfa: MfaPolicy;
  /**
   * `basic`: id_tokens carry email/email_verified and name/preferred_username for the email and
   * profile scopes (the contract); `none`: only at userinfo, as OIDC Core §5.4 puts them.
   */
  readonly idTokenScopeClaims: (typeof idTokenScopeClaimModes)[number];
  /** `aud` of access tokens requested without `audience`. */
  readonly defaultAudience: string;
  /**
   * Which peers may set X-Forwarded-For: false (none; the socket address is the client), the
   * number of proxy hops in front, or the proxies' addresses/CIDRs.
   */
  readonly trustProxy: TrustProxy;
  /**
   * LATCHKEY_OUTBOUND_ALLOW: internal hosts and address blocks that clients which registered
   * themselves may still name as a back-channel logout URI or jwks_uri (public addresses always may).
   */
  readonly outboundAllow: OutboundAllowList;
  /** Cookies get `Secure` (and the `__Host-` prefix) when the issuer is https. */
  readonly secureCookies: boolean;
  /** When set, GET /metrics requires `Authorization: Bearer <this>`. */
  readonly metricsToken: string | undefined;
  /** The name the pages show. */
  readonly productName: string;
  /** The pages' accent colour (#rrggbb), or undefined for the built-in light and dark accents. */
  readonly accentColor: string | undefined;
  /** LATCHKEY_SMTP_URL: where mail goes out; undefined = no password reset or email verification by mail. */
  readonly smtp: SmtpSettings | undefined;
  /** LATCHKEY_MAIL_FROM, else the product name and no-reply@ the issuer's host. */
  readonly mailFrom: MailAddress;
  /** Each undefined when set to "off". */
  readonly rateLimits: {
    /** Wrong user codes at /activate per address: COUNT per SECONDS. */
    readonly userCode: RateLimitSetting | undefined;
    /** Unknown device codes at the token endpoint per address. */
    readonly unknownDeviceCode: RateLimitSetting | undefined;
    /** Device authorization requests per client and address. */
    readonly deviceAuthorization: RateLimitSetting | undefined;
    /**
     * Failed sign-ins per account from one address (or one browser the account signed in on
     * before): after COUNT failures a wait of SECONDS, doubling with each further failure.
     */
    readonly signInAccount: RateLimitSetting | undefined;
    /** Failed sign-ins per address, with the same growing back-off. */
    readonly signInAddress: RateLimitSetting | undefined;
    /** Failed sign-ins per account from unknown browsers, everywhere: past COUNT in SECONDS, attempts are slowed. */
    readonly signInAccountTotal: RateLimitSetting | undefined;
    /**
     * Failed second factors per person, from every address and browser the person never signed in
     * on: after COUNT failures a wait of SECONDS, doubling with each further failure. A right
     * password does not clear it (only a passed second factor does), so someone who has the
     * password cannot guess codes by signing in again between guesses.
     */
    readonly secondFactor: RateLimitSetting | undefined;
    /** "Forgot your password?" requests per address (every request counts, whether or not an account uses the address typed). */
    readonly passwordReset: RateLimitSetting | undefined;
  };
}

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(problems.join('\n'));
    this.name = 'ConfigError';
  }
}

export function isIssuerUrl(value: string): boolean {
  try {
    const url = new URL(value);
    // URL drops an empty "?" or "#", so the raw text is checked too: the issuer is a prefix of every address.
    return (url.protocol === 'http:' || url.protocol === 'https:') && !/[?#]/.test(value);
  } catch {
    return false;
  }
}

/** Reads the environment; throws ConfigError with one line per bad variable. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  // A variable set to nothing (FOO= in a unit file or compose file) means "use the default".
  const given = Object.fromEntries(Object.entries(env).filter(([, value]) => value !== undefined && value.trim() !== ''));
  const parsed = environmentSchema.safeParse(given);
  if (!parsed.success) {
    // One line per variable: the first problem found with it.
    const problems = new Map<string, string>();
    for (const issue of parsed.error.issues) {
      const variable = String(issue.path[0] ?? 'environment');
      if (!problems.has(variable)) problems.set(variable, issue.message.startsWith(variable) ? issue.message : `${variable}: ${issue.message}`);
    }
    throw new ConfigError([...problems.values()]);
  }
  const e = parsed.data;
  const issuer = (e.LATCHKEY_ISSUER ?? `http://localhost:${e.PORT}`).replace(/\/+$/, '');
  const postgres = isPostgresUrl(e.LATCHKEY_DB);
  if (postgres && e.LATCHKEY_SECRET_KEY === undefined && e.LATCHKEY_SECRET_KEY_FILE === undefined) {
    throw new ConfigError([
      'LATCHKEY_SECRET_KEY must be set when LATCHKEY_DB is a postgres:// URL: every instance needs the same key to read the encrypted server secrets (make one with: latchkey secret-key generate)',
    ]);
  }
  const secretKeyFile =
    e.LATCHKEY_SECRET_KEY_FILE ?? (postgres || e.LATCHKEY_DB === ':memory:' ? undefined : `${e.LATCHKEY_DB}.key`);
  return Object.freeze({
    issuer,
    port: e.PORT,
    host: e.HOST,
    databasePath: e.LATCHKEY_DB,
    secretKeys: e.LATCHKEY_SECRET_KEY === undefined ? undefined : parseSecretKeys(e.LATCHKEY_SECRET_KEY),
    secretKeyFile: e.LATCHKEY_SECRET_KEY === undefined ? secretKeyFile : undefined,
    bootstrapUser: e.LATCHKEY_BOOTSTRAP_USER,
    bootstrapPassword: e.LATCHKEY_BOOTSTRAP_PASSWORD,
    logLevel: e.LATCHKEY_LOG_LEVEL ?? 'info',
    signingAlg: e.LATCHKEY_SIGNING_ALG ?? 'RS256',
    workers: e.LATCHKEY_WORKERS ?? 1,
    deviceCodeTtl: e.LATCHKEY_DEVICE_CODE_TTL,
    deviceInterval: e.LATCHKEY_DEVICE_INTERVAL,
    accessTokenTtl: e.LATCHKEY_ACCESS_TOKEN_TTL,
    refreshTokenTtl: e.LATCHKEY_REFRESH_TOKEN_TTL,
    refreshTokenIdleTtl: e.LATCHKEY_REFRESH_TOKEN_IDLE_TTL,
    refreshReuseGrace: e.LATCHKEY_REFRESH_REUSE_GRACE,
    retryWindow: e.LATCHKEY_RETRY_WINDOW,
    databaseTimeout: e.LATCHKEY_DB_TIMEOUT,
    sessionTtl: e.LATCHKEY_SESSION_TTL,
    housekeepingInterval: e.LATCHKEY_HOUSEKEEPING_INTERVAL,
    auditRetention: e.LATCHKEY_AUDIT_RETENTION,
    shutdownTimeout: e.LATCHKEY_SHUTDOWN_TIMEOUT,
    upstreamTimeout: e.LATCHKEY_UPSTREAM_TIMEOUT,
    mfa: e.LATCHKEY_MFA ?? 'optional',
    idTokenScopeClaims: e.LATCHKEY_ID_TOKEN_SCOPE_CLAIMS ?? 'basic',
    defaultAudience: e.LATCHKEY_DEFAULT_AUDIENCE ?? `${issuer}/userinfo`,
    trustProxy: e.LATCHKEY_TRUST_PROXY ?? false,
    outboundAllow: e.LATCHKEY_OUTBOUND_ALLOW,
    secureCookies: issuer.startsWith('https:'),
    metricsToken: e.LATCHKEY_METRICS_TOKEN,
    productName: e.LATCHKEY_PRODUCT_NAME?.trim() ?? 'Latchkey',
    accentColor: e.LATCHKEY_ACCENT_COLOR === undefined ? undefined : expandHex(e.LATCHKEY_ACCENT_COLOR.toLowerCase()),
    smtp: e.LATCHKEY_SMTP_URL === undefined ? undefined : parseSmtpUrl(e.LATCHKEY_SMTP_URL),
    mailFrom: Object.freeze(
      (e.LATCHKEY_MAIL_FROM === undefined ? undefined : parseMailAddress(e.LATCHKEY_MAIL_FROM)) ?? {
        name: e.LATCHKEY_PRODUCT_NAME?.trim() ?? 'Latchkey',
        address: `no-reply@${new URL(issuer).hostname}`,
      },
    ),
    rateLimits: Object.freeze({
      userCode: e.LATCHKEY_RATE_LIMIT_USER_CODE,
      unknownDeviceCode: e.LATCHKEY_RATE_LIMIT_UNKNOWN_DEVICE_CODE,
      deviceAuthorization: e.LATCHKEY_RATE_LIMIT_DEVICE_AUTHORIZATION,
      signInAccount: e.LATCHKEY_RATE_LIMIT_SIGNIN_ACCOUNT,
      signInAddress: e.LATCHKEY_RATE_LIMIT_SIGNIN_ADDRESS,
      signInAccountTotal: e.LATCHKEY_RATE_LIMIT_SIGNIN_ACCOUNT_TOTAL,
      secondFactor: e.LATCHKEY_RATE_LIMIT_SECOND_FACTOR,
      passwordReset: e.LATCHKEY_RATE_LIMIT_PASSWORD_RESET,
    }),
  });
}

function expandHex(color: string): string {
  return color.length === 4 ? `#${Array.from(color.slice(1)).map((c) => c + c).join('')}` : color;
}

/** A config for tests and tools: defaults plus overrides, validated the same way. */
export function configFrom(overrides: Record<string, string>): Config {
  return loadConfig({ ...overrides });
}

/**
 * How long a retired signing key stays published: the longest lifetime of anything it signed
 * (access tokens; id_tokens live at most an hour).
 */
export function retiredKeyRetention(config: Config): number {
  // Plus a minute: a process may sign with a key for up to a second after another retired it.
  return Math.max(config.accessTokenTtl, 3600) + 60;
}

/** What the `latchkey login | token | whoami | logout` commands take from the environment. */
export interface ClientConfig {
  /** Default issuer: LATCHKEY_ISSUER, else http://localhost:3000. */
  readonly issuer: string;
  /** Where credentials live: LATCHKEY_HOME, else ~/.latchkey. */
  readonly home: string;
  /** An SSH session with no display: a browser cannot open here. */
  readonly sshWithoutDisplay: boolean;
  /** BROWSER, the conventional way to name the browser command. */
  readonly browserCommand: string | undefined;
}

export function loadClientConfig(env: NodeJS.ProcessEnv, homeDir: string): ClientConfig {
  const issuer = env.LATCHKEY_ISSUER?.trim() || 'http://localhost:3000';
  if (!isIssuerUrl(issuer)) throw new ConfigError(['LATCHKEY_ISSUER must be an http(s) URL with no query or fragment']);
  const ssh = Boolean(env.SSH_CONNECTION || env.SSH_TTY || env.SSH_CLIENT);
  const display = Boolean(env.DISPLAY || env.WAYLAND_DISPLAY);
  return Object.freeze({
    issuer: issuer.replace(/\/+$/, ''),
    home: env.LATCHKEY_HOME?.trim() || `${homeDir}/.latchkey`,
    sshWithoutDisplay: ssh && !display && process.platform !== 'darwin' && process.platform !== 'win32',
    browserCommand: env.BROWSER?.trim() || undefined,
  });
}
