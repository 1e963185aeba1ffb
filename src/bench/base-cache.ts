import { OBJ_BLOB } from '../format/object-type.js';
import { DeltaBaseCache, type CachedObject } from '../delta/cache.js';

/**
 * Delta base cache variants for the reader experiment (the seed delta-base-cache-lru.txt). Each
 * is capped in entries (the seed's MAX_DELTA_CACHE) and in bytes (core.deltaBaseCacheLimit):
 *
 * - `single-lru` — ours: the production cache itself (src/delta/cache.ts, given the entry cap),
 *   one LRU list whatever the type; both caps evict the oldest entry.
 * - `two-lists` — blobs and other objects in separate LRU lists; both caps drop blobs first,
 *   then the others (the seed's middle experiment).
 * - `scan-blobs` — git before the seed's patch 5/7: one list, and over the byte cap the whole
 *   list is walked for blobs to drop before anything else goes (O(entries) per insertion once
 *   the cache is full of trees). The entry cap replaces the oldest entry, as a full slot table did.
 */
export interface BaseCache {
  readonly name: string;
  get(key: number): CachedObject | undefined;
  set(key: number, value: CachedObject): void;
  hits: number;
  misses: number;
  /** Entries looked at while evicting (the cost the scan variant pays). */
  evictionSteps: number;
}

export const CACHE_VARIANTS = ['single-lru', 'two-lists', 'scan-blobs'] as const;
export type CacheVariant = (typeof CACHE_VARIANTS)[number];

abstract class Base {
  hits = 0;
  misses = 0;
  evictionSteps = 0;
  protected used = 0;
  protected count = 0;
  constructor(
    readonly maxEntries: number,
    readonly maxBytes: number,
  ) {}
  protected over(): boolean {
    return this.count > this.maxEntries || this.used > this.maxBytes;
  }
}

/** One LRU list in a Map (insertion order is the list), as src/delta/cache.ts keeps it. */
abstract class OneList extends Base {
  protected readonly map = new Map<number, CachedObject>();
  get(key: number): CachedObject | undefined {
    const v = this.map.get(key);
    if (v === undefined) {
      this.misses++;
      return undefined;
    }
    this.hits++;
    this.map.delete(key);
    this.map.set(key, v);
    return v;
  }
  protected drop(k: number, v: CachedObject): void {
    this.map.delete(k);
    this.used -= v.data.length;
    this.count--;
  }
  /** Replaces or adds an entry; false when it is larger than the whole cache. */
  protected put(key: number, value: CachedObject): boolean {
    if (value.data.length > this.maxBytes) return false;
    const old = this.map.get(key);
    if (old !== undefined) this.drop(key, old);
    this.map.set(key, value);
    this.used += value.data.length;
    this.count++;
    return true;
  }
}

/** The production cache; its evictions are the steps it takes. */
class SingleLru extends DeltaBaseCache implements BaseCache {
  readonly name = 'single-lru';
  get evictionSteps(): number {
    return this.evictions;
  }
}

class TwoLists extends Base implements BaseCache {
  readonly name = 'two-lists';
  private readonly blobs = new Map<number, CachedObject>();
  private readonly others = new Map<number, CachedObject>();
  get(key: number): CachedObject | undefined {
    for (const m of [this.blobs, this.others]) {
      const v = m.get(key);
      if (v !== undefined) {
        this.hits++;
        m.delete(key);
        m.set(key, v);
        return v;
      }
    }
    this.misses++;
    return undefined;
  }
  set(key: number, value: CachedObject): void {
    if (value.data.length > this.maxBytes) return;
    for (const m of [this.blobs, this.others]) {
      const old = m.get(key);
      if (old !== undefined) {
        m.delete(key);
        this.used -= old.data.length;
        this.count--;
      }
    }
    (value.type === OBJ_BLOB ? this.blobs : this.others).set(key, value);
    this.used += value.data.length;
    this.count++;
    for (const m of [this.blobs, this.others]) {
      if (!this.over()) return;
      for (const [k, v] of m) {
        if (!this.over()) break;
        this.evictionSteps++;
        m.delete(k);
        this.used -= v.data.length;
        this.count--;
      }
    }
  }
}

class ScanBlobs extends OneList implements BaseCache {
  readonly name = 'scan-blobs';
  set(key: number, value: CachedObject): void {
    if (!this.put(key, value)) return;
    // A full slot table replaces an entry whatever its type.
    if (this.count > this.maxEntries) {
      const first = this.map.entries().next().value as [number, CachedObject];
      this.evictionSteps++;
      this.drop(first[0], first[1]);
    }
    if (this.used <= this.maxBytes) return;
    // git's old add_delta_base_cache: walk the whole LRU list for blobs, then again for anything.
    for (const [k, v] of this.map) {
      if (this.used <= this.maxBytes) break;
      this.evictionSteps++;
      if (v.type === OBJ_BLOB) this.drop(k, v);
    }
    for (const [k, v] of this.map) {
      if (this.used <= this.maxBytes) break;
      this.evictionSteps++;
      this.drop(k, v);
    }
  }
}

export function makeCache(variant: CacheVariant, maxEntries: number, maxBytes: number): BaseCache {
  switch (variant) {
    case 'single-lru':
      return new SingleLru(maxBytes, maxEntries);
    case 'two-lists':
      return new TwoLists(maxEntries, maxBytes);
    case 'scan-blobs':
      return new ScanBlobs(maxEntries, maxBytes);
  }
}
