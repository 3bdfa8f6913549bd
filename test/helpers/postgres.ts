/**
 * The PostgreSQL side of the tests: LATCHKEY_TEST_PG_URL names a database the tests may create
 * schemas in (each test its own, dropped when the file ends); with LATCHKEY_REQUIRE_PG=1 a missing
 * one fails the run instead of skipping (CI).
 */
import { afterAll, describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import pg from 'pg';

export const pgTestUrl = process.env.LATCHKEY_TEST_PG_URL?.trim() || undefined;
const required = process.env.LATCHKEY_REQUIRE_PG === '1';

/** `describe`, or `describe.skip` without a database; fails the file when one is required. */
export function describeWithPostgres(name: string, suite: () => void): void {
  if (!pgTestUrl && required) {
    describe(name, () => {
      it('has a database to run against (LATCHKEY_REQUIRE_PG=1)', () => {
        expect.fail('LATCHKEY_REQUIRE_PG=1 but LATCHKEY_TEST_PG_URL is not set: the PostgreSQL store would go untested');
      });
    });
    return;
  }
  (pgTestUrl ? describe : describe.skip)(name, suite);
}

const schemas: string[] = [];

/** A new schema name, dropped (with everything in it) after the test file. */
export function freshSchema(): string {
  const schema = `latchkey_test_${randomBytes(6).toString('hex')}`;
  if (schemas.length === 0) afterAll(dropSchemas);
  schemas.push(schema);
  return schema;
}

async function dropSchemas(): Promise<void> {
  if (!pgTestUrl || schemas.length === 0) return;
  const admin = new pg.Pool({ connectionString: pgTestUrl, max: 1 });
  try {
    for (const schema of schemas.splice(0)) await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  } finally {
    await admin.end();
  }
}
