/** `latchkey whoami`: the signed-in user's claims, from the userinfo endpoint. */
import { homedir } from 'node:os';
import { loadClientConfig } from '../../config.js';
import { CommandError, exitCodes, defineCommand } from '../command.js';
import { json } from '../output.js';
import { visible } from '../terminal_text.js';
import { CredentialsStore } from './credentials.js';
import { clientHelp } from './help.js';
import { explainClientError, oauthErrorCode } from './client_errors.js';
import { discover, oidc } from './oidc.js';
import { profileDpop, signInAgain, validProfile } from './session.js';

export const whoamiCommand = defineCommand({
  usage: 'latchkey whoami [--profile P] [--json]',
  help: clientHelp('  --json            print the claims as JSON\n'),
  positionals: { min: 0, max: 0 },
  options: { profile: { type: 'string' }, json: { type: 'boolean' } },
  async run(context) {
    const name = context.values.profile ?? 'default';
    const client = loadClientConfig(context.env, homedir());
    const store = new CredentialsStore(client.home, client.issuer);
    let profile = await validProfile(store, name);
    const config = await discover(profile.issuer, profile.client_id);
    // A DPoP-bound token is sent with a proof by its key (RFC 9449 §7).
    const read = async () => oidc.fetchUserInfo(config, profile.access_token, oidc.skipSubjectCheck, await profileDpop(config, profile));
    const explain = (err: unknown) => explainClientError(err, { issuer: profile.issuer, clientId: profile.client_id });
    let claims: oidc.UserInfoResponse;
    try {
      claims = await read();
    } catch (err) {
      if (oauthErrorCode(err) !== 'invalid_token') throw new CommandError(`could not read your account: ${explain(err)}`);
      // The access token was refused (revoked, or a key it was signed with is gone): refresh once.
      profile = await validProfile(store, name, { force: true });
      try {
        claims = await read();
      } catch (again) {
        if (oauthErrorCode(again) === 'invalid_token') {
          throw new CommandError(`your sign-in has ended: run "${signInAgain(store, name, profile)}"`, exitCodes.notSignedIn);
        }
        throw new CommandError(`could not read your account: ${explain(again)}`);
      }
    }
    if (context.values.json) {
      // The claims exactly as the server sent them (`profile` is a standard claim, OIDC Core §5.1);
      // what the CLI adds is under names no claim has.
      context.stdout.write(json({ ...claims, latchkey_profile: name, latchkey_issuer: profile.issuer }));
    } else {
      const lines = [
        `${claims.preferred_username ?? claims.sub}${claims.name ? ` (${claims.name})` : ''}${claims.email ? ` <${claims.email}>` : ''}`,
        `  subject: ${claims.sub}`,
        `  issuer:  ${profile.issuer}`,
        `  client:  ${profile.client_id}${name === 'default' ? '' : `, profile ${name}`}`,
        `  scope:   ${profile.scope}`,
      ];
      // The claims are what the server holds (a name or email an upstream may have sent): shown, never run.
      context.stdout.write(lines.map(visible).join('\n') + '\n');
    }
    return exitCodes.ok;
  },
});
