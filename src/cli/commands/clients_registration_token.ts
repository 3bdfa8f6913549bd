/**
 * `latchkey clients registration-token`: an initial access token for dynamic client registration
 * (RFC 7591 §3: POST /oauth/register with it as a Bearer token). Printed once on stdout; only its
 * SHA-256 and expiry are stored; the registration that uses it spends it.
 */
import { epochSeconds, systemClock } from '../../clock.js';
import {
  createRegistrationToken,
  defaultRegistrationTokenSeconds,
  maxRegistrationTokenSeconds,
  validRegistrationTokenLifetime,
} from '../../directory/registration_tokens.js';
import { cliAudit } from '../audit_log.js';
import { isoTime } from '../output.js';
import { defineCommand } from '../command.js';
import { managementClient } from '../management_client.js';
import { issuerForAddresses } from '../server_address.js';

export const clientsRegistrationTokenCommand = defineCommand({
  usage: 'latchkey clients registration-token [--expires-in <seconds>]',
  help: [
    'Options:',
    `  --expires-in <seconds>   how long the token can be used: default ${defaultRegistrationTokenSeconds} (an hour), at most ${maxRegistrationTokenSeconds} (30 days)`,
    '',
    'The token is printed once on stdout and stored only as a digest. It registers one client: the',
    'request to POST /oauth/register that uses it spends it. A registered client_credentials client',
    'gets no API access until `latchkey clients grant` gives it some.',
    '',
  ].join('\n'),
  positionals: { min: 0, max: 0 },
  options: { 'expires-in': { type: 'string' } },
  remote: true,
  async run(context) {
    const lifetime = validRegistrationTokenLifetime(context.values['expires-in']);
    const say = (endpoint: string, expiresAt: string, token: string) => {
      context.stderr.write(`Initial access token for POST ${endpoint} (one registration, until ${expiresAt}; shown only once):\n`);
      context.stdout.write(`${token}\n`);
    };
    const remote = managementClient(context);
    if (remote) {
      const made = await remote.call<{ token: string; expires_at: string; registration_endpoint: string }>('POST', '/clients/registration-tokens', {
        expires_in: lifetime,
      });
      say(made.registration_endpoint, made.expires_at, made.token);
      return 0;
    }
    const store = await context.store();
    const { token, expiresAt } = await createRegistrationToken(store, epochSeconds(systemClock), lifetime);
    await cliAudit(context, 'client.registration_token_created', { expiresAt: isoTime(expiresAt) });
    say(`${await issuerForAddresses(context)}/oauth/register`, isoTime(expiresAt), token);
    return 0;
  },
});
