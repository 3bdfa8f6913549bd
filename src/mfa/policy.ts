/**
 * When a second factor is needed (LATCHKEY_MFA and the client's acr_values): under `required`
 * always; under `optional` for people who have one (they use it at every sign-in, and a session
 * from before they enrolled does not stand in for it) and when a client asks for
 * `urn:latchkey:mfa`; under `off` never — and a client asking for one is told it cannot be had.
 */
import type { Config } from '../config.js';
import { OAuthError } from '../errors.js';
import type { SessionRecord, Store } from '../store/store.js';
import { asksForMfa, isMultiFactor, mfaAcr } from './amr.js';

export interface SecondFactors {
  totp: boolean;
  passkeys: number;
  recoveryCodes: number;
}

export async function secondFactorsOf(store: Store, userId: string): Promise<SecondFactors> {
  const [totp, passkeys, recoveryCodes] = await Promise.all([store.findTotp(userId), store.listPasskeys(userId), store.countRecoveryCodes(userId)]);
  return { totp: totp !== undefined, passkeys: passkeys.length, recoveryCodes };
}

/** Recovery codes are a way back to a factor, not one of their own. */
export function hasSecondFactor(factors: SecondFactors): boolean {
  return factors.totp || factors.passkeys > 0;
}

/**
 * The acr_values a request keeps (only the values this server knows: acr_values is voluntary);
 * asking for a second factor where they are turned off is refused rather than quietly ignored,
 * since a client that asks for one relies on it.
 */
export function requestedAcrValues(config: Config, acrValues: string | undefined): string {
  if (!asksForMfa(acrValues)) return '';
  if (config.mfa === 'off') throw new OAuthError('unmet_authentication_requirements', 'This server does not use second factors.');
  return mfaAcr;
}

export type SecondFactorNeed = 'satisfied' | 'step_up';

/** Whether this session may go on, or must first add a second factor (or set one up). */
export async function secondFactorNeed(config: Config, store: Store, session: SessionRecord, askedByClient: boolean): Promise<SecondFactorNeed> {
  if (config.mfa === 'off' || isMultiFactor(session.amr)) return 'satisfied';
  if (config.mfa === 'required' || askedByClient) return 'step_up';
  return hasSecondFactor(await secondFactorsOf(store, session.userId)) ? 'step_up' : 'satisfied';
}

/** Where a session goes to add its second factor (or to set one up, when the person has none). */
export function stepUpPath(returnTo: string): string {
  return `/login/second-factor?return_to=${encodeURIComponent(returnTo)}`;
}
