/**
 * The load generator, run as its own process (on the other core): reads a scenario from the file
 * named by argv[2], drives it with autocannon, and prints one JSON line with the figures and every
 * answer it got, by status and OAuth error code.
 */
import autocannon from 'autocannon';
import { readFileSync } from 'node:fs';

export interface LoadSpec {
  url: string;
  method: 'GET' | 'POST';
  headers: Record<string, string>;
  /** Request bodies, used in turn (single-use secrets are never sent twice unless they run out). */
  bodies?: string[];
  connections: number;
  durationSeconds: number;
}

export interface LoadResult {
  requests: number;
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  non2xx: number;
  socketErrors: number;
  timeouts: number;
  statuses: Record<string, number>;
  /** `error` of 4xx/5xx JSON bodies, counted. */
  errors: Record<string, number>;
}

async function main(): Promise<void> {
  const spec = JSON.parse(readFileSync(process.argv[2] ?? '', 'utf8')) as LoadSpec;
  const statuses: Record<string, number> = {};
  const errors: Record<string, number> = {};
  const bodies = spec.bodies;
  let next = 0;
  const instance = autocannon({
    url: spec.url,
    connections: spec.connections,
    duration: spec.durationSeconds,
    timeout: 10,
    requests: [
      {
        method: spec.method,
        headers: spec.headers,
        ...(bodies
          ? {
              setupRequest: (request: autocannon.Request) => {
                request.body = bodies[next++ % bodies.length];
                return request;
              },
            }
          : {}),
        onResponse: (status: number, body: string) => {
          statuses[status] = (statuses[status] ?? 0) + 1;
          if (status >= 400) {
            let code = 'unparsed';
            try {
              const error = (JSON.parse(body) as { error?: unknown }).error;
              code = typeof error === 'string' ? error : 'none';
            } catch {
              // not JSON: counted as unparsed
            }
            errors[code] = (errors[code] ?? 0) + 1;
          }
        },
      },
    ],
  });
  const result = await instance;
  const total = Object.values(statuses).reduce((a, b) => a + b, 0);
  const output: LoadResult = {
    requests: total,
    // Over the time the load really ran (autocannon's own clock), not the time asked for.
    requestsPerSecond: total / Math.max(result.duration, spec.durationSeconds),
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    maxMs: result.latency.max,
    non2xx: result.non2xx,
    socketErrors: result.errors,
    timeouts: result.timeouts,
    statuses,
    errors,
  };
  process.stdout.write(`${JSON.stringify(output)}\n`);
}

await main();
