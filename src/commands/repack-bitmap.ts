import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { corrupt, GitError } from '../errors.js';
import type { HashAlgo } from '../hash/algo.js';
import {
  encodeBitmap,
  encodeEwah,
  ewahPositions,
  parseBitmap,
  permuteEwah,
  type BitmapEntry,
} from '../format/bitmap.js';
import type { PackIndex } from '../format/idx.js';
import { isBaseType, OBJ_COMMIT, typeName } from '../format/object-type.js';
import { walkToBase, type BaseLocator, type ChainVisitor } from '../store/chain.js';
import { tmpPath, writeFileDurable } from '../store/files.js';
import { Pack, type RawEntry } from '../store/pack.js';
import { readRegular } from '../store/regular.js';
import type { WrittenPartition } from './repack-check.js';

/**
 * The reachability bitmap of a rewritten pack. A pack bitmap's bits are positions in pack order,
 * its commits positions in the idx; the rewrite keeps every object, so the bitmap of an old pack
 * whose objects are all in the new one stays true once each position is moved to where that
 * object now is: the commit bitmaps (XORed ones too: XOR commutes with a permutation), the type
 * bitmaps and the name-hash cache. Objects the new pack adds (loose ones, other packs) are
 * reachable from no old bitmapped commit (those bitmaps were closed), so they get type bits and
 * name-hash 0, as git gives an object without a name. Where that cannot be done soundly (objects
 * of the bitmapped pack left in a kept pack, a bitmap git would not read), git writes a
 * multi-pack-index bitmap instead (`git multi-pack-index write --bitmap`).
 */

/** A bitmap carried over: its bytes and what it took. */
export interface CarriedBitmap {
  bytes: Buffer;
  commits: number;
  /** Whether the objects moved (else the commit bitmaps are copied as they are). */
  permuted: boolean;
  /** Objects of the new pack the old one did not have. */
  added: number;
}

/**
 * The bitmap of `src` (read from `bitmapFile`) for `dst`, a pack holding every object of `src`;
 * throws a GitError saying why when it cannot be carried over. Besides the old file's own checks
 * (parseBitmap: its trailer, every EWAH, each object in exactly one type bitmap), each bitmapped
 * commit is read in the new pack and must be a commit there, and the bitmap written is parsed
 * back whole before it is returned. The types of added objects are read from the new pack.
 */
export function carryBitmap(src: Pack, bitmapFile: string, dst: Pack): CarriedBitmap {
  const algo = src.algo;
  const old = parseBitmap(readRegular(bitmapFile), src.count, algo, bitmapFile);
  if (!old.packChecksum.equals(src.idx.packChecksum))
    throw corrupt(
      'bad-bitmap',
      bitmapFile,
      12,
      `bitmap belongs to another pack than ${src.packPath}`,
    );
  const map = idxMap(src.idx, dst.idx, bitmapFile);
  // Old pack position -> new pack position.
  const oldOrder = src.order;
  const newRank = dst.rank;
  const perm = new Uint32Array(src.count);
  let identity = true;
  for (let p = 0; p < src.count; p++) {
    perm[p] = newRank[map[oldOrder[p]!]!]!;
    if (perm[p] !== p) identity = false;
  }
  const types = new PackTypes(dst);
  const typeAt = newPackTypes(old.types, perm, types, bitmapFile);
  const entries: BitmapEntry[] = old.entries.map((e) => {
    const commitPos = map[e.commitPos]!;
    const t = types.at(commitPos);
    if (t !== OBJ_COMMIT || typeAt[newRank[commitPos]!] !== OBJ_COMMIT)
      throw corrupt(
        'bad-bitmap',
        bitmapFile,
        0,
        `entry for ${dst.idx.idAt(commitPos).toString('hex')}, which is not a commit in the new pack (${typeName(t)})`,
      );
    return { ...e, commitPos, ewah: identity ? e.ewah : permuteEwah(e.ewah, perm) };
  });
  const hashCache =
    old.hashCache === undefined ? undefined : moveHashes(old.hashCache, map, dst.count);
  const bytes = encodeBitmap(
    {
      options: old.options,
      packChecksum: dst.idx.packChecksum,
      types: typeBitmaps(typeAt),
      entries,
      hashCache,
    },
    algo,
  );
  // Never installed unread: the new file, parsed back whole against the new pack.
  parseBitmap(bytes, dst.count, algo, `new bitmap for ${dst.packPath}`);
  return { bytes, commits: entries.length, permuted: !identity, added: dst.count - src.count };
}

/** The name-hash cache in the new idx order: each hash moved with its object, 0 for the objects added. */
function moveHashes(old: Buffer, map: Uint32Array, count: number): Buffer {
  const out = Buffer.alloc(count * 4);
  for (let i = 0; i < map.length; i++) {
    const s = i * 4;
    const d = map[i]! * 4;
    out[d] = old[s]!;
    out[d + 1] = old[s + 1]!;
    out[d + 2] = old[s + 2]!;
    out[d + 3] = old[s + 3]!;
  }
  return out;
}

/** Idx position in `b` of each object of `a` (a merge: both are sorted); throws if one is missing. */
function idxMap(a: PackIndex, b: PackIndex, file: string): Uint32Array {
  const len = a.algo.len;
  const ai = a.ids;
  const bi = b.ids;
  const map = new Uint32Array(a.count);
  let missing = 0;
  let j = 0;
  for (let i = 0; i < a.count; i++) {
    const at = i * len;
    while (j < b.count && bi.compare(ai, at, at + len, j * len, j * len + len) < 0) j++;
    if (j < b.count && bi.compare(ai, at, at + len, j * len, j * len + len) === 0) map[i] = j++;
    else missing++;
  }
  if (missing > 0)
    throw new GitError(
      'unsupported',
      `${file}: ${missing} objects of its pack are not in the new pack (kept elsewhere)`,
      { file },
    );
  return map;
}

/**
 * The type of each object of the new pack by pack position: the old objects' from git's type
 * bitmaps (each old object in exactly one), the added objects' read from the new pack.
 */
function newPackTypes(
  oldTypes: Buffer[],
  perm: Uint32Array,
  types: PackTypes,
  file: string,
): Uint8Array {
  const typeAt = new Uint8Array(types.pack.count);
  oldTypes.forEach((ewah, t) => {
    for (const p of ewahPositions(ewah)) {
      if (typeAt[perm[p]!] !== 0)
        throw corrupt('bad-bitmap', file, 0, `object at pack position ${p} is in two type bitmaps`);
      typeAt[perm[p]!] = t + 1;
    }
  });
  let covered = 0;
  for (const p of perm) if (typeAt[p] !== 0) covered++;
  if (covered !== perm.length)
    throw corrupt('bad-bitmap', file, 0, `${perm.length - covered} objects are in no type bitmap`);
  const order = types.pack.order;
  for (let q = 0; q < typeAt.length; q++) if (typeAt[q] === 0) typeAt[q] = types.at(order[q]!);
  return typeAt;
}

/**
 * Real types of entries of a pack, read from entry headers down each delta chain (git's
 * `packed_object_info` for the type), remembered along the way; only for the few entries asked.
 */
class PackTypes implements ChainVisitor, BaseLocator {
  /** Real type by offset. */
  private readonly types = new Map<number, number>();
  /** The offsets of the deltas of the chain being walked. */
  private readonly chain: number[] = [];
  constructor(readonly pack: Pack) {}

  known(_: Pack, off: number): boolean {
    return this.types.has(off);
  }

  delta(_: Pack, e: RawEntry): void {
    this.chain.push(e.offset);
  }

  /** A REF_DELTA's base is looked for in this pack only. */
  locate(): undefined {
    return undefined;
  }

  /** The type of the object at idx position `j`. */
  at(j: number): number {
    const { pack, chain } = this;
    chain.length = 0;
    const end = walkToBase(this, pack, pack.idx.offsets[j]!, this, true);
    if (end.kind === 'missing')
      throw corrupt('bad-pack', pack.packPath, end.entry.offset, 'delta base not in the pack');
    const t =
      end.kind === 'known'
        ? this.types.get(end.offset)!
        : end.kind === 'base'
          ? end.entry.hdr.type
          : 0;
    if (!isBaseType(t))
      throw corrupt('bad-pack', pack.packPath, pack.idx.offsets[j]!, `entry of type ${t}`);
    if (end.kind === 'base') this.types.set(end.entry.offset, t);
    for (const off of chain) this.types.set(off, t);
    return t;
  }
}

/** The four type bitmaps of a pack (git's `bitmap_writer_build_type_index`: `ewah_set` in pack order). */
function typeBitmaps(typeAt: Uint8Array): Buffer[] {
  const counts = [0, 0, 0, 0];
  for (const t of typeAt) counts[t - 1]!++;
  const pos = counts.map((n) => new Uint32Array(n));
  const k = [0, 0, 0, 0];
  for (let q = 0; q < typeAt.length; q++) {
    const t = typeAt[q]! - 1;
    pos[t]![k[t]!++] = q;
  }
  return pos.map((p) => encodeEwah(p, 'set'));
}

/** What becomes of the bitmap of one partition's new pack. */
export type BitmapOutcome = (
  { kind: 'none' } | { kind: 'carried'; tmp: string; carried: CarriedBitmap } | { kind: 'midx' }
) & {
  /** Why a bitmap a source pack had is not carried over. */
  warning?: string | undefined;
};

export interface BitmapContext {
  algo: HashAlgo;
  packDir: string;
  /** Every source pack, opened, by base. */
  opened: Map<string, Pack>;
  /** `--write-bitmap-index` (true), `--no-write-bitmap-index` (false), or keep one where there was one. */
  writeBitmap: boolean | undefined;
  /** A retained (kept, cruft) pack that has a bitmap: git reads one bitmap only. */
  retainedBitmap: string | undefined;
  /** Temporary files of the run (removed by its cleanup). */
  tmpFiles: string[];
  onProgress: (phase: string, done: number, total: number) => void;
}

/** The partition's source pack whose bitmap is carried over: the largest with one (git's choice for a midx). */
export function bitmapSource<T extends { base: string; bitmap?: boolean }>(
  sources: T[],
  opened: Map<string, Pack>,
): T | undefined {
  let best: T | undefined;
  for (const s of sources)
    if (
      s.bitmap === true &&
      (best === undefined || opened.get(s.base)!.count > opened.get(best.base)!.count)
    )
      best = s;
  return best;
}

/**
 * The bitmap of partition `x`'s new pack: carried over from its source's into a temporary file
 * (fsynced, installed before the `.idx`), or git's multi-pack-index bitmap, or none.
 */
export function newPackBitmap(
  x: WrittenPartition,
  installing: boolean,
  c: BitmapContext,
): BitmapOutcome {
  const from = bitmapSource(x.sources, c.opened);
  const want = c.writeBitmap ?? from !== undefined;
  if (!want || (from === undefined && x.kind === 'promisor')) return { kind: 'none' };
  if (c.retainedBitmap !== undefined) {
    const warning =
      from === undefined
        ? undefined
        : `${from.base}.bitmap is not carried over: ${c.retainedBitmap}.bitmap stays, and git reads only one bitmap`;
    return { kind: 'none', warning };
  }
  if (!installing) {
    const there = join(c.packDir, x.final);
    if (existsSync(there + '.bitmap')) return { kind: 'none' };
    return {
      kind: 'midx',
      warning:
        from &&
        `${from.base}.bitmap is not carried over: ${there}.pack was already in place without one; git writes a multi-pack-index bitmap instead`,
    };
  }
  if (from === undefined) return { kind: 'midx' }; // -b, and no bitmap to carry over
  c.onProgress('carrying the bitmap over', 0, 1);
  const dst = Pack.open(x.w.packPath, c.algo, x.w.idxPath, x.w.revPath);
  try {
    const carried = carryBitmap(c.opened.get(from.base)!, from.base + '.bitmap', dst);
    const tmp = tmpPath(c.packDir, 'bitmap');
    c.tmpFiles.push(tmp);
    writeFileDurable(tmp, carried.bytes); // 0444, as git's odb_mkstemp makes it
    c.onProgress('carrying the bitmap over', 1, 1);
    return { kind: 'carried', tmp, carried };
  } catch (e) {
    if (!(e instanceof GitError)) throw e;
    return {
      kind: 'midx',
      warning: `${from.base}.bitmap is not carried over (${e.detail}${e.offset === undefined ? '' : ` at offset ${e.offset}`}); git writes a multi-pack-index bitmap instead`,
    };
  } finally {
    dst.close();
  }
}
