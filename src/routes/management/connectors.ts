/**
 * /api/v1/connectors: the upstream identity providers, with the rules of `connectors add`, `list`,
 * `remove` and `test`. Adding or changing one checks the upstream first (connectors/connector_check.ts,
 * the very check `connectors add` runs, with the same deadline, no redirects followed and bounded
 * reads) unless the body says `"check": false`; a failed check is a 422 problem naming the step
 * and its cause, and nothing is saved. Secrets (client secrets, bind passwords) are write-only:
 * sealed with the server's secret key when given, never answered.
 */
import type { FastifyInstance } from 'fastify';
import { ZodError } from 'zod';
import { epochSeconds } from '../../clock.js';
import { checkConnector, type CheckableConnector, type ConnectorCheck } from '../../connectors/connector_check.js';
import { connectorRedirectUri, typedConnector } from '../../connectors/connector_config.js';
import { connectorWarnings, defaultConnectorName, newConnectorRecord } from '../../connectors/connector_setup.js';
import { removeConnector } from '../../connectors/removal.js';
import { connectorSecret, connectorSecretContext } from '../../connectors/runtime.js';
import { refuseManaged } from '../../directory/managed.js';
import { validName } from '../../directory/validation.js';
import {
  checkableOf,
  checkView,
  connectorCheckSchema,
  connectorCreatedSchema,
  connectorCreateSchema,
  connectorFields,
  connectorIdParamsSchema,
  connectorPatchSchema,
  connectorRemovalSchema,
  connectorView,
  connectorViewSchema,
} from '../../management/connector_resource.js';
import { checkIfMatch, etagOf } from '../../management/etag.js';
import { defineOperation } from '../../management/operations.js';
import { listAnswerSchema, listQuerySchema, page } from '../../management/pagination.js';
import { invalidInput, notFound, Problem, problemSchema } from '../../management/problem.js';
import { withResourceLock } from '../../management/resource_lock.js';
import { DuplicateError, type ConnectorRecord } from '../../store/store.js';

/** The check failed: nothing is saved; the problem names each failed step and its cause. */
function checkFailed(id: string, result: ConnectorCheck, what: string): Problem {
  return new Problem(
    422,
    'check-failed',
    `connector ${id} not ${what}: ${result.cause ?? 'a check failed'} (fix it and try again, or send "check": false to skip the check)`,
    result.checks.filter((step) => step.outcome === 'failed').map((step) => ({ path: '/check', message: `${step.name}: ${step.detail}` })),
  );
}

/** A ZodError of the stored settings' schema, its camelCase paths as the API's snake_case fields. */
function settingsProblem(error: ZodError): Problem {
  const issues = error.issues.map((issue) => ({
    ...issue,
    path: issue.path.map((part) => (typeof part === 'string' ? part.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`) : part)),
  }));
  return invalidInput(new ZodError(issues));
}

export async function managementConnectorRoutes(app: FastifyInstance): Promise<void> {
  const services = app.services;
  const { store, clock, config } = services;
  const tag = 'connectors';

  async function current(id: string): Promise<{ connector: ConnectorRecord; etag: string }> {
    const connector = await store.findConnector(id);
    if (!connector) throw notFound(`connector "${id.slice(0, 64)}"`);
    return { connector, etag: etagOf(connectorView(connector, config.issuer)) };
  }

  /** The check `connectors add` and `connectors test` run, with the sign-in's deadline. */
  function check(id: string, connector: CheckableConnector): Promise<ConnectorCheck> {
    return checkConnector(connector, { timeoutSeconds: config.upstreamTimeout, redirectUri: connectorRedirectUri(config.issuer, id) });
  }

  defineOperation(app, {
    method: 'GET',
    path: '/connectors',
    operationId: 'listConnectors',
    summary: "List connectors (upstream identity providers) in their order (the sign-in page's, and LDAP directories' try order); secrets are never answered",
    tag,
    scope: 'read:connectors',
    query: listQuerySchema,
    responses: { 200: { description: 'A page of connectors', schema: listAnswerSchema(connectorViewSchema) } },
    async handler({ query }) {
      // Their position orders them and never changes: a stable page key, the id after it to make it unique.
      const result = page(await store.listConnectors(), (c) => `${String(c.position).padStart(12, '0')}\u0000${c.id}`, query);
      return { status: 200, body: { data: result.data.map((c) => connectorView(c, config.issuer)), next: result.next } };
    },
  });

  defineOperation(app, {
    method: 'POST',
    path: '/connectors',
    operationId: 'createConnector',
    summary: 'Add a connector (as `latchkey connectors add`): the upstream is checked first unless "check": false',
    tag,
    scope: 'write:connectors',
    body: connectorCreateSchema,
    etag: true,
    responses: {
      201: { description: 'The connector, what to be warned about, and the check', schema: connectorCreatedSchema },
      409: { description: 'A connector with this id exists', schema: problemSchema },
      422: { description: 'The upstream check failed: nothing was saved', schema: problemSchema },
    },
    async handler({ body, audit }) {
      const checkable = checkableOf(body);
      const name = validName(body.name) ?? defaultConnectorName(checkable);
      const exists = () => new Problem(409, 'exists', `A connector "${body.id}" already exists.`);
      if (await store.findConnector(body.id)) throw exists();
      const result = body.check ? await check(body.id, checkable) : undefined;
      if (result && !result.ok) throw checkFailed(body.id, result, 'added');
      try {
        await store.createConnector(newConnectorRecord(services.secretBox, { ...checkable, id: body.id, name }, epochSeconds(clock)));
      } catch (err) {
        if (err instanceof DuplicateError) throw exists();
        throw err;
      }
      audit('connector.created', { connectorId: body.id, type: body.type });
      const { connector, etag } = await current(body.id);
      return {
        status: 201,
        headers: { etag, location: `/api/v1/connectors/${body.id}` },
        body: { ...connectorView(connector, config.issuer), warnings: connectorWarnings(checkable), check: result ? checkView(result) : null },
      };
    },
  });

  defineOperation(app, {
    method: 'GET',
    path: '/connectors/{id}',
    operationId: 'getConnector',
    summary: 'Read a connector (never its secret)',
    tag,
    scope: 'read:connectors',
    params: connectorIdParamsSchema,
    etag: true,
    responses: { 200: { description: 'The connector', schema: connectorViewSchema }, 404: { description: 'No such connector', schema: problemSchema } },
    async handler({ params }) {
      const { connector, etag } = await current(params.id);
      return { status: 200, headers: { etag }, body: connectorView(connector, config.issuer) };
    },
  });

  defineOperation(app, {
    method: 'PATCH',
    path: '/connectors/{id}',
    operationId: 'updateConnector',
    summary: 'Change some fields of a connector (its type stays); checked as when added unless "check": false',
    tag,
    scope: 'write:connectors',
    params: connectorIdParamsSchema,
    body: connectorPatchSchema,
    etag: true,
    responses: {
      200: { description: 'The connector as changed', schema: connectorViewSchema },
      404: { description: 'No such connector', schema: problemSchema },
      409: { description: 'The connector is managed by a configuration file, or its stored settings are not valid', schema: problemSchema },
      412: { description: 'The connector changed since the ETag given', schema: problemSchema },
      422: { description: 'The upstream check failed: nothing was changed', schema: problemSchema },
    },
    async handler({ request, params, body, audit }) {
      return withResourceLock(store, `connector:${params.id}`, async () => {
        const { connector, etag } = await current(params.id);
        refuseManaged('connector', connector.id, connector);
        checkIfMatch(request, etag);
        const { check: wanted, name, ...fields } = body;
        const given = Object.entries(fields as Record<string, unknown>).filter(([, value]) => value !== undefined);
        const foreign = given.filter(([field]) => !connectorFields[connector.type].includes(field));
        if (foreign.length > 0)
          throw new Problem(
            400,
            'invalid-input',
            'The request body is not valid: see errors.',
            foreign.map(([field]) => ({ path: `/${field}`, message: `is not a field of an ${connector.type} connector` })),
          );
        const stored = Object.fromEntries(
          Object.entries(connectorView(connector, config.issuer)).filter(([field]) => connectorFields[connector.type].includes(field)),
        );
        let secret: string | undefined;
        try {
          secret = connectorSecret(services, connector);
        } catch {
          secret = undefined;
        }
        let checkable: CheckableConnector;
        try {
          checkable = checkableOf({ ...stored, client_secret: secret, bind_password: secret, ...Object.fromEntries(given), type: connector.type });
        } catch (err) {
          if (err instanceof ZodError) throw settingsProblem(err);
          throw err;
        }
        if (checkable.type !== 'oidc' && checkable.secret === undefined)
          throw new Problem(
            409,
            'invalid-stored',
            `connector ${connector.id}: its stored secret cannot be opened with this server's secret key: give it again`,
          );
        const upstreamChanged = given.length > 0;
        const result = wanted && upstreamChanged ? await check(connector.id, checkable) : undefined;
        if (result && !result.ok) throw checkFailed(connector.id, result, 'changed');
        const newSecret = fields.client_secret ?? fields.bind_password;
        await store.applyConfiguration([
          {
            kind: 'update',
            object: 'connector',
            record: {
              id: connector.id,
              type: connector.type,
              name: name ?? connector.name,
              config: checkable.config,
              secret: newSecret === undefined ? connector.secret : services.secretBox.seal(connectorSecretContext(connector.id), newSecret),
              managedBy: undefined,
            },
          },
        ]);
        audit('connector.updated', { connectorId: connector.id, fields: [...(name === undefined ? [] : ['name']), ...given.map(([field]) => field)] });
        const changed = await current(connector.id);
        return { status: 200, headers: { etag: changed.etag }, body: connectorView(changed.connector, config.issuer) };
      });
    },
  });

  defineOperation(app, {
    method: 'DELETE',
    path: '/connectors/{id}',
    operationId: 'deleteConnector',
    summary: 'Remove a connector (as `latchkey connectors remove`): the users it created stay, signed out',
    tag,
    scope: 'write:connectors',
    params: connectorIdParamsSchema,
    etag: true,
    responses: {
      200: { description: 'Removed; how many of the users it created were signed out', schema: connectorRemovalSchema },
      404: { description: 'No such connector', schema: problemSchema },
      409: { description: 'The connector is managed by a configuration file', schema: problemSchema },
      412: { description: 'The connector changed since the ETag given', schema: problemSchema },
    },
    async handler({ request, params, audit }) {
      return withResourceLock(store, `connector:${params.id}`, async () => {
        const { connector, etag } = await current(params.id);
        refuseManaged('connector', connector.id, connector);
        checkIfMatch(request, etag);
        const removal = await removeConnector(store, connector.id, epochSeconds(clock));
        if (!removal.removed) throw notFound(`connector "${connector.id}"`);
        audit('connector.removed', { connectorId: connector.id, usersSignedOut: removal.signedOut, notSignedOut: removal.notSignedOut });
        return { status: 200, body: { id: connector.id, users_signed_out: removal.signedOut, not_signed_out: removal.notSignedOut } };
      });
    },
  });

  defineOperation(app, {
    method: 'POST',
    path: '/connectors/{id}/test',
    operationId: 'testConnector',
    summary: 'Check a connector as `latchkey connectors test` does: each step passed, failed or not checked',
    tag,
    scope: 'write:connectors',
    params: connectorIdParamsSchema,
    responses: {
      200: { description: 'The check, step by step (ok false when a step failed)', schema: connectorCheckSchema },
      404: { description: 'No such connector', schema: problemSchema },
      409: { description: 'Its stored settings or secret cannot be used (add it again)', schema: problemSchema },
    },
    async handler({ params }) {
      const { connector } = await current(params.id);
      const typed = typedConnector(connector);
      if (!typed)
        throw new Problem(409, 'invalid-stored', `connector ${connector.id}: its stored settings are not valid for its type (remove it and add it again)`);
      let secret: string | undefined;
      try {
        secret = connectorSecret(services, connector);
      } catch {
        throw new Problem(409, 'invalid-stored', `connector ${connector.id}: its stored secret cannot be opened with this server's secret key: add it again`);
      }
      return { status: 200, body: checkView(await check(connector.id, { ...typed, secret })) };
    },
  });
}
