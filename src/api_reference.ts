/**
 * The text of docs/api-reference.md: every operation of the management API's OpenAPI document,
 * grouped by tag, with its scope, parameters, request body fields and answers. A function of the
 * document alone (management_api_document.ts builds it as the server serves it), so the page says
 * what the server checks and answers; write_api_reference.ts writes it (`npm run docs:api`).
 */
import type { OpenApiDocument } from './management_api_document.js';

export const apiReferencePath = 'docs/api-reference.md';

export const apiReferenceCommand = 'npm run docs:api';

type Json = Record<string, unknown>;

interface Operation {
  method: string;
  path: string;
  operation: Json;
}

const methodOrder = ['get', 'post', 'put', 'patch', 'delete'];

function byText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function asObject(value: unknown): Json {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Json) : {};
}

function asArray(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}

function text(value: unknown): string {
  return typeof value === 'string' ? value : '';
}

/** A table cell: one line, its pipes escaped. */
function cell(value: string): string {
  return value.replaceAll('|', '\\|').replace(/\s*\n\s*/g, ' ');
}

function code(value: string): string {
  return value.includes('`') ? `\`\` ${value} \`\`` : `\`${value}\``;
}

/** GitHub's id for a heading (github-slugger): lower case, punctuation dropped, spaces as hyphens. */
function slug(heading: string): string {
  return heading
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

/** The type of a JSON Schema as a reader says it: `string`, `array of string`, `string | null`. */
function typeOf(schema: Json): string {
  if (schema.const !== undefined) return JSON.stringify(schema.const);
  const variants = asArray(schema.anyOf ?? schema.oneOf);
  if (variants.length > 0) return variants.map((v) => typeOf(asObject(v))).join(' | ');
  const types = Array.isArray(schema.type) ? schema.type.map(text) : [text(schema.type)];
  return types
    .map((type) => {
      if (type === 'array') return `array of ${typeOf(asObject(schema.items))}`;
      if (type === '') return schema.enum === undefined ? 'any' : 'string';
      return type;
    })
    .join(' | ');
}

/** What a schema asks of a value beyond its type, in words. */
function constraintsOf(schema: Json): string[] {
  const said: string[] = [];
  const bounded = (n: unknown): n is number => typeof n === 'number' && Math.abs(n) < Number.MAX_SAFE_INTEGER;
  const enumValues = asArray(schema.enum);
  if (enumValues.length > 0) said.push(`one of ${enumValues.map((v) => code(String(v))).join(', ')}`);
  if (bounded(schema.minimum) && bounded(schema.maximum)) said.push(`${schema.minimum}–${schema.maximum}`);
  else if (bounded(schema.minimum)) said.push(`at least ${schema.minimum}`);
  else if (bounded(schema.maximum)) said.push(`at most ${schema.maximum}`);
  if (schema.minLength === 1) said.push('not empty');
  else if (typeof schema.minLength === 'number' && schema.minLength > 1) said.push(`at least ${schema.minLength} characters`);
  if (typeof schema.maxLength === 'number') said.push(`at most ${schema.maxLength} characters`);
  if (typeof schema.minItems === 'number' && schema.minItems > 0) said.push(`at least ${schema.minItems} items`);
  if (typeof schema.maxItems === 'number') said.push(`at most ${schema.maxItems} items`);
  if (schema.uniqueItems === true) said.push('no duplicates');
  if (typeof schema.format === 'string') said.push(`format ${schema.format}`);
  if (typeof schema.pattern === 'string') said.push(`matches ${code(schema.pattern)}`);
  if (schema.default !== undefined) said.push(`default ${code(JSON.stringify(schema.default))}`);
  const items = asObject(schema.items);
  if (schema.type === 'array' && Object.keys(items).length > 0) {
    const ofItems = constraintsOf({ ...items, default: undefined });
    if (ofItems.length > 0) said.push(`each: ${ofItems.join(', ')}`);
  }
  if (typeof schema.description === 'string') said.push(schema.description);
  return said;
}

interface Field {
  name: string;
  type: string;
  required: boolean;
  constraints: string[];
}

/** The object schemas a schema may be (itself, an array's items, or the variants of a union). */
function objectsIn(schema: Json): Json[] {
  if (schema.type === 'object' || schema.properties !== undefined) return [schema];
  if (schema.type === 'array') return objectsIn(asObject(schema.items));
  return asArray(schema.anyOf ?? schema.oneOf).flatMap((v) => objectsIn(asObject(v)));
}

/** Every field of an object schema, nested ones as `grants[].api`, in the schema's order. */
function fieldsOf(schema: Json, prefix = ''): Field[] {
  const fields: Field[] = [];
  for (const object of objectsIn(schema)) {
    const required = new Set(asArray(object.required).map(text));
    for (const [name, property] of Object.entries(asObject(object.properties))) {
      const child = asObject(property);
      const path = `${prefix}${name}`;
      fields.push({ name: path, type: typeOf(child), required: required.has(name), constraints: constraintsOf(child) });
      const inner = child.type === 'array' || asArray(child.anyOf).length > 0 ? `${path}[].` : `${path}.`;
      const nested = fieldsOf(child, child.type === 'object' || child.properties !== undefined ? `${path}.` : inner);
      fields.push(...nested);
    }
  }
  return fields;
}

function fieldTable(fields: Field[], withRequired: boolean): string[] {
  if (fields.length === 0) return [];
  const head = withRequired ? ['| field | type | required | constraints |', '|---|---|---|---|'] : ['| field | type | constraints |', '|---|---|---|'];
  return [
    ...head,
    ...fields.map((f) =>
      withRequired
        ? `| ${code(f.name)} | ${cell(f.type)} | ${f.required ? 'yes' : 'no'} | ${cell(f.constraints.join('; '))} |`
        : `| ${code(f.name)}${f.required ? '' : ' (optional)'} | ${cell(f.type)} | ${cell(f.constraints.join('; '))} |`,
    ),
  ];
}

function operationsOf(document: OpenApiDocument): Operation[] {
  const operations: Operation[] = [];
  for (const [path, item] of Object.entries(asObject(document.paths)))
    for (const [method, operation] of Object.entries(asObject(item)))
      if (methodOrder.includes(method)) operations.push({ method, path, operation: asObject(operation) });
  return operations.sort((a, b) => byText(a.path, b.path) || methodOrder.indexOf(a.method) - methodOrder.indexOf(b.method));
}

function tagOf(operation: Operation): string {
  return text(asArray(operation.operation.tags)[0]) || 'other';
}

function scopeOf(operation: Operation): string | undefined {
  const security = asArray(operation.operation.security);
  const scopes = security.flatMap((requirement) => Object.values(asObject(requirement)).flatMap(asArray)).map(text);
  return scopes.length === 0 ? undefined : scopes.join(', ');
}

function headingOf(operation: Operation): string {
  return `${operation.method.toUpperCase()} ${operation.path}`;
}

/** The one media type of a request body or an answer, and its schema. */
function contentOf(holder: Json): { type: string; schema: Json } | undefined {
  const [entry] = Object.entries(asObject(holder.content));
  return entry === undefined ? undefined : { type: entry[0], schema: asObject(asObject(entry[1]).schema) };
}

const problemType = 'application/problem+json';

function operationSection(operation: Operation): string[] {
  const { operation: spec } = operation;
  const lines = [`### ${headingOf(operation)}`, '', text(spec.summary), ''];
  const scope = scopeOf(operation);
  lines.push(`Scope: ${scope === undefined ? 'none (public)' : code(scope)}. Operation id: ${code(text(spec.operationId))}.`, '');

  const parameters = asArray(spec.parameters).map(asObject);
  if (parameters.length > 0) {
    lines.push('Parameters:', '', '| name | in | type | required | constraints |', '|---|---|---|---|---|');
    for (const parameter of parameters) {
      const schema = asObject(parameter.schema);
      const name = text(parameter.name);
      const notes = name === 'If-Match' ? ['the ETag last read; a changed resource is refused with 412', ...constraintsOf(schema)] : constraintsOf(schema);
      lines.push(
        `| ${code(name)} | ${text(parameter.in)} | ${cell(typeOf(schema))} | ${parameter.required === true ? 'yes' : 'no'} | ${cell(notes.join('; '))} |`,
      );
    }
    lines.push('');
  }

  const body = spec.requestBody === undefined ? undefined : contentOf(asObject(spec.requestBody));
  if (body !== undefined) {
    const strict = body.schema.additionalProperties === false ? ', other fields refused' : '';
    lines.push(`Request body (${code(body.type)}${strict}):`, '', ...fieldTable(fieldsOf(body.schema), true), '');
  }

  lines.push('Answers:', '', '| status | meaning | body |', '|---|---|---|');
  const answers = Object.entries(asObject(spec.responses)).sort(([a], [b]) => Number(a) - Number(b));
  for (const [status, answer] of answers) {
    const content = contentOf(asObject(answer));
    const headers = Object.keys(asObject(asObject(answer).headers));
    const bodyText =
      content === undefined
        ? 'none'
        : content.type === problemType
          ? `[problem](#problem-details)`
          : `${code(content.type)}${headers.length > 0 ? `, with ${headers.map(code).join(', ')}` : ''}`;
    lines.push(`| ${status} | ${cell(text(asObject(answer).description))} | ${bodyText} |`);
  }
  lines.push('');
  for (const [status, answer] of answers) {
    const content = contentOf(asObject(answer));
    if (content === undefined || content.type === problemType) continue;
    const fields = fieldsOf(content.schema);
    if (fields.length === 0) continue;
    lines.push(`Fields of the ${status} answer:`, '', ...fieldTable(fields, false), '');
  }
  return lines;
}

/** The problem schema the document uses, described once (every refusal has it). */
function problemSection(operations: Operation[]): string[] {
  for (const { operation } of operations)
    for (const answer of Object.values(asObject(operation.responses))) {
      const content = contentOf(asObject(answer));
      if (content?.type === problemType)
        return [
          '## Problem details',
          '',
          `Every refusal is ${code(problemType)} (RFC 9457) with these fields; see [Errors](management-api.md#errors) for the \`type\`s.`,
          '',
          ...fieldTable(fieldsOf(content.schema), false),
          '',
        ];
    }
  return [];
}

export function apiReference(document: OpenApiDocument): string {
  const operations = operationsOf(document);
  const tags = [...new Set(operations.map(tagOf))].sort(byText);
  const lines = [
    '# Management API reference',
    '',
    `<!-- Generated by \`${apiReferenceCommand}\` from the OpenAPI document the server serves: change the operations in src/routes/management/, not this page. -->`,
    '',
    'Every operation of `{issuer}/api/v1`, grouped by resource, as the OpenAPI document `GET {issuer}/api/v1/openapi.json` describes it: the scope its access token needs, its parameters, its request body and its answers. [Management API](management-api.md) explains tokens, pagination, ETags and errors; paths below are relative to `{issuer}/api/v1`. In a list, `limit` and `cursor` page through it ([Lists and pagination](management-api.md#lists-and-pagination)) and any other query parameter filters it; `If-Match` takes the `ETag` last read ([ETag and If-Match](management-api.md#etag-and-if-match)).',
    '',
    '## Contents',
    '',
    ...tags.map((tag) => {
      const mine = operations.filter((o) => tagOf(o) === tag);
      return `- [${tag}](#${slug(tag)}): ${mine.map((o) => `[${code(headingOf(o))}](#${slug(headingOf(o))})`).join(', ')}`;
    }),
    '- [Problem details](#problem-details)',
    '',
  ];
  for (const tag of tags) {
    lines.push(`## ${tag}`, '');
    for (const operation of operations.filter((o) => tagOf(o) === tag)) lines.push(...operationSection(operation));
  }
  lines.push(...problemSection(operations));
  return `${lines.join('\n').replace(/\n+$/, '')}\n`;
}
