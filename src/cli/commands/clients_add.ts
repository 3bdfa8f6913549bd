import { epochSeconds, systemClock } from '../../clock.js';
import { randomSecret, secretPrefix, sha256 } from '../../crypto/secrets.js';
import { validBackchannelLogoutUri, validClientId, validGrantTypes, validName, validRedirectUri } from '../../admin/validation.js';
import { DuplicateError } from '../../store/store.js';
import { CommandError, type Command } from '../command.js';
import { cliAudit } from '../audit_log.js';

export const clientsAddCommand: Command = {
  path: ['clients', 'add'],
  summary: 'Register a client application',
  usage:
    'latchkey clients add <client_id> [--name <name>] [--redirect-uri <uri>]... ' +
    '[--grant-type authorization_code|device_code|refresh_token]... [--confidential] [--no-pkce] [--first-party] ' +
    '[--post-logout-redirect-uri <uri>]... [--backchannel-logout-uri <uri>]',
  positionals: { min: 1, max: 1 },
  options: {
    name: { type: 'string' },
    'redirect-uri': { type: 'string', multiple: true },
    'grant-type': { type: 'string', multiple: true },
    confidential: { type: 'boolean' },
    'no-pkce': { type: 'boolean' },
    'first-party': { type: 'boolean' },
    'post-logout-redirect-uri': { type: 'string', multiple: true },
    'backchannel-logout-uri': { type: 'string' },
  },
  async run(context) {
    const clientId = validClientId(context.positionals[0] ?? '');
    const checks = ((context.values['redirect-uri'] as string[] | undefined) ?? []).map(validRedirectUri);
    const redirectUris = [...new Set(checks.map((c) => c.uri))];
    const grantTypes = validGrantTypes(context.values['grant-type'] as string[] | undefined);
    // Where RP-Initiated Logout may send the person: the same rules as redirect URIs, matched exactly.
    const logoutChecks = ((context.values['post-logout-redirect-uri'] as string[] | undefined) ?? []).map(validRedirectUri);
    const postLogoutRedirectUris = [...new Set(logoutChecks.map((c) => c.uri))];
    const backchannelLogoutUri = validBackchannelLogoutUri(context.values['backchannel-logout-uri'] as string | undefined);
    for (const check of [...checks, ...logoutChecks]) if (check.warning) context.stderr.write(`warning: ${check.warning}\n`);
    if (grantTypes.includes('authorization_code') && redirectUris.length === 0) {
      context.stderr.write(`warning: ${clientId} may use authorization_code but has no --redirect-uri, so sign-ins through /authorize will be refused\n`);
    }
    const secret = context.values.confidential ? randomSecret(secretPrefix.clientSecret) : undefined;
    try {
      const store = await context.store();
      await store.createClient({
        clientId,
        name: validName(context.values.name as string | undefined) ?? clientId,
        secretHash: secret === undefined ? undefined : sha256(secret),
        redirectUris,
        grantTypes,
        // The contract asks PKCE of public clients; confidential clients may still send it.
        requirePkce: secret === undefined && context.values['no-pkce'] !== true,
        firstParty: context.values['first-party'] === true,
        builtIn: false,
        createdAt: epochSeconds(systemClock),
        tokensRevokedAt: undefined,
        postLogoutRedirectUris,
        backchannelLogoutUri,
      });
    } catch (err) {
      if (err instanceof DuplicateError) throw new CommandError(`client "${clientId}" already exists`);
      throw err;
    }
    cliAudit(context, 'client.created', { clientId, confidential: secret !== undefined, grantTypes });
    context.stderr.write(`Registered client ${clientId} (${secret ? 'confidential' : 'public'}; grants: ${grantTypes.join(', ')})\n`);
    if (secret) context.stdout.write(`client_secret (shown only once): ${secret}\n`);
    return 0;
  },
};
