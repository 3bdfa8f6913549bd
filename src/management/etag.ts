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

/** Throws 412 unless If-Match is absent, `*`, or lists the resource's current ETag. */
export function checkIfMatch(request: FastifyRequest, current: string): void {
  const header = request.headers['if-match'];
  if (header === undefined) return;
  const opaque = (tag: string) => tag.trim().replace(/^W\//, '');
  const given = header.split(',').map(opaque);
  if (given.includes('*') || given.includes(opaque(current))) return;
  throw new Problem(412, 'precondition-failed', 'The resource changed since the ETag given in If-Match: read it again and retry.');
}
