/**
 * Machine grants on a client's page (client_credentials, RFC 6749 §4.4): for each API, which of
 * its declared scopes the client may ask for (the rules of `latchkey clients grant`). Only a
 * confidential client can hold one: a public client cannot authenticate.
 */
import { MissingReferenceError } from '../../store/store.js';
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { isConfidential } from '../../oauth/client_type.js';
import { epochSeconds } from '../../clock.js';
import { clientForm, clientPath, showClientPage } from '../../console/client_page.js';
import { adminAudit, checkedValues, doneRedirect, storedKey } from '../../console/console_page.js';

const csrfField = z.string().max(256).optional();
const saveForm = z.object({ csrf_token: csrfField, api: storedKey(2048).default('') }).catchall(z.string().max(256));
const removeForm = z.object({ csrf_token: csrfField, api: storedKey(2048).default('') });

export async function adminClientGrantRoutes(app: FastifyInstance): Promise<void> {
  const services = app.services;
  const { store, clock } = services;
  const page = { config: { page: true } };

  app.post('/admin/clients/:id/grants', page, async (request, reply) => {
    const got = await clientForm(request, reply, services, saveForm);
    if (!got.ok) return got.reply;
    const { admin, client, form } = got;
    const refuse = (text: string, status = 400) =>
      showClientPage(request, reply, services, client, { notice: { kind: 'error', text, about: 'grants' } }, status);
    if (!isConfidential(client)) return refuse('A public client cannot hold a machine grant: it cannot authenticate.');
    const api = form.api === '' ? undefined : await store.findApi(form.api);
    if (!api) return refuse('Choose one of the registered APIs.', 404);
    const scopes = checkedValues(form, 'scope', 100);
    if (scopes.length === 0) return refuse(`Choose at least one scope of ${api.name}, or remove the grant.`);
    // Only what the API declares (in its order): the form offers nothing else.
    const undeclared = scopes.filter((s) => !api.scopes.includes(s));
    if (undeclared.length > 0) return refuse(`${api.name} declares no scope ${undeclared.map((s) => s.slice(0, 80)).join(', ')}.`);
    const ordered = api.scopes.filter((s) => scopes.includes(s));
    try {
      await store.saveClientGrant({ clientId: client.clientId, api: api.identifier, scopes: ordered, createdAt: epochSeconds(clock) });
    } catch (err) {
      if (err instanceof MissingReferenceError) return refuse('The API or the client was removed meanwhile.', 409);
      throw err;
    }
    adminAudit(request, admin, 'client.grant_saved', { clientId: client.clientId, api: api.identifier, scopes: ordered });
    return doneRedirect(reply, clientPath(client.clientId), 'grant_saved');
  });

  app.post('/admin/clients/:id/grants/remove', page, async (request, reply) => {
    const got = await clientForm(request, reply, services, removeForm);
    if (!got.ok) return got.reply;
    const { admin, client, form } = got;
    if (form.api === '' || !(await store.removeClientGrant(client.clientId, form.api))) return doneRedirect(reply, clientPath(client.clientId), 'grant_none');
    adminAudit(request, admin, 'client.grant_removed', { clientId: client.clientId, api: form.api });
    return doneRedirect(reply, clientPath(client.clientId), 'grant_removed');
  });
}
