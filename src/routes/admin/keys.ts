/**
 * /admin/keys: the signing keys (kid, algorithm, created, retired, how long a retired key stays
 * published) and "Rotate now", as `latchkey keys rotate` does it (crypto/signing_key_rotation.ts):
 * new keys sign from now on, the JWKS publishes them at once, and the old ones stay published
 * until every token they signed has expired.
 */
import { openSecretBox } from '../../crypto/secret_key_file.js';
import { SecretKeyError } from '../../crypto/secret_box.js';
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { epochSeconds } from '../../clock.js';
import { retiredKeyRetention } from '../../config.js';
import { rotateSigningKeysNow } from '../../crypto/signing_key_rotation.js';
import { parseFields } from '../../http/form.js';
import { adminAudit, adminForm, adminGate, doneRedirect, hereOf, noticeOf, renderAdmin, when } from '../../console/console_page.js';

const pageQuery = z.object({ done: z.string().max(32).optional() });
const plainForm = z.object({ csrf_token: z.string().max(256).optional() });

const notices: Record<string, string> = {
  rotated: 'New signing keys are active and published. The old ones stay published until the tokens they signed have expired.',
  secret_key_busy: 'The keys were not rotated: a secret-key rotation holds the key file. Try again in a moment.',
};

export async function adminKeyRoutes(app: FastifyInstance): Promise<void> {
  const services = app.services;
  const { store, clock, config } = services;
  const page = { config: { page: true } };

  app.get('/admin/keys', page, async (request, reply) => {
    const gate = await adminGate(request, reply, services, hereOf(request, '/admin/keys'));
    if (!gate.ok) return gate.reply;
    const { done } = parseFields(pageQuery, request.query);
    const now = epochSeconds(clock);
    const retention = retiredKeyRetention(config);
    const keys = (await store.listSigningKeys()).sort((a, b) => b.createdAt - a.createdAt || (a.kid < b.kid ? -1 : 1));
    return renderAdmin(request, reply, services, 'keys', 'keys', {
      title: 'Signing keys',
      keys: keys.map((k) => ({
        kid: k.kid,
        alg: k.alg,
        created: when(k.createdAt),
        retired: k.retiredAt === undefined ? undefined : when(k.retiredAt),
        state: k.retiredAt === undefined ? 'active' : k.retiredAt + retention > now ? 'published' : 'expired',
        publishedUntil: k.retiredAt === undefined ? undefined : when(k.retiredAt + retention),
      })),
      accessAlg: config.signingAlg,
      notice: noticeOf(done, notices),
    });
  });

  app.post('/admin/keys/rotate', page, async (request, reply) => {
    const gate = await adminForm(request, reply, services, plainForm, '/admin/keys');
    if (!gate.ok) return gate.reply;
    let keys;
    try {
      // Sealed with the key file as it is now, read under its lock (as `latchkey keys rotate` does):
      // the server's own copy would be stale after a `secret-key rotate`.
      ({ keys } = await rotateSigningKeysNow(config, store, () => openSecretBox(config, store), epochSeconds(clock)));
    } catch (err) {
      if (err instanceof SecretKeyError) return doneRedirect(reply, '/admin/keys', 'secret_key_busy');
      throw err;
    }
    // This process signs with them at once (others notice the rotation within a second).
    await services.signer.refresh();
    for (const key of keys) adminAudit(request, gate.admin, 'key.rotated', { kid: key.kid, alg: key.alg });
    return doneRedirect(reply, '/admin/keys', 'rotated');
  });
}
