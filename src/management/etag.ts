/**
 * Optimistic concurrency (RFC 9110 §8.8.3, §13.1.1): a resource's ETag is a digest of its stored
 * state; an update sent with If-Match is refused with 412 when the resource changed since, so two
 * automations cannot overwrite each other blindly. Weak (W/) because it covers the representation's
 * meaning, not its bytes; If-Match then compares weakly, as this API documents.
 */
import { createHash } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import { Problem } from './problem.js';

/** Object keys sorted, so the digest depends on the state and not on the order fields were set. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value !== null && typeof value === 'object')
    return `{${Object.keys(value)
      .sort()
      .map((key) => `${JSON.stringify(key)}:${canonical((value as Record<string, unknown>)[key])}`)
      .join(',')}}`;
  // JSON.stringify(undefined) is undefined: an absent value digests as null.
  return value === undefined ? 'null' : JSON.stringify(value);
}

export function etagOf(state: unknown): string {
  return `W/"${createHash('sha256').update(canonical(state)).digest('base64url').slice(0, 27)}"`;
}

/**
 * The entity tags of an If-Match value, `["*"]` for `*`, or undefined when it is not the field's
 * syntax (RFC 9110 §13.1.1: `"*" / #entity-tag`; §8.8.3: `[ W/ ] DQUOTE *etagc DQUOTE`, where etagc
 * may be a comma, so the list is parsed, not split). Empty list elements are ignored (§5.6.1).
 */
export function ifMatchTags(header: string): string[] | undefined {
  if (header.trim() === '*') return ['*'];
  const element = /[ \t]*(?:((?:W\/)?"[\x21\x23-\x7E\x80-\xFF]*")[ \t]*)?(?:,|$)/y;
  const tags: string[] = [];
  while (element.lastIndex < header.length) {
    const match = element.exec(header);
    if (match === null) return undefined;
    if (match[1] !== undefined) tags.push(match[1]);
  }
  return tags.length === 0 ? undefined : tags;
}

/** A 400 problem when the request's If-Match is not a valid value of the field, so it is never taken for a mismatch. */
export function checkIfMatchSyntax(request: FastifyRequest): void {
  const header = request.headers['if-match'];
  if (header === undefined || ifMatchTags(header) !== undefined) return;
  throw new Problem(400, 'invalid-if-match', 'If-Match must be * or a list of entity tags, e.g. W/"…" as the ETag header gave it (RFC 9110 §13.1.1).');
}

/** Throws 400 when If-Match is malformed, 412 unless it is absent, `*`, or lists the resource's current ETag. */
export function checkIfMatch(request: FastifyRequest, current: string): void {
  const header = request.headers['if-match'];
  if (header === undefined) return;
  checkIfMatchSyntax(request);
  const opaque = (tag: string) => tag.replace(/^W\//, '');
  const given = (ifMatchTags(header) ?? []).map(opaque);
  if (given.includes('*') || given.includes(opaque(current))) return;
  throw new Problem(412, 'precondition-failed', 'The resource changed since the ETag given in If-Match: read it again and retry.');
}
