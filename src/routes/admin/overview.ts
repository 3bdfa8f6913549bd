/** GET /admin: the console's front page — how many of each thing there is, and where to manage it. */
import type { FastifyInstance } from 'fastify';
import { epochSeconds } from '../../clock.js';
import { adminGate, hereOf, renderAdmin } from '../../console/console_page.js';

export async function adminOverviewRoutes(app: FastifyInstance): Promise<void> {
  const services = app.services;
  const { store, clock } = services;

  app.get('/admin', { config: { page: true } }, async (request, reply) => {
    const gate = await adminGate(request, reply, services, hereOf(request, '/admin'));
    if (!gate.ok) return gate.reply;
    const now = epochSeconds(clock);
    const [users, clients, apis, roles, connectors, keys, sessions] = await Promise.all([
      store.listUsers(),
      store.listClients(),
      store.listApis(),
      store.listRoles(),
      store.listConnectors(),
      store.listSigningKeys(),
      store.listSessions(undefined, now),
    ]);
    const counts = [
      {
        href: '/admin/users',
        label: 'Users',
        count: users.length,
        hint: `${users.filter((u) => u.disabled).length} disabled · ${sessions.length} browser sessions`,
      },
      { href: '/admin/sessions', label: 'Sessions', count: sessions.length, hint: 'browser sessions signed in now' },
      { href: '/admin/clients', label: 'Clients', count: clients.length, hint: `${clients.filter((c) => c.disabled).length} disabled` },
      { href: '/admin/apis', label: 'APIs', count: apis.length, hint: `${apis.reduce((n, a) => n + a.scopes.length, 0)} scopes declared` },
      { href: '/admin/roles', label: 'Roles', count: roles.length, hint: `${roles.find((r) => r.name === 'admin')?.members ?? 0} administrators` },
      { href: '/admin/connectors', label: 'Connectors', count: connectors.length, hint: 'upstream identity providers' },
      {
        href: '/admin/keys',
        label: 'Signing keys',
        count: keys.filter((k) => k.retiredAt === undefined).length,
        hint: 'active (retired keys stay published a while)',
      },
    ];
    return renderAdmin(request, reply, services, 'overview', 'overview', { title: 'Overview', counts, mfa: services.config.mfa });
  });
}
