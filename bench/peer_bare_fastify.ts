/**
 * The framework's limit: a bare Fastify with @fastify/formbody — the stack Latchkey is built on —
 * answering the bench's device authorization and pending poll with a JSON body of the same shape,
 * and doing nothing else (no store, no secrets, no logging). What Latchkey reaches of this rate is
 * what its own work costs over parsing the form and writing JSON.
 *
 * Usage: node dist-bench/bench/peer_bare_fastify.js <port>
 */
import Fastify from 'fastify';
import formbody from '@fastify/formbody';

const port = Number(process.argv[2]);
const app = Fastify({ logger: false });
await app.register(formbody);

app.post('/oauth/device/code', async (request, reply) => {
  const form = request.body as Record<string, string | undefined>;
  reply.header('cache-control', 'no-store');
  return {
    device_code: 'lk_dc_0000000000000000000000000000000000000000000',
    user_code: 'BCDF-GHJK',
    verification_uri: `http://127.0.0.1:${port}/activate`,
    verification_uri_complete: `http://127.0.0.1:${port}/activate?user_code=BCDF-GHJK`,
    expires_in: 900,
    interval: 5,
    // The form was read, as a real endpoint must.
    ...(form.client_id === undefined ? { error: 'invalid_request' } : {}),
  };
});

app.post('/oauth/token', async (request, reply) => {
  const form = request.body as Record<string, string | undefined>;
  reply.code(400).header('cache-control', 'no-store');
  return {
    error: form.device_code === undefined ? 'invalid_request' : 'authorization_pending',
    error_description: 'The user has not yet approved the request.',
  };
});

app.get('/readyz', async () => ({ status: 'ok' }));

await app.listen({ port, host: '127.0.0.1' });
process.on('SIGTERM', () => void app.close().then(() => process.exit(0)));
