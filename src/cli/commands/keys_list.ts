import { epochSeconds, systemClock } from '../../clock.js';
import { retiredKeyRetention } from '../../config.js';
import { defineCommand } from '../command.js';
import { isoTime, json, table } from '../output.js';

export const keysListCommand = defineCommand({
  usage: 'latchkey keys list [--json]',
  positionals: { min: 0, max: 0 },
  options: { json: { type: 'boolean' } },
  async run(context) {
    const retention = retiredKeyRetention(context.config());
    const now = epochSeconds(systemClock);
    const store = await context.store();
    const keys = (await store.listSigningKeys()).sort((a, b) => b.createdAt - a.createdAt);
    const rows = keys.map((k) => {
      const publishedUntil = k.retiredAt === undefined ? undefined : k.retiredAt + retention;
      const status = publishedUntil === undefined ? 'active' : publishedUntil > now ? 'retired' : 'expired';
      return { kid: k.kid, alg: k.alg, status, created_at: isoTime(k.createdAt), retired_at: k.retiredAt, published_until: publishedUntil };
    });
    if (context.values.json) {
      context.stdout.write(
        json(
          rows.map((r) => ({
            ...r,
            retired_at: r.retired_at === undefined ? null : isoTime(r.retired_at),
            published_until: r.published_until === undefined ? null : isoTime(r.published_until),
          })),
        ),
      );
    } else {
      context.stdout.write(
        table(
          rows.map((r) => [r.kid, r.alg, r.status, r.created_at, r.published_until === undefined ? '' : isoTime(r.published_until)]),
          ['KID', 'ALG', 'STATUS', 'CREATED', 'IN JWKS UNTIL'],
        ),
      );
    }
    return 0;
  },
});
