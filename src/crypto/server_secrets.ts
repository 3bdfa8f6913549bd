/**
 * The server's own secrets in the store, always encrypted (secret_box.ts): the HMAC keys of CSRF
 * tokens (and sealed interactions, device cookies) and of user codes. Also the one step that
 * brings every stored secret under the current key: plaintext left by a version before encryption,
 * or values sealed with a key being rotated out.
 */
import type { Store } from '../store/store.js';
import { randomSecret } from './secrets.js';
import type { SecretBox } from './secret_box.js';

export interface ServerSecrets {
  csrfSecret: string;
  userCodeKey: string;
}

async function serverSecret(store: Store, box: SecretBox, name: string): Promise<string> {
  const context = `server_secret:${name}`;
  return box.open(context, await store.serverSecret(name, () => box.seal(context, randomSecret())));
}

export async function loadServerSecrets(store: Store, box: SecretBox): Promise<ServerSecrets> {
  return { csrfSecret: await serverSecret(store, box, 'csrf'), userCodeKey: await serverSecret(store, box, 'user_code') };
}

/** Seals every stored secret under the current key, in one transaction; returns how many changed. */
export function sealStoredSecrets(store: Store, box: SecretBox): Promise<number> {
  return store.resealSecrets(({ context, value }) => box.reseal(context, value));
}
