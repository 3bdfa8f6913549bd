/**
 * The OpenAPI 3.1 document of /api/v1, built from the operations' zod schemas with zod 4's own
 * z.toJSONSchema (draft 2020-12, the dialect OpenAPI 3.1 schemas are): request schemas as their
 * input side (what a caller may send, before defaults), answers as their output side.
 */
import { z } from 'zod';
import { latchkeyVersion } from '../version.js';
import { honoursIfMatch, type DescribedOperation } from './operations.js';
import { problemContentType } from './problem.js';

type JsonSchema = Record<string, unknown>;

function jsonSchema(schema: z.ZodType, io: 'input' | 'output'): JsonSchema {
  const { $schema: _dialect, ...rest } = z.toJSONSchema(schema, { target: 'draft-2020-12', io, unrepresentable: 'any' });
  return rest;
}

/** The path or query parameters of an object schema, one OpenAPI parameter per property. */
function parameters(schema: z.ZodType | undefined, where: 'path' | 'query'): JsonSchema[] {
  if (schema === undefined) return [];
  const object = jsonSchema(schema, 'input');
  const properties = (object.properties ?? {}) as Record<string, JsonSchema>;
  const required = new Set((object.required ?? []) as string[]);
  return Object.entries(properties).map(([name, property]) => ({ name, in: where, required: where === 'path' || required.has(name), schema: property }));
}

function operationObject(operation: DescribedOperation): JsonSchema {
  const responses: Record<string, JsonSchema> = {};
  for (const [status, answer] of Object.entries(operation.responses)) {
    const type = Number(status) >= 400 ? problemContentType : 'application/json';
    responses[status] = {
      description: answer.description,
      ...(operation.etag === true && Number(status) < 300 && answer.schema !== undefined ? { headers: { ETag: { schema: { type: 'string' } } } } : {}),
      ...(answer.schema === undefined ? {} : { content: { [type]: { schema: jsonSchema(answer.schema, 'output') } } }),
    };
  }
  const ifMatch = honoursIfMatch(operation)
    ? [
        {
          name: 'If-Match',
          in: 'header',
          required: false,
          description: 'The ETag last read (or *): the call is refused with 412 when the resource changed since (RFC 9110 §13.1.1).',
          schema: { type: 'string' },
        },
      ]
    : [];
  return {
    operationId: operation.operationId,
    summary: operation.summary,
    tags: [operation.tag],
    ...(operation.scope === undefined ? { security: [] } : { security: [{ accessToken: [operation.scope] }] }),
    parameters: [...parameters(operation.params, 'path'), ...parameters(operation.query, 'query'), ...ifMatch],
    ...(operation.body === undefined
      ? {}
      : { requestBody: { required: true, content: { 'application/json': { schema: jsonSchema(operation.body, 'input') } } } }),
    responses,
  };
}

export function openApiDocument(issuer: string, operations: readonly DescribedOperation[]): JsonSchema {
  const paths: Record<string, Record<string, JsonSchema>> = {};
  for (const operation of operations) {
    const item = (paths[operation.path] ??= {});
    item[operation.method.toLowerCase()] = operationObject(operation);
  }
  return {
    openapi: '3.1.0',
    info: { title: 'Latchkey management API', version: latchkeyVersion },
    jsonSchemaDialect: 'https://json-schema.org/draft/2020-12/schema',
    servers: [{ url: `${issuer}/api/v1` }],
    components: {
      securitySchemes: {
        // RFC 6750 bearer tokens (or DPoP, RFC 9449) for the audience {issuer}/api/v1.
        accessToken: {
          type: 'oauth2',
          flows: { clientCredentials: { tokenUrl: `${issuer}/oauth/token`, scopes: Object.fromEntries(scopeNames(operations).map((s) => [s, s])) } },
        },
      },
    },
    paths,
  };
}

function scopeNames(operations: readonly DescribedOperation[]): string[] {
  return [...new Set(operations.flatMap((o) => (o.scope === undefined ? [] : [o.scope])))].sort();
}
