/**
 * A grant type handler. The token route does every shared step first (no-store, client
 * authentication, "may this client use this grant"), then calls handle() with the grant's own
 * parameters parsed by its own schema. A grant only fills in what is unique to it.
 */
import type { z } from 'zod';
import type { FastifyBaseLogger } from 'fastify';
import type { TokenResponse } from '../oauth/token_response.js';
import type { Services } from '../services.js';
import type { ClientRecord, GrantTypeName } from '../store/store.js';

export interface GrantContext {
  services: Services;
  client: ClientRecord;
  /** The caller's network address, for rate limits. */
  ip: string;
  /** The thumbprint of the key a valid DPoP proof on this request was signed with (RFC 9449), if any. */
  dpopJkt: string | undefined;
  log: FastifyBaseLogger;
}

export interface GrantHandler<Params = unknown> {
  /** The `grant_type` value on the wire. */
  grantType: string;
  /** The grant type a client must be registered for. */
  clientGrantType: GrantTypeName;
  params: z.ZodType<Params>;
  handle(context: GrantContext, params: Params): Promise<TokenResponse>;
}
