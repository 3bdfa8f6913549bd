/**
 * /readyz follows what a request would get: a SQLite database that is full for real (the file may
 * not grow past max_page_count, so every write that needs a page fails with SQLITE_FULL and its
 * request gets 503) still answers reads, and readiness must not say 200 then. Once there is room
 * again it comes back by itself, without a request to clear it (a load balancer sends none to an
 * instance it took out).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { addClient, form, testApp, type TestApp } from '../helpers/app.js';
import { waitFor } from '../helpers/wait.js';

let folder: string;
let t: TestApp;
beforeEach(async () => {
  folder = mkdtempSync(join(tmpdir(), 'latchkey-full-'));
  t = await testApp({ LATCHKEY_RATE_LIMIT_DEVICE_AUTHORIZATION: 'off' }, { path: join(folder, 'latchkey.db') });
  await addClient(t.store, 'tv', { grantTypes: ['device_code'] });
});
afterEach(async () => {
  await t.close();
  rmSync(folder, { recursive: true, force: true });
});

const deviceAuthorization = () => t.app.inject({ method: 'POST', url: '/oauth/device/code', ...form({ client_id: 'tv', scope: 'openid' }) });
const readiness = () => t.app.inject({ method: 'GET', url: '/readyz' });

describe('GET /readyz on a full SQLite database', () => {
  it('answers 503 while writes get 503 and reads still answer; 200 again by itself once the database has room', async () => {
    expect((await readiness()).statusCode).toBe(200);
    // The database may grow by a few pages more, then it is full: device authorizations fill it.
    const pages = Number(t.store.db.pragma('page_count', { simple: true }));
    t.store.db.pragma(`max_page_count = ${pages + 8}`);
    let refused: number | undefined;
    for (let i = 0; i < 2_000 && refused === undefined; i++) {
      const answer = await deviceAuthorization();
      if (answer.statusCode !== 200) refused = answer.statusCode;
    }
    expect(refused).toBe(503);
    expect((await deviceAuthorization()).statusCode).toBe(503);
    // Reads answer (the old readiness check asked only that) …
    expect((await t.app.inject({ method: 'GET', url: '/.well-known/jwks.json' })).statusCode).toBe(200);
    // … but a request that writes would get 503, and so does readiness.
    const full = await readiness();
    expect({ status: full.statusCode, body: full.json(), retryAfter: full.headers['retry-after'] }).toEqual({
      status: 503,
      body: { status: 'unavailable', reason: 'database' },
      retryAfter: '2',
    });
    expect((await readiness()).statusCode).toBe(503);

    // Room again (an operator freed space): readiness probes with a write of its own and recovers
    // without any request having written in between.
    t.store.db.pragma('max_page_count = 1073741823');
    await waitFor(async () => (await readiness()).statusCode === 200, { timeout: 5_000, what: 'readiness once the database has room' });
    expect((await deviceAuthorization()).statusCode).toBe(200);
    // The probe left nothing behind.
    expect(t.store.db.prepare('SELECT count(*) AS n FROM readiness_probe').get()).toEqual({ n: 0 });
  });
});
