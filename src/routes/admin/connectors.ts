/**
 * /admin/connectors: the upstream identity providers (id, type, name, where they are) and their
 * removal, as `latchkey connectors remove` does it (connectors/removal.ts): the connector and the
 * identities bound through it go; the users it created stay, signed out. Adding one (with its
 * client secret or bind password) stays a command: `latchkey connectors add`.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { epochSeconds } from '../../clock.js';
import { connectorRedirectUri } from '../../connectors/connector_config.js';
import { removeConnector } from '../../connectors/removal.js';
import { parseFields } from '../../http/form.js';
import {
  adminAudit,
  adminForm,
  adminGate,
  doneRedirect,
  hereOf,
  managedNotice,
  noticeOf,
  notFound,
  renderAdmin,
  storedKey,
  when,
  type Notice,
} from '../../console/console_page.js';

const params = z.object({ id: storedKey(64).min(1) });
const pageQuery = z.object({ done: z.string().max(32).optional() });
const plainForm = z.object({ csrf_token: z.string().max(256).optional() });

const notices: Record<string, string> = {
  removed: 'The connector was removed. The people it created stay, signed out; they can no longer sign in through it.',
};

/** Where the upstream is, as far as its settings say (never a secret). */
function whereOf(config: Record<string, unknown>): string {
  for (const key of ['issuer', 'url', 'apiUrl']) if (typeof config[key] === 'string') return config[key];
  return '';
}

export async function adminConnectorRoutes(app: FastifyInstance): Promise<void> {
  const services = app.services;
  const { store, clock, config } = services;
  const page = { config: { page: true } };

  async function showConnectors(request: FastifyRequest, reply: FastifyReply, notice: Notice | undefined, status = 200) {
    const [connectors, users] = await Promise.all([store.listConnectors(), store.listUsers()]);
    return renderAdmin(
      request,
      reply,
      services,
      'connectors',
      'connectors',
      {
        title: 'Connectors',
        connectors: connectors.map((c) => ({
          id: c.id,
          type: c.type,
          name: c.name,
          where: whereOf(c.config),
          created: when(c.createdAt),
          users: users.filter((u) => u.source === c.id).length,
          callback: c.type === 'ldap' ? undefined : connectorRedirectUri(config.issuer, c.id),
          managedBy: c.managedBy,
        })),
        notice,
      },
      status,
    );
  }

  app.get('/admin/connectors', page, async (request, reply) => {
    const gate = await adminGate(request, reply, services, hereOf(request, '/admin/connectors'));
    if (!gate.ok) return gate.reply;
    const { done } = parseFields(pageQuery, request.query);
    return showConnectors(request, reply, noticeOf(done, notices));
  });

  app.post('/admin/connectors/:id/remove', page, async (request, reply) => {
    const gate = await adminForm(request, reply, services, plainForm, '/admin/connectors');
    if (!gate.ok) return gate.reply;
    const { id } = parseFields(params, request.params);
    const connector = await store.findConnector(id);
    if (connector?.managedBy !== undefined) return showConnectors(request, reply, managedNotice('connector', connector.id, connector.managedBy), 409);
    const removal = await removeConnector(store, id, epochSeconds(clock));
    if (!removal.removed) return notFound(request, reply, services, 'connector', { href: '/admin/connectors', label: 'Back to the connectors' });
    adminAudit(request, gate.admin, 'connector.removed', { connectorId: id, usersSignedOut: removal.signedOut, notSignedOut: removal.notSignedOut });
    return doneRedirect(reply, '/admin/connectors', 'removed');
  });
}
