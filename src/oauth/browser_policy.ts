/**
 * The policy for browser applications (OAuth 2.0 for Browser-Based Applications, the IETF's best
 * current practice draft): a public client with a web origin runs as code in a page, where any
 * script the page runs can read what it holds. Its refresh tokens rotate on every use like every
 * public client's (RFC 9700 §4.14.2), and its whole sign-in — the refresh family — ends after
 * LATCHKEY_BROWSER_REFRESH_LIFETIME however often it was refreshed, so a token taken from a page
 * cannot be kept alive for the longer lifetime native applications get.
 */
import type { Config } from '../config.js';
import type { ClientRecord } from '../store/store.js';
import { isConfidential } from './client_type.js';

/** A public client whose code runs in a browser: it has registered the origins it runs on. */
export function isBrowserApplication(client: Pick<ClientRecord, 'secretHash' | 'jwksUri' | 'jwks' | 'webOrigins'>): boolean {
  return !isConfidential(client) && client.webOrigins.length > 0;
}

/** How long a refresh family issued to this client lives, from its sign-in (rotation never extends it). */
export function refreshFamilyLifetime(
  config: Pick<Config, 'refreshTokenTtl' | 'browserRefreshLifetime'>,
  client: Pick<ClientRecord, 'secretHash' | 'jwksUri' | 'jwks' | 'webOrigins'>,
): number {
  return isBrowserApplication(client) ? Math.min(config.refreshTokenTtl, config.browserRefreshLifetime) : config.refreshTokenTtl;
}
