/**
 * Cookie names and attributes. Over https the `__Host-` prefix pins a cookie to this exact host
 * and path with Secure (no subdomain can set or shadow it); over plain http (local development)
 * the prefix is not allowed, so plain names are used.
 */
import type { FastifyReply } from 'fastify';
import type { Config } from '../config.js';

export interface CookieNames {
  session: string;
  csrf: string;
}

export function cookieNames(config: Config): CookieNames {
  const prefix = config.secureCookies ? '__Host-' : '';
  return { session: `${prefix}latchkey_session`, csrf: `${prefix}latchkey_csrf` };
}

export function setCookie(reply: FastifyReply, config: Config, name: string, value: string, maxAgeSeconds?: number): void {
  reply.setCookie(name, value, {
    path: '/',
    httpOnly: true,
    sameSite: 'lax',
    secure: config.secureCookies,
    ...(maxAgeSeconds === undefined ? {} : { maxAge: maxAgeSeconds }),
  });
}

export function clearCookie(reply: FastifyReply, config: Config, name: string): void {
  reply.clearCookie(name, { path: '/', httpOnly: true, sameSite: 'lax', secure: config.secureCookies });
}
