/** `latchkey logout`: revokes the refresh token at the server, then forgets the profile. */
import { homedir } from 'node:os';
import { loadClientConfig } from '../../config.js';
import { exitCodes, defineCommand } from '../command.js';
import { CredentialsStore } from './credentials.js';
import { clientHelp } from './help.js';
import { explainClientError } from './client_errors.js';
import { discover, oidc } from './oidc.js';

export const logoutCommand = defineCommand({
  usage: 'latchkey logout [--profile P]',
  help: clientHelp(),
  positionals: { min: 0, max: 0 },
  options: { profile: { type: 'string' } },
  async run(context) {
    const name = context.values.profile ?? 'default';
    const client = loadClientConfig(context.env, homedir());
    const store = new CredentialsStore(client.home, client.issuer);
    // Under the lock: a refresh running meanwhile cannot leave a newer refresh token unrevoked.
    const result = await store.withLock(async () => {
      const profile = store.get(name);
      if (!profile) return undefined;
      let revoked = true;
      try {
        const config = await discover(profile.issuer, profile.client_id);
        if (profile.refresh_token) await oidc.tokenRevocation(config, profile.refresh_token, { token_type_hint: 'refresh_token' });
        await oidc.tokenRevocation(config, profile.access_token, { token_type_hint: 'access_token' });
      } catch (err) {
        revoked = false;
        context.stderr.write(
          `warning: could not revoke the tokens at ${profile.issuer}: ${explainClientError(err, { issuer: profile.issuer, clientId: profile.client_id })}\n`,
        );
      }
      store.remove(name);
      return { revoked };
    });
    if (!result) {
      context.stderr.write(`Not signed in${name === 'default' ? '' : ` (profile ${name})`}: nothing to do.\n`);
      return exitCodes.ok;
    }
    const { revoked } = result;
    context.stderr.write(revoked ? 'Signed out.\n' : 'Removed the stored credentials anyway.\n');
    return revoked ? exitCodes.ok : exitCodes.failure;
  },
});
