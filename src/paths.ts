/** Folders shipped with the package, found from this file (src/ in tests, dist/ when built). */
import { fileURLToPath } from 'node:url';

export const packageRoot = fileURLToPath(new URL('..', import.meta.url));
export const viewsDir = fileURLToPath(new URL('../views', import.meta.url));
export const migrationsDir = fileURLToPath(new URL('../migrations', import.meta.url));
export const postgresMigrationsDir = fileURLToPath(new URL('../migrations/postgres', import.meta.url));
