import { isPostgresUrl } from '../../store/database_url.js';
import { generateSecretKeyText, parseSecretKeys, SecretBox } from '../../crypto/secret_box.js';
import { keyFileIsLoose, readKeyFile, withKeyFileLock, writeKeyFile } from '../../crypto/secret_key_file.js';
import { resealAllSecrets } from '../../crypto/server_secrets.js';
import { checkStoredSecrets } from '../../crypto/stored_secrets.js';
import type { Store } from '../../store/store.js';
import { cliAudit } from '../audit_log.js';
import { CommandError, defineCommand, type CommandContext } from '../command.js';

/**
 * After a re-encryption that failed: the key file as it was, unless the database holds anything
 * under the new key (a commit whose answer was lost) or cannot be asked — then both keys stay.
 */
async function putBackUnlessUsed(store: Store, box: SecretBox, path: string, old: string[]): Promise<void> {
  try {
    const { keyIds } = await checkStoredSecrets(store, box);
    if (!keyIds.includes(box.currentKeyId)) writeKeyFile(path, old);
  } catch {
    // Both keys open everything: the safe state when nothing is certain.
  }
}

/** Keys held elsewhere too (the environment, or a key file every PostgreSQL instance shares): re-encrypt under the first one listed. */
async function resealUnderFirstKey(context: CommandContext, where: string): Promise<number> {
  const store = await context.store();
  const box = await context.secretBox();
  const changed = await resealAllSecrets(store, box);
  await cliAudit(context, 'secret_key.rotated', { keyId: box.currentKeyId, resealed: changed });
  context.stderr.write(
    changed === 0
      ? `Every stored secret is already encrypted with key ${box.currentKeyId}: nothing to do.\n`
      : `Re-encrypted ${changed} stored secret${changed === 1 ? '' : 's'} with key ${box.currentKeyId}. Remove the other keys from ${where} once every instance runs with this one.\n`,
  );
  return 0;
}

export const secretKeyRotateCommand = defineCommand({
  usage: 'latchkey secret-key rotate',
  help: [
    'With the key file of a SQLite database (LATCHKEY_SECRET_KEY unset): makes a new key, re-encrypts every',
    'stored secret (signing keys, server secrets) under it in one transaction, and leaves only the new key in',
    'the file. A running server reads the file again when it meets the new key; nothing needs a restart.',
    '',
    'With LATCHKEY_SECRET_KEY (or a key file shared by PostgreSQL instances): put a new key first',
    '(LATCHKEY_SECRET_KEY=<new>,<old>; "latchkey secret-key generate" makes one), restart every instance',
    'with both, then run this command to re-encrypt everything under the first key; then remove the old',
    'key and restart again.',
    '',
  ].join('\n'),
  positionals: { min: 0, max: 0 },
  options: {},
  async run(context) {
    const config = context.config();
    if (config.secretKeys) return resealUnderFirstKey(context, 'LATCHKEY_SECRET_KEY');
    const path = config.secretKeyFile;
    if (path === undefined) throw new CommandError('an in-memory database has no secret key to rotate');
    // Every instance on PostgreSQL reads this file: a new key here alone would lock the others out.
    if (isPostgresUrl(config.databasePath)) return withKeyFileLock(path, () => resealUnderFirstKey(context, path));
    const store = await context.store();
    return withKeyFileLock(path, async () => {
      // The file as it is now (another rotation may have just finished) must open every stored
      // secret before anything changes: a wrong key file changes nothing, file or row.
      const oldKeys = readKeyFile(path);
      await checkStoredSecrets(store, new SecretBox(oldKeys));
      const old = oldKeys.map((k) => k.key.toString('base64url'));
      const fresh = generateSecretKeyText();
      // Both keys in the file while the secrets are re-encrypted: a crash in between loses nothing,
      // and a running server can open values under either.
      writeKeyFile(path, [fresh, ...old]);
      const keys = parseSecretKeys([fresh, ...old].join('\n'));
      if (keys === undefined) throw new Error('the new key file does not parse');
      const box = new SecretBox(keys);
      let changed: number;
      try {
        changed = await resealAllSecrets(store, box);
      } catch (err) {
        await putBackUnlessUsed(store, box, path, old);
        throw err;
      }
      // Only once the database has committed does the file lose the old key.
      writeKeyFile(path, [fresh]);
      await cliAudit(context, 'secret_key.rotated', { keyId: box.currentKeyId, resealed: changed });
      context.stderr.write(`New secret key ${box.currentKeyId} in ${path}; re-encrypted ${changed} stored secret${changed === 1 ? '' : 's'} with it.\n`);
      if (keyFileIsLoose(path)) context.stderr.write(`warning: ${path} can be read by other users: chmod 600 ${path}\n`);
      return 0;
    });
  },
});
