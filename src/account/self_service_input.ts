/**
 * What a person types on their own account pages — name, email, a new password — checked by the
 * rules an administrator's input follows (directory/validation.ts), answered as a result rather
 * than an administrator's error: each page says in its own words, in the person's language, what
 * to change. The one place where a refusal of those rules is caught for self-service.
 */
import { AdminInputError, validEmail, validName, validPassword } from '../directory/validation.js';

export interface OwnProfile {
  name: string | undefined;
  email: string;
}

/** The name and email typed, cleaned; undefined when either is refused. */
export function ownProfileInput(name: string, email: string): OwnProfile | undefined {
  // No control characters: they have no place in a name or an address (and PostgreSQL refuses NUL).
  if (/[\u0000-\u001f\u007f]/.test(name + email)) return undefined;
  return unlessRefused(() => ({ name: validName(name), email: validEmail(email.trim()) }));
}

/** A new password typed, within the length rules; undefined when refused. */
export function newPasswordInput(typed: string): string | undefined {
  return unlessRefused(() => validPassword(typed));
}

function unlessRefused<T>(check: () => T): T | undefined {
  try {
    return check();
  } catch (err) {
    if (err instanceof AdminInputError) return undefined;
    throw err;
  }
}
