/**
 * Where a client's sealed secret lives, bound into its encryption: a client allowed
 * client_secret_jwt (RFC 7523 §2.2) keeps its secret sealed, since the assertion's HMAC needs the
 * secret itself; the context makes a sealed secret open only as that client's.
 */
export function clientSecretContext(clientId: string): string {
  return `client_secret:${clientId}`;
}
