/**
 * The server's own secrets in the store, always encrypted (secret_box.ts): one HMAC key per job —
 * CSRF tokens, user codes, sealed authorization requests, device cookies, recovery codes. Also the steps that bring
 * stored secrets under encryption: at start, whatever an older version left in the clear; on
 * `secret-key rotate`, everything under the new key.
 */
import type { Store } from '../store/store.js';
import { randomSecret } from './secrets.js';
import { isSealed, type SecretBox } from './secret_box.js';

export interface ServerSecrets {
  csrfSecret: string;
  userCodeKey: string;
  /** Seals pending authorization requests (oauth/interaction.ts). */
  interactionKey: string;
  /** Signs device cookies (http/device_cookie.ts). */
  deviceCookieKey: string;
  /** Keys the digests of recovery codes (mfa/recovery_codes.ts). */
  recoveryCodeKey: string;
  /** Makes the server's DPoP nonces (oauth/dpop.ts). */
  dpopNonceKey: string;
}

async function serverSecret(store: Store, box: SecretBox, name: string): Promise<string> {
  const context = `server_secret:${name}`;
  return box.open(context, await store.serverSecret(name, () => box.seal(context, randomSecret())));
}

export async function loadServerSecrets(store: Store, box: SecretBox): Promise<ServerSecrets> {
  return {
    csrfSecret: await serverSecret(store, box, 'csrf'),
    userCodeKey: await serverSecret(store, box, 'user_code'),
    interactionKey: await serverSecret(store, box, 'interaction'),
    deviceCookieKey: await serverSecret(store, box, 'device_cookie'),
    recoveryCodeKey: await serverSecret(store, box, 'recovery_code'),
    dpopNonceKey: await serverSecret(store, box, 'dpop_nonce'),
  };
}

/**
 * At start: seals the secrets an older version stored in the clear, and scrubs the space the
 * plaintext occupied. Values already sealed stay as they are — under whichever configured key —
 * so instances restarted one by one during a key rotation keep understanding each other.
 * Returns how many were sealed.
 */
export async function sealPlaintextSecrets(store: Store, box: SecretBox): Promise<number> {
  const sealed = await store.resealSecrets(({ context, value }) => (isSealed(value) ? value : box.seal(context, value)));
  if (sealed > 0) await store.scrubFreedSpace();
  return sealed;
}

/** `secret-key rotate`: every stored secret under the current (first) key, in one transaction. */
export function resealAllSecrets(store: Store, box: SecretBox): Promise<number> {
  return store.resealSecrets(({ context, value }) => box.reseal(context, value));
}
