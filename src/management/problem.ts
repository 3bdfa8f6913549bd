/**
 * RFC 9457 problem details: every refusal of the management API is an application/problem+json
 * body with `type`, `title`, `status` and `detail`, and for invalid input `errors`, the field
 * path and message of each issue (RFC 9457 §3.2 allows such extension members).
 */
import type { FastifyError } from 'fastify';
import { ZodError, z } from 'zod';
import { ManagedObjectError } from '../directory/managed.js';
import { AdminInputError } from '../directory/validation.js';
import { OAuthError } from '../errors.js';
import { isStoreUnavailable } from '../store/unavailable.js';

export const problemContentType = 'application/problem+json';

export const problemSchema = z.object({
  type: z.string(),
  title: z.string(),
  status: z.number().int(),
  detail: z.string(),
  errors: z.array(z.object({ path: z.string(), message: z.string() })).optional(),
});
export type ProblemBody = z.infer<typeof problemSchema>;

/** The `type` URIs are relative references (RFC 9457 §3.1.1) to the API's documentation page. */
const typeBase = '/docs/management-api#';

const titles: Record<number, string> = {
  400: 'Invalid request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not found',
  409: 'Conflict',
  412: 'Precondition failed',
  413: 'Request too large',
  414: 'URI too long',
  422: 'Unprocessable content',
  415: 'Unsupported media type',
  428: 'Precondition required',
  429: 'Too many requests',
  500: 'Server error',
  503: 'Service unavailable',
};

export class Problem extends Error {
  constructor(
    readonly status: number,
    readonly kind: string,
    readonly detail: string,
    readonly errors?: { path: string; message: string }[],
    readonly headers: Record<string, string> = {},
  ) {
    super(detail);
    this.name = 'Problem';
  }

  body(): ProblemBody {
    return {
      type: `${typeBase}${this.kind}`,
      title: titles[this.status] ?? 'Error',
      status: this.status,
      detail: this.detail,
      ...(this.errors === undefined ? {} : { errors: this.errors }),
    };
  }
}

export function notFound(what: string): Problem {
  return new Problem(404, 'not-found', `There is no ${what}.`);
}

/** A zod path as a JSON Pointer (RFC 6901), e.g. /redirect_uris/0. */
function pointer(path: readonly PropertyKey[]): string {
  return path.map((part) => `/${String(part).replaceAll('~', '~0').replaceAll('/', '~1')}`).join('');
}

/** Where the input came from, as the problem's detail names it. */
export type InputPart = 'body' | 'query' | 'path';

const partDetail: Record<InputPart, string> = {
  body: 'The request body is not valid: see errors.',
  query: 'The query is not valid: see errors.',
  path: 'The path is not valid: see errors.',
};

export function invalidInput(error: ZodError, part: InputPart = 'body'): Problem {
  // An unknown field is named by its own pointer (/bogus), not by the object that holds it.
  const errors = error.issues.flatMap((issue) =>
    issue.code === 'unrecognized_keys'
      ? issue.keys.map((key) => ({ path: pointer([...issue.path, key]), message: `"${key}" is not a field of this object` }))
      : [{ path: pointer(issue.path), message: issue.message }],
  );
  return new Problem(400, 'invalid-input', partDetail[part], errors);
}

/** Anything thrown by a route becomes a problem; a fault of ours is a 500 without its cause. */
export function toProblem(error: unknown): Problem {
  if (error instanceof Problem) return error;
  if (error instanceof ZodError) return invalidInput(error);
  // A managed object names its file (directory/managed.ts): 409, the state of the resource forbids it.
  if (error instanceof ManagedObjectError) return new Problem(409, 'managed', error.message);
  if (error instanceof AdminInputError) return new Problem(400, 'invalid-input', error.message);
  if (error instanceof OAuthError) return new Problem(error.status, error.code.replaceAll('_', '-'), error.description, undefined, error.headers);
  if (isStoreUnavailable(error))
    return new Problem(503, 'unavailable', 'The service is briefly unavailable. Try again in a moment.', undefined, { 'retry-after': '2' });
  const status = (error as Partial<FastifyError>).statusCode;
  if (typeof status === 'number' && status >= 400 && status < 500) {
    const code = (error as Partial<FastifyError>).code;
    if (code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') return new Problem(415, 'unsupported-media-type', 'The request body must be application/json.');
    if (code === 'FST_ERR_CTP_BODY_TOO_LARGE') return new Problem(413, 'too-large', 'The request body is too large.');
    return new Problem(400, 'malformed', 'The request is malformed.');
  }
  return new Problem(500, 'server-error', 'The server could not handle the request.');
}
