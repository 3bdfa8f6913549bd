/**
 * `latchkey token`: prints a valid access token, and nothing else, on stdout. With `--dpop-proof`
 * (a profile signed in with `login --dpop`) it prints a DPoP proof for one request instead
 * (RFC 9449 §4: `--method`, `--url`, bound to the current access token by `ath`), and only for a
 * request the token may go to (a token for the issuer's own addresses only there).
 */
import { homedir } from 'node:os';
import { loadClientConfig } from '../../config.js';
import { CommandError, exitCodes, defineCommand } from '../command.js';
import { dpopProof } from './dpop_key.js';
import { loginCommandLine } from './sign_in_hint.js';
import { CredentialsStore } from './credentials.js';
import { clientHelp } from './help.js';
import { validProfile } from './session.js';
import { requireProofDestination } from './token_destination.js';

export const tokenCommand = defineCommand({
  usage: 'latchkey token [--profile P] [--dpop-proof --method M --url U [--nonce N]]        e.g. curl -H "Authorization: Bearer $(latchkey token)" …',
  help: clientHelp(
    [
      '  --dpop-proof      print a DPoP proof (RFC 9449) for one request instead of the token; needs a',
      '                    profile signed in with `login --dpop`, and --method and --url, e.g.',
      '                    curl -H "Authorization: DPoP $(latchkey token)" -H "DPoP: $(latchkey token --dpop-proof --method GET --url U)" U',
      '  --method M        the request method the proof is for',
      '  --url U           the request URL the proof is for (its query and fragment are left out)',
      '  --nonce N         a nonce the server asked for (its DPoP-Nonce header)',
      '',
    ].join('\n'),
  ),
  positionals: { min: 0, max: 0 },
  options: { profile: { type: 'string' }, 'dpop-proof': { type: 'boolean' }, method: { type: 'string' }, url: { type: 'string' }, nonce: { type: 'string' } },
  async run(context) {
    const client = loadClientConfig(context.env, homedir());
    const store = new CredentialsStore(client.home, client.issuer);
    const wantsProof = context.values['dpop-proof'] === true;
    const method = context.values.method;
    const url = context.values.url;
    const nonce = context.values.nonce;
    if (!wantsProof) {
      if (method !== undefined || url !== undefined || nonce !== undefined)
        throw new CommandError('--method, --url and --nonce go with --dpop-proof', exitCodes.usage);
      const profile = await validProfile(store, context.values.profile ?? 'default');
      context.stdout.write(`${profile.access_token}\n`);
      return exitCodes.ok;
    }
    if (method === undefined || !/^[A-Za-z]{1,16}$/.test(method)) throw new CommandError('--dpop-proof needs --method (GET, POST, …)', exitCodes.usage);
    if (url === undefined || !/^https?:\/\/[^\s]+$/i.test(url) || !URL.canParse(url))
      throw new CommandError('--dpop-proof needs --url, an http(s) URL', exitCodes.usage);
    const name = context.values.profile ?? 'default';
    const profile = await validProfile(store, name);
    if (!profile.dpop_jwk) {
      throw new CommandError(
        `this profile has no DPoP key: sign in with "${loginCommandLine({ profile: name, issuer: profile.issuer, defaultIssuer: store.defaultIssuer }, ['--dpop'])}"`,
      );
    }
    requireProofDestination(profile, name, url);
    const proof = await dpopProof(profile.dpop_jwk, { method, url, accessToken: profile.access_token, ...(nonce === undefined ? {} : { nonce }) });
    context.stdout.write(`${proof}\n`);
    return exitCodes.ok;
  },
});
