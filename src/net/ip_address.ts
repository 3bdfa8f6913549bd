/**
 * IP addresses as 16 bytes, an IPv4 address in its IPv4-mapped IPv6 form (RFC 4291 §2.5.5.2), so
 * that one comparison covers both families and `::ffff:127.0.0.1` is the very address `127.0.0.1`
 * is; and CIDR blocks (RFC 4632 §3.1, RFC 4291 §2.3) over that same form.
 */
import { isIP } from 'node:net';

/** 16 bytes, network order. */
export type IpBytes = Uint8Array;

export interface CidrBlock {
  /** The block's first address (the bits past the prefix are cleared). */
  readonly network: IpBytes;
  /** Prefix length over the 128-bit form: an IPv4 /8 is 96 + 8. */
  readonly bits: number;
}

const mappedPrefix = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff];

/** `::ffff:a.b.c.d` for the four bytes of an IPv4 address. */
export function mappedIpv4(a: number, b: number, c: number, d: number): IpBytes {
  return Uint8Array.from([...mappedPrefix, a, b, c, d]);
}

/** Whether the address is IPv4-mapped (::ffff:0:0/96), i.e. what an IPv4 address parses to. */
export function isMappedIpv4(address: IpBytes): boolean {
  return mappedPrefix.every((byte, i) => address[i] === byte);
}

function ipv4Bytes(text: string): number[] {
  return text.split('.').map(Number);
}

function ipv6Bytes(text: string): IpBytes {
  // An embedded dotted quad (::ffff:1.2.3.4) stands for the last two groups.
  const groupsOf = (part: string): number[] =>
    part === ''
      ? []
      : part.split(':').flatMap((group) => {
          if (!group.includes('.')) return [parseInt(group, 16)];
          const [a = 0, b = 0, c = 0, d = 0] = ipv4Bytes(group);
          return [(a << 8) | b, (c << 8) | d];
        });
  const gap = text.indexOf('::');
  const head = groupsOf(gap === -1 ? text : text.slice(0, gap));
  const tail = gap === -1 ? [] : groupsOf(text.slice(gap + 2));
  const groups = gap === -1 ? head : [...head, ...new Array<number>(8 - head.length - tail.length).fill(0), ...tail];
  const bytes = new Uint8Array(16);
  groups.forEach((group, i) => {
    bytes[2 * i] = group >> 8;
    bytes[2 * i + 1] = group & 0xff;
  });
  return bytes;
}

/**
 * The address in `text` (IPv4 dotted decimal, or IPv6, bracketed or not, a zone index ignored),
 * or undefined when it is not one. Only the canonical IPv4 form is an address here: `127.1` or
 * `0x7f.0.0.1` are names (URL parsing has already rewritten such hosts to dotted decimal).
 */
export function parseIp(text: string): IpBytes | undefined {
  let value = text.trim();
  if (value.startsWith('[') && value.endsWith(']')) value = value.slice(1, -1);
  const zone = value.indexOf('%');
  if (zone !== -1) value = value.slice(0, zone);
  const family = isIP(value);
  if (family === 4) {
    const [a = 0, b = 0, c = 0, d = 0] = ipv4Bytes(value);
    return mappedIpv4(a, b, c, d);
  }
  return family === 6 ? ipv6Bytes(value) : undefined;
}

/** A CIDR block `address/bits` (a lone address is a block of one), or undefined. */
export function parseCidr(text: string): CidrBlock | undefined {
  const [address = '', bitsText, extra] = text.trim().split('/');
  if (extra !== undefined) return undefined;
  const bytes = parseIp(address);
  if (bytes === undefined || address.includes('%')) return undefined;
  const ipv4 = isIP(address.replace(/^\[|\]$/g, '')) === 4;
  const width = ipv4 ? 32 : 128;
  if (bitsText !== undefined && !/^\d{1,3}$/.test(bitsText)) return undefined;
  const own = bitsText === undefined ? width : Number(bitsText);
  if (own > width) return undefined;
  const bits = ipv4 ? 96 + own : own;
  const network = Uint8Array.from(bytes, (byte, i) => {
    const kept = Math.min(8, Math.max(0, bits - 8 * i));
    return byte & ((0xff << (8 - kept)) & 0xff);
  });
  return { network, bits };
}

/** Whether the address lies in the block. */
export function inCidr(address: IpBytes, block: CidrBlock): boolean {
  for (let i = 0; i < 16; i++) {
    const kept = Math.min(8, Math.max(0, block.bits - 8 * i));
    if (kept === 0) return true;
    const mask = (0xff << (8 - kept)) & 0xff;
    if (((address[i] ?? 0) & mask) !== block.network[i]) return false;
  }
  return true;
}
