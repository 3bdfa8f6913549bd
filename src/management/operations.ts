/**
 * One place describes each operation of the management API: its method and path, the scope it
 * needs, and the zod schemas of its parameters, body and answers. The same description registers
 * the Fastify route (which validates with those schemas) and becomes the operation in the OpenAPI
 * document (openapi_document.ts), so the document cannot drift from what the server does.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { z } from 'zod';
import { audit, type AuditEvent } from '../audit/audit_events.js';
import { authorizeManagementCall, identifiedCaller, type ManagementCaller } from './authorization.js';
import { checkIfMatchSyntax } from './etag.js';
import { invalidInput, Problem, problemSchema, toProblem, type InputPart } from './problem.js';

export interface OperationAnswer {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}

export interface OperationContext<P, Q, B> {
  request: FastifyRequest;
  params: P;
  query: Q;
  body: B;
  /** Undefined only on public operations (the OpenAPI document). */
  caller: ManagementCaller | undefined;
  /** Records the event in the audit log with the caller and its address. */
  audit: (event: AuditEvent, fields: Record<string, unknown>) => void;
}

export interface OperationSpec<P extends z.ZodType, Q extends z.ZodType, B extends z.ZodType> {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** OpenAPI style, relative to /api/v1: /clients/{client_id}. */
  path: string;
  operationId: string;
  summary: string;
  tag: string;
  /** The scope the caller's token must carry; undefined: public. */
  scope: string | undefined;
  params?: P;
  query?: Q;
  body?: B;
  /** Sends and honours If-Match / ETag. */
  etag?: boolean;
  responses: Record<number, { description: string; schema?: z.ZodType }>;
  handler(context: OperationContext<z.output<P>, z.output<Q>, z.output<B>>): Promise<OperationAnswer>;
}

/** What the document needs of an operation (the handler stays with the route). */
export type DescribedOperation = Omit<OperationSpec<z.ZodType, z.ZodType, z.ZodType>, 'handler'>;

declare module 'fastify' {
  interface FastifyInstance {
    /** The operations registered under /api/v1, in order, for the OpenAPI document. */
    managementOperations: DescribedOperation[];
  }
}

/** The refusals every authorised operation can answer besides its own. */
const commonResponses: DescribedOperation['responses'] = {
  400: { description: 'Invalid input', schema: problemSchema },
  401: { description: 'No valid access token for this API', schema: problemSchema },
  403: { description: 'The token lacks the scope this operation needs', schema: problemSchema },
  429: { description: 'Too many calls by this caller: wait as many seconds as Retry-After says', schema: problemSchema },
  503: {
    description: 'The database is briefly unavailable, or another server instance is changing this resource: retry after Retry-After seconds',
    schema: problemSchema,
  },
};

function callerFields(caller: ManagementCaller | undefined): Record<string, unknown> {
  if (caller === undefined) return {};
  // The actor column says who acted (as the console's admin username does); the details say how.
  return caller.kind === 'client'
    ? { actor: caller.clientId, via: 'api', callerClientId: caller.clientId }
    : { actor: caller.username, via: 'api', callerUserId: caller.userId, callerUsername: caller.username };
}

/** What every audit event of a call says about the operation: never a token, a secret or a body. */
function operationFields(spec: DescribedOperation, request: FastifyRequest): Record<string, unknown> {
  // The path without its query: filters are the caller's input, the path names the resource.
  return { operationId: spec.operationId, method: spec.method, path: request.url.split('?')[0] };
}

/**
 * Whether a call of `operation` is conditional on If-Match (RFC 9110 §13.1.1): one with an ETag
 * that changes an existing resource — PATCH, PUT, DELETE, and POST actions on one; not a creation
 * (a POST to a collection answering 201), which has no earlier state to compare. Its handler calls checkIfMatch.
 */
export function honoursIfMatch(operation: Pick<DescribedOperation, 'etag' | 'method' | 'responses' | 'path'>): boolean {
  if (operation.etag !== true || operation.method === 'GET') return false;
  // A POST to a collection (no path parameter) answering 201 creates; a POST to one resource
  // (`/users/{username}/mfa-enrollment`) acts on it, even when what it makes is answered with 201.
  return !(operation.method === 'POST' && 201 in operation.responses && !operation.path.includes('{'));
}

const conditionalResponses: DescribedOperation['responses'] = {
  412: { description: 'The resource changed since the ETag given in If-Match', schema: problemSchema },
};

export function defineOperation<P extends z.ZodType, Q extends z.ZodType, B extends z.ZodType>(app: FastifyInstance, spec: OperationSpec<P, Q, B>): void {
  const conditional = honoursIfMatch(spec);
  const responses: DescribedOperation['responses'] = {
    ...(spec.scope === undefined ? {} : commonResponses),
    ...(conditional ? conditionalResponses : {}),
    ...spec.responses,
  };
  app.managementOperations.push({ ...spec, responses });
  app.route({
    method: spec.method,
    url: spec.path.replace(/\{([^}]+)\}/g, ':$1'),
    handler: async (request: FastifyRequest, reply: FastifyReply) => {
      if (spec.scope === undefined) return answerOperation(spec, request, reply, undefined, () => undefined);
      // Every authorised call leaves one event: a change its own (the admin commands' event), a
      // read `management.read`, a refusal `management.refused` with its status. A caller whose
      // token is not live is not identified, and an anonymous caller writes nothing to the log.
      const recorded = { event: false };
      const record = (event: AuditEvent, caller: ManagementCaller, fields: Record<string, unknown>) => {
        recorded.event = true;
        audit(request, event, { ...operationFields(spec, request), ...fields, ...callerFields(caller) });
      };
      try {
        const { caller } = await authorizeManagementCall(request, spec.scope);
        const status = await answerOperation(spec, request, reply, caller, (event, fields) => record(event, caller, fields));
        if (!recorded.event) record(spec.method === 'GET' ? 'management.read' : 'management.changed', caller, { status: reply.statusCode });
        return status;
      } catch (err) {
        const caller = identifiedCaller(request);
        if (caller !== undefined) record('management.refused', caller, { status: toProblem(err).status });
        throw err;
      }
    },
  });
}

/** The path's or the query's parameters, or a 400 problem that says which of the two is wrong. */
function parsed(schema: z.ZodType, input: unknown, part: InputPart): unknown {
  const result = schema.safeParse(input);
  if (!result.success) throw invalidInput(result.error, part);
  return result.data;
}

async function answerOperation<P extends z.ZodType, Q extends z.ZodType, B extends z.ZodType>(
  spec: OperationSpec<P, Q, B>,
  request: FastifyRequest,
  reply: FastifyReply,
  caller: ManagementCaller | undefined,
  audit: OperationContext<P, Q, B>['audit'],
): Promise<FastifyReply> {
  // A malformed If-Match is refused before anything is read, never taken for a changed resource.
  if (honoursIfMatch(spec)) checkIfMatchSyntax(request);
  const params = spec.params === undefined ? {} : parsed(spec.params, request.params, 'path');
  const query = spec.query === undefined ? {} : parsed(spec.query, request.query, 'query');
  if (spec.body === undefined && request.body !== undefined && request.body !== null) {
    // A body where none is defined is a client's mistake worth telling, not something to ignore.
    throw new Problem(400, 'invalid-input', 'This operation takes no request body.');
  }
  const body = spec.body === undefined ? undefined : spec.body.parse(request.body ?? undefined);
  const answer = await spec.handler({
    request,
    params: params as z.output<P>,
    query: query as z.output<Q>,
    body: body as z.output<B>,
    caller,
    audit,
  });
  reply.code(answer.status).headers(answer.headers ?? {});
  return answer.body === undefined ? reply.send() : reply.send(answer.body);
}
