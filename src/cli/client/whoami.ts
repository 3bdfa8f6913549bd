/** `latchkey whoami`: the signed-in user's claims, from the userinfo endpoint. */
import { homedir } from 'node:os';
import { loadClientConfig } from '../../config.js';
import { CommandError, exitCodes, type Command } from '../command.js';
import { json } from '../output.js';
import { CredentialsStore } from './credentials.js';
import { describe, discover, oauthErrorCode, oidc } from './oidc.js';
import { validProfile } from './session.js';

export const whoamiCommand: Command = {
  path: ['whoami'],
  summary: "Show who is signed in (the user's claims)",
  usage: 'latchkey whoami [--profile P] [--json]',
  positionals: { min: 0, max: 0 },
  options: { profile: { type: 'string' }, json: { type: 'boolean' } },
  async run(context) {
    const name = (context.values.profile as string | undefined) ?? 'default';
    const store = new CredentialsStore(loadClientConfig(context.env, homedir()).home);
    const profile = await validProfile(store, name);
    const config = await discover(profile.issuer, profile.client_id);
    let claims: oidc.UserInfoResponse;
    try {
      claims = await oidc.fetchUserInfo(config, profile.access_token, oidc.skipSubjectCheck);
    } catch (err) {
      const code = oauthErrorCode(err) ?? (err as { cause?: { error?: string } }).cause?.error;
      if (code === 'invalid_token') throw new CommandError('your sign-in has ended: run "latchkey login"', exitCodes.notSignedIn);
      throw new CommandError(`could not read your account: ${describe(err)}`);
    }
    if (context.values.json) {
      context.stdout.write(json({ issuer: profile.issuer, profile: name, ...claims }));
    } else {
      const lines = [
        `${String(claims.preferred_username ?? claims.sub)}${claims.name ? ` (${String(claims.name)})` : ''}${claims.email ? ` <${String(claims.email)}>` : ''}`,
        `  subject: ${claims.sub}`,
        `  issuer:  ${profile.issuer}`,
        `  client:  ${profile.client_id}${name === 'default' ? '' : `, profile ${name}`}`,
        `  scope:   ${profile.scope}`,
      ];
      context.stdout.write(lines.join('\n') + '\n');
    }
    return exitCodes.ok;
  },
};
