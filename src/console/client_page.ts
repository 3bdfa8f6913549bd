/**
 * A client's page in the admin console (/admin/clients/:id), as the forms on it answer: its
 * settings, warnings about redirect URIs registered before today's rules, its machine grants, and
 * the gate every form there passes (an administrator, a genuine form, a client that exists and
 * that no configuration file manages).
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { epochSeconds } from '../clock.js';
import { maxSecretOverlapSeconds } from '../directory/clients.js';
import { managedMessage } from '../directory/managed.js';
import { validRedirectUri } from '../directory/validation.js';
import { parseFields } from '../http/form.js';
import { isConfidential } from '../oauth/client_type.js';
import { refreshFamilyLifetime } from '../oauth/browser_policy.js';
import { durationInWords } from '../config_metadata.js';
import type { Services } from '../services.js';
import type { ClientRecord } from '../store/store.js';
import { grantTypeChoices } from './client_fields.js';
import { adminForm, notFound, pathSegment, renderAdmin, storedKey, when, type Gate, type Notice } from './console_page.js';

export const clientParams = z.object({ id: storedKey(128).min(1) });

export const clientPath = (clientId: string) => `/admin/clients/${pathSegment(clientId)}`;
export const backToClients = { href: '/admin/clients', label: 'Back to the clients' };

/** What the edit form shows when its input was refused (what was typed, not what is stored). */
export interface ClientEditValues {
  name: string;
  redirectUris: string;
  postLogoutRedirectUris: string;
  webOrigins: string;
}

const lifetimeText = (seconds: number): string => durationInWords(seconds) ?? `${seconds} seconds`;

const warningOf = (uri: string): string | undefined => {
  try {
    return validRedirectUri(uri).warning;
  } catch {
    return `${uri} would not be accepted today`;
  }
};

export async function showClientPage(
  request: FastifyRequest,
  reply: FastifyReply,
  services: Services,
  client: ClientRecord,
  extra: { notice?: Notice | undefined; edit?: ClientEditValues } = {},
  status = 200,
): Promise<FastifyReply> {
  const { store, clock } = services;
  const [apis, grants] = await Promise.all([store.listApis(), store.listClientGrants(client.clientId)]);
  const now = epochSeconds(clock);
  const granted = new Map(grants.map((g) => [g.api, g.scopes]));
  return renderAdmin(
    request,
    reply,
    services,
    'client',
    'clients',
    {
      title: `Client ${client.clientId}`,
      client: {
        clientId: client.clientId,
        name: client.name,
        confidential: isConfidential(client),
        authentication:
          client.secretHash !== undefined ? 'client secret' : client.jwksUri !== undefined || client.jwks !== undefined ? 'private_key_jwt' : 'none (public)',
        hasSecret: client.secretHash !== undefined,
        previousSecretUntil:
          client.previousSecretHash !== undefined && (client.previousSecretExpiresAt ?? 0) > now ? when(client.previousSecretExpiresAt) : undefined,
        grantTypes: client.grantTypes.map((g) => grantTypeChoices.find((c) => c.value === g)?.label ?? g),
        machine: client.grantTypes.includes('client_credentials'),
        requirePkce: client.requirePkce,
        firstParty: client.firstParty,
        builtIn: client.builtIn,
        disabled: client.disabled,
        created: when(client.createdAt),
        redirectUris: client.redirectUris.map((uri) => ({ uri, warning: warningOf(uri) })),
        postLogoutRedirectUris: client.postLogoutRedirectUris,
        webOrigins: client.webOrigins,
        browserSignInLifetime: lifetimeText(refreshFamilyLifetime(services.config, client)),
        backchannelLogoutUri: client.backchannelLogoutUri,
        jwksUri: client.jwksUri,
        managedBy: client.managedBy,
      },
      path: clientPath(client.clientId),
      edit: extra.edit ?? {
        name: client.name,
        redirectUris: client.redirectUris.join('\n'),
        postLogoutRedirectUris: client.postLogoutRedirectUris.join('\n'),
        webOrigins: client.webOrigins.join('\n'),
      },
      maxOverlap: maxSecretOverlapSeconds,
      apis: apis.map((api) => ({
        identifier: api.identifier,
        name: api.name,
        scopes: api.scopes.map((scope) => ({ scope, granted: granted.get(api.identifier)?.includes(scope) ?? false })),
        granted: granted.has(api.identifier),
      })),
      notice: extra.notice,
    },
    status,
  );
}

/**
 * A form on a client's page: the acting admin, the form, and the client (or the reply that
 * refused: not an admin, a forged form, an unknown client → 404).
 */
export async function clientForm<T extends { csrf_token?: string | undefined }>(
  request: FastifyRequest,
  reply: FastifyReply,
  services: Services,
  schema: z.ZodType<T>,
): Promise<Gate<{ form: T; client: ClientRecord }>> {
  // The path itself is checked once the person is known to be an administrator.
  const param = (request.params as Record<string, unknown>).id;
  const rawId = (typeof param === 'string' ? param : '').slice(0, 128);
  const gate = await adminForm(request, reply, services, schema, clientPath(rawId));
  if (!gate.ok) return gate;
  const { id } = parseFields(clientParams, request.params);
  const client = await services.store.findClient(id);
  if (!client) return { ok: false, reply: await notFound(request, reply, services, 'client', backToClients) };
  // Every form on the page changes the client (or its grants), which its configuration file declares.
  if (client.managedBy !== undefined) {
    const text = managedMessage('client', client.clientId, client.managedBy);
    return { ok: false, reply: await showClientPage(request, reply, services, client, { notice: { kind: 'error', text } }, 409) };
  }
  return { ok: true, admin: gate.admin, form: gate.form, client };
}
