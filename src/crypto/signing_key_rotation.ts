/**
 * Rotating the signing keys now, as `latchkey keys rotate` and the admin console do it: one new
 * key for every algorithm that has an active key or that the configuration needs, made active in
 * one step; the keys they replace retire and stay published until every token they signed has
 * expired. Not while `secret-key rotate` replaces the key the new keys are sealed with (it holds
 * the key file's lock).
 */
import type { Config } from '../config.js';
import type { SigningAlgorithm, SigningKeyRecord, Store } from '../store/store.js';
import type { SecretBox } from './secret_box.js';
import { withKeyFileLock } from './secret_key_file.js';
import { algorithmsInUse, newSealedSigningKey } from './signer.js';

export interface SigningKeyRotation {
  /** The new active keys, one per algorithm. */
  keys: Omit<SigningKeyRecord, 'retiredAt'>[];
  /** The algorithms that had an active key before. */
  previouslyActive: SigningAlgorithm[];
}

export async function rotateSigningKeysNow(
  config: Pick<Config, 'secretKeys' | 'secretKeyFile' | 'signingAlg'>,
  store: Store,
  secretBox: () => SecretBox | Promise<SecretBox>,
  now: number,
): Promise<SigningKeyRotation> {
  const rotate = async (): Promise<SigningKeyRotation> => {
    const previouslyActive = (await store.listSigningKeys()).filter((k) => k.retiredAt === undefined).map((k) => k.alg);
    const algorithms = [...new Set<SigningAlgorithm>([...algorithmsInUse(config.signingAlg), ...previouslyActive])];
    const box = await secretBox();
    const keys = algorithms.map((alg) => newSealedSigningKey(box, alg, now));
    await store.rotateSigningKeys(keys, now);
    return { keys, previouslyActive };
  };
  const keyFile = config.secretKeys === undefined ? config.secretKeyFile : undefined;
  return keyFile === undefined ? rotate() : withKeyFileLock(keyFile, rotate);
}
