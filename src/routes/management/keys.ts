/**
 * /api/v1/keys: the signing keys, as `latchkey keys list` shows them (kid, algorithm, status,
 * dates; never private material), and `POST /keys/rotate`, as `latchkey keys rotate` and the
 * console's "Rotate now" do it (crypto/signing_key_rotation.ts).
 */
import type { FastifyInstance } from 'fastify';
import { epochSeconds } from '../../clock.js';
import { retiredKeyRetention } from '../../config.js';
import { SecretKeyError } from '../../crypto/secret_box.js';
import { openSecretBox } from '../../crypto/secret_key_file.js';
import { rotateSigningKeysNow } from '../../crypto/signing_key_rotation.js';
import { etagOf } from '../../management/etag.js';
import { accessKeyFirst, keyKidParamsSchema, keyOrder, keyRotationSchema, keyView, keyViewSchema } from '../../management/key_resource.js';
import { defineOperation } from '../../management/operations.js';
import { listAnswerSchema, listQuerySchema, page } from '../../management/pagination.js';
import { notFound, Problem, problemSchema } from '../../management/problem.js';
import { withResourceLock } from '../../management/resource_lock.js';

export async function managementKeyRoutes(app: FastifyInstance): Promise<void> {
  const { store, clock, config } = app.services;
  const tag = 'keys';
  const retention = retiredKeyRetention(config);

  defineOperation(app, {
    method: 'GET',
    path: '/keys',
    operationId: 'listKeys',
    summary: 'List signing keys, newest first (as `latchkey keys list`)',
    tag,
    scope: 'read:keys',
    query: listQuerySchema,
    responses: { 200: { description: 'A page of signing keys', schema: listAnswerSchema(keyViewSchema) } },
    async handler({ query }) {
      const now = epochSeconds(clock);
      const result = page(await store.listSigningKeys(), keyOrder, query);
      return { status: 200, body: { data: result.data.map((k) => keyView(k, retention, now)), next: result.next } };
    },
  });

  defineOperation(app, {
    method: 'GET',
    path: '/keys/{kid}',
    operationId: 'getKey',
    summary: 'Read a signing key',
    tag,
    scope: 'read:keys',
    params: keyKidParamsSchema,
    etag: true,
    responses: { 200: { description: 'The signing key', schema: keyViewSchema }, 404: { description: 'No such key', schema: problemSchema } },
    async handler({ params }) {
      const key = (await store.listSigningKeys()).find((k) => k.kid === params.kid);
      if (!key) throw notFound(`signing key "${params.kid}"`);
      const view = keyView(key, retention, epochSeconds(clock));
      return { status: 200, headers: { etag: etagOf(view) }, body: view };
    },
  });

  defineOperation(app, {
    method: 'POST',
    path: '/keys/rotate',
    operationId: 'rotateKeys',
    summary: 'Rotate the signing keys now (as `latchkey keys rotate`): one new active key per algorithm in use',
    tag,
    scope: 'write:keys',
    responses: {
      200: { description: 'The new active keys, the access-token key first', schema: keyRotationSchema },
      409: { description: 'A secret-key rotation holds the key file: try again in a moment', schema: problemSchema },
    },
    async handler({ audit }) {
      // One rotation at a time: two at once would each retire the other's fresh keys.
      return withResourceLock(store, 'keys', async () => {
        let rotation;
        try {
          // Sealed with the key file as it is now, read under its lock (as `keys rotate` does).
          rotation = await rotateSigningKeysNow(config, store, () => openSecretBox(config, store), epochSeconds(clock));
        } catch (err) {
          if (err instanceof SecretKeyError)
            throw new Problem(409, 'secret-key-busy', 'The keys were not rotated: a secret-key rotation holds the key file. Try again in a moment.');
          throw err;
        }
        for (const key of rotation.keys) audit('key.rotated', { kid: key.kid, alg: key.alg });
        const now = epochSeconds(clock);
        const keys = accessKeyFirst(rotation.keys, rotation.previouslyActive, config.signingAlg).map((k) => keyView(k, retention, now));
        return { status: 200, body: { keys } };
      });
    },
  });
}
