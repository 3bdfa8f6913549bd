/**
 * Anti-CSRF tokens. Each browser gets a random HttpOnly cookie; the token in a form is an HMAC,
 * under a server secret, of that cookie and the form's name. So a token works only in its own form,
 * only for the browser it was made for, and cannot be forged without the server secret (a
 * sibling subdomain that plants a cookie still cannot mint a matching token). SameSite=Lax on
 * every cookie is the second line of defence.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { constantTimeEqual, hmacSha256, randomSecret } from '../crypto/secrets.js';
import type { Config } from '../config.js';
import { cookieNames, setCookie } from './cookies.js';

export type FormName = 'login' | 'activate' | 'device_decision' | 'logout';

export const csrfFieldName = 'csrf_token';

const issued = new WeakMap<FastifyRequest, string>();

/** The browser's CSRF cookie value, set on the reply when the browser has none yet. */
function browserKey(request: FastifyRequest, reply: FastifyReply, config: Config): string {
  const already = issued.get(request);
  if (already) return already;
  const name = cookieNames(config).csrf;
  let value = request.cookies[name];
  if (!value || value.length < 32 || value.length > 128) {
    value = randomSecret();
    setCookie(reply, config, name, value);
  }
  issued.set(request, value);
  return value;
}

export function csrfToken(request: FastifyRequest, reply: FastifyReply, config: Config, secret: string, form: FormName): string {
  return hmacSha256(secret, `${form}:${browserKey(request, reply, config)}`);
}

export function csrfTokenValid(request: FastifyRequest, config: Config, secret: string, form: FormName, token: string | undefined): boolean {
  const cookie = request.cookies[cookieNames(config).csrf];
  if (!token || !cookie || cookie.length > 128) return false;
  return constantTimeEqual(hmacSha256(secret, `${form}:${cookie}`), token);
}
