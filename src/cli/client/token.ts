/** `latchkey token`: prints a valid access token, and nothing else, on stdout. */
import { homedir } from 'node:os';
import { loadClientConfig } from '../../config.js';
import { exitCodes, type Command } from '../command.js';
import { CredentialsStore } from './credentials.js';
import { validProfile } from './session.js';

export const tokenCommand: Command = {
  path: ['token'],
  summary: 'Print a valid access token (refreshed when less than a minute is left)',
  usage: 'latchkey token [--profile P]        e.g. curl -H "Authorization: Bearer $(latchkey token)" …',
  help: `Options:
  --profile P   the stored sign-in to use (default: default)
  Credentials: ~/.latchkey/credentials.json (LATCHKEY_HOME replaces ~/.latchkey).

Exit codes: 0 ok, 1 failure, 2 usage, 3 configuration, 4 denied, 5 expired or timed out,
            6 not signed in (run latchkey login), 130 interrupted.
`,
  positionals: { min: 0, max: 0 },
  options: { profile: { type: 'string' } },
  async run(context) {
    const store = new CredentialsStore(loadClientConfig(context.env, homedir()).home);
    const profile = await validProfile(store, (context.values.profile as string | undefined) ?? 'default');
    context.stdout.write(`${profile.access_token}\n`);
    return exitCodes.ok;
  },
};
