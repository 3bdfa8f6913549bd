/**
 * GET /metrics in the Prometheus text format. With LATCHKEY_METRICS_TOKEN set it needs that bearer
 * secret; without one it answers only loopback and private addresses (a scraper inside the network),
 * since the counts tell an outsider about sign-in failures and traffic.
 */
import type { FastifyInstance } from 'fastify';
import { BlockList, isIP } from 'node:net';

const privateNetworks = new BlockList();
for (const [network, prefix] of [
  ['127.0.0.0', 8],
  ['10.0.0.0', 8],
  ['172.16.0.0', 12],
  ['192.168.0.0', 16],
  ['169.254.0.0', 16],
] as const) {
  privateNetworks.addSubnet(network, prefix, 'ipv4');
}
for (const [network, prefix] of [
  ['::1', 128],
  ['fc00::', 7],
  ['fe80::', 10],
] as const)
  privateNetworks.addSubnet(network, prefix, 'ipv6');

export function isPrivateAddress(ip: string): boolean {
  const address = ip.startsWith('::ffff:') && ip.includes('.') ? ip.slice(7) : ip;
  const family = isIP(address);
  return family !== 0 && privateNetworks.check(address, family === 4 ? 'ipv4' : 'ipv6');
}
import { constantTimeEqual } from '../crypto/secrets.js';

export async function metricsRoutes(app: FastifyInstance): Promise<void> {
  const { config, metrics } = app.services;
  app.get('/metrics', async (request, reply) => {
    reply.header('cache-control', 'no-store');
    if (config.metricsToken !== undefined) {
      const header = request.headers.authorization ?? '';
      const presented = /^bearer /i.test(header) ? header.slice(7).trim() : '';
      if (!constantTimeEqual(presented, config.metricsToken)) {
        return reply
          .code(401)
          .header('www-authenticate', 'Bearer realm="latchkey-metrics"')
          .send({ error: 'invalid_token', error_description: 'The metrics need the configured bearer token.' });
      }
    } else if (!isPrivateAddress(request.ip)) {
      return reply
        .code(403)
        .send({ error: 'access_denied', error_description: 'Set LATCHKEY_METRICS_TOKEN to read the metrics from outside the private network.' });
    }
    reply.type(metrics.registry.contentType);
    return metrics.text();
  });
}
