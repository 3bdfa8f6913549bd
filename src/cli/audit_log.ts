/**
 * Audit events of the administration commands (a client created, a key rotated, …), stored in the
 * database's audit log with actor `cli`, where the admin console shows them beside the server's
 * own: that is the audit trail. The person at the terminal reads the command's sentence only; a
 * machine running the command (LATCHKEY_LOG_FORMAT=json, or `auto` with stderr not a terminal) also
 * gets the event as the same structured pino line the server writes, on stderr, so that whatever
 * collects its output keeps it too.
 */
import { pino } from 'pino';
import { auditRecord } from '../audit/audit_trail.js';
import type { AuditEvent } from '../audit/audit_events.js';
import { resolveLogFormat } from '../logging.js';
import type { CommandContext } from './command.js';

export async function cliAudit(context: CommandContext, event: AuditEvent, fields: Record<string, unknown>): Promise<void> {
  if (resolveLogFormat(context.config().logFormat, context.stderr.isTTY) === 'json') {
    const logger = pino({ base: { source: 'cli' } }, { write: (line: string) => void context.stderr.write(line) });
    logger.info({ event, ...fields }, event);
  }
  const store = await context.store();
  await store.appendAuditEvents([auditRecord(Date.now(), event, undefined, { actor: 'cli', ...fields })]);
}
