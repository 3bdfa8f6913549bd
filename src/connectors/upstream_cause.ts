/**
 * Why an upstream could not be used, in a sentence an operator can act on, and whether it is worth
 * trying again (`unreachable`: the upstream is down or slow) or not until someone changes a setting
 * (`misconfigured`: a wrong address, password, issuer, certificate). One description serves the
 * sign-in's log line and `latchkey connectors add|test`, so both say the same thing.
 */
import { ldapResultLabel, ldapTransientCodes } from './ldap_result_codes.js';

export type UpstreamFailureKind = 'unreachable' | 'misconfigured';

export interface UpstreamCause {
  kind: UpstreamFailureKind;
  /** For operators: names the address, the step and what to check. Never a secret. */
  cause: string;
}

interface ErrorLike {
  name?: unknown;
  code?: unknown;
  message?: unknown;
  cause?: unknown;
}

/** The error and its causes (fetch and openid-client wrap the system error, sometimes twice). */
export function errorChain(err: unknown): ErrorLike[] {
  const chain: ErrorLike[] = [];
  for (
    let e = err as ErrorLike | null | undefined, depth = 0;
    e !== null && typeof e === 'object' && depth < 5;
    e = e.cause as ErrorLike | null | undefined, depth++
  ) {
    chain.push(e);
  }
  return chain;
}

/** What Node's TLS says of a certificate it refused (openssl's verify codes), in words. */
const certificateProblems: Readonly<Record<string, string>> = {
  DEPTH_ZERO_SELF_SIGNED_CERT: 'the certificate is self-signed and not trusted',
  SELF_SIGNED_CERT_IN_CHAIN: 'the certificate chain ends in a self-signed certificate that is not trusted',
  UNABLE_TO_VERIFY_LEAF_SIGNATURE: 'the certificate is signed by an authority that is not trusted',
  UNABLE_TO_GET_ISSUER_CERT_LOCALLY: 'the certificate is signed by an authority that is not trusted',
  UNABLE_TO_GET_ISSUER_CERT: 'the certificate is signed by an authority that is not trusted',
  CERT_HAS_EXPIRED: 'the certificate has expired',
  CERT_NOT_YET_VALID: 'the certificate is not valid yet',
  CERT_REVOKED: 'the certificate has been revoked',
  ERR_TLS_CERT_ALTNAME_INVALID: 'the certificate does not name this host',
};

const trustHint = 'trust its authority with NODE_EXTRA_CA_CERTS, or fix the certificate';

/** Network and TLS failures, named; undefined when the error is not one. */
export function networkCause(err: unknown, address: string, timeoutSeconds: number): UpstreamCause | undefined {
  for (const e of errorChain(err)) {
    const code = typeof e.code === 'string' ? e.code : undefined;
    if (code !== undefined && Object.hasOwn(certificateProblems, code)) {
      return { kind: 'misconfigured', cause: `TLS with ${address} failed: ${certificateProblems[code]} (${code}): ${trustHint}` };
    }
    if (code === 'ERR_SSL_WRONG_VERSION_NUMBER' || code === 'EPROTO' || (typeof code === 'string' && code.startsWith('ERR_SSL_'))) {
      return {
        kind: 'misconfigured',
        cause: `TLS with ${address} failed (${code}): the server does not speak TLS there, or not a version we accept (1.2 or newer)`,
      };
    }
    switch (code) {
      case 'ECONNREFUSED':
        return { kind: 'unreachable', cause: `cannot connect to ${address}: connection refused` };
      case 'ENOTFOUND':
        return { kind: 'misconfigured', cause: `cannot connect to ${address}: the host name does not resolve` };
      case 'EAI_AGAIN':
        return { kind: 'unreachable', cause: `cannot connect to ${address}: the host name could not be resolved just now (DNS)` };
      case 'ECONNRESET':
      case 'EPIPE':
        return { kind: 'unreachable', cause: `the connection to ${address} was closed by the other end (${code})` };
      case 'EHOSTUNREACH':
      case 'EHOSTDOWN':
      case 'ENETUNREACH':
      case 'ENETDOWN':
        return { kind: 'unreachable', cause: `cannot connect to ${address}: no route to the host (${code})` };
      case 'ETIMEDOUT':
      case 'UND_ERR_CONNECT_TIMEOUT':
      case 'OAUTH_TIMEOUT':
        return { kind: 'unreachable', cause: `no answer from ${address} within ${timeoutSeconds} s` };
      default:
        break;
    }
    if (e.name === 'TimeoutError' || e.name === 'AbortError' || e.name === 'ConnectTimeoutError') {
      return { kind: 'unreachable', cause: `no answer from ${address} within ${timeoutSeconds} s` };
    }
    // ldapts reports its own connection deadline as a plain Error.
    if (typeof e.message === 'string' && /^Connection timeout after \d+ms/.test(e.message)) {
      return { kind: 'unreachable', cause: `no answer from ${address} within ${timeoutSeconds} s` };
    }
  }
  return undefined;
}

/** The step of a directory conversation that failed: what the directory refused is said with it. */
export type LdapStep = 'starttls' | 'service_bind' | 'user_search' | 'group_search' | 'user_bind';

const stepRefusals: Readonly<Record<LdapStep, (label: string, names: { userBase: string; groupBase: string | undefined }) => string>> = {
  starttls: (label) => `the LDAP server refused StartTLS (${label}): enable TLS on it, or use ldaps://`,
  service_bind: (label) =>
    label.startsWith('invalidCredentials')
      ? `the LDAP server refused the service account's bind (${label}): check --bind-dn and the bind password`
      : `the LDAP server refused the service account's bind (${label}): check --bind-dn, the bind password and the account's state`,
  user_search: (label, { userBase }) =>
    label.startsWith('noSuchObject')
      ? `the user base ${userBase} does not exist in the directory (${label}): check --user-base`
      : `the directory refused the search of ${userBase} (${label}): check --user-base, --user-filter and what the service account may read`,
  group_search: (label, { groupBase }) =>
    label.startsWith('noSuchObject')
      ? `the group base ${groupBase ?? ''} does not exist in the directory (${label}): check --group-base`
      : `the directory refused the search of ${groupBase ?? ''} (${label}): check --group-base and what the service account may read`,
  user_bind: (label) => `the LDAP server refused a person's bind with an error other than a wrong password (${label})`,
};

/**
 * An LDAP failure at `step`, with the directory's result code by name (RFC 4511 Appendix A). The
 * person's own wrong password is not one: the caller answers it before it gets here.
 */
export function ldapCause(
  err: unknown,
  step: LdapStep,
  settings: { url: string; userBase: string; groupBase?: string | undefined },
  timeoutSeconds: number,
): UpstreamCause {
  const network = networkCause(err, settings.url, timeoutSeconds);
  if (network) return network;
  const code = (err as ErrorLike | undefined)?.code;
  if (typeof code === 'number') {
    const cause = stepRefusals[step](ldapResultLabel(code), { userBase: settings.userBase, groupBase: settings.groupBase });
    return { kind: ldapTransientCodes.has(code) ? 'unreachable' : 'misconfigured', cause };
  }
  const message = err instanceof Error ? err.message : String(err);
  // Before a search is sent, ldapts refuses a filter or base it cannot encode: a setting.
  const kind = step === 'user_search' || step === 'group_search' ? 'misconfigured' : 'unreachable';
  return { kind, cause: `${settings.url} (${step.replace('_', ' ')}): ${message.slice(0, 300)}` };
}

/**
 * The OAuth error code (RFC 6749 §5.2) an upstream's token endpoint answered, wherever
 * openid-client put it: an error body, a WWW-Authenticate challenge (a 401, RFC 6750 §3), or the
 * body of an answer it could not use (GitHub says errors with a 200).
 */
export function oauthErrorCode(err: unknown): string | undefined {
  // openid-client wraps oauth4webapi's error, whose cause holds the answer's body.
  for (const e of errorChain(err) as Array<ErrorLike & { error?: unknown; status?: unknown; body?: { error?: unknown } }>) {
    if (typeof e.error === 'string') return e.error;
    if (typeof e.body?.error === 'string') return e.body.error;
    if (Array.isArray(e.cause)) {
      const challenges = e.cause as Array<{ parameters?: { error?: unknown } }>;
      const fromChallenge = challenges.map((c) => c.parameters?.error).find((v) => typeof v === 'string');
      if (typeof fromChallenge === 'string') return fromChallenge;
      if (e.status === 401) return 'invalid_client';
    }
  }
  return undefined;
}
