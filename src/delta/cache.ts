/**
 * The delta base cache: ONE LRU list capped in bytes, whatever the object type (the seed
 * "delta_base_cache: drop special treatment of blobs" measured two lists or type preference to
 * be slower as the cache grows). A Map keeps insertion order, so get = delete + set moves an
 * entry to the young end and eviction takes from the old end: every operation is O(1).
 */
export interface CachedObject {
  type: number;
  data: Buffer;
}

/**
 * What a delta-chain resolver needs of a base cache (gitoxide's `DecodeEntry`): the resolver
 * (ObjectDatabase.readPacked) takes it as a parameter, so that a benchmark swaps the cache
 * instead of copying the resolver.
 */
export interface BaseCacheLike {
  get(key: number): CachedObject | undefined;
  set(key: number, value: CachedObject): void;
  clear?(): void;
}

/** Default like git's `core.deltaBaseCacheLimit` (96 MiB). */
export const DEFAULT_DELTA_BASE_CACHE_LIMIT = 96 * 1024 * 1024;

export class DeltaBaseCache implements BaseCacheLike {
  private readonly map = new Map<number, CachedObject>();
  private used = 0;
  hits = 0;
  misses = 0;
  /** Entries dropped to stay under the caps. */
  evictions = 0;

  constructor(
    readonly limit: number = DEFAULT_DELTA_BASE_CACHE_LIMIT,
    /** A cap in entries as well (git's old MAX_DELTA_CACHE): none but in the reader benchmark. */
    readonly maxEntries: number = Infinity,
  ) {}

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

  set(key: number, value: CachedObject): void {
    const size = value.data.length;
    if (size > this.limit) return;
    const old = this.map.get(key);
    if (old !== undefined) {
      this.used -= old.data.length;
      this.map.delete(key);
    }
    this.map.set(key, value);
    this.used += size;
    if (this.used > this.limit || this.map.size > this.maxEntries) this.evict();
  }

  private evict(): void {
    for (const [k, v] of this.map) {
      if (this.used <= this.limit && this.map.size <= this.maxEntries) break;
      this.map.delete(k);
      this.used -= v.data.length;
      this.evictions++;
    }
  }

  get bytes(): number {
    return this.used;
  }

  get size(): number {
    return this.map.size;
  }

  clear(): void {
    this.map.clear();
    this.used = 0;
  }
}
