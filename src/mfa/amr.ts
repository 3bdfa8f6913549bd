/**
 * How a sign-in was made (RFC 8176 `amr`) and the level it reached (`acr`): two kinds of proof —
 * a password or an upstream identity provider, then a TOTP, recovery code or passkey; or a passkey
 * with user verification alone (possession of the key, and the PIN or biometric that unlocks it) —
 * is multi-factor, `urn:latchkey:mfa`. Anything less is `urn:latchkey:sfa`.
 */
import type { AuthMethod } from '../store/store.js';

export const mfaAcr = 'urn:latchkey:mfa';
export const singleFactorAcr = 'urn:latchkey:sfa';
export const acrValuesSupported = [singleFactorAcr, mfaAcr] as const;

const firstFactors: readonly AuthMethod[] = ['pwd', 'fed'];
const secondFactors: readonly AuthMethod[] = ['otp', 'hwk'];

/** A password or an upstream sign-in: what a second factor is added to. */
export function hasFirstFactor(amr: readonly AuthMethod[]): boolean {
  return amr.some((m) => firstFactors.includes(m));
}

export function isMultiFactor(amr: readonly AuthMethod[]): boolean {
  if (amr.includes('hwk') && amr.includes('user')) return true;
  return amr.some((m) => firstFactors.includes(m)) && amr.some((m) => secondFactors.includes(m));
}

export function acrOf(amr: readonly AuthMethod[]): string {
  return isMultiFactor(amr) ? mfaAcr : singleFactorAcr;
}

/** The methods of a sign-in followed by more: each once, in the order first used. */
export function withMethods(amr: readonly AuthMethod[], added: readonly AuthMethod[]): AuthMethod[] {
  return [...new Set([...amr, ...added])];
}

/**
 * Whether `acr_values` asks for a second factor. The values are the acceptable levels in order of
 * preference (OIDC Core §3.1.2.1) and unknown ones are ignored, so a second factor is required
 * only when the multi-factor level is the only one of ours listed: `urn:latchkey:sfa
 * urn:latchkey:mfa` is met by a password alone.
 */
export function asksForMfa(acrValues: string | undefined): boolean {
  const values = (acrValues ?? '').split(' ');
  return values.includes(mfaAcr) && !values.includes(singleFactorAcr);
}

/** The claims id_tokens and access tokens carry (RFC 8176; RFC 9068 §2.2.1). Nothing for a sign-in of unknown kind. */
export function authenticationClaims(amr: readonly AuthMethod[]): { amr?: AuthMethod[]; acr: string } {
  return { ...(amr.length === 0 ? {} : { amr: [...amr] }), acr: acrOf(amr) };
}
