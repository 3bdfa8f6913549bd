/**
 * `latchkey credential docker <get|store|erase|list>`: docker's credential-helper protocol
 * (docker/docker-credential-helpers), run through a `docker-credential-latchkey` wrapper named in
 * `credHelpers`. `get` reads the registry from stdin and answers with the access token as the
 * secret; `store` and `erase` read their input and keep nothing (latchkey owns the token); `list`
 * lists nothing. A registry named with plain http:// gets no token.
 */
import { CommandError, exitCodes, type Command } from '../command.js';
import { audienceOptionHelp, helperProfile, readInput } from './credential_helper.js';
import { clientHelp } from './help.js';
import { printable } from './oidc.js';

/** What docker's helper client recognises as "no credentials here" (docker then goes on anonymously). */
export const dockerNotFound = 'credentials not found in native keychain';

export const defaultDockerUsername = 'oauth2';

/** The registry docker asks about: its input, as docker-credential-helpers reads it (lines joined, trimmed). */
export function parseDockerServerUrl(input: string): string {
  const serverUrl = input.replace(/\r?\n/g, '').trim();
  if (!serverUrl) throw new CommandError('no server URL on stdin', exitCodes.usage);
  return serverUrl;
}

export function dockerCredential(serverUrl: string, username: string, secret: string): string {
  return `${JSON.stringify({ ServerURL: serverUrl, Username: username, Secret: secret })}\n`;
}

export const dockerActions = ['get', 'store', 'erase', 'list'] as const;

export const credentialDockerCommand: Command = {
  usage: 'latchkey credential docker [--profile P] [--audience A] [--username U] get|store|erase|list\n' +
    '       run by a docker-credential-latchkey wrapper named in credHelpers of ~/.docker/config.json',
  help: clientHelp(
    [`  --username U      the username to answer with (default: ${defaultDockerUsername})`, audienceOptionHelp].join('\n'),
  ),
  positionals: { min: 1, max: 1 },
  options: { profile: { type: 'string' }, audience: { type: 'string' }, username: { type: 'string' } },
  async run(context) {
    const action = context.positionals[0];
    switch (action) {
      case 'list':
        context.stdout.write('{}\n');
        return exitCodes.ok;
      case 'store':
      case 'erase':
        await readInput(context.stdin, { untilBlankLine: false });
        return exitCodes.ok;
      case 'get': {
        const serverUrl = parseDockerServerUrl(await readInput(context.stdin, { untilBlankLine: false }));
        if (/^http:\/\//i.test(serverUrl)) {
          context.stdout.write(`${dockerNotFound}\n`);
          return exitCodes.failure;
        }
        const profile = await helperProfile(context);
        context.stdout.write(dockerCredential(serverUrl, (context.values.username as string | undefined) || defaultDockerUsername, profile.access_token));
        return exitCodes.ok;
      }
      default:
        throw new CommandError(`unknown action "${printable(String(action))}": expected ${dockerActions.join(', ')}`, exitCodes.usage);
    }
  },
};
