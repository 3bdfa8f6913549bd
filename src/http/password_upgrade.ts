/**
 * Rehash at sign-in: a password hash stored an older way — scrypt, or Argon2id with other
 * parameters (crypto/password.ts) — is replaced by one made the current way right after the
 * password was proven, the only moment the server holds the password. The person's password is
 * the same, so nothing they hold ends; the write is a compare-and-set on the hash that was
 * verified, so a password changed meanwhile is never overwritten by the old one.
 */
import type { FastifyRequest } from 'fastify';
import { hashPassword, passwordHashNeedsRehash, passwordHashScheme } from '../crypto/password.js';
import type { Services } from '../services.js';
import type { UserRecord } from '../store/store.js';
import { audit } from '../audit/audit_events.js';

/** Call only once `password` matched `user.passwordHash`. Never throws: the old hash still verifies. */
export async function upgradeOutdatedPasswordHash(request: FastifyRequest, services: Services, user: UserRecord, password: string): Promise<void> {
  const scheme = passwordHashScheme(user.passwordHash);
  if (scheme === undefined || !passwordHashNeedsRehash(user.passwordHash)) return;
  try {
    const upgraded = await services.store.upgradePasswordHash(user.id, user.passwordHash, await hashPassword(password));
    if (upgraded) audit(request, 'user.password_rehashed', { userId: user.id, from: scheme });
  } catch (err) {
    // The sign-in goes on with the hash it verified; the next one tries again.
    request.log.warn({ err, userId: user.id }, 'the password hash could not be upgraded');
  }
}
