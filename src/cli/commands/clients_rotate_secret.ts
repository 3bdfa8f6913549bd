import { refuseManaged } from '../../directory/managed.js';
import { epochSeconds, systemClock } from '../../clock.js';
import { newClientSecret, validSecretOverlap } from '../../directory/clients.js';
import { cliAudit } from '../audit_log.js';
import { CommandError, defineCommand } from '../command.js';
import { managementClient } from '../management_client.js';

export const clientsRotateSecretCommand = defineCommand({
  usage: 'latchkey clients rotate-secret <client_id> [--keep-old-for <seconds>] [--client-secret-jwt]',
  help: [
    'Options:',
    '  --keep-old-for <seconds>  the old secret keeps working this long (default 0: it stops at once;',
    '                            at most 30 days), so deployed copies can be replaced without an outage',
    '  --client-secret-jwt       let the client use client_secret_jwt from now on (kept as before otherwise)',
    '',
    'Prints the new secret once on stdout.',
    '',
  ].join('\n'),
  positionals: { min: 1, max: 1 },
  options: { 'keep-old-for': { type: 'string' }, 'client-secret-jwt': { type: 'boolean' } },
  remote: true,
  async run(context) {
    const clientId = context.positionals[0] ?? '';
    const overlap = validSecretOverlap(context.values['keep-old-for']);
    const secretJwt = context.values['client-secret-jwt'] === true;
    const say = (secret: string) => {
      context.stderr.write(
        overlap > 0
          ? `Rotated the secret of ${clientId}; the old one works for ${overlap} more seconds\n`
          : `Rotated the secret of ${clientId}; the old one no longer works\n`,
      );
      context.stdout.write(`client_secret (shown only once): ${secret}\n`);
    };
    const remote = managementClient(context);
    if (remote) {
      // The same refusals (unknown, managed, no secret to rotate); the server audits it and answers the secret once.
      const rotated = await remote.call<{ client_secret: string }>('POST', `/clients/${encodeURIComponent(clientId)}/rotate-secret`, {
        keep_old_for: overlap,
        ...(secretJwt ? { client_secret_jwt: true } : {}),
      });
      say(rotated.client_secret);
      return 0;
    }
    const store = await context.store();
    const client = await store.findClient(clientId);
    if (!client) throw new CommandError(`no client "${clientId}"`);
    refuseManaged('client', clientId, client);
    if (client.secretHash === undefined) {
      throw new CommandError(
        `client "${clientId}" has no secret to rotate (${client.jwksUri !== undefined || client.jwks !== undefined ? 'it authenticates with its keys' : 'it is public'})`,
      );
    }
    // client_secret_jwt stays as it was (a sealed secret), unless asked for now.
    const fresh = newClientSecret(await context.secretBox(), clientId, client.secretSealed !== undefined || secretJwt);
    const now = epochSeconds(systemClock);
    if (!(await store.rotateClientSecret(clientId, { hash: fresh.hash, sealed: fresh.sealed }, overlap > 0 ? now + overlap : undefined))) {
      throw new CommandError(`no client "${clientId}"`);
    }
    await cliAudit(context, 'client.secret_rotated', { clientId, keepOldFor: overlap });
    say(fresh.secret);
    return 0;
  },
});
