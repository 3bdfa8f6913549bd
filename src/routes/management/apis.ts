/**
 * /api/v1/apis: the APIs tokens are issued for, with the rules of `apis add`, `apis update` and
 * `apis remove`. An identifier is a URL, so it is URL-encoded as one path segment.
 */
import type { FastifyInstance } from 'fastify';
import { epochSeconds } from '../../clock.js';
import { refuseManaged } from '../../directory/managed.js';
import { builtInApiChangeRefusal, managementAudience } from '../../management/management_api.js';
import { validName } from '../../directory/validation.js';
import {
  apiCreateSchema,
  apiIdentifierParamsSchema,
  apiPatchSchema,
  apiView,
  apiViewSchema,
  checkedIntrospectionClients,
} from '../../management/api_resource.js';
import { checkIfMatch, etagOf } from '../../management/etag.js';
import { defineOperation } from '../../management/operations.js';
import { listAnswerSchema, listQuerySchema, page } from '../../management/pagination.js';
import { notFound, Problem, problemSchema } from '../../management/problem.js';
import { withResourceLock } from '../../management/resource_lock.js';
import { DuplicateError, type ApiRecord } from '../../store/store.js';

export async function managementApiRoutes(app: FastifyInstance): Promise<void> {
  const { store, clock } = app.services;
  const tag = 'apis';

  async function current(identifier: string): Promise<{ api: ApiRecord; etag: string }> {
    const api = await store.findApi(identifier);
    if (!api) throw notFound(`API "${identifier}"`);
    return { api, etag: etagOf(apiView(api)) };
  }

  async function answer(identifier: string, status: number) {
    const { api, etag } = await current(identifier);
    return { status, headers: { etag }, body: apiView(api) };
  }

  defineOperation(app, {
    method: 'GET',
    path: '/apis',
    operationId: 'listApis',
    summary: 'List APIs, in identifier order',
    tag,
    scope: 'read:apis',
    query: listQuerySchema,
    responses: { 200: { description: 'A page of APIs', schema: listAnswerSchema(apiViewSchema) } },
    async handler({ query }) {
      const result = page(await store.listApis(), (a) => a.identifier, query);
      return { status: 200, body: { data: result.data.map(apiView), next: result.next } };
    },
  });

  defineOperation(app, {
    method: 'POST',
    path: '/apis',
    operationId: 'createApi',
    summary: 'Declare an API and its scopes',
    tag,
    scope: 'write:apis',
    body: apiCreateSchema,
    etag: true,
    responses: {
      201: { description: 'The API', schema: apiViewSchema },
      409: { description: 'An API with this identifier exists', schema: problemSchema },
    },
    async handler({ body, audit }) {
      const introspectionClients = await checkedIntrospectionClients(store, body.introspection_clients);
      try {
        await store.createApi({
          identifier: body.identifier,
          name: validName(body.name) ?? body.identifier,
          scopes: body.scopes,
          introspectionClients,
          createdAt: epochSeconds(clock),
          managedBy: undefined,
        });
      } catch (err) {
        if (err instanceof DuplicateError) throw new Problem(409, 'exists', `An API "${body.identifier}" already exists.`);
        throw err;
      }
      audit('api.created', { identifier: body.identifier, scopes: body.scopes, introspectionClients });
      const created = await answer(body.identifier, 201);
      return { ...created, headers: { ...created.headers, location: `/api/v1/apis/${encodeURIComponent(body.identifier)}` } };
    },
  });

  defineOperation(app, {
    method: 'GET',
    path: '/apis/{identifier}',
    operationId: 'getApi',
    summary: 'Read an API (its identifier URL-encoded)',
    tag,
    scope: 'read:apis',
    params: apiIdentifierParamsSchema,
    etag: true,
    responses: { 200: { description: 'The API', schema: apiViewSchema }, 404: { description: 'No such API', schema: problemSchema } },
    async handler({ params }) {
      return answer(params.identifier, 200);
    },
  });

  defineOperation(app, {
    method: 'PATCH',
    path: '/apis/{identifier}',
    operationId: 'updateApi',
    summary: 'Change some fields of an API (If-Match with its ETag: refused with 412 when it changed)',
    tag,
    scope: 'write:apis',
    params: apiIdentifierParamsSchema,
    body: apiPatchSchema,
    etag: true,
    responses: {
      200: { description: 'The API as changed', schema: apiViewSchema },
      404: { description: 'No such API', schema: problemSchema },
      409: { description: 'The API is managed by a configuration file, or is the built-in management API', schema: problemSchema },
      412: { description: 'The API changed since the ETag given', schema: problemSchema },
    },
    async handler({ request, params, body, audit }) {
      return withResourceLock(store, `api:${params.identifier}`, async () => {
        const { api, etag } = await current(params.identifier);
        refuseManaged('api', api.identifier, api);
        checkIfMatch(request, etag);
        const updated: ApiRecord = {
          ...api,
          name: body.name === undefined ? api.name : (validName(body.name) ?? api.identifier),
          scopes: body.scopes ?? api.scopes,
          introspectionClients:
            body.introspection_clients === undefined ? api.introspectionClients : await checkedIntrospectionClients(store, body.introspection_clients),
        };
        const builtIn = builtInApiChangeRefusal(managementAudience(app.services.config.issuer), api.identifier, updated.scopes);
        if (builtIn !== undefined) throw new Problem(409, 'built-in', builtIn);
        if (!(await store.updateApi(updated))) throw notFound(`API "${api.identifier}"`);
        audit('api.updated', { identifier: api.identifier, scopes: updated.scopes, introspectionClients: updated.introspectionClients });
        return answer(api.identifier, 200);
      });
    },
  });

  defineOperation(app, {
    method: 'DELETE',
    path: '/apis/{identifier}',
    operationId: 'deleteApi',
    summary: 'Remove an API',
    tag,
    scope: 'write:apis',
    params: apiIdentifierParamsSchema,
    etag: true,
    responses: {
      204: { description: 'Removed' },
      404: { description: 'No such API', schema: problemSchema },
      409: { description: 'The API is managed by a configuration file, or is the built-in management API', schema: problemSchema },
      412: { description: 'The API changed since the ETag given', schema: problemSchema },
    },
    async handler({ request, params, audit }) {
      return withResourceLock(store, `api:${params.identifier}`, async () => {
        const { api, etag } = await current(params.identifier);
        refuseManaged('api', api.identifier, api);
        checkIfMatch(request, etag);
        const builtIn = builtInApiChangeRefusal(managementAudience(app.services.config.issuer), api.identifier, undefined);
        if (builtIn !== undefined) throw new Problem(409, 'built-in', builtIn);
        if (!(await store.removeApi(api.identifier))) throw notFound(`API "${api.identifier}"`);
        audit('api.removed', { identifier: api.identifier });
        return { status: 204 };
      });
    },
  });
}
