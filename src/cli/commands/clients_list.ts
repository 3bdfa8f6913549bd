import { defineCommand } from '../command.js';
import { isConfidential } from '../../oauth/client_type.js';
import type { ClientGrantRecord, ClientRecord } from '../../store/store.js';

/** How the client authenticates at the token endpoint. */
function authentication(c: ClientRecord): string {
  if (c.jwksUri !== undefined || c.jwks !== undefined) return 'private_key_jwt';
  return c.secretHash ? 'client_secret' : 'none';
}
import { isoTime, json, table } from '../output.js';

export const clientsListCommand = defineCommand({
  usage: 'latchkey clients list [--json]',
  positionals: { min: 0, max: 0 },
  options: { json: { type: 'boolean' } },
  async run(context) {
    const store = await context.store();
    const clients = await store.listClients();
    const grants = new Map<string, ClientGrantRecord[]>();
    for (const grant of await store.listClientGrants(undefined)) grants.set(grant.clientId, [...(grants.get(grant.clientId) ?? []), grant]);
    if (context.values.json) {
      context.stdout.write(
        json(
          clients.map((c) => ({
            client_id: c.clientId,
            name: c.name,
            type: isConfidential(c) ? 'confidential' : 'public',
            authentication: authentication(c),
            disabled: c.disabled,
            // Made through POST /oauth/register (RFC 7591) rather than by an operator.
            registered: c.registrationAccessTokenHash !== undefined,
            ...(c.jwksUri === undefined ? {} : { jwks_uri: c.jwksUri }),
            ...(c.previousSecretExpiresAt === undefined ? {} : { previous_secret_expires_at: isoTime(c.previousSecretExpiresAt) }),
            api_grants: (grants.get(c.clientId) ?? []).map((g) => ({ api: g.api, scopes: g.scopes })),
            redirect_uris: c.redirectUris,
            web_origins: c.webOrigins,
            grant_types: c.grantTypes,
            require_pkce: c.requirePkce,
            require_par: c.requirePar,
            first_party: c.firstParty,
            built_in: c.builtIn,
            created_at: isoTime(c.createdAt),
          })),
        ),
      );
    } else {
      context.stdout.write(
        table(
          clients.map((c) => [
            c.clientId,
            c.name,
            (isConfidential(c) ? 'confidential' : 'public') + (c.requirePar ? ', PAR required' : '') + (c.disabled ? ' (disabled)' : ''),
            c.grantTypes.join(','),
            c.redirectUris.join(' '),
            c.webOrigins.join(' '),
          ]),
          ['CLIENT_ID', 'NAME', 'TYPE', 'GRANTS', 'REDIRECT_URIS', 'WEB_ORIGINS'],
        ),
      );
    }
    return 0;
  },
});
