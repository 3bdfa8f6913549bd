/**
 * Checks answers of the management API against the OpenAPI document the server serves: the
 * status must be documented for the operation, the content type must be the documented one, and
 * the body must validate (ajv, JSON Schema draft 2020-12, the dialect of OpenAPI 3.1 schemas).
 * Every answer of the API's tests goes through it, so the document cannot describe another API.
 */
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import { expect } from 'vitest';

type Json = Record<string, unknown>;

export interface Answer {
  method: string;
  /** The request path, with its query. */
  url: string;
  statusCode: number;
  headers: Record<string, unknown>;
  body: string;
}

export class OpenApiAnswers {
  private readonly ajv = new Ajv2020({ strict: false, allErrors: true });
  private readonly compiled = new Map<object, ValidateFunction>();
  /** How many answers were checked, so a test can show it checked some. */
  checked = 0;

  constructor(readonly document: Json) {
    expect(document.openapi).toBe('3.1.0');
  }

  private operation(method: string, url: string): Json {
    const path = new URL(url, 'http://x').pathname.replace(/^\/api\/v1/, '');
    const paths = this.document.paths as Record<string, Record<string, Json>>;
    for (const [template, operations] of Object.entries(paths)) {
      const pattern = new RegExp(`^${template.replace(/\{[^}]+\}/g, '[^/]+').replaceAll('.', '\\.')}/?$`);
      const operation = operations[method.toLowerCase()];
      if (pattern.test(path) && operation !== undefined) return operation;
    }
    throw new Error(`the OpenAPI document has no operation for ${method} ${path}`);
  }

  /** Fails the test unless the answer is one the document describes. */
  check(answer: Answer): void {
    const operation = this.operation(answer.method, answer.url);
    const responses = operation.responses as Record<string, Json>;
    const response = responses[String(answer.statusCode)];
    expect(response, `${answer.method} ${answer.url} answered ${answer.statusCode}, which the document does not list: ${answer.body}`).toBeDefined();
    const content = response!.content as Record<string, { schema: Json }> | undefined;
    this.checked++;
    if (content === undefined) {
      expect(answer.body, `${answer.method} ${answer.url} ${answer.statusCode} has a body the document does not describe`).toBe('');
      return;
    }
    const [type, media] = Object.entries(content)[0]!;
    expect(String(answer.headers['content-type']).split(';')[0]).toBe(type);
    let validate = this.compiled.get(media.schema);
    if (!validate) this.compiled.set(media.schema, (validate = this.ajv.compile(media.schema)));
    const valid = validate(JSON.parse(answer.body));
    expect(valid, `${answer.method} ${answer.url} ${answer.statusCode}: ${this.ajv.errorsText(validate.errors)}\n${answer.body}`).toBe(true);
  }
}
