/**
 * The issuer the server runs with, as the admin commands learn it. A command runs in another shell,
 * often without the server's environment: its own LATCHKEY_ISSUER may be unset (so the default,
 * http://localhost:$PORT) or another. The server records its issuer once it listens; an address a
 * command prints — a connector's redirect URI, a one-time link, the registration endpoint — is on
 * LATCHKEY_ISSUER when it is set (the operator said so), else on the recorded one, and a difference
 * between the two is said, since a redirect URI registered upstream on the wrong host fails every sign-in.
 */
import type { Clock } from './clock.js';
import { epochSeconds } from './clock.js';
import type { Config } from './config.js';
import type { Store } from './store/store.js';

export interface ServerIssuer {
  /** The issuer to print addresses on. */
  issuer: string;
  /** A sentence for the operator when the choice may be wrong (stderr), else undefined. */
  note: string | undefined;
}

/** Called by a starting server once it listens. */
export async function recordServerIssuer(store: Store, config: Pick<Config, 'issuer'>, clock: Clock): Promise<void> {
  await store.recordIssuer(config.issuer, epochSeconds(clock));
}

export async function serverIssuer(store: Store, config: Pick<Config, 'issuer' | 'issuerConfigured'>): Promise<ServerIssuer> {
  const recorded = await store.recordedIssuer();
  if (config.issuerConfigured) {
    return {
      issuer: config.issuer,
      note:
        recorded !== undefined && recorded.issuer !== config.issuer
          ? `LATCHKEY_ISSUER is ${config.issuer}, but the server last started with issuer ${recorded.issuer}: the address below is on LATCHKEY_ISSUER`
          : undefined,
    };
  }
  if (recorded !== undefined) return { issuer: recorded.issuer, note: undefined };
  return {
    issuer: config.issuer,
    note: `the server has not started on this database yet and LATCHKEY_ISSUER is unset: the address below assumes issuer ${config.issuer}`,
  };
}
