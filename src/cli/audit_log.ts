/**
 * Audit events of the administration commands (a client created, a key rotated, …), as the same
 * structured pino lines the server writes, on stderr, so that whatever collects the operator's
 * output keeps an audit trail. The server cannot see these: they happen straight in the database.
 */
import { pino } from 'pino';
import type { AuditEvent } from '../http/audit.js';
import type { CommandIo } from './command.js';

export function cliAudit(io: CommandIo, event: AuditEvent, fields: Record<string, unknown>): void {
  const logger = pino({ base: { source: 'cli' } }, { write: (line: string) => void io.stderr.write(line) });
  logger.info({ event, ...fields }, event);
}
