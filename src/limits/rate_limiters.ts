/**
 * The server's rate limiters, as one set: what each counts, and how they are built — shared
 * through the store when several instances serve it, else in this process's memory, where each
 * cluster worker gets its share of every limit.
 */
import type { Clock } from '../clock.js';
import type { Config, RateLimitSetting } from '../config.js';
import type { Store } from '../store/store.js';
import { BackoffLimiter, RateLimiter, type FailureLimiter, type WindowLimiter } from './rate_limit.js';
import { SharedBackoffLimiter, SharedWindowLimiter } from './shared_rate_limit.js';

export interface RateLimiters {
  /** Wrong user codes entered at /activate, per source address (RFC 8628 §5.1). */
  userCodeEntry: WindowLimiter;
  /** Unknown device codes presented at the token endpoint, per source address (RFC 8628 §5.2). */
  unknownDeviceCode: WindowLimiter;
  /** Device authorization requests, per client and source address. */
  deviceAuthorization: WindowLimiter;
  /**
   * Failed sign-ins per account (lower-cased username) and address, or per account and known
   * browser (device cookie); and per source address (see signin_throttle.ts).
   */
  signInAccount: FailureLimiter;
  signInAddress: FailureLimiter;
  /** Failed sign-ins on one account from unknown browsers, all addresses together: past it, attempts are slowed. */
  signInAccountTotal: WindowLimiter;
  /** Failed second factors per person (user id), all addresses together; browsers the person signed in on are exempt. */
  secondFactor: FailureLimiter;
  /** "Forgot your password?" requests per source address, whatever address was typed. */
  passwordResetAddress: WindowLimiter;
  /** Management API calls per caller (`person:<user id>` or `client:<client_id>`), from any address. */
  managementCaller: WindowLimiter;
}

/**
 * The limiters count in process memory. With LATCHKEY_WORKERS=N the primary hands connections to
 * the N workers in turn, so each worker allows 1/N of every limit, rounded down: together they
 * never allow more than the configured budget, and one connection alone gets less. A limit below
 * N cannot be split (each worker needs at least 1); the server warns about it at start.
 */
export function perWorker(setting: RateLimitSetting | undefined, workers: number): RateLimitSetting | undefined {
  if (setting === undefined || workers <= 1) return setting;
  return { ...setting, limit: Math.max(1, Math.floor(setting.limit / workers)) };
}

/** The configured limits that N workers cannot share without allowing more than configured. */
export function unsplittableLimits(config: Config): string[] {
  return Object.entries(config.rateLimits)
    .filter(([, setting]) => setting !== undefined && setting.limit < config.workers)
    .map(([name]) => name);
}

/**
 * The server's limiters: in a store several instances share, counted there (one count for the
 * whole deployment); otherwise in this process's memory, each cluster worker with its share.
 */
export function defaultRateLimits(config: Config, clock: Clock, store?: Store): RateLimiters {
  const limits = config.rateLimits;
  if (store?.sharedAcrossInstances) {
    return {
      userCodeEntry: new SharedWindowLimiter(store, 'user_code', limits.userCode, clock),
      unknownDeviceCode: new SharedWindowLimiter(store, 'unknown_device_code', limits.unknownDeviceCode, clock),
      deviceAuthorization: new SharedWindowLimiter(store, 'device_authorization', limits.deviceAuthorization, clock),
      signInAccount: new SharedBackoffLimiter(store, 'signin_account', limits.signInAccount, clock),
      signInAddress: new SharedBackoffLimiter(store, 'signin_address', limits.signInAddress, clock),
      signInAccountTotal: new SharedWindowLimiter(store, 'signin_account_total', limits.signInAccountTotal, clock),
      secondFactor: new SharedBackoffLimiter(store, 'second_factor', limits.secondFactor, clock),
      passwordResetAddress: new SharedWindowLimiter(store, 'password_reset_address', limits.passwordReset, clock),
      managementCaller: new SharedWindowLimiter(store, 'management_caller', limits.management, clock),
    };
  }
  const share = (setting: RateLimitSetting | undefined) => perWorker(setting, config.workers);
  return {
    userCodeEntry: new RateLimiter(share(limits.userCode), clock),
    unknownDeviceCode: new RateLimiter(share(limits.unknownDeviceCode), clock),
    deviceAuthorization: new RateLimiter(share(limits.deviceAuthorization), clock),
    signInAccount: new BackoffLimiter(share(limits.signInAccount), clock),
    signInAddress: new BackoffLimiter(share(limits.signInAddress), clock),
    signInAccountTotal: new RateLimiter(share(limits.signInAccountTotal), clock),
    secondFactor: new BackoffLimiter(share(limits.secondFactor), clock),
    passwordResetAddress: new RateLimiter(share(limits.passwordReset), clock),
    managementCaller: new RateLimiter(share(limits.management), clock),
  };
}
