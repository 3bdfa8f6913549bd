/**
 * Which PostgreSQL server the bench also measures: `--postgres URL`, or else LATCHKEY_DB when it
 * names one (`LATCHKEY_DB=postgres://… npm run bench`, the way the server itself is pointed at
 * PostgreSQL). A LATCHKEY_DB that is a SQLite path is not the bench's business: its SQLite runs
 * always use a temporary file of their own.
 */
import { isPostgresUrl } from '../src/store/database_url.js';

export function benchPostgresUrl(flag: string | undefined, latchkeyDb: string | undefined): string | undefined {
  if (flag !== undefined) return flag;
  return latchkeyDb !== undefined && isPostgresUrl(latchkeyDb) ? latchkeyDb : undefined;
}
