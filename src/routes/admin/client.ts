/**
 * /admin/clients/:id: one client application — its settings, and what an administrator may do:
 * change its name, redirect URIs and post-logout redirect URIs; give a confidential client a new
 * secret (shown once, on the answer), optionally keeping the old one working for a while so
 * deployed copies can be replaced without an outage; disable or enable it; remove it (which ends
 * everything issued to it). The built-in client cannot be disabled or removed. Its machine grants
 * (client_credentials) are in client_grants.ts.
 */
import { openSecretBox } from '../../crypto/secret_key_file.js';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { isConfidential, maxSecretOverlapSeconds, newClientSecret } from '../../admin/clients.js';
import { AdminInputError, validName, validRedirectUri } from '../../admin/validation.js';
import { epochSeconds } from '../../clock.js';
import { parseFields } from '../../http/form.js';
import type { Services } from '../../services.js';
import type { ClientRecord } from '../../store/store.js';
import { grantTypeChoices, redirectUrisOf } from './clients.js';
import { adminAudit, adminForm, adminGate, checked, doneRedirect, hereOf, noticeOf, notFound, pathSegment, printable, renderAdmin, storedKey, when, type Gate, type Notice } from './console.js';

const params = z.object({ id: storedKey(128).min(1) });
const pageQuery = z.object({ done: z.string().max(32).optional() });
const csrfField = z.string().max(256).optional();
const plainForm = z.object({ csrf_token: csrfField });
const updateForm = z.object({
  csrf_token: csrfField,
  name: z.string().max(1024).default(''),
  redirect_uris: z.string().max(65_536).default(''),
  post_logout_redirect_uris: z.string().max(65_536).default(''),
});
const rotateForm = z.object({ csrf_token: csrfField, keep_old_for: z.string().max(32).default('') });

const notices: Record<string, string> = {
  created: 'The client was registered.',
  updated: 'Saved.',
  disabled: 'The client was disabled: it cannot authenticate or start sign-ins, and its tokens are refused.',
  enabled: 'The client was enabled.',
  grant_saved: 'The machine grant was saved.',
  grant_removed: 'The machine grant was removed.',
  grant_none: 'There was no such grant.',
};

export const clientPath = (clientId: string) => `/admin/clients/${pathSegment(clientId)}`;
const backToClients = { href: '/admin/clients', label: 'Back to the clients' };

/** What the edit form shows when its input was refused (what was typed, not what is stored). */
export interface ClientEditValues {
  name: string;
  redirectUris: string;
  postLogoutRedirectUris: string;
}

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
        authentication: client.secretHash !== undefined ? 'client secret' : client.jwksUri !== undefined || client.jwks !== undefined ? 'private_key_jwt' : 'none (public)',
        hasSecret: client.secretHash !== undefined,
        previousSecretUntil: client.previousSecretHash !== undefined && (client.previousSecretExpiresAt ?? 0) > now ? when(client.previousSecretExpiresAt) : undefined,
        grantTypes: client.grantTypes.map((g) => grantTypeChoices.find((c) => c.value === g)?.label ?? g),
        machine: client.grantTypes.includes('client_credentials'),
        requirePkce: client.requirePkce,
        firstParty: client.firstParty,
        builtIn: client.builtIn,
        disabled: client.disabled,
        created: when(client.createdAt),
        redirectUris: client.redirectUris.map((uri) => ({ uri, warning: warningOf(uri) })),
        postLogoutRedirectUris: client.postLogoutRedirectUris,
        backchannelLogoutUri: client.backchannelLogoutUri,
        jwksUri: client.jwksUri,
      },
      path: clientPath(client.clientId),
      edit: extra.edit ?? { name: client.name, redirectUris: client.redirectUris.join('\n'), postLogoutRedirectUris: client.postLogoutRedirectUris.join('\n') },
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
  const { id } = parseFields(params, request.params);
  const client = await services.store.findClient(id);
  if (!client) return { ok: false, reply: await notFound(request, reply, services, 'client', backToClients) };
  return { ok: true, admin: gate.admin, form: gate.form, client };
}

export async function adminClientPageRoutes(app: FastifyInstance): Promise<void> {
  const services = app.services;
  const { store, clock, config } = services;
  const page = { config: { page: true } };

  app.get('/admin/clients/:id', page, async (request, reply) => {
    const gate = await adminGate(request, reply, services, hereOf(request, '/admin/clients'));
    if (!gate.ok) return gate.reply;
    const { id } = parseFields(params, request.params);
    const client = await store.findClient(id);
    if (!client) return notFound(request, reply, services, 'client', backToClients);
    const { done } = parseFields(pageQuery, request.query);
    return showClientPage(request, reply, services, client, { notice: noticeOf(done, notices) });
  });

  app.post('/admin/clients/:id/update', page, async (request, reply) => {
    const got = await clientForm(request, reply, services, updateForm);
    if (!got.ok) return got.reply;
    const { admin, client, form } = got;
    const edit = { name: form.name, redirectUris: form.redirect_uris, postLogoutRedirectUris: form.post_logout_redirect_uris };
    const valid = checked(() => {
      const redirectUris = redirectUrisOf(edit.redirectUris);
      if (client.grantTypes.includes('authorization_code') && redirectUris.length === 0) throw new AdminInputError('This client uses Authorization Code: keep at least one redirect URI.');
      // `latchkey login` relies on the built-in client's loopback address.
      if (client.builtIn && JSON.stringify(redirectUris) !== JSON.stringify(client.redirectUris)) throw new AdminInputError('The built-in client’s redirect URIs are fixed: latchkey login depends on them.');
      return {
        name: validName(printable(edit.name, 'The name')) ?? client.clientId,
        redirectUris,
        postLogoutRedirectUris: redirectUrisOf(edit.postLogoutRedirectUris, 'post-logout redirect URIs'),
      };
    }, 'edit');
    if (!valid.ok) return showClientPage(request, reply, services, client, { notice: valid.notice, edit }, 400);
    const changes = valid.value;
    const changed = (Object.keys(changes) as (keyof typeof changes)[]).filter((key) => JSON.stringify(changes[key]) !== JSON.stringify(client[key]));
    if (!(await store.updateClient(client.clientId, changes))) return notFound(request, reply, services, 'client', backToClients);
    adminAudit(request, admin, 'client.updated', { clientId: client.clientId, changed });
    return doneRedirect(reply, clientPath(client.clientId), 'updated');
  });

  app.post('/admin/clients/:id/rotate-secret', page, async (request, reply) => {
    const got = await clientForm(request, reply, services, rotateForm);
    if (!got.ok) return got.reply;
    const { admin, client, form } = got;
    if (client.secretHash === undefined) {
      const why = isConfidential(client) ? 'it authenticates with its keys' : 'it is a public client';
      return showClientPage(request, reply, services, client, { notice: { kind: 'error', text: `This client has no secret to rotate: ${why}.`, about: 'secret' } }, 400);
    }
    const overlap = checked(() => {
      const text = form.keep_old_for.trim();
      if (text === '') return 0;
      if (!/^\d{1,9}$/.test(text)) throw new AdminInputError('Keep the old secret for a whole number of seconds (0 to stop it at once).');
      const seconds = Number(text);
      if (seconds > maxSecretOverlapSeconds) throw new AdminInputError(`The old secret can be kept for at most ${maxSecretOverlapSeconds} seconds (30 days).`);
      return seconds;
    }, 'secret');
    if (!overlap.ok) return showClientPage(request, reply, services, client, { notice: overlap.notice }, 400);
    // The key file as it is now (a `secret-key rotate` since the start would make the server's copy stale).
    const fresh = newClientSecret(client.secretSealed === undefined ? services.secretBox : await openSecretBox(config, store), client.clientId, client.secretSealed !== undefined);
    const now = epochSeconds(clock);
    if (!(await store.rotateClientSecret(client.clientId, { hash: fresh.hash, sealed: fresh.sealed }, overlap.value > 0 ? now + overlap.value : undefined))) {
      return notFound(request, reply, services, 'client', backToClients);
    }
    adminAudit(request, admin, 'client.secret_rotated', { clientId: client.clientId, keepOldFor: overlap.value });
    // The one time the new secret exists outside the client: on this answer (cache-control: no-store).
    return renderAdmin(request, reply, services, 'client_secret', 'clients', {
      title: `New secret for ${client.clientId}`,
      clientId: client.clientId,
      secret: fresh.secret,
      created: false,
      oldUntil: overlap.value > 0 ? when(now + overlap.value) : undefined,
    });
  });

  for (const disabled of [true, false]) {
    app.post(`/admin/clients/:id/${disabled ? 'disable' : 'enable'}`, page, async (request, reply) => {
      const got = await clientForm(request, reply, services, plainForm);
      if (!got.ok) return got.reply;
      const { admin, client } = got;
      if (disabled && client.builtIn) {
        return showClientPage(request, reply, services, client, { notice: { kind: 'error', text: 'A built-in client cannot be disabled.', about: 'status' } }, 400);
      }
      if (!(await store.setClientDisabled(client.clientId, disabled))) return notFound(request, reply, services, 'client', backToClients);
      adminAudit(request, admin, disabled ? 'client.disabled' : 'client.enabled', { clientId: client.clientId });
      return doneRedirect(reply, clientPath(client.clientId), disabled ? 'disabled' : 'enabled');
    });
  }

  app.post('/admin/clients/:id/remove', page, async (request, reply) => {
    const got = await clientForm(request, reply, services, plainForm);
    if (!got.ok) return got.reply;
    const { admin, client } = got;
    if (client.builtIn) {
      return showClientPage(request, reply, services, client, { notice: { kind: 'error', text: 'A built-in client cannot be removed.', about: 'status' } }, 400);
    }
    if (!(await store.removeClient(client.clientId, epochSeconds(clock)))) return notFound(request, reply, services, 'client', backToClients);
    adminAudit(request, admin, 'client.removed', { clientId: client.clientId });
    return doneRedirect(reply, '/admin/clients', 'removed');
  });
}
