/**
 * Device cookies (OWASP "Slow Down Online Guessing Attacks with Device Cookies"): a browser in
 * which a person signed in successfully gets a long-lived cookie naming, by keyed digest, the
 * accounts that signed in there. Failed sign-ins from such a browser count against that browser
 * alone, so an attacker guessing elsewhere — or behind the same address — cannot lock the owner
 * out of a browser they have used before. The cookie is HMAC-signed (it cannot be forged or
 * extended to another account) and HttpOnly; it carries no name in the clear.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { constantTimeEqual, hmacSha256, randomSecret } from '../crypto/secrets.js';
import type { Services } from '../services.js';
import { setCookie } from './cookies.js';

/** How long a browser stays known without another successful sign-in. */
export const deviceCookieLifetime = 180 * 86400;
/** Accounts remembered per browser (a shared family computer): the most recent ones. */
const maxAccounts = 5;

export interface KnownDevice {
  /** Random per browser: the key its own failures are counted under. */
  id: string;
  /** Keyed digests of the (lower-cased) accounts that signed in here. */
  accounts: string[];
}

export function deviceCookieName(services: Services): string {
  return `${services.config.secureCookies ? '__Host-' : ''}latchkey_device`;
}

function accountDigest(services: Services, account: string): string {
  return hmacSha256(services.deviceCookieKey, `device-account:${account.toLowerCase()}`).slice(0, 16);
}

function mac(services: Services, body: string): string {
  return hmacSha256(services.deviceCookieKey, `device:v1:${body}`);
}

/** The browser's device cookie, if it carries one that this server signed. */
export function readDeviceCookie(request: FastifyRequest, services: Services): KnownDevice | undefined {
  const value = request.cookies[deviceCookieName(services)];
  if (value === undefined || value.length > 300) return undefined;
  const match = /^d1\.([A-Za-z0-9_-]{22})\.((?:[A-Za-z0-9_-]{16})(?:~[A-Za-z0-9_-]{16}){0,4})\.([A-Za-z0-9_-]{43})$/.exec(value);
  if (!match) return undefined;
  const [, id = '', accounts = '', tag = ''] = match;
  if (!constantTimeEqual(mac(services, `${id}.${accounts}`), tag)) return undefined;
  return { id, accounts: accounts.split('~') };
}

/** Whether the browser is known for this account: someone signed in to it here before. */
export function knownFor(device: KnownDevice | undefined, services: Services, account: string): boolean {
  return device !== undefined && device.accounts.includes(accountDigest(services, account));
}

/** After a successful sign-in: remember the account in this browser (renewing the cookie). */
export function rememberDevice(reply: FastifyReply, services: Services, device: KnownDevice | undefined, account: string): void {
  const id = device?.id ?? randomSecret().slice(0, 22);
  const digest = accountDigest(services, account);
  const accounts = [digest, ...(device?.accounts ?? []).filter((a) => a !== digest)].slice(0, maxAccounts).join('~');
  setCookie(reply, services.config, deviceCookieName(services), `d1.${id}.${accounts}.${mac(services, `${id}.${accounts}`)}`, deviceCookieLifetime);
}
