/** The connectors of the running server: their records checked against their type, secrets opened. */
import type { Services } from '../services.js';
import type { ConnectorRecord } from '../store/store.js';
import { typedConnector, type TypedConnector } from './connector_config.js';
import { githubWebBase } from './github_upstream.js';

export const connectorSecretContext = (id: string) => `connector:${id}`;

/** The connector's secret in the clear, or undefined when it has none. */
export function connectorSecret(services: Services, record: ConnectorRecord): string | undefined {
  return record.secret === undefined ? undefined : services.secretBox.open(connectorSecretContext(record.id), record.secret);
}

/** Every connector whose settings are sound, in their order; one that is not is skipped (and logged by the caller). */
export async function loadConnectors(services: Services): Promise<TypedConnector[]> {
  return (await services.store.listConnectors()).map(typedConnector).filter((c): c is TypedConnector => c !== undefined);
}

/** The connectors people choose on the sign-in page (LDAP ones sign in through the password form). */
export async function buttonConnectors(services: Services): Promise<Array<{ id: string; name: string; origin: string | undefined }>> {
  return (await loadConnectors(services)).filter((c) => c.type !== 'ldap').map((c) => ({ id: c.record.id, name: c.record.name, origin: connectorOrigin(c) }));
}

/**
 * Where a connector's button sends the browser: the origin its sign-in page is known to be on
 * (an OIDC issuer's, GitHub's). The sign-in page lets its forms redirect there (CSP form-action
 * applies to the redirects after a form post).
 */
export function connectorOrigin(connector: TypedConnector): string | undefined {
  try {
    if (connector.type === 'oidc') return new URL(connector.config.issuer).origin;
    if (connector.type === 'github') return new URL(githubWebBase(connector.config.apiUrl)).origin;
  } catch {
    return undefined;
  }
  return undefined;
}
