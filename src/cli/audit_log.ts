/**
 * Audit events of the administration commands (a client created, a key rotated, …), as the same
 * structured pino lines the server writes, on stderr, so that whatever collects the operator's
 * output keeps an audit trail; and stored in the database's audit log with actor `cli`, where the
 * admin console shows them beside the server's own.
 */
import { pino } from 'pino';
import { auditRecord } from '../audit/audit_trail.js';
import type { AuditEvent } from '../audit/audit_events.js';
import type { CommandContext } from './command.js';

export async function cliAudit(context: CommandContext, event: AuditEvent, fields: Record<string, unknown>): Promise<void> {
  const logger = pino({ base: { source: 'cli' } }, { write: (line: string) => void context.stderr.write(line) });
  logger.info({ event, ...fields }, event);
  const store = await context.store();
  await store.appendAuditEvents([auditRecord(Date.now(), event, undefined, { actor: 'cli', ...fields })]);
}
