/**
 * Audit events: structured log lines with a stable `event` field, who (user and client ids, and
 * `actor`, the admin acting for someone else), from which address, and never a secret. Anything
 * with a logger and an address can emit them: a request, or a grant's context. Each is also stored
 * (audit_trail.ts) for the admin console's audit log.
 */
import type { FastifyBaseLogger } from 'fastify';
import { auditRecord, type AuditTrail } from './audit_trail.js';

export type AuditEvent =
  | 'signin.success'
  | 'signin.failure'
  | 'signin.rate_limited'
  | 'signin.slowed'
  | 'signin.first_step'
  | 'second_factor.success'
  | 'second_factor.failure'
  | 'second_factor.enrolled'
  | 'second_factor.renamed'
  | 'second_factor.removed'
  | 'second_factor.recovery_codes_generated'
  | 'second_factor.enrolment_refused'
  | 'second_factor.enrolment_link_created'
  | 'second_factor.enrolment_links_cancelled'
  | 'second_factor.enrolment_link_used'
  | 'second_factor.enrolment_link_refused'
  | 'upstream.signin_started'
  | 'upstream.signin_success'
  | 'upstream.signin_failure'
  | 'upstream.user_created'
  | 'upstream.identity_linked'
  | 'upstream.attributes_refused'
  // Roles held through the person's upstream groups, given or taken at a sign-in.
  | 'upstream.group_roles_granted'
  | 'upstream.group_roles_revoked'
  | 'user.identity_unlinked'
  | 'user.identity_allowed_again'
  | 'connector.created'
  | 'connector.removed'
  | 'connector.updated'
  | 'signout'
  | 'consent.granted'
  | 'authorization.code_issued'
  | 'authorization.denied'
  | 'authorization.refused'
  | 'authorization_code.replayed'
  | 'device.authorization_requested'
  | 'device.user_code_rejected'
  | 'device.approved'
  | 'device.denied'
  | 'token.issued'
  | 'token.revoked'
  | 'refresh_token.reuse_detected'
  | 'refresh_token.retried'
  | 'device_code.recovered'
  | 'key.rotated'
  | 'secret_key.rotated'
  | 'client.created'
  | 'client.removed'
  | 'api.created'
  | 'api.updated'
  | 'user.created'
  | 'user.updated'
  | 'user.disabled'
  | 'user.enabled'
  | 'user.removed'
  | 'user.password_changed'
  | 'user.password_rehashed'
  | 'user.tokens_revoked'
  | 'user.second_factors_reset'
  | 'user.profile_changed'
  | 'session.revoked'
  | 'consent.withdrawn'
  | 'password_reset.requested'
  | 'user.password_reset'
  | 'email_verification.requested'
  | 'user.email_verified'
  | 'logout.rp_initiated'
  | 'logout.backchannel_delivered'
  | 'logout.backchannel_failed'
  | 'client.updated'
  | 'client.secret_rotated'
  | 'client.disabled'
  | 'client.enabled'
  | 'client.grant_saved'
  | 'client.grant_removed'
  | 'client.assertion_replayed'
  | 'api.removed'
  | 'role.created'
  | 'role.updated'
  | 'role.removed'
  | 'user.role_granted'
  | 'user.role_revoked'
  | 'session.ended_by_admin'
  | 'admin.access_denied'
  | 'client.registration_token_created'
  | 'client.registered'
  | 'client.registration_read'
  | 'client.registration_updated'
  | 'client.registration_deleted'
  | 'client.registration_refused'
  // Pushed authorization requests (RFC 9126).
  | 'authorization.pushed'
  // Calls of the management API (/api/v1) that no event of their own records: a read, a refusal.
  | 'management.read'
  | 'management.refused'
  | 'management.changed';

export interface AuditSource {
  log: FastifyBaseLogger;
  ip: string;
  /** A grant's context carries the services; a request reaches them through its server. */
  services?: { auditTrail?: AuditTrail | undefined; clock(): number };
  server?: { services?: { auditTrail?: AuditTrail | undefined; clock(): number } };
}

const warnings = new Set<AuditEvent>([
  'refresh_token.reuse_detected',
  'authorization_code.replayed',
  'logout.backchannel_failed',
  'client.assertion_replayed',
  'admin.access_denied',
  // An administrator's password used to try to add a first factor: the password may be stolen.
  'second_factor.enrolment_refused',
  'second_factor.enrolment_link_refused',
]);

/**
 * An upstream sign-in that failed on the upstream's side or ours — down, set up wrong, answering
 * what cannot be trusted — needs an operator; one the person ended (cancelled, not allowed,
 * disabled, an expired attempt) does not.
 */
const upstreamFaults: ReadonlySet<unknown> = new Set(['unreachable', 'misconfigured', 'invalid_response', 'error']);

function isWarning(event: AuditEvent, fields: Record<string, unknown>): boolean {
  return warnings.has(event) || (event === 'upstream.signin_failure' && upstreamFaults.has(fields.reason));
}

export function audit(source: AuditSource, event: AuditEvent, fields: Record<string, unknown> = {}): void {
  const line = { event, ip: source.ip, ...fields };
  if (isWarning(event, fields)) source.log.warn(line, event);
  else source.log.info(line, event);
  const services = source.services ?? source.server?.services;
  services?.auditTrail?.record(auditRecord(Math.floor(services.clock() * 1000), event, source.ip, fields));
}
