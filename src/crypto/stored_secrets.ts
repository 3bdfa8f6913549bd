/**
 * Whether the configured secret keys belong to this database, checked before anything is changed:
 * by the server at start, and by every admin command that opens the database. A wrong key file (a
 * backup's, another deployment's) must be refused with a clear word before any command writes a
 * secret under it — a signing key sealed under a key the server does not have locks the server
 * out of its own database.
 *
 * A value in the clear is sealed at start only in a database that holds no sealed value yet (one
 * written before secrets were encrypted). In a database whose secrets are sealed, a value in the
 * clear was put there by an older Latchkey's admin command or by hand, so it is refused by name
 * until an operator encrypts it on purpose (`latchkey secret-key rotate`).
 */
import type { SealedSecret, Store } from '../store/store.js';
import { isSealed, sealedKeyId, SecretKeyError, type SecretBox } from './secret_box.js';

export interface StoredSecrets {
  /** The ids of the keys that sealed what the database holds. */
  keyIds: string[];
  /** Where values are stored in the clear ("signing_key:<kid>" …). */
  inTheClear: string[];
}

/**
 * Opens one sealed value per key that sealed any (the store samples them), so that a key which
 * does not open them is found at once. Throws SecretKeyError naming the key that is missing.
 */
export async function checkStoredSecrets(store: Store, box: SecretBox): Promise<StoredSecrets> {
  const samples = await store.sampleStoredSecrets();
  const sealed = samples.filter((s) => isSealed(s.value));
  for (const sample of sealed) openOrExplain(box, sample);
  return {
    keyIds: [...new Set(sealed.flatMap((s) => sealedKeyId(s.value) ?? []))],
    inTheClear: samples.filter((s) => !isSealed(s.value)).map((s) => s.context),
  };
}

function openOrExplain(box: SecretBox, sample: SealedSecret): void {
  try {
    box.open(sample.context, sample.value);
  } catch (err) {
    const keyId = sealedKeyId(sample.value);
    const held = box.keyIds.join(', ');
    throw new SecretKeyError(
      keyId !== undefined && !box.keyIds.includes(keyId)
        ? `the database's secrets are encrypted with secret key ${keyId}, which is not among the configured keys (${held}): the configured key does not belong to this database. Restore the key file made with key ${keyId} (or set LATCHKEY_SECRET_KEY to it); nothing was changed`
        : `${(err as Error).message}; nothing was changed`,
    );
  }
}

/** The refusal of values in the clear in a database whose secrets are sealed. */
export function clearValuesRefused(inTheClear: string[]): SecretKeyError {
  const shown = inTheClear.slice(0, 3).join(', ') + (inTheClear.length > 3 ? ` and ${inTheClear.length - 3} more` : '');
  return new SecretKeyError(
    `${shown} ${inTheClear.length === 1 ? 'is' : 'are'} stored in the clear in a database whose secrets are encrypted: an older Latchkey's admin command or a hand edit wrote ${inTheClear.length === 1 ? 'it' : 'them'}, and the server uses no such value. If ${inTheClear.length === 1 ? 'it is' : 'they are'} yours, run "latchkey secret-key rotate" to encrypt ${inTheClear.length === 1 ? 'it' : 'them'}; otherwise remove ${inTheClear.length === 1 ? 'it' : 'them'}`,
  );
}
