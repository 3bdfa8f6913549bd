/**
 * The `users` resource's bodies: a person is created and changed with the fields `users add` and
 * `users update` take, under their OIDC names (snake_case, as the view answers them), and checked
 * by the very rules of those commands (directory/validation.ts, directory/profile_claims.ts), so the
 * API accepts and refuses what the commands do. A password is never answered, except the one the
 * server makes for a person created without one.
 */
import { z } from 'zod';
import { mergeProfile, profileClaimOptions, profileOptionsFrom } from '../directory/profile_claims.js';
import { AdminInputError } from '../directory/validation.js';
import { postalAddressMembers, type UserProfileClaims } from '../store/store.js';
import { listQuerySchema } from './pagination.js';
import { Problem } from './problem.js';
import { userViewSchema } from './user_view.js';

const claimText = z.string().max(4096);

const addressSchema = z.strictObject(
  Object.fromEntries(postalAddressMembers.map((member) => [member, claimText.optional()])) as Record<
    (typeof postalAddressMembers)[number],
    z.ZodOptional<z.ZodString>
  >,
);

/**
 * The standard claims beyond name and email (OIDC Core §5.1), as `users list --json` shows them.
 * In a change the object replaces the stored claims as a whole: a claim left out is removed.
 */
export const profileSchema = z.strictObject({
  ...(Object.fromEntries(Object.values(profileClaimOptions).map((claim) => [claim, claimText.optional()])) as Record<
    (typeof profileClaimOptions)[keyof typeof profileClaimOptions],
    z.ZodOptional<z.ZodString>
  >),
  phone_number_verified: z.boolean().optional(),
  address: addressSchema.optional(),
});

export const usernameParamsSchema = z.strictObject({ username: z.string().min(1).max(256) });

export const userCreateSchema = z.strictObject({
  username: z.string(),
  email: z.string(),
  name: z.string().optional(),
  profile: profileSchema.optional(),
  /** Roles granted by hand at once, as `users grant` grants them. */
  roles: z.array(z.string().max(64)).max(100).optional(),
  /** Without one, the server makes one and answers it once (as `users add` prints a generated one). */
  password: z.string().max(1024).optional(),
});

export const userPatchSchema = z.strictObject({
  email: z.string().optional(),
  /** null removes the name. */
  name: z.string().nullable().optional(),
  profile: profileSchema.optional(),
  /** true ends every sign-in of theirs, as `users disable` does; false enables, bringing none back. */
  disabled: z.boolean().optional(),
  /** A new password ends every sign-in of theirs, as `users passwd` does. Never answered. */
  password: z.string().max(1024).optional(),
});

/** A created person, with `password` when the server made it: the one answer that carries it. */
export const userWithPasswordSchema = userViewSchema.extend({ password: z.string().optional() });

export const usersListQuerySchema = listQuerySchema.extend({
  /** People holding this role, by hand or through a group. */
  role: z.string().max(64).optional(),
  disabled: z.enum(['true', 'false']).optional(),
  /** `local`, or the connector whose first sign-in made them. */
  source: z.string().max(256).optional(),
  /** Part of the username or email, without regard to case. */
  q: z.string().min(1).max(256).optional(),
});

export const mfaEnrollmentSchema = z
  .strictObject({
    /** Seconds the link works (as `users mfa-enroll --expires-in`); the command's default and bounds. */
    expires_in: z.number().int().optional(),
  })
  .optional();

export const enrolmentLinkSchema = z.object({ link: z.string(), expires_at: z.string(), replaced: z.number().int() });
export const enrolmentLinksCancelledSchema = z.object({ cancelled: z.number().int() });
export const factorsResetSchema = z.object({ had_factors: z.boolean() });
export const unlinkedSchema = z.object({
  identities: z.array(z.object({ connector: z.string(), subject: z.string() })),
  /** False when the person is left with no password, passkey or other linked identity. */
  can_sign_in: z.boolean(),
});

/**
 * Collects the refusals of the commands' rules (AdminInputError) under the body's field paths, so
 * one answer names every field that is wrong (RFC 9457 §3.2 extension member `errors`).
 */
export class FieldChecks {
  readonly errors: { path: string; message: string }[] = [];

  check<T>(path: string, rule: () => T): T | undefined {
    try {
      return rule();
    } catch (err) {
      if (!(err instanceof AdminInputError)) throw err;
      this.errors.push({ path, message: err.message });
      return undefined;
    }
  }

  done(): void {
    if (this.errors.length > 0) throw new Problem(400, 'invalid-input', 'The request body is not valid: see errors.', this.errors);
  }
}

const optionOf = Object.fromEntries(Object.entries(profileClaimOptions).map(([option, claim]) => [claim, option])) as Record<string, string>;
const addressOptionOf: Record<string, string> = {
  street_address: 'street-address',
  locality: 'locality',
  region: 'region',
  postal_code: 'postal-code',
  country: 'country',
  formatted: 'address-formatted',
};

/** A command's message names its option (`--given-name`); the API's names the claim. */
function inClaimTerms(message: string): string {
  return message.replace(/--([a-z-]+)/g, (whole, option: string) => {
    const claim = (profileClaimOptions as Record<string, string>)[option];
    if (claim !== undefined) return claim;
    const member = Object.entries(addressOptionOf).find(([, o]) => o === option)?.[0];
    if (member !== undefined) return `address.${member}`;
    if (option === 'phone-number-verified' || option === 'phone-number-unverified') return 'phone_number_verified';
    return whole;
  });
}

/**
 * The profile as `users add` would store it from the same claims given as options: each claim
 * checked by the command's rule (errors under /profile/<claim>), then put together as mergeProfile
 * orders it. Undefined (with the errors in `checks`) when a claim is refused.
 */
export function checkedProfile(checks: FieldChecks, profile: z.infer<typeof profileSchema>, now: number, path = '/profile'): UserProfileClaims | undefined {
  const values: Record<string, string | boolean> = {};
  const before = checks.errors.length;
  for (const [claim, value] of Object.entries(profile)) {
    const option = optionOf[claim];
    if (option === undefined || typeof value !== 'string') continue;
    const ok = checks.check(`${path}/${claim}`, () => profileOptionsFrom({ [option]: value }, now));
    if (ok !== undefined) values[option] = value;
  }
  for (const [member, value] of Object.entries(profile.address ?? {})) {
    const option = addressOptionOf[member];
    if (option === undefined || typeof value !== 'string') continue;
    const ok = checks.check(`${path}/address/${member}`, () => profileOptionsFrom({ [option]: value }, now));
    if (ok !== undefined) values[option] = value;
  }
  if (profile.phone_number_verified !== undefined) values[profile.phone_number_verified ? 'phone-number-verified' : 'phone-number-unverified'] = true;
  if (checks.errors.length > before) {
    for (const error of checks.errors.slice(before)) error.message = inClaimTerms(error.message);
    return undefined;
  }
  try {
    return mergeProfile({}, profileOptionsFrom(values, now));
  } catch (err) {
    if (!(err instanceof AdminInputError)) throw err;
    checks.errors.push({ path, message: inClaimTerms(err.message) });
    return undefined;
  }
}
