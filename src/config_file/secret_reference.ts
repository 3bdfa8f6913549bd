/**
 * A secret reference as a configuration file writes it — `{ env: NAME }` or `{ file: PATH }` — and
 * as the plan and the problems of a file show it: the reference, never the value it points at, so
 * that whoever reviews a plan in a CI log sees where each secret will be read from.
 */
import { closeSync, constants, fstatSync, openSync, readSync } from 'node:fs';

/** A value named, never given: an environment variable of the process that reads the file, or a file. */
export type Reference = { readonly env: string } | { readonly file: string };

/** A path as written when it is plain; quoted (JSON, non-ASCII escaped) when it could be misread or drive a terminal. */
function pathText(path: string): string {
  if (/^[\w./@%+,:~-]+$/.test(path)) return path;
  return JSON.stringify(path).replace(/[^\x20-\x7e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** `{ env: NAME }` or `{ file: PATH }`, as the file writes it. */
export function referenceText(reference: Reference): string {
  return 'env' in reference ? `{ env: ${reference.env} }` : `{ file: ${pathText(reference.file)} }`;
}

/** More than a reference's value can ever be (a secret is at most 4096 characters; a setting a line). */
const readLimit = 64 * 1024;

/**
 * The text of a referenced file, read as a regular file of at most 64 KiB: a FIFO, a device
 * (/dev/zero, /dev/stdin) or a huge file named by a file would otherwise hang or fill the reader.
 * Throws an Error whose message (or `code`) says why it cannot be read.
 */
export function readReferencedFile(path: string): string {
  // O_NONBLOCK: opening a FIFO with no writer must not wait for one.
  const fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  try {
    if (!fstatSync(fd).isFile()) throw new Error('not a regular file');
    const buffer = Buffer.alloc(readLimit + 1);
    let length = 0;
    for (;;) {
      const read = readSync(fd, buffer, length, buffer.length - length, null);
      if (read === 0) break;
      length += read;
      if (length > readLimit) throw new Error(`larger than ${readLimit / 1024} KiB`);
    }
    return buffer.subarray(0, length).toString('utf8');
  } finally {
    closeSync(fd);
  }
}
