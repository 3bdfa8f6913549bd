/**
 * /admin/clients/:id: one client application — its settings, and what an administrator may do:
 * change its name, redirect URIs, post-logout redirect URIs and web origins (CORS); give a confidential client a new
 * secret (shown once, on the answer), optionally keeping the old one working for a while so
 * deployed copies can be replaced without an outage; disable or enable it; remove it (which ends
 * everything issued to it). The built-in client cannot be disabled or removed. Its machine grants
 * (client_credentials) are in client_grants.ts.
 */
import { openSecretBox } from '../../crypto/secret_key_file.js';
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { maxSecretOverlapSeconds, newClientSecret } from '../../directory/clients.js';
import { isConfidential } from '../../oauth/client_type.js';
import { AdminInputError, validName } from '../../directory/validation.js';
import { epochSeconds } from '../../clock.js';
import { parseFields } from '../../http/form.js';
import { backToClients, clientForm, clientParams, clientPath, showClientPage } from '../../console/client_page.js';
import { redirectUrisOf, webOriginsOf } from '../../console/client_fields.js';
import { adminAudit, adminGate, checked, doneRedirect, hereOf, noticeOf, notFound, printable, renderAdmin, when } from '../../console/console_page.js';

const pageQuery = z.object({ done: z.string().max(32).optional() });
const csrfField = z.string().max(256).optional();
const plainForm = z.object({ csrf_token: csrfField });
const updateForm = z.object({
  csrf_token: csrfField,
  name: z.string().max(1024).default(''),
  redirect_uris: z.string().max(65_536).default(''),
  post_logout_redirect_uris: z.string().max(65_536).default(''),
  // Absent (a form from before the field existed) leaves the origins as they are.
  web_origins: z.string().max(65_536).optional(),
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

export async function adminClientPageRoutes(app: FastifyInstance): Promise<void> {
  const services = app.services;
  const { store, clock, config } = services;
  const page = { config: { page: true } };

  app.get('/admin/clients/:id', page, async (request, reply) => {
    const gate = await adminGate(request, reply, services, hereOf(request, '/admin/clients'));
    if (!gate.ok) return gate.reply;
    const { id } = parseFields(clientParams, request.params);
    const client = await store.findClient(id);
    if (!client) return notFound(request, reply, services, 'client', backToClients);
    const { done } = parseFields(pageQuery, request.query);
    return showClientPage(request, reply, services, client, { notice: noticeOf(done, notices) });
  });

  app.post('/admin/clients/:id/update', page, async (request, reply) => {
    const got = await clientForm(request, reply, services, updateForm);
    if (!got.ok) return got.reply;
    const { admin, client, form } = got;
    const edit = {
      name: form.name,
      redirectUris: form.redirect_uris,
      postLogoutRedirectUris: form.post_logout_redirect_uris,
      webOrigins: form.web_origins ?? client.webOrigins.join('\n'),
    };
    const valid = checked(() => {
      const redirectUris = redirectUrisOf(edit.redirectUris);
      if (client.grantTypes.includes('authorization_code') && redirectUris.length === 0)
        throw new AdminInputError('This client uses Authorization Code: keep at least one redirect URI.');
      // `latchkey login` relies on the built-in client's loopback address.
      if (client.builtIn && JSON.stringify(redirectUris) !== JSON.stringify(client.redirectUris))
        throw new AdminInputError('The built-in client’s redirect URIs are fixed: latchkey login depends on them.');
      return {
        name: validName(printable(edit.name, 'The name')) ?? client.clientId,
        redirectUris,
        postLogoutRedirectUris: redirectUrisOf(edit.postLogoutRedirectUris, 'post-logout redirect URIs'),
        webOrigins: webOriginsOf(edit.webOrigins),
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
      return showClientPage(
        request,
        reply,
        services,
        client,
        { notice: { kind: 'error', text: `This client has no secret to rotate: ${why}.`, about: 'secret' } },
        400,
      );
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
    const fresh = newClientSecret(
      client.secretSealed === undefined ? services.secretBox : await openSecretBox(config, store),
      client.clientId,
      client.secretSealed !== undefined,
    );
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
        return showClientPage(
          request,
          reply,
          services,
          client,
          { notice: { kind: 'error', text: 'A built-in client cannot be disabled.', about: 'status' } },
          400,
        );
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
      return showClientPage(
        request,
        reply,
        services,
        client,
        { notice: { kind: 'error', text: 'A built-in client cannot be removed.', about: 'status' } },
        400,
      );
    }
    if (!(await store.removeClient(client.clientId, epochSeconds(clock)))) return notFound(request, reply, services, 'client', backToClients);
    adminAudit(request, admin, 'client.removed', { clientId: client.clientId });
    return doneRedirect(reply, '/admin/clients', 'removed');
  });
}
