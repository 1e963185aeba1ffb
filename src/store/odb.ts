import { existsSync } from 'node:fs';
import { GitError, codecDiagnostic, corrupt } from '../errors.js';
import { HEADERS_ONLY, walkToBase, type ChainVisitor } from './chain.js';
import { toHex, type HashAlgo } from '../hash/algo.js';
import { applyDelta, parseDeltaHeader } from '../delta/apply.js';
import { StackArena } from '../delta/arena.js';
import { DeltaBaseCache, type BaseCacheLike, type CachedObject } from '../delta/cache.js';
import { listLoose, loosePath, readLooseFile, readLooseHeader } from './loose.js';
import { OidRefTable, OidTable } from '../hash/oid-table.js';
import { Pack, type RawEntry } from './pack.js';
import { listPacks } from './packdir.js';
import { withExt, type FsPath } from './fs-path.js';

export interface ObjectData {
  type: number;
  data: Buffer;
}

/** `.pack` files that have an `.idx`, newest first (the copy git prefers); bytes where a name is not UTF-8. */
export function listPackFiles(objectsDir: string): FsPath[] {
  return listPacks(objectsDir).map((p) => withExt(p.fsBase, '.pack'));
}

/**
 * The objects of a repository: its packs, loose objects and alternates. Reads resolve delta chains
 * with an explicit loop through one byte-capped LRU delta base cache.
 */
export class ObjectDatabase {
  readonly packs: Pack[] = [];
  private readonly packIds = new Map<Pack, number>();
  /** The delta base cache every chain goes through: one byte-capped LRU list unless a benchmark swaps it. */
  cache: BaseCacheLike;
  /** Entries inflated so far (the reader experiments' cost measure). */
  inflated = 0;
  /** The largest object a delta may produce (zstd-import sets core.bigFileThreshold). */
  maxObjectSize = Number.MAX_SAFE_INTEGER;

  constructor(
    readonly algo: HashAlgo,
    readonly objectDirs: string[],
    cacheLimit?: number,
  ) {
    this.cache = new DeltaBaseCache(cacheLimit);
  }

  /** Opens every pack of every object directory (the repository's own first). */
  static open(algo: HashAlgo, objectDirs: string[], cacheLimit?: number): ObjectDatabase {
    const odb = new ObjectDatabase(algo, objectDirs, cacheLimit);
    for (const dir of objectDirs)
      for (const p of listPackFiles(dir)) odb.addPack(Pack.open(p, algo));
    return odb;
  }

  addPack(p: Pack): number {
    const id = this.packs.length;
    this.packs.push(p);
    this.packIds.set(p, id);
    return id;
  }

  close(): void {
    for (const p of this.packs) p.close();
    this.cache.clear?.();
  }

  private bulk: { tables: OidRefTable[]; loose: OidTable; looseDir: string[] } | undefined;

  /**
   * For a job that looks up most objects (a walk): each pack's ids get an open-addressing table
   * over the idx bytes (built once; no binary search per look-up) and the loose objects are
   * listed once (no file system call per missing object of a partial clone). Packs added and
   * objects written afterwards are not seen by `locate`.
   */
  indexForBulkLookups(): void {
    const len = this.algo.len;
    const tables = this.packs.map((p) => {
      const ids = p.idx.ids;
      const t = new OidRefTable(len, p.count, (v, ref) => {
        ref.buf = ids;
        ref.pos = v * len;
      });
      for (let j = 0; j < p.count; j++) t.insert(j, ids, j * len);
      return t;
    });
    const loose = new OidTable(len, 1024);
    const looseDir: string[] = [];
    for (const dir of this.objectDirs) {
      for (const id of listLoose(dir, this.algo)) if (loose.insert(id, 0) >= 0) looseDir.push(dir);
    }
    this.bulk = { tables, loose, looseDir };
  }

  /** Where `id` is: a pack and idx position, or a loose file path. */
  locate(id: Uint8Array, pos = 0): { pack: Pack; index: number } | { loose: string } | undefined {
    if (this.bulk !== undefined) {
      const { tables, loose, looseDir } = this.bulk;
      for (let k = 0; k < tables.length; k++) {
        const j = tables[k]!.lookup(id, pos);
        if (j >= 0) return { pack: this.packs[k]!, index: j };
      }
      const v = loose.lookup(id, pos);
      return v < 0
        ? undefined
        : { loose: loosePath(looseDir[v]!, id.subarray(pos, pos + this.algo.len)) };
    }
    for (const pack of this.packs) {
      const j = pack.idx.find(id, pos);
      if (j >= 0) return { pack, index: j };
    }
    const key = id.subarray(pos, pos + this.algo.len);
    for (const dir of this.objectDirs) {
      const f = loosePath(dir, key);
      if (existsSync(f)) return { loose: f };
    }
    return undefined;
  }

  has(id: Uint8Array, pos = 0): boolean {
    return this.locate(id, pos) !== undefined;
  }

  /**
   * An object's type from entry headers alone (git's `packed_object_info` walking the chain to
   * its base), nothing inflated but a loose object's first bytes; undefined when it is missing.
   */
  typeOf(id: Uint8Array, pos = 0): number | undefined {
    const start = this.locate(id, pos);
    if (start === undefined) return undefined;
    if ('loose' in start) return readLooseHeader(start.loose).type;
    const end = walkToBase(
      this,
      start.pack,
      start.pack.idx.offsets[start.index]!,
      HEADERS_ONLY,
      true,
    );
    if (end.kind === 'loose') return readLooseHeader(end.path).type;
    return end.kind === 'base' ? end.entry.hdr.type : undefined;
  }

  read(id: Uint8Array, pos = 0): ObjectData {
    const where = this.locate(id, pos);
    if (where === undefined) {
      const hex = toHex(id, pos, this.algo.len);
      throw new GitError('missing-object', `object ${hex} not found`, { objectId: hex });
    }
    return this.readAt(where);
  }

  /**
   * The object at a location `locate` gave. With `transient`, the data may live in memory that
   * the next read through this database reuses (for a caller that is done with it by then, such
   * as a walk parsing each commit and tree): no allocation per object read.
   */
  readAt(where: { pack: Pack; index: number } | { loose: string }, transient = false): ObjectData {
    if ('loose' in where) return readLooseFile(where.loose);
    return this.readPacked(where.pack, where.pack.idx.offsets[where.index]!, transient);
  }

  /** The delta being applied, and a transient result: each reused while under 16 MiB. */
  private readonly deltaBuf = new ReusedBuffer();
  private readonly resultBuf = new ReusedBuffer();

  /** A pack entry's key in the delta base cache. */
  key(pack: Pack, offset: number): number {
    return this.packIds.get(pack)! * 2 ** 40 + offset;
  }

  /**
   * The object at `offset` of `pack` (git's `unpack_entry`): walk down the chain to a cached or
   * non-delta base with an explicit stack, then apply the deltas back up, caching each base.
   * `transient` as for `readAt`: the object itself (never a cached base) goes to reused memory.
   */
  readPacked(pack: Pack, offset: number, transient = false): ObjectData {
    const mark = this.down.arena.top;
    try {
      return this.unpack(pack, offset, transient);
    } finally {
      this.down.arena.release(mark);
    }
  }

  /** The deltas of the chain being resolved and the cached base below them. */
  private readonly down = new DeltaStack(this);

  private unpack(pack: Pack, offset: number, transient: boolean): ObjectData {
    // Deltas are decompressed on the way back up, once the base's type is known (a zstd pack
    // picks a delta's dictionary by the type at the bottom of its chain).
    const down = this.down;
    const stack = down.frames;
    stack.length = 0;
    const end = walkToBase(this, pack, offset, down);
    let base: CachedObject;
    if (end.kind === 'known') base = down.hit!;
    else if (end.kind === 'loose') base = readLooseFile(end.path);
    else if (end.kind === 'missing') {
      const { entry: e } = end;
      throw corrupt(
        'missing-object',
        end.pack.packPath,
        e.offset,
        `delta base ${toHex(e.raw, e.hdr.baseIdPos, this.algo.len)} not found`,
      );
    } else {
      this.inflated++;
      const last = stack.length === 0;
      const room = last && transient ? this.resultBuf.room(end.entry.hdr.size) : undefined;
      base = { type: end.entry.hdr.type, data: end.pack.inflate(end.entry, 0, room) };
      if (!last) this.cache.set(down.key, base);
    }
    while (stack.length > 0) {
      const d = stack.pop()!;
      // The delta is used once, right away: it is inflated into a buffer kept for that.
      const delta = d.p.inflate(d.e, base.type, this.deltaBuf.room(d.e.hdr.size));
      let data: Buffer;
      try {
        // Only the last result can be transient; the size is the delta's own declaration.
        const dstSize = parseDeltaHeader(delta).dstSize;
        if (dstSize > this.maxObjectSize)
          throw new Error(`delta result size ${dstSize} exceeds limit ${this.maxObjectSize}`);
        const into = stack.length === 0 && transient ? this.resultBuf.room(dstSize) : undefined;
        data = applyDelta(base.data, delta, this.maxObjectSize, into);
      } catch (e) {
        throw corrupt('bad-delta', d.p.packPath, d.e.offset, codecDiagnostic(e), undefined, e);
      }
      base = { type: base.type, data };
      if (stack.length > 0) this.cache.set(d.key, base);
    }
    return base;
  }
}

/** What `unpack` walks down through: each delta copied out of the pack's scratch, the cached base it stopped at. */
class DeltaStack implements ChainVisitor {
  readonly frames: { key: number; e: RawEntry; p: Pack }[] = [];
  /** The deltas' bytes: a stack, freed when `readPacked` returns. */
  readonly arena = new StackArena(1 << 20);
  hit: CachedObject | undefined;
  /** The key of the entry last asked about. */
  key = 0;

  constructor(private readonly odb: ObjectDatabase) {}

  known(p: Pack, off: number): boolean {
    this.key = this.odb.key(p, off);
    this.hit = this.odb.cache.get(this.key);
    return this.hit !== undefined;
  }

  delta(p: Pack, seen: RawEntry): void {
    this.odb.inflated++;
    const raw = this.arena.alloc(seen.raw.length);
    raw.set(seen.raw);
    this.frames.push({ key: this.key, e: { ...seen, raw }, p });
  }
}

/** One buffer handed out again and again, grown as needed; larger requests get none. */
class ReusedBuffer {
  private buf: Buffer | undefined;

  /** At least `size + 1` bytes (an inflate's room to detect a longer stream), or undefined past 16 MiB. */
  room(size: number): Buffer | undefined {
    if (size + 1 > 16 << 20) return undefined;
    if (this.buf === undefined || this.buf.length < size + 1)
      this.buf = Buffer.allocUnsafeSlow(Math.max(size + 1, 64 << 10));
    return this.buf;
  }
}
