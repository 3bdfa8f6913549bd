/**
 * Applying a configuration file: read and check it against the database, plan, and (unless a dry
 * run) run the plan through the store's one transaction, then record one audit event per change
 * naming the file. Shared by `latchkey config apply` and the server's start (LATCHKEY_CONFIG).
 */
import { auditRecord } from '../audit/audit_trail.js';
import type { AuditEvent } from '../audit/audit_events.js';
import { connectorSecretContext } from '../connectors/runtime.js';
import type { SecretBox } from '../crypto/secret_box.js';
import { managementAudience } from '../management/management_api.js';
import type { Store } from '../store/store.js';
import { readDatabaseSnapshot } from './database_snapshot.js';
import { loadConfigurationFile } from './load.js';
import { planConfiguration, type PlannedChange } from './plan.js';
import type { ServerKeyMaterial } from './server_key_material.js';

export interface ApplyOptions {
  store: Store;
  secretBox: SecretBox;
  env: NodeJS.ProcessEnv;
  /** Epoch seconds. */
  now: number;
  prune: boolean;
  dryRun: boolean;
  /** Who applies, for the audit log: `cli` or `server`. */
  actor: 'cli' | 'server';
  /** The issuer the applier is configured with; with the one the server recorded, it names the built-in API. */
  issuer: string;
  /** The server's key material: no secret reference of the file may read it. */
  keyMaterial: ServerKeyMaterial;
}

const auditEvents: Record<PlannedChange['object'], Record<PlannedChange['action'], AuditEvent>> = {
  api: { create: 'api.created', update: 'api.updated', delete: 'api.removed' },
  role: { create: 'role.created', update: 'role.updated', delete: 'role.removed' },
  client: { create: 'client.created', update: 'client.updated', delete: 'client.removed' },
  connector: { create: 'connector.created', update: 'connector.updated', delete: 'connector.removed' },
};

/** The file read, checked and planned; applied unless a dry run. Throws ConfigurationFileError with every problem of a bad file. */
export async function applyConfigurationFile(path: string, options: ApplyOptions): Promise<{ path: string; plan: PlannedChange[] }> {
  const { store, secretBox } = options;
  const database = await readDatabaseSnapshot(store);
  // The admin commands may run with another LATCHKEY_ISSUER than the server: both name it.
  const recorded = await store.recordedIssuer();
  const builtInApis = [...new Set([options.issuer, ...(recorded === undefined ? [] : [recorded.issuer])].map(managementAudience))];
  const loaded = await loadConfigurationFile(path, { ...database, builtInApis }, options.env, options.keyMaterial);
  const plan = planConfiguration(loaded.file, database, {
    builtInApis,
    path: loaded.path,
    prune: options.prune,
    now: options.now,
    secrets: loaded.secrets,
    sealConnectorSecret: (id, value) => secretBox.seal(connectorSecretContext(id), value),
    openConnectorSecret: (id, sealed) => {
      try {
        return secretBox.open(connectorSecretContext(id), sealed);
      } catch {
        // Sealed with a key no longer held: the file's secret replaces it.
        return undefined;
      }
    },
  });
  if (options.dryRun || plan.length === 0) return { path: loaded.path, plan };
  await store.applyConfiguration(plan.map((step) => step.change));
  await store.appendAuditEvents(
    plan.map((step) =>
      auditRecord(options.now * 1000, auditEvents[step.object][step.action], undefined, {
        actor: options.actor,
        configFile: loaded.path,
        object: step.object,
        id: step.id,
        ...(step.object === 'client' ? { clientId: step.id } : {}),
        ...(step.fields.length > 0 ? { fields: step.fields.map((f) => f.field) } : {}),
      }),
    ),
  );
  return { path: loaded.path, plan };
}
