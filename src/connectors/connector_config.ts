/**
 * The settings of each kind of connector, validated with zod when a connector is added and again
 * when it is loaded (a database row is input too). Secrets are not here: they are sealed apart
 * (ConnectorRecord.secret).
 */
import { z } from 'zod';
import type { ConnectorRecord, ConnectorType } from '../store/store.js';

const httpUrl = z
  .string()
  .max(2048)
  .refine((v) => {
    try {
      const url = new URL(v);
      return (url.protocol === 'https:' || url.protocol === 'http:') && url.hash === '' && url.username === '' && url.password === '';
    } catch {
      return false;
    }
  }, 'must be an http(s) URL without a fragment or credentials');

/** An LDAP distinguished name: printable, no control characters. */
const dn = z
  .string()
  .min(1)
  .max(1024)
  .refine((v) => !/[\u0000-\u001f\u007f]/.test(v), 'must not contain control characters');

export const oidcConfigSchema = z.object({
  issuer: httpUrl,
  clientId: z.string().min(1).max(256),
  scope: z
    .string()
    .min(1)
    .max(1024)
    .default('openid email profile')
    .refine((v) => v.split(' ').includes('openid'), 'must include openid (the sign-in is OpenID Connect)'),
  groupsClaim: z.string().min(1).max(128).optional(),
  trustEmail: z.boolean().default(false),
});

export const githubConfigSchema = z.object({
  clientId: z.string().min(1).max(256),
  orgs: z.array(z.string().regex(/^[A-Za-z0-9-]{1,39}$/, 'is not a GitHub organization name')).default([]),
  apiUrl: httpUrl.default('https://api.github.com'),
});

export const ldapConfigSchema = z.object({
  url: z
    .string()
    .max(2048)
    .refine((v) => /^ldaps?:\/\/[^/\s@]+\/?$/.test(v), 'must be ldap://HOST:PORT or ldaps://HOST:PORT (credentials go in --bind-dn and standard input)'),
  bindDn: dn,
  userBase: dn,
  userFilter: z
    .string()
    .max(1024)
    .default('(uid={username})')
    .refine((v) => v.includes('{username}') && v.startsWith('(') && v.endsWith(')'), 'must be an LDAP filter in parentheses containing {username}'),
  groupBase: dn.optional(),
  startTls: z.boolean().default(false),
});

export type OidcConfig = z.infer<typeof oidcConfigSchema>;
export type GithubConfig = z.infer<typeof githubConfigSchema>;
export type LdapConfig = z.infer<typeof ldapConfigSchema>;

export type TypedConnector =
  | { type: 'oidc'; record: ConnectorRecord; config: OidcConfig }
  | { type: 'github'; record: ConnectorRecord; config: GithubConfig }
  | { type: 'ldap'; record: ConnectorRecord; config: LdapConfig };

export const connectorTypes: readonly ConnectorType[] = ['oidc', 'github', 'ldap'];

/** Connector ids appear in URLs (`/connectors/<id>/callback`) and forms. */
export const connectorIdPattern = /^[a-z0-9][a-z0-9_-]{0,62}$/;

/** Ids a connector cannot take: `local` is the source of the accounts administrators make. */
export const reservedConnectorIds: readonly string[] = ['local'];

/** The record's settings checked against its type; undefined for a row that does not fit. */
export function typedConnector(record: ConnectorRecord): TypedConnector | undefined {
  switch (record.type) {
    case 'oidc': {
      const parsed = oidcConfigSchema.safeParse(record.config);
      return parsed.success ? { type: 'oidc', record, config: parsed.data } : undefined;
    }
    case 'github': {
      const parsed = githubConfigSchema.safeParse(record.config);
      return parsed.success ? { type: 'github', record, config: parsed.data } : undefined;
    }
    case 'ldap': {
      const parsed = ldapConfigSchema.safeParse(record.config);
      return parsed.success ? { type: 'ldap', record, config: parsed.data } : undefined;
    }
  }
}

/** The address to register upstream: `{issuer}/connectors/<id>/callback`. */
export function connectorRedirectUri(issuer: string, id: string): string {
  return `${issuer}/connectors/${id}/callback`;
}
