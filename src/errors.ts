/**
 * The one error type of the server. Code anywhere throws OAuthError; the error handler in app.ts
 * turns it into the RFC 6749 §5.2 body (or a friendly page on browser routes). The description is
 * public and generic; `detail` is for the log only and may say precisely what was wrong.
 */
export type OAuthErrorCode =
  | 'invalid_request'
  | 'invalid_client'
  | 'invalid_grant'
  | 'unauthorized_client'
  | 'unsupported_grant_type'
  | 'invalid_scope'
  | 'invalid_target'
  | 'authorization_pending'
  | 'slow_down'
  | 'access_denied'
  | 'expired_token'
  | 'unsupported_response_type'
  | 'login_required'
  | 'consent_required'
  | 'interaction_required'
  | 'request_not_supported'
  | 'invalid_request_object'
  | 'request_uri_not_supported'
  | 'registration_not_supported'
  /** RFC 7591 §3.2.2: dynamic client registration refused a redirect URI, or other metadata. */
  | 'invalid_redirect_uri'
  | 'invalid_client_metadata'
  | 'invalid_token'
  | 'insufficient_scope'
  /** OpenID Connect EAP ACR Values §5: the acr_values asked for cannot be met here. */
  | 'unmet_authentication_requirements'
  /** RFC 9449 §7.1, §8: a DPoP proof is invalid, or the server wants its nonce in the next proof. */
  | 'invalid_dpop_proof'
  | 'use_dpop_nonce'
  | 'temporarily_unavailable'
  | 'not_found'
  | 'server_error';

const defaultStatus: Partial<Record<OAuthErrorCode, number>> = {
  invalid_client: 401,
  invalid_token: 401,
  insufficient_scope: 403,
  not_found: 404,
  temporarily_unavailable: 429,
  server_error: 500,
};

export interface OAuthErrorOptions {
  status?: number;
  /** Internal reason, logged, never sent. */
  detail?: string;
  /** Extra response headers, e.g. WWW-Authenticate or Retry-After. */
  headers?: Record<string, string>;
}

/**
 * RFC 6749 §4.1.2.1 / §5.2: error_description is limited to %x20-21 / %x23-5B / %x5D-7E. Ours are
 * fixed sentences that never quote the request, so this only guards against a slip: anything else
 * (a quote, a backslash, non-ASCII, angle brackets that would matter in a page) becomes "?".
 */
export function safeDescription(text: string): string {
  return text.replace(/[^\x20\x21\x23-\x3B\x3D\x3F-\x5B\x5D-\x7E]/g, '?').slice(0, 256);
}

/** What a caught value says, for logs and one-line messages: its `message` when it has one, else the value as text. */
export function errorMessage(err: unknown): string {
  const message: unknown = typeof err === 'object' && err !== null && 'message' in err ? err.message : undefined;
  return String(message ?? err);
}

export class OAuthError extends Error {
  readonly code: OAuthErrorCode;
  readonly status: number;
  readonly description: string;
  readonly detail: string | undefined;
  readonly headers: Record<string, string>;

  constructor(code: OAuthErrorCode, description: string, options: OAuthErrorOptions = {}) {
    // An OAuthError is an answer (authorization_pending is most polls' answer), not a fault: it
    // carries no stack trace. Capturing one walked every frame, a tenth of a pending poll's cost.
    const stackTraceLimit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    super(`${code}: ${description}`);
    Error.stackTraceLimit = stackTraceLimit;
    this.name = 'OAuthError';
    this.code = code;
    this.description = safeDescription(description);
    this.status = options.status ?? defaultStatus[code] ?? 400;
    this.detail = options.detail;
    this.headers = options.headers ?? {};
  }

  toJSON(): { error: OAuthErrorCode; error_description: string } {
    return { error: this.code, error_description: this.description };
  }
}

/** Thrown for refused requests that exceed a rate limit: 429 with Retry-After. */
export function tooManyRequests(retryAfterSeconds: number, description: string): OAuthError {
  return new OAuthError('temporarily_unavailable', description, {
    status: 429,
    headers: { 'retry-after': String(Math.max(1, Math.ceil(retryAfterSeconds))) },
  });
}
