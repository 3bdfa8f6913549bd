/** `latchkey logout`: revokes the refresh token at the server, then forgets the profile. */
import { homedir } from 'node:os';
import { loadClientConfig } from '../../config.js';
import { exitCodes, type Command } from '../command.js';
import { CredentialsStore } from './credentials.js';
import { describe, discover, oidc } from './oidc.js';

export const logoutCommand: Command = {
  path: ['logout'],
  summary: 'Sign out: revoke the refresh token and delete the stored credentials',
  usage: 'latchkey logout [--profile P]',
  positionals: { min: 0, max: 0 },
  options: { profile: { type: 'string' } },
  async run(context) {
    const name = (context.values.profile as string | undefined) ?? 'default';
    const store = new CredentialsStore(loadClientConfig(context.env, homedir()).home);
    const profile = store.get(name);
    if (!profile) {
      context.stderr.write(`Not signed in${name === 'default' ? '' : ` (profile ${name})`}: nothing to do.\n`);
      return exitCodes.ok;
    }
    let revoked = true;
    try {
      const config = await discover(profile.issuer, profile.client_id);
      if (profile.refresh_token) await oidc.tokenRevocation(config, profile.refresh_token, { token_type_hint: 'refresh_token' });
      await oidc.tokenRevocation(config, profile.access_token, { token_type_hint: 'access_token' });
    } catch (err) {
      revoked = false;
      context.stderr.write(`warning: could not revoke the tokens at ${profile.issuer}: ${describe(err)}\n`);
    }
    await store.withLock(async () => store.remove(name));
    context.stderr.write(revoked ? 'Signed out.\n' : 'Removed the stored credentials anyway.\n');
    return revoked ? exitCodes.ok : exitCodes.failure;
  },
};
