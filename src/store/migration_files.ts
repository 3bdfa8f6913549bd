/**
 * The numbered SQL files of a migrations folder (0001_init.sql, 0002_…), in order. Each dialect has
 * its own folder (migrations/sqlite/, migrations/postgres/) and its own runner; the two folders are
 * one history, the same number and name for the same change.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

export function readMigrations(dir: string): Migration[] {
  return readdirSync(dir)
    .filter((file) => /^\d{4}_[a-z0-9_]+\.sql$/.test(file))
    .sort()
    .map((file) => ({ version: Number(file.slice(0, 4)), name: file, sql: readFileSync(join(dir, file), 'utf8') }));
}
