/** The shared services every route and grant works with; decorated on the Fastify root once. */
import type { Clock } from './clock.js';
import type { Config } from './config.js';
import type { Signer } from './crypto/signer.js';
import type { FailureLimiter, WindowLimiter } from './oauth/rate_limit.js';
import type { Metrics } from './http/metrics.js';
import type { Store } from './store/store.js';

export interface RateLimiters {
  /** Wrong user codes entered at /activate, per source address (RFC 8628 §5.1). */
  userCodeEntry: WindowLimiter;
  /** Unknown device codes presented at the token endpoint, per source address (RFC 8628 §5.2). */
  unknownDeviceCode: WindowLimiter;
  /** Device authorization requests, per client and source address. */
  deviceAuthorization: WindowLimiter;
  /** Failed sign-ins per account (lower-cased username) and per source address. */
  signInAccount: FailureLimiter;
  signInAddress: FailureLimiter;
}

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
  metrics: Metrics;
}
