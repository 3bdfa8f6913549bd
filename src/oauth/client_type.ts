/**
 * Client types (RFC 6749 §2.1): a client is confidential when it can authenticate — with a secret
 * or with its keys (RFC 7523) — and public otherwise. Whatever registered it (the CLI, the console,
 * dynamic registration), the protocol decides by this one rule.
 */
import type { ClientRecord } from '../store/store.js';

export function isConfidential(client: Pick<ClientRecord, 'secretHash' | 'jwksUri' | 'jwks'>): boolean {
  return client.secretHash !== undefined || client.jwksUri !== undefined || client.jwks !== undefined;
}
