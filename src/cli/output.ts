/**
 * Listings as aligned text tables or, with --json, as JSON. Every cell is stored text: its control
 * characters are shown as escapes, never sent to the terminal (terminal_text.ts).
 */
import { terminalJson, visible } from './terminal_text.js';

export function table(rows: string[][], headers: string[]): string {
  const all = [headers, ...rows].map((r) => r.map((cell) => visible(cell)));
  const widths = headers.map((_, i) => Math.max(...all.map((r) => (r[i] ?? '').length)));
  return all.map((r) => r.map((cell, i) => (i === r.length - 1 ? cell : cell.padEnd(widths[i] ?? 0))).join('  ')).join('\n') + '\n';
}

export function json(value: unknown): string {
  return terminalJson(value, 2) + '\n';
}

export function isoTime(epochSeconds: number): string {
  return new Date(epochSeconds * 1000).toISOString().replace('.000Z', 'Z');
}
