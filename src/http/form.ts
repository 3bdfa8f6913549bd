/**
 * Request parameters, validated once at the edge. Every parameter must appear at most once
 * (RFC 6749 §3.1: a repeated parameter is invalid_request); values must be strings.
 */
import type { z } from 'zod';
import { OAuthError } from '../errors.js';

export type Fields = Record<string, string>;

/** Flattens a parsed form body or query into single string values, refusing repeats. */
export function singleValued(input: unknown): Fields {
  if (input === undefined || input === null) return {};
  if (typeof input !== 'object' || Array.isArray(input)) {
    throw new OAuthError('invalid_request', 'The request body must be application/x-www-form-urlencoded.');
  }
  const fields: Fields = {};
  for (const [name, value] of Object.entries(input as Record<string, unknown>)) {
    // The name is the sender's text: it goes to the log, never into the answer (RFC 6749 §4.1.2.1).
    if (Array.isArray(value)) throw new OAuthError('invalid_request', 'A parameter is repeated.', { detail: `repeated parameter ${name.slice(0, 64)}` });
    if (typeof value !== 'string') throw new OAuthError('invalid_request', 'A parameter is malformed.', { detail: `malformed parameter ${name.slice(0, 64)}` });
    fields[name] = value;
  }
  return fields;
}

/** Parses fields with a zod schema; the first problem becomes an invalid_request description. */
export function parseFields<T>(schema: z.ZodType<T>, input: unknown): T {
  const fields = singleValued(input);
  const result = schema.safeParse(fields);
  if (!result.success) {
    const issue = result.error.issues[0];
    const name = issue?.path[0] === undefined ? '' : String(issue.path[0]);
    // Our own messages are sentences ending in a full stop; zod's defaults ("Too big: expected
    // string to have <=256 characters") are not meant for clients. `name` is a key of our schema.
    const message = issue?.message.endsWith('.') ? issue.message : `The parameter ${name} is invalid.`;
    throw new OAuthError('invalid_request', message, { detail: issue?.message ?? '' });
  }
  return result.data;
}
