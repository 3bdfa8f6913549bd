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
import { durationInWords, recordEnvironmentNames, type SettingAbout } from './config_metadata.js';

/** A setting's own words; the helpers below add what follows from how they parse. */
type SettingWords = Pick<SettingAbout, 'group' | 'description'>;

const seconds = (name: string, fallback: number, min: number, max: number, words: SettingWords) =>
  z
    .string()
    .trim()
    .regex(/^\d{1,12}$/, `${name} must be a whole number of seconds`)
    .transform(Number)
    .pipe(z.number().int().min(min, `${name} must be at least ${min}`).max(max, `${name} must be at most ${max}`))
    .optional()
    .transform((v) => v ?? fallback)
    .meta({
      ...words,
      accepts: `whole seconds from ${secondsInWords(min)} to ${secondsInWords(max)}`,
      envDefault: String(fallback),
      unit: 'seconds',
    } satisfies SettingAbout);

function secondsInWords(value: number): string {
  const words = durationInWords(value);
  return words === undefined ? String(value) : `${value} (${words})`;
}

/** The accepted values of an enumerated setting, as the reference shows them. */
function oneOf(values: readonly string[]): string {
  return values.map((value) => `\`${value}\``).join(', ');
}

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
    const entries = value
      .split(',')
      .map((e) => e.trim())
      .filter((e) => e !== '');
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

const rateLimit = (name: string, fallback: string, words: SettingWords) =>
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
    })
    .meta({
      ...words,
      accepts: '`COUNT/SECONDS` (each a whole number from 1 to 999999), or `off`',
      envDefault: fallback,
    } satisfies SettingAbout);

const logLevels = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
const logFormats = ['auto', 'text', 'json'] as const;

/** The server's settings, each described for the configuration reference (config_reference.ts). */
export const environmentSchema = z.object({
  PORT: z
    .string()
    .trim()
    .regex(/^\d{1,5}$/, 'PORT must be a port number')
    .transform(Number)
    .pipe(z.number().int().min(0).max(65535, 'PORT must be at most 65535'))
    .optional()
    .transform((v) => v ?? 3000)
    .meta({
      group: 'server',
      accepts: 'a TCP port number from 0 to 65535 (`0`: any free port)',
      envDefault: '3000',
      description: 'The TCP port the server listens on. While `LATCHKEY_ISSUER` is unset, the issuer is `http://localhost:` and this port.',
    } satisfies SettingAbout),
  HOST: optionalText
    .transform((v) => v ?? '127.0.0.1')
    .meta({
      group: 'server',
      accepts: 'an IP address or a host name of this machine',
      envDefault: '127.0.0.1',
      description:
        'The address the server listens on. The default, loopback only, suits a trial on your own machine or a reverse proxy on the same host; `0.0.0.0` (or `::`) listens on every interface, as the Docker image does.',
    } satisfies SettingAbout),
  LATCHKEY_ISSUER: optionalText.pipe(z.string().refine(isIssuerUrl, 'LATCHKEY_ISSUER must be an http(s) URL with no query or fragment').optional()).meta({
    group: 'server',
    accepts: 'an `http://` or `https://` URL with no query or fragment (a trailing `/` is dropped)',
    whenUnset: '`http://localhost:$PORT`',
    description:
      "The server's public base URL, the one people and clients use: the `iss` of every token (RFC 9068 §2.2, OIDC Core §2), the `issuer` of discovery (RFC 8414 §2, which like OpenID Connect Discovery 1.0 §3 allows no query or fragment), and the base of every address the server hands out (`verification_uri`, the connectors' `{issuer}/connectors/<id>/callback`, the endpoints in discovery). Give every instance the same one. Use an `https://` URL in production: cookies then get `Secure` and the `__Host-` prefix, pages send HSTS, and passkeys work (WebAuthn needs a secure origin; `http://localhost` is accepted for development).",
  } satisfies SettingAbout),
  // A postgres:// URL, or else the path of a SQLite file. The message never repeats the value: it may hold a password.
  LATCHKEY_DB: optionalText
    .transform((v) => v ?? './data/latchkey.db')
    .refine(
      (v) => !isPostgresUrl(v) || isValidPostgresUrl(v),
      'LATCHKEY_DB is not a valid postgres:// URL (percent-encode any @ : / % in the user name or password)',
    )
    .meta({
      group: 'database',
      accepts:
        'the path of a SQLite file, `:memory:`, or a `postgres://user:password@host:port/database` URL (`postgresql://` too; percent-encode any `@ : / %` in the user name or password)',
      envDefault: './data/latchkey.db',
      description:
        'Where the data lives. A SQLite file is created, with its folder (mode 0700; the file 0600), on first start; `:memory:` keeps everything in memory until the process ends. A `postgres://` URL lets several instances share one PostgreSQL database (13 or later) behind one load balancer; it then needs `LATCHKEY_SECRET_KEY` or `LATCHKEY_SECRET_KEY_FILE`, and a direct connection or a pooler in session mode (the directory cache uses `LISTEN`). Migrations run at start either way (on PostgreSQL under an advisory lock, so instances started together apply each one once). The administration commands open the same database. The password in a URL is never printed; it may also be left out and come from `PGPASSWORD` or `~/.pgpass`, which the `pg` driver reads.',
    } satisfies SettingAbout),
  // Never repeated in a message: it is a secret.
  LATCHKEY_SECRET_KEY: optionalText
    .pipe(
      z
        .string()
        .refine(
          (v) => parseSecretKeys(v) !== undefined,
          'LATCHKEY_SECRET_KEY must be one or more 256-bit keys, comma-separated, each 43 base64url characters or 64 hex digits (make one with: latchkey secret-key generate)',
        )
        .optional(),
    )
    .meta({
      group: 'secrets',
      accepts: 'one or more 256-bit keys, comma-separated, each 43 base64url characters or 64 hex digits (`latchkey secret-key generate` prints one)',
      whenUnset: 'the key comes from the key file (`LATCHKEY_SECRET_KEY_FILE`); with a `postgres://` database one of the two must be set',
      secret: true,
      description:
        "The key that encrypts the server's secrets stored in the database (the signing keys' private keys, the HMAC keys of CSRF tokens and user codes, TOTP secrets, connectors' client secrets and bind passwords) with AES-256-GCM, each bound to its row, so that a stolen database or backup cannot forge a token. While rotating, list several: the first encrypts, all decrypt (`latchkey secret-key rotate` re-encrypts under the first). The key must belong to the database: a server or command given another refuses to start, naming the key the database needs. With a `postgres://` database every instance, and every administration command, needs the same key. Keep it apart from database backups.",
    } satisfies SettingAbout),
  LATCHKEY_SECRET_KEY_FILE: optionalText.meta({
    group: 'secrets',
    accepts: 'a file path',
    whenUnset: '`<LATCHKEY_DB>.key` beside a SQLite file (`./data/latchkey.db.key`); none for `:memory:` or PostgreSQL',
    description:
      'Where the secret key lives while `LATCHKEY_SECRET_KEY` is unset: one key per line (`#` starts a comment), the first the current one. The default file is created with mode 0600 on first start (never for a database whose secrets are already encrypted), and `latchkey secret-key rotate` rewrites it. Back it up separately from the database: point this outside the data folder (a mounted secret, say) or exclude the `.key` file from copies. With a `postgres://` database, a file every instance mounts can stand in for `LATCHKEY_SECRET_KEY`.',
  } satisfies SettingAbout),
  LATCHKEY_BOOTSTRAP_USER: optionalText
    .pipe(
      z
        .string()
        .regex(/^[A-Za-z0-9._@-]{1,64}$/, 'LATCHKEY_BOOTSTRAP_USER must be 1-64 letters, digits or ._@-')
        .optional(),
    )
    .meta({
      group: 'first-start',
      accepts: 'a username: 1 to 64 letters, digits or `. _ @ -`',
      whenUnset: '`admin`',
      description:
        'On a database with no users, the start creates this user, holding the built-in `admin` role (the admin console). Ignored once any user exists.',
    } satisfies SettingAbout),
  LATCHKEY_BOOTSTRAP_PASSWORD: optionalText.pipe(z.string().min(8, 'LATCHKEY_BOOTSTRAP_PASSWORD must be at least 8 characters').max(1024).optional()).meta({
    group: 'first-start',
    accepts: '8 to 1024 characters',
    whenUnset: 'a random password, kept sealed and shown on the terminal at each start until that user signs in or it is changed',
    secret: true,
    description:
      'The password of the user `LATCHKEY_BOOTSTRAP_USER` creates on a database with no users. Ignored once any user exists; change it afterwards with `latchkey users passwd`.',
  } satisfies SettingAbout),
  LATCHKEY_LOG_LEVEL: optionalText.pipe(z.enum(logLevels, { error: `LATCHKEY_LOG_LEVEL must be one of ${logLevels.join(', ')}` }).optional()).meta({
    group: 'operations',
    accepts: oneOf(logLevels),
    envDefault: 'info',
    description:
      'The least severe pino level written. Logs are pino lines on stdout (JSON, or one readable line each: `LATCHKEY_LOG_FORMAT`): one line per request (method, path without its query string, status, time, client address, and the OAuth error of a refused request) and audit events with a stable `event` field. Authorization headers, cookies and secret form fields are redacted at every level.',
  } satisfies SettingAbout),
  LATCHKEY_LOG_FORMAT: optionalText.pipe(z.enum(logFormats, { error: `LATCHKEY_LOG_FORMAT must be one of ${logFormats.join(', ')}` }).optional()).meta({
    group: 'operations',
    accepts: oneOf(logFormats),
    envDefault: 'auto',
    description:
      "Who reads what `latchkey serve` and the admin commands write. `text`: a person — the server's start is said in sentences on stderr (the first user's generated password among them) and its log lines are one readable line each on stdout; admin commands print their sentences only (each audit event is still stored, for the admin console). `json`: a machine — the start, its notices and warnings are pino JSON lines on stdout like every other log line, the first user's password is never written, and admin commands add their audit event as a JSON line on stderr. `auto`: `text` when stderr is a terminal, else `json`.",
  } satisfies SettingAbout),
  LATCHKEY_SIGNING_ALG: optionalText
    .pipe(z.enum(signingAlgorithms, { error: `LATCHKEY_SIGNING_ALG must be one of ${signingAlgorithms.join(', ')}` }).optional())
    .meta({
      group: 'secrets',
      accepts: oneOf(signingAlgorithms),
      envDefault: 'RS256',
      description:
        'The algorithm that signs access tokens. `RS256` is verified by every JWT library; `ES256` (P-256) and `EdDSA` (Ed25519) are about ten times cheaper to sign. id_tokens are always signed with RS256, the one algorithm every OpenID Connect relying party must accept (OIDC Core §15.1), so with `ES256` or `EdDSA` the JWKS holds two active keys. Changing it needs no key rotation: the next start creates a key for the new algorithm and keeps publishing the old one until what it signed has expired.',
    } satisfies SettingAbout),
  LATCHKEY_WORKERS: optionalText
    .pipe(
      z
        .string()
        .regex(/^\d{1,3}$/, 'LATCHKEY_WORKERS must be a whole number of processes')
        .transform(Number)
        .pipe(z.number().int().min(1, 'LATCHKEY_WORKERS must be at least 1').max(64, 'LATCHKEY_WORKERS must be at most 64'))
        .optional(),
    )
    .meta({
      group: 'server',
      accepts: 'a whole number of processes from 1 to 64',
      envDefault: '1',
      description:
        "Server processes sharing the port. Above 1, `latchkey serve` becomes a node:cluster primary that applies the migrations, runs housekeeping and forks this many workers on the same database; a worker that dies is replaced, and `/metrics` answers for the whole cluster. Use about one per core: more only adds contention for SQLite's single writer. On SQLite each worker counts rate limits in its own memory and allows its share of each limit (see [Rate limits](#rate-limits)).",
    } satisfies SettingAbout),
  LATCHKEY_DEVICE_CODE_TTL: seconds('LATCHKEY_DEVICE_CODE_TTL', 900, 10, 86400, {
    group: 'tokens',
    description:
      'How long a device code and its user code stay valid: the `expires_in` of the device authorization response (RFC 8628 §3.2). Past it the device is answered `expired_token` (RFC 8628 §3.5).',
  }),
  LATCHKEY_DEVICE_INTERVAL: seconds('LATCHKEY_DEVICE_INTERVAL', 5, 1, 600, {
    group: 'tokens',
    description:
      "The minimum time between a device's polls of the token endpoint: the `interval` of the device authorization response (RFC 8628 §3.2). A pending device polling sooner gets `slow_down`, and its interval grows by 5 seconds from then on (RFC 8628 §3.5).",
  }),
  LATCHKEY_ACCESS_TOKEN_TTL: seconds('LATCHKEY_ACCESS_TOKEN_TTL', 86400, 1, 365 * 86400, {
    group: 'tokens',
    description:
      'The lifetime of an access token (its `exp`, and `expires_in` in the token response). It is how long a stolen or revoked access token keeps working at an API that checks JWTs itself; userinfo and introspection refuse a revoked one at once whatever its lifetime. An hour or less is the safer choice where APIs validate locally. A retired signing key stays published for this long (at least an hour) plus a minute.',
  }),
  LATCHKEY_REFRESH_TOKEN_TTL: seconds('LATCHKEY_REFRESH_TOKEN_TTL', 30 * 86400, 60, 10 * 365 * 86400, {
    group: 'tokens',
    description: 'The absolute lifetime of a refresh-token family, counted from the sign-in: rotation never extends it. After it the person signs in again.',
  }),
  LATCHKEY_BROWSER_REFRESH_LIFETIME: seconds('LATCHKEY_BROWSER_REFRESH_LIFETIME', 86400, 60, 30 * 86400, {
    group: 'tokens',
    description:
      'The absolute lifetime of a refresh-token family issued to a browser application: a public client with a web origin (`clients add --web-origin`). Its refresh tokens rotate on every use like any other, but the sign-in ends this long after it began, however often it was refreshed, because tokens held by code in a page are exposed to whatever script runs there (OAuth 2.0 for Browser-Based Applications; RFC 9700 §4.14.2). The shorter of this and `LATCHKEY_REFRESH_TOKEN_TTL` applies.',
  }),
  LATCHKEY_REFRESH_TOKEN_IDLE_TTL: seconds('LATCHKEY_REFRESH_TOKEN_IDLE_TTL', 14 * 86400, 60, 10 * 365 * 86400, {
    group: 'tokens',
    description: 'A refresh token unused this long expires; each rotation starts a new idle period for its successor.',
  }),
  LATCHKEY_REFRESH_REUSE_GRACE: seconds('LATCHKEY_REFRESH_REUSE_GRACE', 5, 0, 300, {
    group: 'tokens',
    description:
      'Refresh tokens rotate on every use, and presenting a rotated one is taken as theft: the whole family is revoked (RFC 9700 §4.14.2). Within this many seconds of the rotation, the same client presenting the old token again (two processes on one machine refreshing at the same moment) gets a pair of its own instead, and every one of those answers stays usable: at most two extra pairs per rotated token, none once one of its successors has been used, and at most five live branches per sign-in. `0` turns the grace off. One rule with `LATCHKEY_RETRY_WINDOW`: see [A token or code presented again](http-reference.md#a-token-or-code-presented-again).',
  }),
  LATCHKEY_RETRY_WINDOW: seconds('LATCHKEY_RETRY_WINDOW', 10, 0, 30, {
    group: 'tokens',
    description:
      "How long after a refresh token's rotation, or a device code's redemption, a client whose answer was lost (a restart or a dropped connection between the commit and the answer) may present the same token or code again; one setting for both. It gets a new answer, and the unused tokens of the lost one are revoked (RFC 9700 §4.14.2). This holds only while none of those tokens has been used, from 2 seconds (a refresh) or one polling interval (a device code) after the first answer, at most 5 times per refresh token or 3 times per device code, and for a device code redeemed with a DPoP proof only with a proof by the same key. Past it a device code is spent (`invalid_grant`, the device's tokens untouched) and a rotated refresh token presented again revokes its family. Seconds, not minutes: a lost answer is retried at once or at the next polling interval, and whoever presents the code or token within the window takes the answer. `0` turns retries off. See [A token or code presented again](http-reference.md#a-token-or-code-presented-again).",
  }),
  LATCHKEY_DB_TIMEOUT: seconds('LATCHKEY_DB_TIMEOUT', 5, 1, 300, {
    group: 'database',
    description:
      "PostgreSQL: how long one statement, a wait for a pooled connection, and a request's transaction up to its commit may take. Past it the work is rolled back and the request answered 503 `temporarily_unavailable` with `Retry-After`, so a locked table makes requests fail fast instead of hang. Migrations and the administration commands' bulk work have no such deadline.",
  }),
  LATCHKEY_HOUSEKEEPING_INTERVAL: seconds('LATCHKEY_HOUSEKEEPING_INTERVAL', 60, 1, 86400, {
    group: 'database',
    description:
      'The time between purges of expired rows: expired sessions and revoked-token entries, and codes, device grants and refresh tokens a day after they expired. Each purge works in small batches, so a backlog never holds up requests, and gives freed space back to the file system on SQLite.',
  }),
  LATCHKEY_AUDIT_RETENTION: seconds('LATCHKEY_AUDIT_RETENTION', 365 * 86400, 86400, 10 * 365 * 86400, {
    group: 'database',
    description:
      "How long the stored audit log (the admin console's audit page) keeps an event; older events are purged by housekeeping. Audit events written to the log are not affected.",
  }),
  LATCHKEY_SHUTDOWN_TIMEOUT: seconds('LATCHKEY_SHUTDOWN_TIMEOUT', 8, 1, 600, {
    group: 'server',
    description:
      'At SIGTERM or SIGINT the server stops accepting connections and finishes the requests in flight; connections still open after this many seconds are closed, then the database is closed and the process exits 0.',
  }),
  LATCHKEY_UPSTREAM_TIMEOUT: seconds('LATCHKEY_UPSTREAM_TIMEOUT', 10, 1, 120, {
    group: 'connectors',
    description:
      'How long any one request to an upstream identity provider (OpenID Connect, GitHub, LDAP) may take before the sign-in gives up with a page that says so (HTTP 502). A directory gets this deadline for each of its two steps: finding the entry, then binding as it and reading its groups.',
  }),
  LATCHKEY_MFA: optionalText.pipe(z.enum(mfaPolicies, { error: `LATCHKEY_MFA must be one of ${mfaPolicies.join(', ')}` }).optional()).meta({
    group: 'sign-in',
    accepts: oneOf(mfaPolicies),
    envDefault: 'optional',
    description:
      'Second factors (TOTP apps per RFC 6238, passkeys, recovery codes). `optional`: people who set one up use it at every sign-in, and a client may ask for one with `acr_values=urn:latchkey:mfa`. `required`: everyone; a person without a factor sets one up at their next sign-in, before any application or device is allowed. `off`: no second step and no passkeys, the settings page is closed, factors already set up are kept unused, and `acr_values=urn:latchkey:mfa` is refused with `unmet_authentication_requirements` (OIDC Core §3.1.2.6) rather than quietly given one factor. id_tokens say what was used in `amr` (RFC 8176) and `acr`.',
  } satisfies SettingAbout),
  LATCHKEY_ID_TOKEN_SCOPE_CLAIMS: optionalText
    .pipe(z.enum(idTokenScopeClaimModes, { error: 'LATCHKEY_ID_TOKEN_SCOPE_CLAIMS must be basic or none' }).optional())
    .meta({
      group: 'tokens',
      accepts: oneOf(idTokenScopeClaimModes),
      envDefault: 'basic',
      description:
        "`basic`: id_tokens carry `email`/`email_verified` for the `email` scope and `name`/`preferred_username` for the `profile` scope. `none`: those claims only at userinfo, as OIDC Core §5.4 puts them when an access token is issued (what the OpenID certification's scope tests expect). Either way the `address`, `phone` and further profile claims are at userinfo, and in id_tokens only when the `claims` parameter asks for them there (OIDC Core §5.5).",
    } satisfies SettingAbout),
  LATCHKEY_SESSION_TTL: seconds('LATCHKEY_SESSION_TTL', 12 * 3600, 60, 90 * 86400, {
    group: 'sign-in',
    description:
      'How long a sign-in in the browser lasts: while it does, `/authorize` and `/activate` ask for no password again (unless a client sends `prompt=login` or `max_age`).',
  }),
  LATCHKEY_DEFAULT_AUDIENCE: optionalText.pipe(z.string().max(2048).optional()).meta({
    group: 'tokens',
    accepts: 'an API identifier, at most 2048 characters',
    whenUnset: '`{issuer}/userinfo`: a token good for the userinfo endpoint only',
    description:
      'The `aud` of access tokens requested without `audience` or `resource` (RFC 8707). Name an API registered with `latchkey apis add` to give such tokens to that API.',
  } satisfies SettingAbout),
  LATCHKEY_TRUST_PROXY: trustProxySchema.meta({
    group: 'server',
    accepts:
      '`false` (or `0`), a number of proxy hops (`1` for one reverse proxy), or a comma-separated list of proxy addresses and CIDR blocks (`10.0.0.0/8,127.0.0.1`)',
    envDefault: 'false',
    whenUnset: "the socket's address is the client's",
    description:
      "Which peers may set `X-Forwarded-For`. Behind a reverse proxy, set it to the number of proxies in front or to their addresses, or every person shares the proxy's address for rate limits, audit events and the device confirmation page (which shows where a request came from, RFC 8628 §5.4). Trust only proxies that overwrite or append the header: a client can write anything in it.",
  } satisfies SettingAbout),
  LATCHKEY_OUTBOUND_ALLOW: optionalText
    .transform((value, ctx): OutboundAllowList => {
      const allow = value === undefined ? emptyAllowList : parseOutboundAllowList(value);
      if (allow !== undefined) return allow;
      ctx.addIssue({
        code: 'custom',
        message:
          'LATCHKEY_OUTBOUND_ALLOW must be a comma-separated list of host names, IP addresses and CIDR blocks (for example jwks.corp.example,10.20.0.0/16)',
      });
      return z.NEVER;
    })
    .meta({
      group: 'connectors',
      accepts:
        'a comma-separated list of host names (`jwks.corp.example`: every address it resolves to), IP addresses and CIDR blocks (`10.20.0.0/16`, `127.0.0.1`, `fd00::/8`: these addresses, whatever name leads there)',
      whenUnset: 'public addresses only',
      description:
        "Internal hosts that clients which registered themselves (RFC 7591) may still name as `backchannel_logout_uri` or `jwks_uri`. Without it, the server sends such clients' requests to public addresses only: an address that is loopback, private, link-local (the cloud metadata address among them), carrier-grade NAT, unspecified, multicast or reserved, judged on the address actually connected to after DNS, gets no request, so that a client cannot make the server reach into the internal network (server-side request forgery); redirects are not followed. Clients made with `latchkey clients add` or the admin console are not limited.",
    } satisfies SettingAbout),
  LATCHKEY_METRICS_TOKEN: optionalText.pipe(z.string().min(16, 'LATCHKEY_METRICS_TOKEN must be at least 16 characters').max(512).optional()).meta({
    group: 'operations',
    accepts: '16 to 512 characters',
    whenUnset: '`/metrics` answers loopback and private addresses only',
    secret: true,
    description:
      'When set, `GET /metrics` (Prometheus format) requires `Authorization: Bearer` and this token, compared in constant time, from any address: set it to scrape the metrics from outside the private network.',
  } satisfies SettingAbout),
  LATCHKEY_PRODUCT_NAME: optionalText.pipe(z.string().max(60, 'LATCHKEY_PRODUCT_NAME must be at most 60 characters').optional()).meta({
    group: 'pages',
    accepts: 'at most 60 characters',
    envDefault: 'Latchkey',
    description: "The name the pages show, and the sender's name of mails while `LATCHKEY_MAIL_FROM` is unset.",
  } satisfies SettingAbout),
  LATCHKEY_ACCENT_COLOR: optionalText
    .pipe(
      z
        .string()
        .regex(/^#([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$/, 'LATCHKEY_ACCENT_COLOR must be a hex colour such as #3451d1')
        .optional(),
    )
    .meta({
      group: 'pages',
      accepts: 'a hex colour, `#rgb` or `#rrggbb`',
      whenUnset: 'the built-in blue, lighter in dark mode',
      description: 'The accent colour of the pages (buttons and links). Text on it is black or white, whichever contrasts more.',
    } satisfies SettingAbout),
  LATCHKEY_RATE_LIMIT_USER_CODE: rateLimit('LATCHKEY_RATE_LIMIT_USER_CODE', '10/300', {
    group: 'rate-limits',
    description:
      'Wrong user codes entered at `/activate` per address: user codes are short enough to guess, so guessing is limited (RFC 8628 §5.1). Past the limit the page answers 429.',
  }),
  LATCHKEY_RATE_LIMIT_UNKNOWN_DEVICE_CODE: rateLimit('LATCHKEY_RATE_LIMIT_UNKNOWN_DEVICE_CODE', '30/300', {
    group: 'rate-limits',
    description: 'Unknown device codes presented at the token endpoint per address (RFC 8628 §5.2). A device polling its own code is never limited.',
  }),
  LATCHKEY_RATE_LIMIT_DEVICE_AUTHORIZATION: rateLimit('LATCHKEY_RATE_LIMIT_DEVICE_AUTHORIZATION', '30/60', {
    group: 'rate-limits',
    description:
      'Device authorization requests (`POST /oauth/device/code`) per client and address. Pushed authorization requests (RFC 9126) of public clients, which anyone can name, are held to the same limit, counted separately from device authorizations.',
  }),
  LATCHKEY_RATE_LIMIT_SIGNIN_ACCOUNT: rateLimit('LATCHKEY_RATE_LIMIT_SIGNIN_ACCOUNT', '5/30', {
    group: 'rate-limits',
    description:
      'Failed sign-ins on one account from one address, or from one browser the account signed in on before: after COUNT failures a wait of SECONDS, doubling with each further failure up to an hour; a success resets it. The account itself is never locked (RFC 6819 §4.4.3.6), so someone guessing from one place cannot keep its owner out from another.',
  }),
  LATCHKEY_RATE_LIMIT_SIGNIN_ADDRESS: rateLimit('LATCHKEY_RATE_LIMIT_SIGNIN_ADDRESS', '20/30', {
    group: 'rate-limits',
    description:
      'Failed sign-ins per address, all accounts together, with the same growing back-off. Browsers an account signed in on before are exempt for that account.',
  }),
  LATCHKEY_RATE_LIMIT_SIGNIN_ACCOUNT_TOTAL: rateLimit('LATCHKEY_RATE_LIMIT_SIGNIN_ACCOUNT_TOTAL', '20/3600', {
    group: 'rate-limits',
    description:
      'Failed sign-ins on one account from browsers it never signed in on, all addresses together: past COUNT in SECONDS, such attempts on it go through a slow lane, one at a time each after a 3-second pause, so thousands of addresses guessing at once get one guess per pause (429 for a few seconds only when 16 already wait).',
  }),
  LATCHKEY_RATE_LIMIT_SECOND_FACTOR: rateLimit('LATCHKEY_RATE_LIMIT_SECOND_FACTOR', '10/60', {
    group: 'rate-limits',
    description:
      'Failed second factors (codes, passkeys) per person, all addresses together, from browsers the person never signed in on: after COUNT failures a wait of SECONDS, doubling with each further failure up to an hour. Only a passed second factor clears it, not a right password, so someone who has the password cannot guess codes by signing in again between guesses.',
  }),
  LATCHKEY_RATE_LIMIT_PASSWORD_RESET: rateLimit('LATCHKEY_RATE_LIMIT_PASSWORD_RESET', '5/900', {
    group: 'rate-limits',
    description:
      '"Forgot your password?" requests per address, whatever address was typed and whether or not an account uses it. Each account also gets at most 3 unused links an hour.',
  }),
  LATCHKEY_RATE_LIMIT_MANAGEMENT: rateLimit('LATCHKEY_RATE_LIMIT_MANAGEMENT', '600/60', {
    group: 'rate-limits',
    description:
      'Management API calls (`/api/v1/`) per caller: per person, or per machine client, whatever address the calls come from. Past COUNT in SECONDS a caller gets 429 with Retry-After until the window ends, so one runaway script cannot starve the server or other automation.',
  }),
  // Never repeated in a message: it may hold the mail server's password.
  LATCHKEY_SMTP_URL: optionalText
    .pipe(
      z
        .string()
        .refine(
          (v) => parseSmtpUrl(v) !== undefined,
          'LATCHKEY_SMTP_URL must be smtp://[user:password@]host[:port] or smtps://… with nothing after the port (percent-encode any @ : / % in the user name or password)',
        )
        .optional(),
    )
    .meta({
      group: 'mail',
      accepts:
        '`smtp://[user:password@]host[:port]` (STARTTLS when the server offers it; port 587 by default) or `smtps://…` (TLS from the first byte; port 465 by default), nothing after the port; percent-encode any `@ : / %` in the user name or password',
      whenUnset: 'no mail: no password reset or email verification by email, and no security notices',
      secret: true,
      description:
        'The mail server that sends password-reset and email-verification links (single use, valid 30 minutes) and security notices (every change to how a person signs in). Over `smtp://`, STARTTLS is required when credentials go to another host. The password is never logged or printed. Without it the sign-in page shows no "Forgot your password?" link and `/login/forgot` answers 404.',
    } satisfies SettingAbout),
  LATCHKEY_MAIL_FROM: optionalText
    .pipe(
      z
        .string()
        .refine((v) => parseMailAddress(v) !== undefined, 'LATCHKEY_MAIL_FROM must be an address such as no-reply@example.com or Name <no-reply@example.com>')
        .optional(),
    )
    .meta({
      group: 'mail',
      accepts: 'an address (`no-reply@example.com`) or a name and an address (`Example Sign-in <no-reply@example.com>`)',
      whenUnset: "`LATCHKEY_PRODUCT_NAME` and `no-reply@` the issuer's host",
      description: 'The `From` of every mail the server sends.',
    } satisfies SettingAbout),
});
// Each setting also names its variable, taken from the key that parses it so that it is written once.
recordEnvironmentNames(environmentSchema.shape);

export type LogLevel = (typeof logLevels)[number];
export type LogFormat = (typeof logFormats)[number];

/**
 * A configuration file's `server` section, read and its references resolved
 * (config_file/read_server_settings.ts): the text each variable gets from it.
 */
export interface FileSettings {
  /** The file, as an absolute path. */
  readonly path: string;
  /** Variable → text, as if the environment set it. */
  readonly values: Readonly<Record<string, string>>;
}

/** Where a setting's value came from: the environment wins over the file, the file over the default. */
export type SettingSource = 'environment' | 'file' | 'default';

export interface Config {
  /** Public base URL, without a trailing slash. */
  readonly issuer: string;
  /** Whether LATCHKEY_ISSUER gave the issuer (else it is the default, `http://localhost:$PORT`). */
  readonly issuerConfigured: boolean;
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
  /** LATCHKEY_LOG_FORMAT: sentences for a person or JSON lines for a machine (logging.ts resolves `auto`). */
  readonly logFormat: LogFormat;
  /** Algorithm of access tokens (id_tokens are always RS256). */
  readonly signingAlg: SigningAlgorithm;
  /** Server processes sharing the port (node:cluster); 1 = no cluster. */
  readonly workers: number;
  readonly deviceCodeTtl: number;
  readonly deviceInterval: number;
  readonly accessTokenTtl: number;
  /** Absolute lifetime of a refresh-token family, from the sign-in. */
  readonly refreshTokenTtl: number;
  /** Absolute lifetime of a browser application's refresh-token family (a public client with a web origin), from the sign-in. */
  readonly browserRefreshLifetime: number;
  /** A refresh token unused this long expires (each rotation starts a new idle period). */
  readonly refreshTokenIdleTtl: number;
  /** Seconds after a rotation in which the same client reusing the old token gets a pair of its own instead of revoking the family; 0 = off. */
  readonly refreshReuseGrace: number;
  /**
   * Seconds after a refresh token's rotation, or a device code's redemption, in which a client
   * whose answer was lost may present it again: it gets a new answer and the unused tokens of the
   * lost one are revoked (RFC 9700 §4.14.2); 0 = off. One setting for both lost-answer recoveries.
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
  /** LATCHKEY_CONFIG (or `serve --config`): the configuration file read, as an absolute path. */
  readonly configFile: string | undefined;
  /** Each variable of the schema → where its value came from. */
  readonly settingSources: Readonly<Record<string, SettingSource>>;
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
    /** Management API calls per caller (person or machine client). */
    readonly management: RateLimitSetting | undefined;
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

/**
 * Reads the environment, over the `server` section of a configuration file when one is given;
 * throws ConfigError with one line per bad variable.
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env, file?: FileSettings): Config {
  // A variable set to nothing (FOO= in a unit file or compose file) means "use the default".
  const fromEnvironment = Object.fromEntries(Object.entries(env).filter(([, value]) => value !== undefined && value.trim() !== ''));
  const fromFile = Object.fromEntries(Object.entries(file?.values ?? {}).filter(([, value]) => value.trim() !== ''));
  const given = { ...fromFile, ...fromEnvironment };
  const settingSources = Object.freeze(
    Object.fromEntries(
      Object.keys(environmentSchema.shape).map((name): [string, SettingSource] => [
        name,
        name in fromEnvironment ? 'environment' : name in fromFile ? 'file' : 'default',
      ]),
    ),
  );
  const parsed = environmentSchema.safeParse(given);
  if (!parsed.success) {
    // One line per variable: the first problem found with it.
    const problems = new Map<string, string>();
    for (const issue of parsed.error.issues) {
      const variable = String(issue.path[0] ?? 'environment');
      const where = settingSources[variable] === 'file' && file ? ` (set in ${file.path})` : '';
      if (!problems.has(variable)) problems.set(variable, `${issue.message.startsWith(variable) ? issue.message : `${variable}: ${issue.message}`}${where}`);
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
  const secretKeyFile = e.LATCHKEY_SECRET_KEY_FILE ?? (postgres || e.LATCHKEY_DB === ':memory:' ? undefined : `${e.LATCHKEY_DB}.key`);
  return Object.freeze({
    issuer,
    issuerConfigured: e.LATCHKEY_ISSUER !== undefined,
    port: e.PORT,
    host: e.HOST,
    databasePath: e.LATCHKEY_DB,
    secretKeys: e.LATCHKEY_SECRET_KEY === undefined ? undefined : parseSecretKeys(e.LATCHKEY_SECRET_KEY),
    secretKeyFile: e.LATCHKEY_SECRET_KEY === undefined ? secretKeyFile : undefined,
    bootstrapUser: e.LATCHKEY_BOOTSTRAP_USER,
    bootstrapPassword: e.LATCHKEY_BOOTSTRAP_PASSWORD,
    logLevel: e.LATCHKEY_LOG_LEVEL ?? 'info',
    logFormat: e.LATCHKEY_LOG_FORMAT ?? 'auto',
    signingAlg: e.LATCHKEY_SIGNING_ALG ?? 'RS256',
    workers: e.LATCHKEY_WORKERS ?? 1,
    deviceCodeTtl: e.LATCHKEY_DEVICE_CODE_TTL,
    deviceInterval: e.LATCHKEY_DEVICE_INTERVAL,
    accessTokenTtl: e.LATCHKEY_ACCESS_TOKEN_TTL,
    refreshTokenTtl: e.LATCHKEY_REFRESH_TOKEN_TTL,
    browserRefreshLifetime: e.LATCHKEY_BROWSER_REFRESH_LIFETIME,
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
    configFile: file?.path,
    settingSources,
    rateLimits: Object.freeze({
      userCode: e.LATCHKEY_RATE_LIMIT_USER_CODE,
      unknownDeviceCode: e.LATCHKEY_RATE_LIMIT_UNKNOWN_DEVICE_CODE,
      deviceAuthorization: e.LATCHKEY_RATE_LIMIT_DEVICE_AUTHORIZATION,
      signInAccount: e.LATCHKEY_RATE_LIMIT_SIGNIN_ACCOUNT,
      signInAddress: e.LATCHKEY_RATE_LIMIT_SIGNIN_ADDRESS,
      signInAccountTotal: e.LATCHKEY_RATE_LIMIT_SIGNIN_ACCOUNT_TOTAL,
      secondFactor: e.LATCHKEY_RATE_LIMIT_SECOND_FACTOR,
      passwordReset: e.LATCHKEY_RATE_LIMIT_PASSWORD_RESET,
      management: e.LATCHKEY_RATE_LIMIT_MANAGEMENT,
    }),
  });
}

function expandHex(color: string): string {
  return color.length === 4
    ? `#${Array.from(color.slice(1))
        .map((c) => c + c)
        .join('')}`
    : color;
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
