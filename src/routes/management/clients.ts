/**
 * /api/v1/clients: list, read, register, change (and disable) and remove clients, their grants as
 * a sub-resource, rotate a client's secret, and make initial access tokens for dynamic
 * registration, with the rules the admin commands apply (`clients add`, `clients update`,
 * `clients grant`, `clients disable/enable`, `clients rotate-secret`, `clients remove`, `clients
 * registration-token`). A secret is answered once, by the call that makes it.
 */
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { epochSeconds } from '../../clock.js';
import { newClientSecret, maxSecretOverlapSeconds, plainClientFields } from '../../directory/clients.js';
import { GrantRefusal, grantClientScopes, removeClientGrant } from '../../directory/client_grants.js';
import { BuiltInClientError, checkClientStatusChange, setClientDisabled } from '../../directory/client_status.js';
import { refuseManaged } from '../../directory/managed.js';
import { validName } from '../../directory/validation.js';
import { createRegistrationToken, defaultRegistrationTokenSeconds } from '../../directory/registration_tokens.js';
import { isConfidential } from '../../oauth/client_type.js';
import { isoSeconds } from '../../management/user_view.js';
import {
  checkedGrants,
  clientCreateSchema,
  clientGrantBodySchema,
  clientGrantParamsSchema,
  clientGrantViewSchema,
  clientIdParamsSchema,
  clientListQuerySchema,
  registrationTokenBodySchema,
  registrationTokenSchema,
  scopeIssues,
  scopeNameIssues,
  clientPatchSchema,
  clientView,
  clientViewSchema,
  clientWithSecretSchema,
} from '../../management/client_resource.js';
import { checkIfMatch, etagOf } from '../../management/etag.js';
import { defineOperation } from '../../management/operations.js';
import { listAnswerSchema, listQuerySchema, page } from '../../management/pagination.js';
import { notFound, Problem, problemSchema } from '../../management/problem.js';
import { withResourceLock } from '../../management/resource_lock.js';
import { DuplicateError, type ClientGrantRecord, type ClientRecord } from '../../store/store.js';

const rotateSecretSchema = z
  .strictObject({
    /** Seconds the old secret keeps working (as `clients rotate-secret --keep-old-for`); default 0. */
    keep_old_for: z.number().int().min(0).max(maxSecretOverlapSeconds).optional(),
    /** Let the client use client_secret_jwt from now on (as `--client-secret-jwt`): the secret is then kept sealed too. */
    client_secret_jwt: z.boolean().optional(),
  })
  .optional();

export async function managementClientRoutes(app: FastifyInstance): Promise<void> {
  const { store, clock, secretBox } = app.services;
  const tag = 'clients';

  async function current(clientId: string): Promise<{ client: ClientRecord; grants: ClientGrantRecord[]; etag: string }> {
    const client = await store.findClient(clientId);
    if (!client) throw notFound(`client "${clientId}"`);
    const grants = await store.listClientGrants(clientId);
    return { client, grants, etag: etagOf(clientView(client, grants)) };
  }

  async function answer(clientId: string, status: number, extra: { client_secret?: string } = {}) {
    const { client, grants, etag } = await current(clientId);
    return { status, headers: { etag }, body: { ...clientView(client, grants), ...extra } };
  }

  /** Makes the client's grants exactly `wanted`. */
  async function replaceGrants(clientId: string, wanted: { api: string; scopes: string[] }[], now: number): Promise<void> {
    const existing = await store.listClientGrants(clientId);
    for (const grant of existing) if (!wanted.some((w) => w.api === grant.api)) await store.removeClientGrant(clientId, grant.api);
    for (const grant of wanted) {
      const before = existing.find((e) => e.api === grant.api);
      await store.saveClientGrant({ clientId, api: grant.api, scopes: grant.scopes, createdAt: before?.createdAt ?? now });
    }
  }

  defineOperation(app, {
    method: 'GET',
    path: '/clients',
    operationId: 'listClients',
    summary: 'List clients, in client_id order',
    tag,
    scope: 'read:clients',
    query: clientListQuerySchema,
    responses: { 200: { description: 'A page of clients', schema: listAnswerSchema(clientViewSchema) } },
    async handler({ query }) {
      const [clients, grants] = await Promise.all([store.listClients(), store.listClientGrants(undefined)]);
      const { grant_type: grantType, confidential, ...paging } = query;
      const wanted = clients.filter(
        (c) => (grantType === undefined || c.grantTypes.includes(grantType)) && (confidential === undefined || isConfidential(c) === (confidential === 'true')),
      );
      const result = page(wanted, (c) => c.clientId, paging);
      return { status: 200, body: { data: result.data.map((c) => clientView(c, grants)), next: result.next } };
    },
  });

  defineOperation(app, {
    method: 'POST',
    path: '/clients',
    operationId: 'createClient',
    summary: 'Register a client; a confidential one gets its client_secret in this answer only',
    tag,
    scope: 'write:clients',
    body: clientCreateSchema,
    etag: true,
    responses: {
      201: { description: 'The client, with client_secret when one was made', schema: clientWithSecretSchema },
      409: { description: 'A client with this client_id exists', schema: problemSchema },
    },
    async handler({ body, audit }) {
      const grants = await checkedGrants(store, body.grants);
      const withKeys = body.jwks_uri !== undefined;
      const fresh = body.confidential && !withKeys ? newClientSecret(secretBox, body.client_id, false) : undefined;
      const now = epochSeconds(clock);
      try {
        await store.createClient({
          ...plainClientFields,
          clientId: body.client_id,
          name: validName(body.name) ?? body.client_id,
          secretHash: fresh?.hash,
          secretSealed: fresh?.sealed,
          redirectUris: [...new Set(body.redirect_uris)],
          grantTypes: body.grant_types,
          // As `clients add`: PKCE asked of public clients unless the caller says otherwise (RFC 9700 §2.1.1).
          requirePkce: body.pkce ?? !body.confidential,
          firstParty: body.first_party,
          builtIn: false,
          createdAt: now,
          tokensRevokedAt: undefined,
          postLogoutRedirectUris: [...new Set(body.post_logout_redirect_uris)],
          webOrigins: body.web_origins,
          backchannelLogoutUri: body.backchannel_logout_uri,
          jwksUri: body.jwks_uri,
          requirePar: body.require_par,
        });
      } catch (err) {
        if (err instanceof DuplicateError) throw new Problem(409, 'exists', `A client "${body.client_id}" already exists.`);
        throw err;
      }
      await replaceGrants(body.client_id, grants, now);
      audit('client.created', {
        clientId: body.client_id,
        confidential: body.confidential,
        authentication: withKeys ? 'private_key_jwt' : fresh ? 'client secret' : 'public',
        grantTypes: body.grant_types,
      });
      const created = await answer(body.client_id, 201, fresh === undefined ? {} : { client_secret: fresh.secret });
      return { ...created, headers: { ...created.headers, location: `/api/v1/clients/${encodeURIComponent(body.client_id)}` } };
    },
  });

  defineOperation(app, {
    method: 'GET',
    path: '/clients/{client_id}',
    operationId: 'getClient',
    summary: 'Read a client',
    tag,
    scope: 'read:clients',
    params: clientIdParamsSchema,
    etag: true,
    responses: { 200: { description: 'The client', schema: clientViewSchema }, 404: { description: 'No such client', schema: problemSchema } },
    async handler({ params }) {
      return answer(params.client_id, 200);
    },
  });

  defineOperation(app, {
    method: 'PATCH',
    path: '/clients/{client_id}',
    operationId: 'updateClient',
    summary: 'Change some fields of a client (If-Match with its ETag: refused with 412 when it changed)',
    tag,
    scope: 'write:clients',
    params: clientIdParamsSchema,
    body: clientPatchSchema,
    etag: true,
    responses: {
      200: { description: 'The client as changed', schema: clientViewSchema },
      404: { description: 'No such client', schema: problemSchema },
      409: { description: 'The client is managed by a configuration file, or is built in and cannot be disabled', schema: problemSchema },
      412: { description: 'The client changed since the ETag given', schema: problemSchema },
    },
    async handler({ request, params, body, audit }) {
      return withResourceLock(store, `client:${params.client_id}`, async () => {
        const { client, etag } = await current(params.client_id);
        // As `clients disable`: the built-in client signs the admin commands in, so it stays usable.
        try {
          checkClientStatusChange(client.clientId, client, body.disabled === true);
        } catch (err) {
          if (err instanceof BuiltInClientError) throw new Problem(409, 'built-in', `Client "${client.clientId}" is built in and cannot be disabled.`);
          throw err;
        }
        checkIfMatch(request, etag);
        const grants = body.grants === undefined ? undefined : await checkedGrants(store, body.grants);
        const grantTypes = body.grant_types ?? client.grantTypes;
        if (grantTypes.includes('client_credentials') && !(client.secretHash !== undefined || client.jwksUri !== undefined || client.jwks !== undefined))
          throw new Problem(400, 'invalid-input', 'The request body is not valid: see errors.', [
            { path: '/grant_types', message: 'client_credentials is for confidential clients' },
          ]);
        const changed = Object.keys(body).filter((key) => key !== 'disabled' && (body as Record<string, unknown>)[key] !== undefined);
        await store.updateClient(client.clientId, {
          ...(body.name === undefined ? {} : { name: validName(body.name) ?? client.clientId }),
          ...(body.redirect_uris === undefined ? {} : { redirectUris: [...new Set(body.redirect_uris)] }),
          ...(body.grant_types === undefined ? {} : { grantTypes: body.grant_types }),
          ...(body.first_party === undefined ? {} : { firstParty: body.first_party }),
          ...(body.pkce === undefined ? {} : { requirePkce: body.pkce }),
          ...(body.web_origins === undefined ? {} : { webOrigins: body.web_origins }),
          ...(body.post_logout_redirect_uris === undefined ? {} : { postLogoutRedirectUris: [...new Set(body.post_logout_redirect_uris)] }),
          ...(body.backchannel_logout_uri === undefined ? {} : { backchannelLogoutUri: body.backchannel_logout_uri ?? undefined }),
        });
        if (grants !== undefined) await replaceGrants(client.clientId, grants, epochSeconds(clock));
        if (changed.length > 0) audit('client.updated', { clientId: client.clientId, changed });
        // The token endpoint and token lookups refuse a disabled client, so its live tokens stop working too.
        if (body.disabled !== undefined && body.disabled !== client.disabled) {
          await setClientDisabled(store, client.clientId, body.disabled);
          audit(body.disabled ? 'client.disabled' : 'client.enabled', { clientId: client.clientId });
        }
        return answer(client.clientId, 200);
      });
    },
  });

  defineOperation(app, {
    method: 'DELETE',
    path: '/clients/{client_id}',
    operationId: 'deleteClient',
    summary: 'Remove a client; its tokens stop working',
    tag,
    scope: 'write:clients',
    params: clientIdParamsSchema,
    etag: true,
    responses: {
      204: { description: 'Removed' },
      404: { description: 'No such client', schema: problemSchema },
      409: { description: 'The client is built in or managed by a configuration file', schema: problemSchema },
      412: { description: 'The client changed since the ETag given', schema: problemSchema },
    },
    async handler({ request, params, audit }) {
      return withResourceLock(store, `client:${params.client_id}`, async () => {
        const { client, etag } = await current(params.client_id);
        if (client.builtIn) throw new Problem(409, 'built-in', `Client "${client.clientId}" is built in and cannot be removed.`);
        refuseManaged('client', client.clientId, client);
        checkIfMatch(request, etag);
        // The later of both clocks, as the admin commands record a revocation.
        const now = Math.max(epochSeconds(clock), await store.databaseTime());
        if (!(await store.removeClient(client.clientId, now))) throw notFound(`client "${client.clientId}"`);
        audit('client.removed', { clientId: client.clientId });
        return { status: 204 };
      });
    },
  });

  defineOperation(app, {
    method: 'POST',
    path: '/clients/{client_id}/rotate-secret',
    operationId: 'rotateClientSecret',
    summary: 'Give a confidential client a new secret, answered once; the old one works keep_old_for seconds more',
    tag,
    scope: 'write:clients',
    params: clientIdParamsSchema,
    body: rotateSecretSchema,
    etag: true,
    responses: {
      200: { description: 'The client with its new client_secret', schema: clientWithSecretSchema },
      404: { description: 'No such client', schema: problemSchema },
      409: { description: 'The client has no secret, or is managed by a configuration file', schema: problemSchema },
    },
    async handler({ request, params, body, audit }) {
      return withResourceLock(store, `client:${params.client_id}`, async () => {
        const { client, etag } = await current(params.client_id);
        refuseManaged('client', client.clientId, client);
        checkIfMatch(request, etag);
        if (client.secretHash === undefined)
          throw new Problem(
            409,
            'no-secret',
            `Client "${client.clientId}" has no secret to rotate (${client.jwksUri !== undefined || client.jwks !== undefined ? 'it authenticates with its keys' : 'it is public'}).`,
          );
        const overlap = body?.keep_old_for ?? 0;
        // client_secret_jwt stays as it was (a sealed secret stays sealed), unless asked for now.
        const fresh = newClientSecret(secretBox, client.clientId, client.secretSealed !== undefined || body?.client_secret_jwt === true);
        const now = epochSeconds(clock);
        if (!(await store.rotateClientSecret(client.clientId, { hash: fresh.hash, sealed: fresh.sealed }, overlap > 0 ? now + overlap : undefined)))
          throw notFound(`client "${client.clientId}"`);
        audit('client.secret_rotated', { clientId: client.clientId, keepOldFor: overlap });
        return answer(client.clientId, 200, { client_secret: fresh.secret });
      });
    },
  });

  async function currentGrant(clientId: string, api: string): Promise<{ client: ClientRecord; grant: ClientGrantRecord | undefined }> {
    const client = await store.findClient(clientId);
    if (!client) throw notFound(`client "${clientId}"`);
    return { client, grant: await store.findClientGrant(clientId, api) };
  }

  const grantView = (grant: ClientGrantRecord) => ({ api: grant.api, scopes: grant.scopes });

  defineOperation(app, {
    method: 'GET',
    path: '/clients/{client_id}/grants',
    operationId: 'listClientGrants',
    summary: 'List what a machine client may ask client_credentials tokens for, per API, in API order',
    tag,
    scope: 'read:clients',
    params: clientIdParamsSchema,
    query: listQuerySchema,
    responses: {
      200: { description: "A page of the client's grants", schema: listAnswerSchema(clientGrantViewSchema) },
      404: { description: 'No such client', schema: problemSchema },
    },
    async handler({ params, query }) {
      const { grants } = await current(params.client_id);
      const result = page(grants, (g) => g.api, query);
      return { status: 200, body: { data: result.data.map(grantView), next: result.next } };
    },
  });

  defineOperation(app, {
    method: 'PUT',
    path: '/clients/{client_id}/grants/{api}',
    operationId: 'putClientGrant',
    summary: 'Grant a client scopes of an API (its identifier URL-encoded), replacing what it was granted for that API',
    tag,
    scope: 'write:clients',
    params: clientGrantParamsSchema,
    body: clientGrantBodySchema,
    etag: true,
    responses: {
      200: { description: 'The grant as replaced', schema: clientGrantViewSchema },
      201: { description: 'The grant as made', schema: clientGrantViewSchema },
      404: { description: 'No such client or API', schema: problemSchema },
      409: { description: 'The client is managed by a configuration file', schema: problemSchema },
      412: { description: 'The grant changed since the ETag given, or there is none to match', schema: problemSchema },
    },
    async handler({ request, params, body, audit }) {
      return withResourceLock(store, `client:${params.client_id}`, async () => {
        const { client, grant } = await currentGrant(params.client_id, params.api);
        refuseManaged('client', client.clientId, client);
        // RFC 9110 §13.1.1: If-Match is false when there is no current representation.
        if (grant === undefined && request.headers['if-match'] !== undefined)
          throw new Problem(412, 'precondition-failed', 'The client has no grant for this API to match If-Match.');
        if (grant !== undefined) checkIfMatch(request, etagOf(grantView(grant)));
        const scopes = [...new Set(body.scopes)];
        const malformed = scopeNameIssues(scopes, '/scopes');
        if (malformed.length > 0) {
          const api = await store.findApi(params.api);
          if (!api) throw notFound(`API "${params.api}"`);
          throw new Problem(400, 'invalid-input', 'The request body is not valid: see errors.', scopeIssues(api, scopes, '/scopes'));
        }
        let saved: Awaited<ReturnType<typeof grantClientScopes>>;
        try {
          saved = await grantClientScopes(store, client.clientId, params.api, scopes, epochSeconds(clock));
        } catch (err) {
          if (!(err instanceof GrantRefusal)) throw err;
          if (err.reason !== 'undeclared') throw notFound(`API "${params.api}"`);
          const issues = err.undeclared.map((scope) => ({ path: `/scopes/${scopes.indexOf(scope)}`, message: `the API declares no scope ${scope}` }));
          throw new Problem(400, 'invalid-input', 'The request body is not valid: see errors.', issues);
        }
        audit('client.grant_saved', { clientId: client.clientId, api: saved.grant.api, scopes });
        const view = grantView(saved.grant);
        return { status: saved.created ? 201 : 200, headers: { etag: etagOf(view) }, body: view };
      });
    },
  });

  defineOperation(app, {
    method: 'DELETE',
    path: '/clients/{client_id}/grants/{api}',
    operationId: 'deleteClientGrant',
    summary: 'Take a grant away (tokens already issued stay valid until they expire)',
    tag,
    scope: 'write:clients',
    params: clientGrantParamsSchema,
    etag: true,
    responses: {
      204: { description: 'Removed' },
      404: { description: 'No such client, or it has no grant for this API', schema: problemSchema },
      409: { description: 'The client is managed by a configuration file', schema: problemSchema },
      412: { description: 'The grant changed since the ETag given', schema: problemSchema },
    },
    async handler({ request, params, audit }) {
      return withResourceLock(store, `client:${params.client_id}`, async () => {
        const { client, grant } = await currentGrant(params.client_id, params.api);
        refuseManaged('client', client.clientId, client);
        if (grant === undefined) throw notFound(`grant of client "${client.clientId}" for ${params.api}`);
        checkIfMatch(request, etagOf(grantView(grant)));
        try {
          await removeClientGrant(store, client.clientId, grant.api);
        } catch (err) {
          if (err instanceof GrantRefusal) throw notFound(`grant of client "${client.clientId}" for ${params.api}`);
          throw err;
        }
        audit('client.grant_removed', { clientId: client.clientId, api: grant.api });
        return { status: 204 };
      });
    },
  });

  defineOperation(app, {
    method: 'POST',
    path: '/clients/registration-tokens',
    operationId: 'createRegistrationToken',
    summary: 'Make an initial access token for one dynamic client registration (RFC 7591 §3), answered once',
    tag,
    scope: 'write:clients',
    body: registrationTokenBodySchema,
    responses: { 201: { description: 'The token, shown only in this answer', schema: registrationTokenSchema } },
    async handler({ body, audit }) {
      const now = epochSeconds(clock);
      const { token, expiresAt } = await createRegistrationToken(store, now, body?.expires_in ?? defaultRegistrationTokenSeconds);
      audit('client.registration_token_created', { expiresAt: isoSeconds(expiresAt) });
      return {
        status: 201,
        body: { token, expires_at: isoSeconds(expiresAt), registration_endpoint: `${app.services.config.issuer}/oauth/register` },
      };
    },
  });
}
