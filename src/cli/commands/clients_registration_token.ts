/**
 * `latchkey clients registration-token`: an initial access token for dynamic client registration
 * (RFC 7591 §3: POST /oauth/register with it as a Bearer token). Printed once on stdout; only its
 * SHA-256 and expiry are stored; the registration that uses it spends it.
 */
import { epochSeconds, systemClock } from '../../clock.js';
import { AdminInputError } from '../../directory/validation.js';
import { randomSecret, secretPrefix, sha256 } from '../../crypto/secrets.js';
import { cliAudit } from '../audit_log.js';
import { isoTime } from '../output.js';
import { defineCommand } from '../command.js';
import { issuerForAddresses } from '../server_address.js';

export const defaultRegistrationTokenSeconds = 3600;
export const maxRegistrationTokenSeconds = 30 * 86400;

export function validRegistrationTokenLifetime(value: string | undefined): number {
  if (value === undefined) return defaultRegistrationTokenSeconds;
  if (!/^\d{1,9}$/.test(value) || Number(value) < 1) throw new AdminInputError('--expires-in must be a whole number of seconds, at least 1');
  const seconds = Number(value);
  if (seconds > maxRegistrationTokenSeconds) throw new AdminInputError(`--expires-in must be at most ${maxRegistrationTokenSeconds} seconds (30 days)`);
  return seconds;
}

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
  async run(context) {
    const lifetime = validRegistrationTokenLifetime(context.values['expires-in']);
    const token = randomSecret(secretPrefix.registrationToken);
    const now = epochSeconds(systemClock);
    const expiresAt = now + lifetime;
    const store = await context.store();
    await store.createRegistrationToken({ tokenHash: sha256(token), createdAt: now, expiresAt, usedAt: undefined, clientId: undefined });
    await cliAudit(context, 'client.registration_token_created', { expiresAt: isoTime(expiresAt) });
    const endpoint = `${await issuerForAddresses(context)}/oauth/register`;
    context.stderr.write(`Initial access token for POST ${endpoint} (one registration, until ${isoTime(expiresAt)}; shown only once):\n`);
    context.stdout.write(`${token}\n`);
    return 0;
  },
});
