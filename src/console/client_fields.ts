/**
 * The fields of a client as the console's forms take them: the grant types offered, redirect URIs
 * and web origins typed one per line, and which grant types a client can use (a public client cannot keep a
 * secret, so no client_credentials; Authorization Code needs a redirect URI). The same rules as
 * `latchkey clients add` (directory/validation.ts), said as the forms say them.
 */
import { AdminInputError, maxWebOrigins, validGrantTypes, validRedirectUri, validWebOrigins } from '../directory/validation.js';
import type { GrantTypeName } from '../store/store.js';
import { linesOf } from './console_page.js';

/** The grant types a client may be registered for, as the form offers them. */
export const grantTypeChoices: readonly { value: GrantTypeName; label: string }[] = [
  { value: 'authorization_code', label: 'Authorization Code (browser sign-in)' },
  { value: 'refresh_token', label: 'Refresh tokens' },
  { value: 'device_code', label: 'Device Code (TVs, command lines)' },
  { value: 'client_credentials', label: 'Client Credentials (machine to machine)' },
];

/** Redirect URIs from a textarea, one per line: each valid, distinct, in the order given. */
export function redirectUrisOf(text: string, what = 'redirect URIs'): string[] {
  return [...new Set(linesOf(text, what, 50).map((line) => validRedirectUri(line).uri))];
}

/** Web origins from a textarea, one per line: each valid and in its serialised form, distinct, in the order given. */
export function webOriginsOf(text: string): string[] {
  return validWebOrigins(linesOf(text, 'web origins', maxWebOrigins));
}

/** The grant types ticked, checked against what the client can use. */
export function grantTypesOf(ticked: string[], confidential: boolean, redirectUris: string[]): GrantTypeName[] {
  if (ticked.length === 0) throw new AdminInputError('Choose at least one grant type.');
  const grantTypes = validGrantTypes(ticked);
  if (grantTypes.includes('client_credentials') && !confidential)
    throw new AdminInputError('Client Credentials is for confidential clients: a public client cannot keep a secret.');
  if (grantTypes.includes('authorization_code') && redirectUris.length === 0) throw new AdminInputError('Authorization Code needs at least one redirect URI.');
  return grantTypes;
}
