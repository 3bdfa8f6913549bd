/**
 * Initial access tokens for dynamic client registration (RFC 7591 §3: POST /oauth/register with
 * one as a Bearer token), as `latchkey clients registration-token` and the management API make
 * them: the token is returned once, only its SHA-256 and expiry are stored, and the registration
 * that uses it spends it.
 */
import { randomSecret, secretPrefix, sha256 } from '../crypto/secrets.js';
import type { Store } from '../store/store.js';
import { AdminInputError } from './validation.js';

export const defaultRegistrationTokenSeconds = 3600;
export const maxRegistrationTokenSeconds = 30 * 86400;

export function validRegistrationTokenLifetime(value: string | undefined): number {
  if (value === undefined) return defaultRegistrationTokenSeconds;
  if (!/^\d{1,9}$/.test(value) || Number(value) < 1) throw new AdminInputError('--expires-in must be a whole number of seconds, at least 1');
  const seconds = Number(value);
  if (seconds > maxRegistrationTokenSeconds) throw new AdminInputError(`--expires-in must be at most ${maxRegistrationTokenSeconds} seconds (30 days)`);
  return seconds;
}

/** A new token valid `lifetime` seconds from `now`; the caller hands `token` out once and never keeps it. */
export async function createRegistrationToken(store: Store, now: number, lifetime: number): Promise<{ token: string; expiresAt: number }> {
  const token = randomSecret(secretPrefix.registrationToken);
  const expiresAt = now + lifetime;
  await store.createRegistrationToken({ tokenHash: sha256(token), createdAt: now, expiresAt, usedAt: undefined, clientId: undefined });
  return { token, expiresAt };
}
