import { generateSecretKeyText, parseSecretKeys, SecretBox } from '../../crypto/secret_box.js';
import { keyFileIsLoose, readKeyFile, writeKeyFile } from '../../crypto/secret_key_file.js';
import { sealStoredSecrets } from '../../crypto/server_secrets.js';
import { cliAudit } from '../audit_log.js';
import { CommandError, type Command } from '../command.js';

export const secretKeyRotateCommand: Command = {
  path: ['secret-key', 'rotate'],
  summary: 'Re-encrypt the stored server secrets under a new secret key',
  usage: 'latchkey secret-key rotate',
  help: [
    'With the key file (LATCHKEY_SECRET_KEY unset): makes a new key, re-encrypts every stored secret',
    '(signing keys, server secrets) under it in one transaction, and leaves only the new key in the file.',
    'A running server reads the file again when it meets the new key; nothing needs a restart.',
    '',
    'With LATCHKEY_SECRET_KEY: put a new key first (LATCHKEY_SECRET_KEY=<new>,<old>, a new one from',
    '"latchkey secret-key generate"), restart every instance with both, then run this command to',
    're-encrypt everything under the first key; then remove the old key and restart again.',
    '',
  ].join('\n'),
  positionals: { min: 0, max: 0 },
  options: {},
  async run(context) {
    const config = context.config();
    const store = await context.store();
    if (config.secretKeys) {
      const box = await context.secretBox();
      const changed = await sealStoredSecrets(store, box);
      cliAudit(context, 'secret_key.rotated', { keyId: box.currentKeyId, resealed: changed });
      context.stderr.write(
        changed === 0
          ? `Every stored secret is already encrypted with key ${box.currentKeyId}: nothing to do.\n`
          : `Re-encrypted ${changed} stored secret${changed === 1 ? '' : 's'} with key ${box.currentKeyId}. Remove the other keys from LATCHKEY_SECRET_KEY when every instance runs with this one.\n`,
      );
      return 0;
    }
    const path = config.secretKeyFile;
    if (path === undefined) throw new CommandError('an in-memory database has no secret key to rotate');
    // The current file must be valid before anything changes; its keys stay readable meanwhile.
    const old = readKeyFile(path).map((k) => k.key.toString('base64url'));
    const fresh = generateSecretKeyText();
    // Both keys in the file while the secrets are re-encrypted: a crash in between loses nothing,
    // and a running server can open values under either.
    writeKeyFile(path, [fresh, ...old]);
    const box = new SecretBox(parseSecretKeys([fresh, ...old].join('\n'))!);
    const changed = await sealStoredSecrets(store, box);
    writeKeyFile(path, [fresh]);
    cliAudit(context, 'secret_key.rotated', { keyId: box.currentKeyId, resealed: changed });
    context.stderr.write(`New secret key ${box.currentKeyId} in ${path}; re-encrypted ${changed} stored secret${changed === 1 ? '' : 's'} with it.\n`);
    if (keyFileIsLoose(path)) context.stderr.write(`warning: ${path} can be read by other users: chmod 600 ${path}\n`);
    return 0;
  },
};
