/**
 * While the person is away at an upstream, what the callback needs — the state, nonce and PKCE
 * verifier sent, the connector, and where to return — waits in a cookie, encrypted (AES-GCM, the
 * server's secret key) so the browser can neither read the verifier nor change a thing, and
 * expiring after ten minutes. Nothing is stored for a sign-in that is never finished, as for
 * /authorize. SameSite=Lax lets the upstream's redirect back (a top-level GET) carry it.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { constantTimeEqual } from '../crypto/secrets.js';
import type { SecretBox } from '../crypto/secret_box.js';
import type { Config } from '../config.js';
import { clearCookie, setCookie } from '../http/cookies.js';

export interface UpstreamState {
  connectorId: string;
  state: string;
  nonce: string;
  codeVerifier: string;
  returnTo: string;
  expiresAt: number;
  /** Set when the client asked for a fresh sign-in (prompt=login, max_age): when we sent the person upstream. */
  freshSince?: number | undefined;
}

export const upstreamStateLifetime = 600;
/** Browsers keep cookies up to about 4 KB, name and attributes included. */
const maxCookieLength = 3800;
const context = 'upstream_state';

export function upstreamCookieName(config: Config): string {
  return `${config.secureCookies ? '__Host-' : ''}latchkey_upstream`;
}

/** False when it would not fit in a cookie (a very long return address). */
export function saveUpstreamState(reply: FastifyReply, config: Config, box: SecretBox, state: UpstreamState): boolean {
  const value = box.seal(context, JSON.stringify(state));
  if (value.length > maxCookieLength) return false;
  setCookie(reply, config, upstreamCookieName(config), value, upstreamStateLifetime);
  return true;
}

/**
 * The pending upstream sign-in of this browser, if it is for this connector, carries this state,
 * and has not expired; it is cleared either way (a state is used once).
 */
export function takeUpstreamState(
  request: FastifyRequest,
  reply: FastifyReply,
  config: Config,
  box: SecretBox,
  connectorId: string,
  returnedState: string | undefined,
  now: number,
): UpstreamState | undefined {
  const name = upstreamCookieName(config);
  const value = request.cookies[name];
  if (value === undefined) return undefined;
  clearCookie(reply, config, name);
  let state: UpstreamState;
  try {
    state = JSON.parse(box.open(context, value)) as UpstreamState;
  } catch {
    return undefined;
  }
  if (state.connectorId !== connectorId || now >= state.expiresAt) return undefined;
  if (returnedState === undefined || !constantTimeEqual(returnedState, state.state)) return undefined;
  return state;
}
