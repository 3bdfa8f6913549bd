/**
 * A password made for a person when none is given (`users add` without one, POST /api/v1/users
 * without `password`): 20 characters from an alphabet without look-alikes (0/O, 1/l/I), about 116
 * bits, shown once to whoever asked for the account.
 */
import { randomString } from '../crypto/secrets.js';

const generatedAlphabet = 'ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789';

export function generatedPassword(): string {
  return randomString(generatedAlphabet, 20);
}
