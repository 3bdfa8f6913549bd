/** Folders shipped with the package, found from this file (src/ in tests, dist/ when built). */
import { fileURLToPath } from 'node:url';

export const packageRoot = fileURLToPath(new URL('..', import.meta.url));
export const viewsDir = fileURLToPath(new URL('../views', import.meta.url));
/** One migration history, a folder per dialect with the same numbers and names. */
export const sqliteMigrationsDir = fileURLToPath(new URL('../migrations/sqlite', import.meta.url));
export const postgresMigrationsDir = fileURLToPath(new URL('../migrations/postgres', import.meta.url));
