/**
 * The issuer an admin command prints addresses on: the server's (server_issuer.ts), with a note on
 * stderr when LATCHKEY_ISSUER and what the server last started with differ, or nothing was recorded.
 */
import { serverIssuer } from '../server_issuer.js';
import type { CommandContext } from './command.js';

export async function issuerForAddresses(context: CommandContext): Promise<string> {
  const found = await serverIssuer(await context.store(), context.config());
  if (found.note !== undefined) context.stderr.write(`note: ${found.note}\n`);
  return found.issuer;
}
