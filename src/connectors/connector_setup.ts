/**
 * Adding a connector, as `latchkey connectors add` and `POST /api/v1/connectors` do it: the name it
 * gets when none is given, what to warn the operator about, and the record to store, its secret
 * sealed with the server's secret key (never stored in the clear).
 */
import type { SecretBox } from '../crypto/secret_box.js';
import type { ConnectorRecord } from '../store/store.js';
import type { CheckableConnector } from './connector_check.js';
import { connectorSecretContext } from './runtime.js';

/** The name a connector gets when none is given: where it is (or GitHub). */
export function defaultConnectorName(connector: CheckableConnector): string {
  switch (connector.type) {
    case 'oidc':
      return new URL(connector.config.issuer).host;
    case 'github':
      return 'GitHub';
    case 'ldap':
      return new URL(connector.config.url.replace(/^ldaps?:/, 'http:')).host;
  }
}

/**
 * Issuers where anyone can have an account: without restricting who may sign in at the provider
 * (or disabling the users it creates), every account holder there could sign in here.
 */
function openToEveryone(issuer: string): boolean {
  const url = new URL(issuer);
  if (url.host === 'accounts.google.com') return true;
  return url.host === 'login.microsoftonline.com' && /^\/(common|organizations|consumers)(\/|$)/.test(url.pathname);
}

/** What the operator should hear about these settings (said once the connector is added). */
export function connectorWarnings(connector: CheckableConnector): string[] {
  const warnings: string[] = [];
  switch (connector.type) {
    case 'oidc':
      if (connector.config.issuer.startsWith('http:')) warnings.push('the issuer is plain http: use https outside a test setup');
      if (openToEveryone(connector.config.issuer))
        warnings.push('anyone with an account at this issuer can sign in: restrict the application to your organization at the provider');
      break;
    case 'github':
      if (connector.config.orgs.length === 0) warnings.push('without --org, anyone with a GitHub account can sign in');
      break;
    case 'ldap':
      if (connector.config.url.startsWith('ldap:') && !connector.config.startTls)
        warnings.push('passwords would cross the network in the clear: use ldaps:// or --start-tls');
      break;
  }
  return warnings;
}

/** The record to store for a new connector (createConnector), its secret sealed. */
export function newConnectorRecord(
  box: SecretBox,
  connector: CheckableConnector & { id: string; name: string },
  now: number,
): Omit<ConnectorRecord, 'position' | 'managedBy'> & { managedBy: undefined } {
  return {
    id: connector.id,
    type: connector.type,
    name: connector.name,
    config: connector.config,
    secret: connector.secret === undefined ? undefined : box.seal(connectorSecretContext(connector.id), connector.secret),
    createdAt: now,
    managedBy: undefined,
  };
}
