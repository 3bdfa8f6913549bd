/**
 * How the one SQL implementation of the Store (sql_store.ts) talks to a database without knowing
 * which: each verb is a generator that yields operations — a statement to run, a lock to take —
 * and receives their results. The SQLite executor steps it synchronously, so a verb stays one
 * synchronous unit inside SQLite's group commit; the PostgreSQL executor awaits each step on a
 * pooled connection. A prototype measured about 100 ns per step, against tens of microseconds for
 * the statement itself.
 *
 * Statements are written once, in PostgreSQL's syntax with $1, $2 … placeholders (as dex writes
 * its storage/sql); each dialect compiles a statement's text once, when first used (dialect.ts).
 */
import type { Row } from '../rows.js';

/**
 * What a transaction locks until it ends, so that writers of one thing take turns across
 * connections: a refresh-token family or a person's set of second factors (advisory locks), the
 * signing keys, the server secrets or the connectors (their tables, while readers go on reading). PostgreSQL only:
 * SQLite has one writer at a time.
 */
export type LockKind = 'refresh_family' | 'second_factors' | 'signing_keys' | 'server_secrets' | 'connectors';

export type Op =
  | {
      kind: 'one' | 'many' | 'run';
      text: string;
      params: unknown[];
      /** A unique violation is this DuplicateError (naming what was duplicated) instead of the driver's error. */
      duplicate?: string;
      /** A foreign key naming nothing is this MissingReferenceError instead of the driver's error. */
      missing?: string;
    }
  | { kind: 'lock'; lock: LockKind; key: string };

/** What a step gives back: rows, one row, or how many rows a write changed. */
export type Verb<T> = Generator<Op, T, unknown>;

export function* one(text: string, ...params: unknown[]): Verb<Row | undefined> {
  return (yield { kind: 'one', text, params }) as Row | undefined;
}

export function* many(text: string, ...params: unknown[]): Verb<Row[]> {
  return (yield { kind: 'many', text, params }) as Row[];
}

/** A write; how many rows it changed. */
export function* run(text: string, ...params: unknown[]): Verb<number> {
  return (yield { kind: 'run', text, params }) as number;
}

/** An INSERT whose unique violation is DuplicateError(`what`). */
export function* insert(what: string, text: string, ...params: unknown[]): Verb<number> {
  return (yield { kind: 'run', text, params, duplicate: what }) as number;
}

/** A write whose foreign key may name what is gone (an API or client removed meanwhile): MissingReferenceError(`what`). */
export function* referring(what: string, text: string, ...params: unknown[]): Verb<number> {
  return (yield { kind: 'run', text, params, missing: what }) as number;
}

/** Holds `lock` on `key` until the transaction ends (PostgreSQL's transaction advisory locks). */
export function* lock(kind: LockKind, key: string): Verb<void> {
  yield { kind: 'lock', lock: kind, key };
}

/** How a verb runs: `plain` statement by statement, `atomic` in one transaction, `bulk` in one transaction without the request deadline. */
export type Mode = 'plain' | 'atomic' | 'bulk';
