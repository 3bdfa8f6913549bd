/**
 * State that waits in the browser between two requests — a sign-in halfway through its second
 * step, a WebAuthn challenge — sealed with the server's secret key (AES-GCM, bound to its purpose),
 * so the browser can neither read nor change it, and checked against a schema when it comes back
 * (a cookie is input too). Nothing is stored for a step nobody finishes.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { z } from 'zod';
import type { Config } from '../config.js';
import type { SecretBox } from '../crypto/secret_box.js';
import { clearCookie, setCookie } from './cookies.js';

/** Browsers keep cookies up to about 4 KB, name and attributes included. */
const maxCookieLength = 3800;

export function sealedCookieName(config: Config, name: string): string {
  return `${config.secureCookies ? '__Host-' : ''}${name}`;
}

/** False when the value would not fit in a cookie. */
export function saveSealedCookie(reply: FastifyReply, config: Config, box: SecretBox, name: string, value: unknown, lifetimeSeconds: number): boolean {
  const sealed = box.seal(`cookie:${name}`, JSON.stringify(value));
  if (sealed.length > maxCookieLength) return false;
  setCookie(reply, config, sealedCookieName(config, name), sealed, lifetimeSeconds);
  return true;
}

/** The value, if the cookie is there, genuine and fits the schema; expiry is the schema's and caller's to judge. */
export function readSealedCookie<T>(request: FastifyRequest, config: Config, box: SecretBox, name: string, schema: z.ZodType<T>): T | undefined {
  const sealed = request.cookies[sealedCookieName(config, name)];
  if (sealed === undefined || sealed.length > maxCookieLength) return undefined;
  try {
    const parsed = schema.safeParse(JSON.parse(box.open(`cookie:${name}`, sealed)));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

export function clearSealedCookie(reply: FastifyReply, config: Config, name: string): void {
  clearCookie(reply, config, sealedCookieName(config, name));
}
