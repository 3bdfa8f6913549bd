/** `latchkey token`: prints a valid access token, and nothing else, on stdout. */
import { homedir } from 'node:os';
import { loadClientConfig } from '../../config.js';
import { exitCodes, type Command } from '../command.js';
import { CredentialsStore } from './credentials.js';
import { clientHelp } from './help.js';
import { validProfile } from './session.js';

export const tokenCommand: Command = {
  path: ['token'],
  summary: 'Print a valid access token (refreshed when less than a minute is left)',
  usage: 'latchkey token [--profile P]        e.g. curl -H "Authorization: Bearer $(latchkey token)" …',
  help: clientHelp(),
  positionals: { min: 0, max: 0 },
  options: { profile: { type: 'string' } },
  async run(context) {
    const store = new CredentialsStore(loadClientConfig(context.env, homedir()).home);
    const profile = await validProfile(store, (context.values.profile as string | undefined) ?? 'default');
    context.stdout.write(`${profile.access_token}\n`);
    return exitCodes.ok;
  },
};
