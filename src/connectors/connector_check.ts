/**
 * Whether a connector can work, checked without a person: what every sign-in through it needs
 * from the upstream, step by step, each with a cause an operator can act on. `latchkey connectors
 * add` runs it before saving and `latchkey connectors test` on demand; the management API and the
 * console call the same function.
 *
 * The upstream's address comes from an administrator, yet the check is still careful with it, as
 * a server-side request to an address someone typed should be: each request has the sign-in's
 * deadline, no redirect is followed (openid-client follows none at sign-in either, so a check
 * that did would pass what sign-in refuses), answers are read up to a bound, and no secret
 * appears in a cause. What cannot be checked without a person signing in is said so.
 */
import * as oidc from 'openid-client';
import { randomSecret } from '../crypto/secrets.js';
import type { GithubConfig, LdapConfig, OidcConfig, TypedConnector } from './connector_config.js';
import { githubWebBase } from './github_upstream.js';
import { ldapServiceCheck } from './ldap_directory.js';
import { errorChain, networkCause, type UpstreamFailureKind } from './upstream_cause.js';

export type CheckOutcome = 'passed' | 'failed' | 'not_checked';

export interface ConnectorCheckStep {
  /** What was checked, e.g. "discovery document", "service account bind". */
  name: string;
  outcome: CheckOutcome;
  /** What was found (passed), why it failed (failed), or why it could not be checked. */
  detail: string;
}

export interface ConnectorCheck {
  /** Every step that could be checked worked. */
  ok: boolean;
  /** The first failure's cause, or undefined when ok. */
  cause: string | undefined;
  /** Whether the failure looks passing (the upstream is down) or needs a setting changed. */
  failure: UpstreamFailureKind | undefined;
  checks: ConnectorCheckStep[];
}

type WithoutRecord<T> = T extends unknown ? Omit<T, 'record'> : never;

/** A connector's type and settings (stored or about to be), with its secret in the clear. */
export type CheckableConnector = WithoutRecord<TypedConnector> & { secret: string | undefined };

export interface CheckOptions {
  /** LATCHKEY_UPSTREAM_TIMEOUT: the deadline of each request, as at sign-in. */
  timeoutSeconds: number;
  /** `{issuer}/connectors/<id>/callback`, sent with the made-up code as a real redemption would. */
  redirectUri: string;
}

/** Runs the checks of the connector's type. Never throws for anything the upstream does. */
export async function checkConnector(connector: CheckableConnector, options: CheckOptions): Promise<ConnectorCheck> {
  const steps = new Steps();
  try {
    switch (connector.type) {
      case 'oidc':
        await checkOidc(steps, connector.config, connector.secret, options);
        break;
      case 'github':
        await checkGithub(steps, connector.config, connector.secret, options);
        break;
      case 'ldap':
        await checkLdap(steps, connector.config, connector.secret ?? '', options);
        break;
    }
  } catch (err) {
    // A failure of our own making, still said rather than thrown at an operator.
    steps.fail('check', 'unreachable', `the check stopped unexpectedly: ${printable(err instanceof Error ? err.message : String(err))}`);
  }
  return steps.result();
}

class Steps {
  readonly checks: ConnectorCheckStep[] = [];
  private firstFailure: { cause: string; failure: UpstreamFailureKind } | undefined;

  pass(name: string, detail: string): void {
    this.checks.push({ name, outcome: 'passed', detail });
  }

  fail(name: string, failure: UpstreamFailureKind, cause: string): void {
    this.checks.push({ name, outcome: 'failed', detail: cause });
    this.firstFailure ??= { cause, failure };
  }

  notChecked(name: string, why: string): void {
    this.checks.push({ name, outcome: 'not_checked', detail: why });
  }

  result(): ConnectorCheck {
    return { ok: this.firstFailure === undefined, cause: this.firstFailure?.cause, failure: this.firstFailure?.failure, checks: this.checks };
  }
}

/** Text from an upstream, fit for a terminal and a log line: no control characters, bounded. */
function printable(text: string, max = 200): string {
  const clean = text.replace(/[\u0000-\u001f\u007f-\u009f]/g, '?');
  return clean.length > max ? `${clean.slice(0, max)}…` : clean;
}

/** Answers are small documents; anything larger is not read into memory. */
const maxAnswerBytes = 256 * 1024;

interface Answer {
  status: number;
  location: string | undefined;
  contentType: string;
  text: string;
}

class AnswerTooLarge extends Error {}

/** One request: the deadline of a sign-in's, no redirect followed, the body read up to a bound. */
async function request(url: string, init: RequestInit, timeoutSeconds: number): Promise<Answer> {
  const response = await fetch(url, { ...init, redirect: 'manual', signal: AbortSignal.timeout(timeoutSeconds * 1000) });
  const reader = response.body?.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    if (!reader) break;
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > maxAnswerBytes) {
      await reader.cancel().catch(() => undefined);
      throw new AnswerTooLarge(`${url} answered more than ${maxAnswerBytes / 1024} KiB`);
    }
    chunks.push(value);
  }
  return {
    status: response.status,
    location: response.headers.get('location') ?? undefined,
    contentType: response.headers.get('content-type') ?? '',
    text: Buffer.concat(chunks).toString('utf8'),
  };
}

/** Why a request got no usable answer, with the address: a network or TLS failure, or a size. */
function requestFailure(err: unknown, url: string, timeoutSeconds: number): { failure: UpstreamFailureKind; cause: string } {
  if (err instanceof AnswerTooLarge) return { failure: 'misconfigured', cause: err.message };
  const network = networkCause(err, url, timeoutSeconds);
  if (network) return { failure: network.kind, cause: network.cause };
  const innermost = errorChain(err).at(-1);
  const message = typeof innermost?.message === 'string' ? innermost.message : String(err);
  // fetch refuses ports of other protocols (the Fetch Standard's "bad port" list: 25, 110, 6000…).
  if (message === 'bad port') return { failure: 'misconfigured', cause: `cannot reach ${url}: its port is one that HTTP clients refuse to use (a "bad port")` };
  return { failure: 'unreachable', cause: `cannot reach ${url}: ${printable(message)}` };
}

function redirectCause(url: string, answer: Answer): string {
  return `${url} answered ${answer.status}, a redirect to ${printable(answer.location ?? '(nowhere)')}, which is not followed: use the address the provider documents`;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/** Where OpenID Connect Discovery 1.0 §4 puts the document: the issuer's path, then the well-known suffix. */
function discoveryUrl(issuer: string): string {
  const url = new URL(issuer);
  url.pathname = `${url.pathname.replace(/\/+$/, '')}/.well-known/openid-configuration`;
  return url.href;
}

/** As openid-client compares them (oauth4webapi processDiscoveryResponse): as URLs, after parsing. */
function sameIssuer(announced: string, configured: string): boolean {
  try {
    return new URL(announced).href === new URL(configured).href;
  } catch {
    return false;
  }
}

async function checkOidc(steps: Steps, config: OidcConfig, secret: string | undefined, options: CheckOptions): Promise<void> {
  const { timeoutSeconds } = options;
  const where = discoveryUrl(config.issuer);
  let answer: Answer;
  try {
    answer = await request(where, { headers: { accept: 'application/json' } }, timeoutSeconds);
  } catch (err) {
    const { failure, cause } = requestFailure(err, where, timeoutSeconds);
    steps.fail('discovery document', failure, cause);
    return;
  }
  if (answer.status >= 300 && answer.status < 400) {
    steps.fail('discovery document', 'misconfigured', redirectCause(where, answer));
    return;
  }
  if (answer.status !== 200) {
    steps.fail(
      'discovery document',
      answer.status >= 500 ? 'unreachable' : 'misconfigured',
      `${where} answered HTTP ${answer.status}: check --issuer (the provider's discovery document is not there)`,
    );
    return;
  }
  const metadata = parseJson(answer.text);
  if (!isObject(metadata) || typeof metadata.issuer !== 'string') {
    steps.fail('discovery document', 'misconfigured', `${where} is not an OpenID Connect discovery document (no issuer in a JSON object): check --issuer`);
    return;
  }
  if (!sameIssuer(metadata.issuer, config.issuer)) {
    // The mistake this catches most is localhost for 127.0.0.1, or a missing path: name the real one.
    steps.fail(
      'discovery document',
      'misconfigured',
      `the issuer's discovery document names the issuer ${printable(metadata.issuer)}, not ${config.issuer}: use --issuer ${printable(metadata.issuer)}`,
    );
    return;
  }
  const missing = ['authorization_endpoint', 'token_endpoint', 'jwks_uri'].filter((name) => typeof metadata[name] !== 'string');
  if (missing.length > 0) {
    steps.fail('discovery document', 'misconfigured', `the discovery document at ${where} lacks ${missing.join(', ')}`);
    return;
  }
  // What sign-in itself does with the document (openid-client), so that no check passes what it refuses.
  try {
    await oidc.discovery(new URL(config.issuer), config.clientId, undefined, secret === undefined ? oidc.None() : oidc.ClientSecretBasic(secret), {
      execute: config.issuer.startsWith('http:') ? [oidc.allowInsecureRequests] : [],
      timeout: timeoutSeconds,
    });
  } catch (err) {
    const network = networkCause(err, where, timeoutSeconds);
    if (network) {
      steps.fail('discovery document', network.kind, network.cause);
      return;
    }
    const e = err as { code?: unknown; message?: unknown };
    steps.fail(
      'discovery document',
      'misconfigured',
      `the discovery document at ${where} is refused by the OpenID Connect client: ${printable(String(e.message ?? err))}${typeof e.code === 'string' ? ` (${e.code})` : ''}`,
    );
    return;
  }
  steps.pass('discovery document', `${where} names the issuer ${config.issuer}`);

  const jwksUri = String(metadata.jwks_uri);
  try {
    const keys = await request(jwksUri, { headers: { accept: 'application/json' } }, timeoutSeconds);
    const jwks = parseJson(keys.text);
    if (keys.status >= 300 && keys.status < 400) steps.fail('signing keys (JWKS)', 'misconfigured', redirectCause(jwksUri, keys));
    else if (keys.status !== 200)
      steps.fail('signing keys (JWKS)', keys.status >= 500 ? 'unreachable' : 'misconfigured', `${jwksUri} answered HTTP ${keys.status}`);
    else if (!isObject(jwks) || !Array.isArray(jwks.keys) || jwks.keys.length === 0)
      steps.fail('signing keys (JWKS)', 'misconfigured', `${jwksUri} holds no keys: id_tokens could not be verified`);
    else steps.pass('signing keys (JWKS)', `${jwksUri} holds ${jwks.keys.length} key${jwks.keys.length === 1 ? '' : 's'}`);
  } catch (err) {
    const { failure, cause } = requestFailure(err, jwksUri, timeoutSeconds);
    steps.fail('signing keys (JWKS)', failure, cause);
  }

  await checkOidcClient(steps, config, secret, String(metadata.token_endpoint), options);
  steps.notChecked('redirect URI', `whether the provider accepts ${options.redirectUri} shows only when a person signs in`);
}

/**
 * The client's credentials, at the token endpoint, with a made-up code: RFC 6749 §5.2 has a
 * server answer invalid_client when client authentication fails, and invalid_grant for a code it
 * does not know. Servers authenticate the client first (the code belongs to a client), so
 * invalid_grant says the credentials were accepted; anything else leaves them unchecked.
 */
async function checkOidcClient(steps: Steps, config: OidcConfig, secret: string | undefined, tokenEndpoint: string, options: CheckOptions): Promise<void> {
  const name = 'client credentials';
  const body = new URLSearchParams({ grant_type: 'authorization_code', code: randomSecret('latchkey-check-'), redirect_uri: options.redirectUri });
  const headers: Record<string, string> = { accept: 'application/json', 'content-type': 'application/x-www-form-urlencoded' };
  if (secret === undefined) {
    body.set('client_id', config.clientId);
  } else {
    // client_secret_basic, as at sign-in: each part form-urlencoded first (RFC 6749 §2.3.1).
    const encode = (v: string) => new URLSearchParams({ v }).toString().slice(2);
    headers.authorization = `Basic ${Buffer.from(`${encode(config.clientId)}:${encode(secret)}`).toString('base64')}`;
  }
  let answer: Answer;
  try {
    answer = await request(tokenEndpoint, { method: 'POST', headers, body }, options.timeoutSeconds);
  } catch (err) {
    const { failure, cause } = requestFailure(err, tokenEndpoint, options.timeoutSeconds);
    steps.fail(name, failure, cause);
    return;
  }
  const parsed = parseJson(answer.text);
  const error = isObject(parsed) && typeof parsed.error === 'string' ? parsed.error : undefined;
  if (error === 'invalid_client' || (answer.status === 401 && error === undefined)) {
    steps.fail(
      name,
      'misconfigured',
      `the token endpoint ${tokenEndpoint} refused the client (invalid_client): check --client-id${secret === undefined ? ' (and whether the client needs a secret: --client-secret-stdin)' : ' and the client secret'}`,
    );
    return;
  }
  if (error === 'unauthorized_client') {
    steps.fail(name, 'misconfigured', `the provider does not let client ${config.clientId} use the authorization code grant (unauthorized_client)`);
    return;
  }
  if (error === 'invalid_grant') {
    steps.pass(name, `the token endpoint accepted client ${config.clientId} (it refused only a made-up code)`);
    return;
  }
  steps.notChecked(
    name,
    `the token endpoint answered HTTP ${answer.status}${error === undefined ? '' : ` ${printable(error, 60)}`} to a made-up code: the client credentials show only when a person signs in`,
  );
}

async function checkGithub(steps: Steps, config: GithubConfig, secret: string | undefined, options: CheckOptions): Promise<void> {
  const { timeoutSeconds } = options;
  // A public endpoint of every GitHub (github.com and Enterprise alike).
  const meta = `${config.apiUrl.replace(/\/+$/, '')}/meta`;
  try {
    const answer = await request(meta, { headers: { accept: 'application/vnd.github+json', 'user-agent': 'Latchkey' } }, timeoutSeconds);
    if (answer.status >= 300 && answer.status < 400) steps.fail('API', 'misconfigured', redirectCause(meta, answer));
    else if (answer.status !== 200 || !isObject(parseJson(answer.text)))
      steps.fail('API', answer.status >= 500 ? 'unreachable' : 'misconfigured', `${meta} answered HTTP ${answer.status}, not GitHub's API: check --api-url`);
    else steps.pass('API', `${meta} answers as GitHub's API`);
  } catch (err) {
    const { failure, cause } = requestFailure(err, meta, timeoutSeconds);
    steps.fail('API', failure, cause);
  }
  // GitHub documents the token endpoint's errors: incorrect_client_credentials for a wrong client
  // id or secret, bad_verification_code for a code it does not know — so a made-up code tells.
  const tokenEndpoint = `${githubWebBase(config.apiUrl)}/login/oauth/access_token`;
  const name = 'client credentials';
  try {
    const answer = await request(
      tokenEndpoint,
      {
        method: 'POST',
        headers: { accept: 'application/json', 'content-type': 'application/x-www-form-urlencoded', 'user-agent': 'Latchkey' },
        body: new URLSearchParams({ client_id: config.clientId, client_secret: secret ?? '', code: randomSecret('latchkey-check-') }),
      },
      timeoutSeconds,
    );
    const parsed = parseJson(answer.text);
    const error = isObject(parsed) && typeof parsed.error === 'string' ? parsed.error : undefined;
    if (error === 'incorrect_client_credentials') {
      steps.fail(name, 'misconfigured', `GitHub refused the client (incorrect_client_credentials): check --client-id and the client secret`);
    } else if (error === 'bad_verification_code') {
      steps.pass(name, `GitHub accepted client ${config.clientId} (it refused only a made-up code)`);
    } else {
      steps.notChecked(
        name,
        `${tokenEndpoint} answered HTTP ${answer.status}${error === undefined ? '' : ` ${printable(error, 60)}`}: the client credentials show only when a person signs in`,
      );
    }
  } catch (err) {
    const { failure, cause } = requestFailure(err, tokenEndpoint, timeoutSeconds);
    steps.fail(name, failure, cause);
  }
  steps.notChecked('redirect URI', `whether GitHub accepts ${options.redirectUri} shows only when a person signs in`);
  if (config.orgs.length > 0) steps.notChecked('organizations', 'membership of --org shows only when a person signs in');
}

const ldapStepNames = {
  connect: 'connection',
  starttls: 'StartTLS',
  service_bind: 'service account bind',
  user_search: 'search of the user base',
  group_search: 'search of the group base',
} as const;

async function checkLdap(steps: Steps, config: LdapConfig, bindPassword: string, options: CheckOptions): Promise<void> {
  const { passed, failed } = await ldapServiceCheck(config, bindPassword, options.timeoutSeconds);
  const details = {
    connect: `${config.url}${config.startTls ? '' : config.url.startsWith('ldaps:') ? ' (TLS)' : ' (no TLS: passwords cross the network in the clear)'}`,
    starttls: 'the certificate is trusted and names the host',
    service_bind: `bound as ${config.bindDn}`,
    user_search: `${config.userBase} can be searched with ${config.userFilter}`,
    group_search: `${config.groupBase ?? ''} exists`,
  };
  for (const step of passed) {
    if (step !== 'user_bind') steps.pass(ldapStepNames[step], details[step]);
  }
  if (failed) {
    const step = failed.step === 'deadline' || failed.step === 'user_bind' ? 'connect' : failed.step;
    const wanted: Array<keyof typeof ldapStepNames> = ['connect', ...(config.startTls ? (['starttls'] as const) : []), 'service_bind', 'user_search'];
    if (config.groupBase !== undefined) wanted.push('group_search');
    // A deadline reached is the failure of the first step that did not finish.
    const failedStep = failed.step === 'deadline' ? (wanted.find((s) => !passed.includes(s)) ?? step) : step;
    steps.fail(ldapStepNames[failedStep], failed.failure, failed.cause);
  }
  steps.notChecked('person sign-in', "a person's bind and group membership show only when a person signs in");
}
