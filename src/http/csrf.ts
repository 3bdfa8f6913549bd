/**
 * Anti-CSRF tokens. Each browser gets a random HttpOnly cookie; the token in a form is
 * `issuedAt.HMAC(server secret, form name, that cookie, the sign-in session, issuedAt)`. So a
 * token works only in its own form, only in the browser and the session it was made for (not for
 * the next person on a shared computer), only for two hours, and cannot be forged without the
 * server secret. SameSite=Lax on every cookie is the second line of defence.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { constantTimeEqual, hmacSha256, randomSecret, sha256 } from '../crypto/secrets.js';
import type { Config } from '../config.js';
import type { Services } from '../services.js';
import { epochSeconds } from '../clock.js';
import { currentSession } from './session.js';
import { cookieNames, setCookie } from './cookies.js';

export type FormName =
  'login' | 'activate' | 'device_decision' | 'authorize_decision' | 'second_factor' | 'account_security' | 'account' | 'logout' | 'password_reset' | 'admin';

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

/** How long a rendered form stays usable. */
export const csrfTokenLifetime = 2 * 3600;

/** `bound` ties a token to one thing as well, e.g. the one authorization request a decision answers. */
async function mac(request: FastifyRequest, services: Services, form: FormName, browser: string, issuedAt: number, bound: string): Promise<string> {
  const signedIn = await currentSession(request, services);
  return hmacSha256(services.csrfSecret, `${form}:${browser}:${signedIn?.session.idHash ?? '-'}:${issuedAt}:${bound}`);
}

export async function csrfToken(request: FastifyRequest, reply: FastifyReply, services: Services, form: FormName, bound = ''): Promise<string> {
  const issuedAt = epochSeconds(services.clock);
  return `${issuedAt}.${await mac(request, services, form, browserKey(request, reply, services.config), issuedAt, bound)}`;
}

export async function csrfTokenValid(request: FastifyRequest, services: Services, form: FormName, token: string | undefined, bound = ''): Promise<boolean> {
  const cookie = request.cookies[cookieNames(services.config).csrf];
  if (!token || !cookie || cookie.length > 128) return false;
  const match = /^(\d{1,12})\.([A-Za-z0-9_-]{43})$/.exec(token);
  if (!match?.[2]) return false;
  const issuedAt = Number(match[1]);
  const age = epochSeconds(services.clock) - issuedAt;
  if (age < 0 || age > csrfTokenLifetime) return false;
  return constantTimeEqual(await mac(request, services, form, cookie, issuedAt, bound), match[2]);
}

/**
 * A digest that identifies this browser (through its CSRF cookie), to bind server-side state
 * such as a pending authorization request to the browser that started it.
 */
export function browserBinding(request: FastifyRequest, reply: FastifyReply, config: Config): string {
  return sha256(`browser:${browserKey(request, reply, config)}`);
}
