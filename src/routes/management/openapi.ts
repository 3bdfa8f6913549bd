/**
 * GET /api/v1/openapi.json: the OpenAPI 3.1 document of every operation registered under /api/v1,
 * built from their zod schemas. Public: it describes the API, it grants nothing.
 */
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { openApiDocument } from '../../management/openapi_document.js';
import { defineOperation } from '../../management/operations.js';

export async function managementOpenApiRoutes(app: FastifyInstance): Promise<void> {
  let document: Record<string, unknown> | undefined;
  defineOperation(app, {
    method: 'GET',
    path: '/openapi.json',
    operationId: 'getOpenApiDocument',
    summary: 'This document',
    tag: 'meta',
    scope: undefined,
    responses: { 200: { description: 'The OpenAPI 3.1 document', schema: z.record(z.string(), z.unknown()) } },
    async handler() {
      // Built once, at the first request, when every operation has been registered.
      document ??= openApiDocument(app.services.config.issuer, app.managementOperations);
      return { status: 200, body: document };
    },
  });
}
