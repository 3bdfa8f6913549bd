/** The connectors of the running server: their records checked against their type, secrets opened. */
import type { FastifyBaseLogger } from 'fastify';
import type { Services } from '../services.js';
import type { Interaction } from '../oauth/interaction.js';
import type { ConnectorRecord } from '../store/store.js';
import { typedConnector, type TypedConnector } from './connector_config.js';

export const connectorSecretContext = (id: string) => `connector:${id}`;

/** The connector's secret in the clear, or undefined when it has none. */
export function connectorSecret(services: Services, record: ConnectorRecord): string | undefined {
  return record.secret === undefined ? undefined : services.secretBox.open(connectorSecretContext(record.id), record.secret);
}

/** Connectors whose unsound settings were already logged (once per process, not per sign-in). */
const reportedUnsound = new Set<string>();

/** Every connector whose settings are sound, in their order; one that is not is skipped and logged. */
export async function loadConnectors(services: Services, log: FastifyBaseLogger): Promise<TypedConnector[]> {
  const sound: TypedConnector[] = [];
  for (const record of await services.store.listConnectors()) {
    const typed = typedConnector(record);
    if (typed) {
      sound.push(typed);
      continue;
    }
    const key = `${record.id}:${record.createdAt}`;
    if (!reportedUnsound.has(key)) {
      reportedUnsound.add(key);
      log.warn({ connectorId: record.id, type: record.type }, 'connector skipped: its stored settings are not valid for its type (remove and add it again)');
    }
  }
  return sound;
}

/** What a client asked of the sign-in (prompt=login, max_age) that an upstream must honour too. */
export interface FreshSignIn {
  promptLogin: boolean;
  maxAge: number | undefined;
}

export function freshSignInAsked(interaction: Interaction | undefined): FreshSignIn | undefined {
  if (!interaction) return undefined;
  const promptLogin = interaction.request.prompt.includes('login');
  return promptLogin || interaction.maxAge !== undefined ? { promptLogin, maxAge: interaction.maxAge } : undefined;
}

/**
 * An OpenID Provider takes prompt=login and max_age and says when the person signed in
 * (auth_time, checked on return); GitHub's web flow can do neither, so it is not offered when a
 * client asks for a fresh sign-in.
 */
export function canProveFreshSignIn(connector: TypedConnector): boolean {
  return connector.type === 'oidc';
}

/** The connectors people choose on the sign-in page (LDAP ones sign in through the password form). */
export async function buttonConnectors(
  services: Services,
  log: FastifyBaseLogger,
  fresh: FreshSignIn | undefined,
): Promise<Array<{ id: string; name: string }>> {
  return (await loadConnectors(services, log))
    .filter((c) => c.type !== 'ldap' && (fresh === undefined || canProveFreshSignIn(c)))
    .map((c) => ({ id: c.record.id, name: c.record.name }));
}
