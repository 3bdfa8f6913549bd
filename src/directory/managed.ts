/**
 * Objects declared in a configuration file (`latchkey config apply`) are managed by it: the next
 * apply puts back whatever was changed by hand, so a change made around the file would be lost
 * quietly (or, for a removal, undone). The admin commands and the console refuse such a change
 * with a sentence naming the file, and leave objects nobody declared editable as before.
 */
import type { ManagedKind } from '../store/store.js';
import { AdminInputError } from './validation.js';

/** A change refused because a configuration file declares the object. */
export class ManagedObjectError extends AdminInputError {
  constructor(
    readonly kind: ManagedKind,
    readonly id: string,
    readonly managedBy: string,
  ) {
    super(managedMessage(kind, id, managedBy));
    this.name = 'ManagedObjectError';
  }
}

const kindNames: Record<ManagedKind, string> = { client: 'client', api: 'API', role: 'role', connector: 'connector' };

/** The sentence shown for a refused change: what the object is, which file declares it, what to do instead. */
export function managedMessage(kind: ManagedKind, id: string, managedBy: string): string {
  return `${kindNames[kind]} "${id}" is managed by ${managedBy}: change it there and run latchkey config apply`;
}

/** Throws ManagedObjectError when `record` is declared by a configuration file; a record not found is the caller's to answer. */
export function refuseManaged(kind: ManagedKind, id: string, record: { managedBy: string | undefined } | undefined): void {
  if (record?.managedBy !== undefined) throw new ManagedObjectError(kind, id, record.managedBy);
}
