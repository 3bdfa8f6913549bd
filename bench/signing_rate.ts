/**
 * The raw signing rate of one algorithm: how many access-token JWTs one core signs per second with
 * the server's own signing code, with no HTTP or database around it. Run pinned to the server's
 * core; prints one JSON line.
 */
import { generateSigningKey, privateKeyFromPem, signingAlgorithms, type SigningAlgorithm } from '../src/crypto/keys.js';
import { signJwsSync } from '../src/crypto/jwt_sign.js';

const alg = process.argv[2] as SigningAlgorithm;
if (!signingAlgorithms.includes(alg)) throw new Error(`unknown algorithm ${alg}`);
const seconds = Number(process.argv[3] ?? 3);
const generated = generateSigningKey(alg);
const key = { alg, kid: generated.kid, privateKey: privateKeyFromPem(generated.privateKeyPem) };
const now = Math.floor(Date.now() / 1000);
const payload = {
  iss: 'http://127.0.0.1:3000',
  sub: 'bench-user',
  aud: 'http://127.0.0.1:3000/userinfo',
  client_id: 'bench-device',
  scope: 'openid profile offline_access',
  auth_time: now,
  iat: now,
  exp: now + 86400,
  jti: 'Zm9vYmFyYmF6cXV4cXV1eA',
  lk_family: 'cXV1eHF1dXhmb29iYXJiYQ',
};

function signFor(ms: number): number {
  const end = performance.now() + ms;
  let count = 0;
  while (performance.now() < end) {
    for (let i = 0; i < 20; i++) signJwsSync(key, payload, 'at+jwt');
    count += 20;
  }
  return count;
}

signFor(500); // warm-up
const count = signFor(seconds * 1000);
process.stdout.write(`${JSON.stringify({ alg, signaturesPerSecond: count / seconds, microsecondsEach: (seconds * 1e6) / count })}\n`);
