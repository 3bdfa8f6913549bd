/**
 * Cursor pagination: a list answers `{ data, next }`; `next` is an opaque cursor (the last key
 * seen, base64url) for the following page, or null on the last. A key cursor, unlike an offset,
 * neither skips nor repeats an object when another is added or removed between pages.
 */
import { z } from 'zod';
import { Problem } from './problem.js';

export const maxPageSize = 200;
export const defaultPageSize = 50;

export const listQuerySchema = z.strictObject({
  limit: z.coerce.number().int().min(1).max(maxPageSize).optional(),
  cursor: z.string().max(1024).optional(),
});

export function listAnswerSchema<T extends z.ZodType>(item: T) {
  return z.object({ data: z.array(item), next: z.string().nullable() });
}

function decodeCursor(cursor: string): string {
  const key = Buffer.from(cursor, 'base64url').toString('utf8');
  if (key === '' || Buffer.from(key, 'utf8').toString('base64url') !== cursor) throw new Problem(400, 'invalid-cursor', 'The cursor is not one this API gave.');
  return key;
}

/** One page of `items` (any order): sorted by key in byte order, those after the cursor's key. */
export function page<T>(items: readonly T[], keyOf: (item: T) => string, query: z.infer<typeof listQuerySchema>): { data: T[]; next: string | null } {
  const limit = query.limit ?? defaultPageSize;
  const after = query.cursor === undefined ? undefined : decodeCursor(query.cursor);
  const sorted = [...items].sort((a, b) => (keyOf(a) < keyOf(b) ? -1 : keyOf(a) > keyOf(b) ? 1 : 0));
  const rest = after === undefined ? sorted : sorted.filter((item) => keyOf(item) > after);
  const data = rest.slice(0, limit);
  const last = data.at(-1);
  return { data, next: rest.length > limit && last !== undefined ? Buffer.from(keyOf(last), 'utf8').toString('base64url') : null };
}
