/**
 * The management API's refusals as RFC 9457 problem details (application/problem+json): `type`
 * (a reference to the documentation of the error), `title`, `status`, `detail`. An OAuthError —
 * an authorization refusal (RFC 6750 §3) or a rate limit — keeps its headers (WWW-Authenticate,
 * Retry-After).
 */
import type { OAuthError } from '../errors.js';

export const problemContentType = 'application/problem+json';

const titles: Record<number, string> = {
  400: 'Invalid request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not found',
  429: 'Too many requests',
  503: 'Service unavailable',
};

export interface ProblemDetails {
  type: string;
  title: string;
  status: number;
  detail: string;
}

export function refusalProblem(error: OAuthError): ProblemDetails {
  return {
    type: `/docs/management-api#${error.code.replaceAll('_', '-')}`,
    title: titles[error.status] ?? 'Error',
    status: error.status,
    detail: error.description,
  };
}
