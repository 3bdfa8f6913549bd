/**
 * /admin/apis: the registered APIs (audiences tokens are issued for) and the permissions (scope
 * names) each declares; register one, change its name and scopes, remove it (its role permissions
 * and machine grants go with it). API identifiers are usually URLs, so one API's page is addressed
 * by a query field (`/admin/apis/edit?identifier=…`), not a path segment.
 */
import { managedNotice } from '../../console/console_page.js';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { validScopeNames } from '../../directory/roles.js';
import { builtInApiChangeRefusal, managementAudience } from '../../management/management_api.js';
import { validApiIdentifier, validName } from '../../directory/validation.js';
import { epochSeconds } from '../../clock.js';
import { parseFields } from '../../http/form.js';
import { DuplicateError, type ApiRecord } from '../../store/store.js';
import {
  adminAudit,
  adminForm,
  adminGate,
  checked,
  doneRedirect,
  hereOf,
  linesOf,
  noticeOf,
  notFound,
  printable,
  renderAdmin,
  storedKey,
  when,
  type Notice,
} from '../../console/console_page.js';

const csrfField = z.string().max(256).optional();
const listQuery = z.object({ done: z.string().max(32).optional() });
const editQuery = z.object({ identifier: storedKey(2048).default(''), done: z.string().max(32).optional() });
const apiFields = {
  csrf_token: csrfField,
  identifier: z.string().max(4096).default(''),
  name: z.string().max(1024).default(''),
  scopes: z.string().max(65_536).default(''),
};
const createForm = z.object(apiFields);
const updateForm = z.object({ ...apiFields, identifier: storedKey(4096).default('') });
const removeForm = z.object({ csrf_token: csrfField, identifier: storedKey(4096).default('') });

const notices: Record<string, string> = {
  created: 'The API was registered.',
  updated: 'Saved.',
  removed: 'The API was removed, with the role permissions and machine grants that named it.',
};

interface ApiValues {
  identifier: string;
  name: string;
  scopes: string;
}

const editPath = (identifier: string) => `/admin/apis/edit?identifier=${encodeURIComponent(identifier)}`;

/** The scopes of a textarea, one per line (or separated by spaces). */
function scopesOf(text: string): string[] {
  return validScopeNames(linesOf(text, 'scopes', 100).flatMap((line) => line.split(/\s+/)));
}

export async function adminApiRoutes(app: FastifyInstance): Promise<void> {
  const services = app.services;
  const { store, clock } = services;
  const page = { config: { page: true } };
  const backToApis = { href: '/admin/apis', label: 'Back to the APIs' };

  async function showApis(
    request: FastifyRequest,
    reply: FastifyReply,
    notice?: Notice,
    values: ApiValues = { identifier: '', name: '', scopes: '' },
    status = 200,
  ) {
    const apis = await store.listApis();
    return renderAdmin(
      request,
      reply,
      services,
      'apis',
      'apis',
      {
        title: 'APIs',
        apis: apis.map((api) => ({
          identifier: api.identifier,
          name: api.name,
          scopes: api.scopes,
          introspectionClients: api.introspectionClients,
          created: when(api.createdAt),
          edit: editPath(api.identifier),
        })),
        values,
        notice,
      },
      status,
    );
  }

  async function showApi(request: FastifyRequest, reply: FastifyReply, api: ApiRecord, notice?: Notice, values?: ApiValues, status = 200) {
    return renderAdmin(
      request,
      reply,
      services,
      'api',
      'apis',
      {
        title: `API ${api.name}`,
        api: {
          identifier: api.identifier,
          name: api.name,
          scopes: api.scopes,
          introspectionClients: api.introspectionClients,
          created: when(api.createdAt),
          managedBy: api.managedBy,
        },
        values: values ?? { identifier: api.identifier, name: api.name, scopes: api.scopes.join('\n') },
        notice,
      },
      status,
    );
  }

  app.get('/admin/apis', page, async (request, reply) => {
    const gate = await adminGate(request, reply, services, hereOf(request, '/admin/apis'));
    if (!gate.ok) return gate.reply;
    const { done } = parseFields(listQuery, request.query);
    return showApis(request, reply, noticeOf(done, notices));
  });

  app.get('/admin/apis/edit', page, async (request, reply) => {
    const gate = await adminGate(request, reply, services, hereOf(request, '/admin/apis'));
    if (!gate.ok) return gate.reply;
    const query = parseFields(editQuery, request.query);
    const api = query.identifier === '' ? undefined : await store.findApi(query.identifier);
    if (!api) return notFound(request, reply, services, 'API', backToApis);
    return showApi(request, reply, api, noticeOf(query.done, notices));
  });

  app.post('/admin/apis', page, async (request, reply) => {
    const gate = await adminForm(request, reply, services, createForm, '/admin/apis');
    if (!gate.ok) return gate.reply;
    const { admin, form } = gate;
    const values = { identifier: form.identifier.trim(), name: form.name, scopes: form.scopes };
    const valid = checked(() => {
      const identifier = validApiIdentifier(printable(values.identifier, 'The identifier'));
      return { identifier, name: validName(printable(values.name, 'The name')) ?? identifier, scopes: scopesOf(values.scopes) };
    }, 'create');
    if (!valid.ok) return showApis(request, reply, valid.notice, values, 400);
    const { identifier, name, scopes } = valid.value;
    const taken = () => showApis(request, reply, { kind: 'error', text: `An API ${identifier} is registered already.`, about: 'create' }, values, 409);
    if (await store.findApi(identifier)) return taken();
    try {
      await store.createApi({ identifier, name, createdAt: epochSeconds(clock), introspectionClients: [], scopes });
    } catch (err) {
      if (err instanceof DuplicateError) return taken();
      throw err;
    }
    adminAudit(request, admin, 'api.created', { identifier, scopes });
    return doneRedirect(reply, editPath(identifier), 'created');
  });

  app.post('/admin/apis/update', page, async (request, reply) => {
    const gate = await adminForm(request, reply, services, updateForm, '/admin/apis');
    if (!gate.ok) return gate.reply;
    const { admin, form } = gate;
    const api = form.identifier === '' ? undefined : await store.findApi(form.identifier);
    if (!api) return notFound(request, reply, services, 'API', backToApis);
    if (api.managedBy !== undefined) return showApi(request, reply, api, managedNotice('api', api.identifier, api.managedBy), undefined, 409);
    const values = { identifier: api.identifier, name: form.name, scopes: form.scopes };
    const valid = checked(() => ({ name: validName(printable(values.name, 'The name')) ?? api.identifier, scopes: scopesOf(values.scopes) }), 'edit');
    if (!valid.ok) return showApi(request, reply, api, valid.notice, values, 400);
    // The built-in API keeps its scopes here too, as `apis update` and PATCH /api/v1/apis keep them.
    const builtIn = builtInApiChangeRefusal(managementAudience(services.config.issuer), api.identifier, valid.value.scopes);
    if (builtIn !== undefined) return showApi(request, reply, api, { kind: 'error', text: `${builtIn}.`, about: 'edit' }, values, 409);
    if (!(await store.updateApi({ ...api, ...valid.value }))) return notFound(request, reply, services, 'API', backToApis);
    const withdrawn = api.scopes.filter((s) => !valid.value.scopes.includes(s));
    adminAudit(request, admin, 'api.updated', { identifier: api.identifier, name: valid.value.name, scopes: valid.value.scopes, withdrawn });
    return doneRedirect(reply, editPath(api.identifier), 'updated');
  });

  app.post('/admin/apis/remove', page, async (request, reply) => {
    const gate = await adminForm(request, reply, services, removeForm, '/admin/apis');
    if (!gate.ok) return gate.reply;
    const { admin, form } = gate;
    const api = form.identifier === '' ? undefined : await store.findApi(form.identifier);
    if (api?.managedBy !== undefined) return showApi(request, reply, api, managedNotice('api', api.identifier, api.managedBy), undefined, 409);
    const builtIn = builtInApiChangeRefusal(managementAudience(services.config.issuer), form.identifier, undefined);
    if (api !== undefined && builtIn !== undefined) return showApi(request, reply, api, { kind: 'error', text: `${builtIn}.` }, undefined, 409);
    if (form.identifier === '' || !(await store.removeApi(form.identifier))) return notFound(request, reply, services, 'API', backToApis);
    adminAudit(request, admin, 'api.removed', { identifier: form.identifier });
    return doneRedirect(reply, '/admin/apis', 'removed');
  });
}
