/** The shared services every route and grant works with; decorated on the Fastify root once. */
import type { Clock } from './clock.js';
import type { Config } from './config.js';
import type { Signer } from './crypto/signer.js';
import type { Metrics } from './http/metrics.js';
import type { Store } from './store/store.js';
import type { SecretBox } from './crypto/secret_box.js';
import type { RateLimiters } from './limits/rate_limiters.js';
import type { SlowLane } from './limits/signin_throttle.js';
import type { Mailer } from './mail/mailer.js';
import type { AuditTrail } from './audit/audit_trail.js';
import type { DevicePolls } from './oauth/device_polls.js';
import type { ClientOutbound } from './oauth/client_outbound.js';

export interface Services {
  config: Config;
  store: Store;
  signer: Signer;
  clock: Clock;
  rateLimits: RateLimiters;
  /** Key of the anti-CSRF HMAC, shared by every process on the store. */
  csrfSecret: string;
  /** Key of the user-code HMAC (see userCodeDigest). */
  userCodeKey: string;
  /** Key of the HMAC that seals pending authorization requests. */
  interactionKey: string;
  /** Key of the HMAC that signs device cookies. */
  deviceCookieKey: string;
  /** Key of the digests of recovery codes. */
  recoveryCodeKey: string;
  /** Key of the server's DPoP nonces. */
  dpopNonceKey: string;
  /** Seals and opens secrets stored in the database (connector secrets, TOTP secrets). */
  secretBox: SecretBox;
  metrics: Metrics;
  /** Waits (the sign-in slow-down); tests pass one that records instead of sleeping. */
  sleep(ms: number): Promise<void>;
  /** Sign-in attempts on an account under a distributed attack, one at a time. */
  signInSlowLane: SlowLane;
  /** Sends password-reset and verification links; undefined when LATCHKEY_SMTP_URL is unset. */
  mailer: Mailer | undefined;
  /** Stores audit events (batched) for the admin console's audit log. */
  auditTrail: AuditTrail;
  /** Where the polls of device codes are recorded (slow_down): in memory or in the store. */
  devicePolls: DevicePolls;
  /** How requests to addresses clients registered are sent (back-channel logout, jwks_uri): guarded for self-registered clients. */
  outbound: ClientOutbound;
}
