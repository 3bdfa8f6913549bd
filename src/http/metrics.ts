/**
 * Prometheus metrics (prom-client) on a registry of this app's own: request count and latency by
 * route and status, tokens issued by grant type, device authorizations by outcome, sign-in
 * failures, rate-limit hits, plus the process's own metrics (CPU, memory, event-loop lag).
 */
import { collectDefaultMetrics, Counter, Histogram, Registry } from 'prom-client';

export interface Metrics {
  registry: Registry;
  /** The exposition text: this process's registry, or with LATCHKEY_WORKERS the whole cluster's. */
  text(): Promise<string>;
  httpRequests: Counter<'method' | 'route' | 'status'>;
  httpDuration: Histogram<'method' | 'route' | 'status'>;
  tokensIssued: Counter<'grant_type'>;
  deviceAuthorizations: Counter<'outcome'>;
  signInFailures: Counter;
  rateLimitHits: Counter<'route'>;
  /** Sign-ins through an upstream identity provider, by connector and outcome (success, or why not). */
  upstreamSignIns: Counter<'connector' | 'outcome'>;
  secondFactorEvents: Counter<'factor' | 'event'>;
  /** Counts one answered request and its latency (the two HTTP metrics above). */
  observeRequest(method: string, route: string, status: number, seconds: number): void;
}

/**
 * The series of each (method, route, status) seen so far, bound once: prom-client otherwise hashes
 * the label object on every call, which was a visible part of a short request. Routes are the
 * registered patterns (or "unmatched"), so the combinations are few; the bound is a safety net.
 */
function requestObserver(requests: Counter<'method' | 'route' | 'status'>, duration: Histogram<'method' | 'route' | 'status'>): Metrics['observeRequest'] {
  const series = new Map<string, { count: { inc(): void }; latency: { observe(value: number): void } }>();
  return (method, route, status, seconds) => {
    const key = `${method} ${status} ${route}`;
    let bound = series.get(key);
    if (bound === undefined) {
      const labels = { method, route, status: String(status) };
      bound = { count: requests.labels(labels), latency: duration.labels(labels) };
      if (series.size >= 1000) series.clear();
      series.set(key, bound);
    }
    bound.count.inc();
    bound.latency.observe(seconds);
  };
}

export function createMetrics(text?: () => Promise<string>): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'latchkey_' });
  const registers = [registry];
  const httpRequests = new Counter({
    name: 'latchkey_http_requests_total',
    help: 'HTTP requests by route and status',
    labelNames: ['method', 'route', 'status'] as const,
    registers,
  });
  const httpDuration = new Histogram({
    name: 'latchkey_http_request_duration_seconds',
    help: 'HTTP request latency by route and status',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers,
  });
  return {
    registry,
    text: text ?? (() => registry.metrics()),
    httpRequests,
    httpDuration,
    observeRequest: requestObserver(httpRequests, httpDuration),
    tokensIssued: new Counter({ name: 'latchkey_tokens_issued_total', help: 'Token responses by grant type', labelNames: ['grant_type'], registers }),
    deviceAuthorizations: new Counter({
      name: 'latchkey_device_authorizations_total',
      help: 'Device authorizations by outcome (requested, approved, denied, expired)',
      labelNames: ['outcome'],
      registers,
    }),
    signInFailures: new Counter({ name: 'latchkey_signin_failures_total', help: 'Failed sign-ins', registers }),
    rateLimitHits: new Counter({ name: 'latchkey_rate_limit_hits_total', help: 'Requests refused with 429 by route', labelNames: ['route'], registers }),
    upstreamSignIns: new Counter({
      name: 'latchkey_upstream_signins_total',
      help: 'Sign-ins through upstream identity providers by connector and outcome',
      labelNames: ['connector', 'outcome'],
      registers,
    }),
    secondFactorEvents: new Counter({
      name: 'latchkey_second_factor_events_total',
      help: 'Second factors by factor (totp, passkey, recovery_code) and event (enrolled, removed, success, failure)',
      labelNames: ['factor', 'event'],
      registers,
    }),
  };
}
