/**
 * Which hosts the server may send a request to when the address came from someone the operator
 * does not vouch for (a client that registered itself, RFC 7591): public addresses only — never
 * loopback, private, link-local (the cloud metadata service), shared, unspecified, multicast or
 * reserved ones (see special_addresses.ts) — unless the operator's allow-list
 * (LATCHKEY_OUTBOUND_ALLOW) names the host or a block holding the address.
 */
import { inCidr, parseCidr, parseIp, type CidrBlock } from './ip_address.js';
import { classOfBytes } from './special_addresses.js';

export interface OutboundAllowList {
  /** Host names (lower case, no trailing dot) whose every address may be reached. */
  readonly hosts: readonly string[];
  /** Blocks whose addresses may be reached, whatever name led there. */
  readonly blocks: readonly CidrBlock[];
}

export const emptyAllowList: OutboundAllowList = Object.freeze({ hosts: Object.freeze([]), blocks: Object.freeze([]) });

/** A DNS name as URLs carry it: labels of letters, digits, hyphens and underscores. */
const hostName = /^(?=.{1,253}$)[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?(?:\.[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?)*$/;

/** A URL's host without IPv6 brackets or a final dot, in lower case: how hosts are compared here. */
export function normalHost(hostname: string): string {
  return hostname
    .replace(/^\[|\]$/g, '')
    .replace(/\.$/, '')
    .toLowerCase();
}

/**
 * LATCHKEY_OUTBOUND_ALLOW: comma-separated host names, IP addresses and CIDR blocks; undefined when
 * an entry is none of these. An empty text allows nothing beyond public addresses.
 */
export function parseOutboundAllowList(text: string): OutboundAllowList | undefined {
  const hosts: string[] = [];
  const blocks: CidrBlock[] = [];
  for (const raw of text.split(',')) {
    const entry = raw.trim();
    if (entry === '') continue;
    const block = parseCidr(entry);
    if (block !== undefined) blocks.push(block);
    else if (!entry.includes('/') && hostName.test(normalHost(entry)) && !/^[\d.]+$/.test(entry)) hosts.push(normalHost(entry));
    else return undefined;
  }
  return Object.freeze({ hosts: Object.freeze(hosts), blocks: Object.freeze(blocks) });
}

/**
 * Why a connection to `address` (reached by the name `hostname`) is refused, or undefined when it
 * may be made: a public address, an allow-listed host, or an address in an allow-listed block.
 */
export function addressRefusal(hostname: string, address: string, allow: OutboundAllowList): string | undefined {
  const bytes = parseIp(address);
  if (bytes === undefined) return `${address.slice(0, 64)} is not an IP address`;
  const kind = classOfBytes(bytes);
  if (kind === 'public') return undefined;
  if (allow.hosts.includes(normalHost(hostname))) return undefined;
  if (allow.blocks.some((block) => inCidr(bytes, block))) return undefined;
  return `${kind} address ${address}`;
}

/**
 * What can be refused of a URL before anything is resolved (a registration, RFC 7591 §2: the
 * server may refuse metadata it will not use): a host that is a literal internal address, or a
 * name reserved for this very machine (`localhost` and `*.localhost`, RFC 6761 §6.3). Other names
 * are judged when the request is made, on the addresses they resolve to then.
 */
export function literalTargetRefusal(url: URL, allow: OutboundAllowList): string | undefined {
  const host = normalHost(url.hostname);
  if (allow.hosts.includes(host)) return undefined;
  if (parseIp(host) !== undefined) return addressRefusal(host, host, allow);
  if (host === 'localhost' || host.endsWith('.localhost')) return `${host} names this machine`;
  return undefined;
}
