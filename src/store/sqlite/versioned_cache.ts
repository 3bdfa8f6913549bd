/**
 * SQLite's RecordCache: kept until directory_version changes. Triggers (migrations 0003, 0006,
 * 0009) bump it on every write to what the directory holds, from any process — the admin CLI, a
 * cluster worker — and one indexed read checks it at each lookup, so nothing is served that another
 * process has changed since.
 */
import { deepFreeze } from '../../deep_freeze.js';
import type { RecordCache } from '../cached_directory.js';

/** Each cache starts over beyond this many records, so memory stays bounded. */
const maxCachedRecords = 10_000;

export class VersionedCache implements RecordCache {
  private readonly maps = new Set<Map<string, object>>();
  private version = -1;

  /** `current` reads directory_version (synchronously). */
  constructor(private readonly current: () => number) {}

  map<T extends object>(): Map<string, T> {
    const map = new Map<string, T>();
    this.maps.add(map);
    return map;
  }

  async lookup<T extends object>(map: Map<string, T>, key: string, load: () => Promise<T | undefined>): Promise<T | undefined> {
    const version = this.current();
    if (version !== this.version) {
      this.invalidate();
      this.version = version;
    }
    const hit = map.get(key);
    if (hit !== undefined) return hit;
    const record = await load();
    // Misses are not cached (keys come from requests); nor is what a change may have overtaken.
    if (record === undefined || this.version !== version) return record;
    if (map.size >= maxCachedRecords) map.clear();
    const frozen = deepFreeze(record);
    map.set(key, frozen);
    return frozen;
  }

  invalidate(): void {
    this.version = -1;
    for (const map of this.maps) map.clear();
  }
}
