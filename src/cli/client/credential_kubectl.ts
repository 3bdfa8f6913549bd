/**
 * `latchkey credential kubectl`: an exec credential plugin for kubectl (client-go's
 * client.authentication.k8s.io ExecCredential). It answers in the apiVersion kubectl asks for in
 * KUBERNETES_EXEC_INFO (v1, or v1beta1 for older kubeconfigs), with the token's expiry so kubectl
 * runs it again in time. It never prompts: without a sign-in it exits 6 and says what to run.
 */
import { epochSeconds, systemClock } from '../../clock.js';
import { CommandError, exitCodes, defineCommand } from '../command.js';
import { isoTime } from '../output.js';
import { audienceOptionHelp, helperProfile } from './credential_helper.js';
import { clientHelp } from './help.js';
import { printable } from './oidc.js';

export const execCredentialVersions = ['client.authentication.k8s.io/v1', 'client.authentication.k8s.io/v1beta1'] as const;
export type ExecCredentialVersion = (typeof execCredentialVersions)[number];

/** The apiVersion to answer in, from KUBERNETES_EXEC_INFO (absent: v1, as kubectl sends for v1 plugins). */
export function requestedApiVersion(execInfo: string | undefined): ExecCredentialVersion {
  if (execInfo === undefined || execInfo.trim() === '') return execCredentialVersions[0];
  let info: unknown;
  try {
    info = JSON.parse(execInfo);
  } catch {
    throw new CommandError('KUBERNETES_EXEC_INFO is not JSON', exitCodes.usage);
  }
  const apiVersion = typeof info === 'object' && info !== null ? (info as { apiVersion?: unknown }).apiVersion : undefined;
  if (apiVersion === undefined) return execCredentialVersions[0];
  const known = execCredentialVersions.find((v) => v === apiVersion);
  if (!known) {
    throw new CommandError(
      `kubectl asks for ExecCredential ${printable(typeof apiVersion === 'string' ? apiVersion : JSON.stringify(apiVersion))}; latchkey answers ${execCredentialVersions.join(' or ')} (set users[].user.exec.apiVersion in the kubeconfig)`,
      exitCodes.usage,
    );
  }
  return known;
}

export interface ExecCredential {
  apiVersion: ExecCredentialVersion;
  kind: 'ExecCredential';
  status: { token: string; expirationTimestamp?: string };
}

/** The answer; without a future expiry kubectl keeps the token until the server refuses it. */
export function execCredential(apiVersion: ExecCredentialVersion, token: string, expiresAt: number, now: number): ExecCredential {
  return {
    apiVersion,
    kind: 'ExecCredential',
    status: { token, ...(expiresAt > now ? { expirationTimestamp: isoTime(Math.floor(expiresAt)) } : {}) },
  };
}

export const credentialKubectlCommand = defineCommand({
  usage: 'latchkey credential kubectl [--profile P] [--audience A]      (users[].user.exec in a kubeconfig)',
  help: clientHelp(audienceOptionHelp),
  positionals: { min: 0, max: 0 },
  options: { profile: { type: 'string' }, audience: { type: 'string' } },
  async run(context) {
    const apiVersion = requestedApiVersion(context.env.KUBERNETES_EXEC_INFO);
    const profile = await helperProfile(context);
    context.stdout.write(`${JSON.stringify(execCredential(apiVersion, profile.access_token, profile.expires_at, epochSeconds(systemClock)))}\n`);
    return exitCodes.ok;
  },
});
