/** Text from a server or a callback, made safe for a terminal (terminal_text.ts) and kept short. */
import { visible } from '../terminal_text.js';

export function printable(text: string): string {
  return visible(text.slice(0, 300));
}
