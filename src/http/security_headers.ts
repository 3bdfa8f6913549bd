/**
 * Headers on every response. Pages load nothing from other hosts and run no script; forms post
 * only to this server; nothing may frame a page (clickjacking of Allow buttons); no address with
 * a code in it leaks through Referer.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Config } from '../config.js';

export const contentSecurityPolicy = [
  "default-src 'none'",
  "style-src 'self'",
  "img-src 'self' data:",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
].join('; ');

/**
 * Browsers apply form-action to the redirects that follow a form post too, so a page whose form
 * ends in a redirect to the client (sign-in, consent) must name the client's origin as well.
 */
export function allowFormActionTo(reply: FastifyReply, source: string | undefined): void {
  if (source === undefined || !/^[A-Za-z][A-Za-z0-9+.-]*:(\/\/[^\s;,']+)?$/.test(source)) return;
  reply.header('content-security-policy', currentPolicy(reply).replace("form-action 'self'", `form-action 'self' ${source}`));
}

/**
 * Pages with a passkey button run our own script (/assets/passkey.js and the WebAuthn browser
 * library, both served from here) and fetch the WebAuthn options from here: nothing inline,
 * nothing from elsewhere. Every other page runs no script at all.
 */
export function allowOwnScripts(reply: FastifyReply): void {
  const policy = currentPolicy(reply);
  if (policy.includes('script-src')) return;
  reply.header('content-security-policy', policy.replace("default-src 'none'", "default-src 'none'; script-src 'self'; connect-src 'self'"));
}

function currentPolicy(reply: FastifyReply): string {
  const set = reply.getHeader('content-security-policy');
  return typeof set === 'string' ? set : contentSecurityPolicy;
}

/** The headers every response carries, also those written outside Fastify's hooks. */
export function baseSecurityHeaders(config: Config): Record<string, string> {
  return {
    'content-security-policy': contentSecurityPolicy,
    'referrer-policy': 'no-referrer',
    'x-content-type-options': 'nosniff',
    'x-frame-options': 'DENY',
    'cross-origin-opener-policy': 'same-origin',
    ...(config.issuer.startsWith('https:') ? { 'strict-transport-security': 'max-age=31536000' } : {}),
  };
}

/** Adds the security headers a reply does not set itself, and no-store unless it says otherwise. */
export function securityHeaders(config: Config): (request: FastifyRequest, reply: FastifyReply) => void {
  const headers = Object.entries({ ...baseSecurityHeaders(config), 'cache-control': 'no-store' });
  return function addSecurityHeaders(_request, reply) {
    for (const [name, value] of headers) if (!reply.hasHeader(name)) reply.header(name, value);
  };
}
