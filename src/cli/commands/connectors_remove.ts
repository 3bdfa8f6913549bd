/**
 * `latchkey connectors remove`: the connector and the identities bound to it go; the users it
 * created stay, signed out (see connectors/removal.ts).
 */
import { refuseManaged } from '../../directory/managed.js';
import { removeConnector } from '../../connectors/removal.js';
import { revocationTime } from '../revocation_time.js';
import { cliAudit } from '../audit_log.js';
import { CommandError, defineCommand } from '../command.js';

export const connectorsRemoveCommand = defineCommand({
  usage: 'latchkey connectors remove <id>',
  positionals: { min: 1, max: 1 },
  options: {},
  async run(context) {
    const id = context.positionals[0] ?? '';
    const store = await context.store();
    refuseManaged('connector', id, await store.findConnector(id));
    const removal = await removeConnector(store, id, await revocationTime(store));
    if (!removal.removed) throw new CommandError(`no connector "${id}"`);
    const { signedOut, notSignedOut } = removal;
    await cliAudit(context, 'connector.removed', { connectorId: id, usersSignedOut: signedOut });
    context.stderr.write(`Removed connector ${id}${signedOut > 0 ? `; signed out the ${signedOut} user${signedOut === 1 ? '' : 's'} it created` : ''}\n`);
    if (notSignedOut.length > 0) {
      throw new CommandError(`could not sign out ${notSignedOut.join(', ')}: run latchkey users revoke-tokens <username> for each`);
    }
    return 0;
  },
});
