/**
 * /admin/clients: every registered client application, and a form that registers one (the rules
 * of `latchkey clients add`): client_id, name, redirect URIs one per line, grant types,
 * confidential or public, first-party. A confidential client's secret is made here and shown once,
 * on the answer to the form itself (never in an address, never stored but as a digest and sealed).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { newClientSecret } from '../../directory/clients.js';
import { isConfidential } from '../../oauth/client_type.js';
import { AdminInputError, validClientId, validName } from '../../directory/validation.js';
import { epochSeconds } from '../../clock.js';
import { parseFields } from '../../http/form.js';
import { DuplicateError } from '../../store/store.js';
import { grantTypeChoices, grantTypesOf, redirectUrisOf } from '../../console/client_fields.js';
import {
  adminAudit,
  adminForm,
  adminGate,
  checked,
  checkedValues,
  doneRedirect,
  hereOf,
  noticeOf,
  printable,
  renderAdmin,
  type Notice,
} from '../../console/console_page.js';

const listQuery = z.object({ done: z.string().max(32).optional() });
const createForm = z
  .object({
    csrf_token: z.string().max(256).optional(),
    client_id: z.string().max(1024).default(''),
    name: z.string().max(1024).default(''),
    redirect_uris: z.string().max(65_536).default(''),
    type: z.string().max(32).default('public'),
    first_party: z.string().max(8).optional(),
  })
  .catchall(z.string().max(64));

const notices: Record<string, string> = { removed: 'The client was removed, and everything issued to it has ended.' };

export interface ClientCreateValues {
  clientId: string;
  name: string;
  redirectUris: string;
  type: 'public' | 'confidential';
  grantTypes: string[];
  firstParty: boolean;
}

const blankValues: ClientCreateValues = {
  clientId: '',
  name: '',
  redirectUris: '',
  type: 'public',
  grantTypes: ['authorization_code', 'refresh_token'],
  firstParty: false,
};

export async function adminClientRoutes(app: FastifyInstance): Promise<void> {
  const services = app.services;
  const { store, clock } = services;
  const page = { config: { page: true } };

  async function showClients(request: FastifyRequest, reply: FastifyReply, notice?: Notice, values: ClientCreateValues = blankValues, status = 200) {
    const clients = await store.listClients();
    return renderAdmin(
      request,
      reply,
      services,
      'clients',
      'clients',
      {
        title: 'Clients',
        clients: clients.map((c) => ({
          clientId: c.clientId,
          name: c.name,
          confidential: isConfidential(c),
          grantTypes: c.grantTypes,
          redirectUris: c.redirectUris.length,
          firstParty: c.firstParty,
          builtIn: c.builtIn,
          disabled: c.disabled,
        })),
        grantTypeChoices,
        values,
        notice,
      },
      status,
    );
  }

  app.get('/admin/clients', page, async (request, reply) => {
    const gate = await adminGate(request, reply, services, hereOf(request, '/admin/clients'));
    if (!gate.ok) return gate.reply;
    const { done } = parseFields(listQuery, request.query);
    return showClients(request, reply, noticeOf(done, notices));
  });

  app.post('/admin/clients', page, async (request, reply) => {
    const gate = await adminForm(request, reply, services, createForm, '/admin/clients');
    if (!gate.ok) return gate.reply;
    const { form, admin } = gate;
    const values: ClientCreateValues = {
      clientId: form.client_id.trim(),
      name: form.name,
      redirectUris: form.redirect_uris,
      type: form.type === 'confidential' ? 'confidential' : 'public',
      grantTypes: checkedValues(form, 'grant_type', 10),
      firstParty: form.first_party === '1',
    };
    const valid = checked(() => {
      if (form.type !== 'public' && form.type !== 'confidential') throw new AdminInputError('Choose public or confidential.');
      const clientId = validClientId(values.clientId);
      const redirectUris = redirectUrisOf(values.redirectUris);
      return {
        clientId,
        name: validName(printable(values.name, 'The name')) ?? clientId,
        redirectUris,
        grantTypes: grantTypesOf(values.grantTypes, values.type === 'confidential', redirectUris),
      };
    }, 'create');
    if (!valid.ok) return showClients(request, reply, valid.notice, values, 400);
    const { clientId, name, redirectUris, grantTypes } = valid.value;
    const taken = () => showClients(request, reply, { kind: 'error', text: `The client_id ${clientId} is taken.`, about: 'create' }, values, 409);
    if (await store.findClient(clientId)) return taken();
    const fresh = values.type === 'confidential' ? newClientSecret(services.secretBox, clientId, false) : undefined;
    try {
      await store.createClient({
        clientId,
        name,
        secretHash: fresh?.hash,
        redirectUris,
        grantTypes,
        // The contract asks PKCE of public clients; confidential clients may still send it.
        requirePkce: fresh === undefined,
        firstParty: values.firstParty,
        builtIn: false,
        createdAt: epochSeconds(clock),
        tokensRevokedAt: undefined,
        postLogoutRedirectUris: [],
        webOrigins: [],
        backchannelLogoutUri: undefined,
        jwksUri: undefined,
        jwks: undefined,
        secretSealed: fresh?.sealed,
        previousSecretHash: undefined,
        previousSecretSealed: undefined,
        previousSecretExpiresAt: undefined,
        disabled: false,
        registrationAccessTokenHash: undefined,
        tokenEndpointAuthMethod: undefined,
        requirePar: false,
      });
    } catch (err) {
      if (err instanceof DuplicateError) return taken();
      throw err;
    }
    adminAudit(request, admin, 'client.created', {
      clientId,
      confidential: fresh !== undefined,
      authentication: fresh ? 'client secret' : 'public',
      grantTypes,
    });
    if (!fresh) return doneRedirect(reply, `/admin/clients/${encodeURIComponent(clientId)}`, 'created');
    // The one time the secret exists outside the client: on this answer (cache-control: no-store).
    return renderAdmin(request, reply, services, 'client_secret', 'clients', {
      title: `Client ${clientId} registered`,
      clientId,
      secret: fresh.secret,
      created: true,
    });
  });
}
