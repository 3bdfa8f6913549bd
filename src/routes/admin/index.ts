/**
 * The admin console, /admin: users, live sessions, clients and their machine grants, APIs, roles,
 * connectors, signing keys and the audit log, for people holding the `admin` role (console/console_page.ts
 * says who may use it). Plain server-rendered pages and forms: no script, so the pages' CSP stays
 * as strict as everywhere else. Nothing here may be cached. This index is the app of its folder:
 * the one file that imports the console's route plugins (what they share is in src/console/).
 */
import type { FastifyInstance } from 'fastify';
import { adminApiRoutes } from './apis.js';
import { adminAssetRoutes } from './assets.js';
import { adminAuditLogRoutes } from './audit_log.js';
import { adminClientPageRoutes } from './client.js';
import { adminClientGrantRoutes } from './client_grants.js';
import { adminClientRoutes } from './clients.js';
import { adminConnectorRoutes } from './connectors.js';
import { adminKeyRoutes } from './keys.js';
import { adminOverviewRoutes } from './overview.js';
import { adminRoleRoutes } from './roles.js';
import { adminSessionRoutes } from './sessions.js';
import { adminUserPageRoutes } from './user.js';
import { adminUserRoutes } from './users.js';

export async function adminRoutes(app: FastifyInstance): Promise<void> {
  await app.register(adminAssetRoutes);
  await app.register(async (console) => {
    console.addHook('onRequest', async (_request, reply) => {
      reply.header('cache-control', 'no-store');
    });
    await console.register(adminOverviewRoutes);
    await console.register(adminUserRoutes);
    await console.register(adminUserPageRoutes);
    await console.register(adminSessionRoutes);
    await console.register(adminClientRoutes);
    await console.register(adminClientPageRoutes);
    await console.register(adminClientGrantRoutes);
    await console.register(adminApiRoutes);
    await console.register(adminRoleRoutes);
    await console.register(adminConnectorRoutes);
    await console.register(adminKeyRoutes);
    await console.register(adminAuditLogRoutes);
  });
}
