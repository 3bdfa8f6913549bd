/**
 * How the CLI names itself to the servers it talks to: `latchkey/<version> (<OS>; <arch>)`, e.g.
 * `latchkey/0.2.0 (Linux; x64)`, on every request (RFC 9110 §10.1.5), in place of the HTTP
 * library's own name — so a person's "Devices and apps" and an operator's log show the program
 * they actually ran.
 */
import { type } from 'node:os';
import { latchkeyVersion } from '../../version.js';

export const userAgent = `latchkey/${latchkeyVersion} (${type()}; ${process.arch})`;

/** fetch, with our User-Agent replacing whatever the caller (openid-client) set. */
export function fetchAsLatchkey(url: string, options: RequestInit = {}): Promise<Response> {
  const headers = new Headers(options.headers);
  headers.set('user-agent', userAgent);
  return fetch(url, { ...options, headers });
}
