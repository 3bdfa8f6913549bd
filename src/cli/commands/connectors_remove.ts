/**
 * `latchkey connectors remove`: the connector and the identities bound to it go; the users it
 * created stay, signed out (see connectors/removal.ts).
 */
import { refuseManaged } from '../../directory/managed.js';
import { removeConnector } from '../../connectors/removal.js';
import { revocationTime } from '../revocation_time.js';
import { cliAudit } from '../audit_log.js';
import { CommandError, defineCommand } from '../command.js';
import { managementClient } from '../management_client.js';

export const connectorsRemoveCommand = defineCommand({
  usage: 'latchkey connectors remove <id>',
  positionals: { min: 1, max: 1 },
  options: {},
  remote: true,
  async run(context) {
    const id = context.positionals[0] ?? '';
    let signedOut: number;
    let notSignedOut: string[];
    const remote = managementClient(context);
    if (remote) {
      // DELETE /api/v1/connectors/{id}: the server removes it, signs its users out and audits it.
      const removal = await remote.call<{ users_signed_out: number; not_signed_out: string[] }>('DELETE', `/connectors/${encodeURIComponent(id)}`);
      ({ users_signed_out: signedOut, not_signed_out: notSignedOut } = removal);
    } else {
      const store = await context.store();
      refuseManaged('connector', id, await store.findConnector(id));
      const removal = await removeConnector(store, id, await revocationTime(store));
      if (!removal.removed) throw new CommandError(`no connector "${id}"`);
      ({ signedOut, notSignedOut } = removal);
      await cliAudit(context, 'connector.removed', { connectorId: id, usersSignedOut: signedOut });
    }
    context.stderr.write(`Removed connector ${id}${signedOut > 0 ? `; signed out the ${signedOut} user${signedOut === 1 ? '' : 's'} it created` : ''}\n`);
    if (notSignedOut.length > 0) {
      throw new CommandError(`could not sign out ${notSignedOut.join(', ')}: run latchkey users revoke-tokens <username> for each`);
    }
    return 0;
  },
});
