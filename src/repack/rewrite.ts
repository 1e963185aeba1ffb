import { GitError, corrupt } from '../errors.js';
import { objectHeader, toHex, type HashAlgo } from '../hash/algo.js';
import { OidRefTable } from '../hash/oid-table.js';
import { sortIds } from '../hash/sort.js';
import { emitIdxV2, encodeIdxV2, firstUnsortedId, idOffsetInFile, type IdxSource, type Offsets } from '../format/idx.js';
import { encodeRev } from '../format/rev.js';
import { OBJ_OFS_DELTA, isBaseType, isDelta, typeName } from '../format/object-type.js';
import { encodeEntryHeader, encodeOfsDistance, MAX_ENTRY_HEADER } from '../format/pack.js';
import { writeChunksDurable, writeFileDurable } from '../store/files.js';
import { PackFileWriter, ThreadedPackWriter, type PackSink } from '../format/pack-writer.js';
import { deflateBound, storedZlibLength } from '../format/zlib-stored.js';
import { readLooseFile, loosePath } from '../store/loose.js';
import { MAX_DELTA_DEPTH, type ObjectDatabase } from '../store/odb.js';
import type { Pack } from '../store/pack.js';
import { BROKEN, EXTERNAL_PARENT, NO_PARENT, scanPack, type PackScan } from '../store/pack-scan.js';
import { autoLevel, autoMaxLength } from './auto.js';
import { releaseNow } from '../release.js';
import { DICT_KINDS, NO_DICT, kindOf } from '../codec/dict.js';
import { zstdCodec, type ZstdCodec } from '../codec/zstd.js';
import { encodeZpackFooter, encodeZpackHeader, type ZpackDict } from '../format/zpack.js';
import { COPY_CRC, COPY_INFLATE, REENCODE, type BatchJob, type BatchResult } from './batch.js';
import { deflateAt } from './deflate.js';
import { BatchPool } from './pool.js';
import { encodingMatches, FIXED_HUFFMAN, type Levels } from './levels.js';

/** levelOf's answer for a type at `keep`. */
const KEEP = -100;
/** srcPack value of a loose object. */
const LOOSE16 = 0xffff;
/** The same when there are fewer than 255 packs (the number then fits in a byte). */
const LOOSE8 = 0xff;
const looseMark = (srcPack: Uint8Array | Uint16Array): number => (srcPack instanceof Uint8Array ? LOOSE8 : LOOSE16);
/** base[] marks: no base (a whole object in its source), or a delta to be written whole. */
const NO_BASE = -1;
const WHOLE = -2;
/** A batch holds at most this many entries or (unless one entry is larger) this many source bytes. */
const BATCH_MAX = 4096;
// 256 KiB batches and one in flight per thread beyond the two being written: on git.git as fast
// as 512 KiB, 1 MiB (and as 4 MiB and four per thread), and lighter: a batch of commits and trees
// stored grows 3-4 times in its output buffer (256 KiB against 512: -2.6 MiB peak, 4.40 s
// against 4.31 s, git repack -a -d 4.52 s; 4 interleaved runs, docs/decisions.md).
const BATCH_BYTES = 256 << 10;
/**
 * Input and output buffers kept for the next batches (each way): two, as a batch is built while
 * the next result is awaited; a buffer more is garbage (1.6 MiB less peak on git.git than keeping
 * every one handed back).
 */
const SPARE_BUFFERS = 2;

export interface PartitionInput {
  kind: 'normal' | 'promisor';
  /** Source packs in order of preference: the first copy of an object wins. */
  packs: Pack[];
  /** Loose object ids (the normal partition only). */
  loose: Buffer[];
  looseDir: string;
}

export interface TypeCounts {
  commit: number;
  tree: number;
  blob: number;
  tag: number;
}

export interface RewriteStats {
  objects: number;
  copied: number;
  reencoded: TypeCounts;
  whole: number;
  loose: number;
  duplicatesDropped: number;
  excluded: number;
  bytesIn: number;
  bytesOut: number;
  /** False when a dry run had to estimate the size of entries re-encoded at a non-zero level. */
  sizeExact: boolean;
}

export interface WrittenPack {
  packPath: string;
  idxPath: string;
  revPath: string | undefined;
  checksum: Buffer;
  count: number;
  /** Resolves once the pack file is fsynced and closed (it may still be on its way to disk). */
  durable: Promise<void>;
  /**
   * When the writing thread has read the pack back (every header parsed, every entry's CRC32
   * matched): resolves then; with each idx rank's offset and CRC32 as they were checked, for the
   * proof to hold the index on disk against.
   */
  readBack?: { done: Promise<void>; offsetAt(rank: number): number; crcAt(rank: number): number } | undefined;
}

/** Writing a zstd pack instead of a git pack (an export: never into objects/pack). */
export interface ZpackOutput {
  level: number;
  /**
   * Object types stored plain (their data as it is, no frame: the reader tells plain data by
   * its length), e.g. commits and trees, which a walk then reads without decompressing.
   */
  plainTypes?: ReadonlySet<number> | undefined;
  dicts: ZpackDict[];
  refs: string;
  promisor: boolean;
}

export interface RewriteOptions {
  zpack?: ZpackOutput | undefined;
  algo: HashAlgo;
  levels: Levels;
  /** Level of entries that `auto` decides to compress. */
  autoFallback?: number | undefined;
  /** Reads objects from any pack or loose file (for deltas whose base is not in the output). */
  odb: ObjectDatabase;
  /** Objects that stay elsewhere (kept or cruft packs): not packed again. */
  excluded: (id: Uint8Array, pos: number) => boolean;
  dryRun: boolean;
  /** Temporary file names for the pack, idx and rev (in objects/pack). */
  tmp: { pack: string; idx: string; rev: string };
  writeRev: boolean;
  onProgress?: ((phase: string, done: number, total: number) => void) | undefined;
  signal?: AbortSignal | undefined;
  /**
   * Write nothing when the result would be the one source pack byte for byte (the caller
   * knows its other files, such as the `.rev`, need nothing either); `unchanged` says so.
   */
  skipIfUnchanged?: boolean | undefined;
}

function emptyCounts(): TypeCounts {
  return { commit: 0, tree: 0, blob: 0, tag: 0 };
}

function bump(c: TypeCounts, type: number): void {
  const n = typeName(type);
  if (n === 'commit' || n === 'tree' || n === 'blob' || n === 'tag') c[n]++;
}


/**
 * Rewrites one partition (all its packs and loose objects) into one new pack in temporary files:
 * every delta kept, only entries whose encoding differs from the target re-encoded, bases placed
 * before their deltas, OFS_DELTA distances recomputed. Every entry is checked on the way through
 * (CRC32 against the old idx for copies, inflate-compare for re-encodes, re-hash for objects
 * resolved whole and loose objects).
 */
export async function rewritePartition(input: PartitionInput, opts: RewriteOptions): Promise<{ stats: RewriteStats; written: WrittenPack | undefined; unchanged?: boolean }> {
  const { algo, levels } = opts;
  const len = algo.len;
  const progress = opts.onProgress;
  const packs = input.packs;
  const scans: PackScan[] = [];
  let total = input.loose.length;
  for (const p of packs) total += p.count;

  // 1. Scan the source packs (headers, bases, zlib headers; no inflating). Their ids must be
  //    sorted: the new index is a merge of them.
  for (const p of packs) {
    const unsorted = firstUnsortedId(p.idx);
    if (unsorted >= 0) throw corrupt('bad-idx', p.idxPath, idOffsetInFile(p.idx, unsorted), 'object ids out of order');
    scans.push(
      scanPack(p, {
        checkCrc: false,
        onProblem: (pr) => {
          throw corrupt('bad-pack', pr.file, pr.offset, pr.message);
        },
      }),
    );
  }
  // What the writing needs of each source entry besides its size, in 16 bits instead of four
  // bytes: type (3 bits), stored (2), FLEVEL (2), header length (9).
  const info = scans.map((sc) => {
    const a = new Uint16Array(sc.type.length);
    for (let j = 0; j < a.length; j++) a[j] = sc.type[j]! | (sc.stored[j]! << 3) | (sc.flevel[j]! << 5) | (sc.headerLen[j]! << 7);
    releaseNow(sc.type, sc.stored, sc.flevel, sc.headerLen);
    return a;
  });
  const typeOf = (pi: number, j: number): number => info[pi]![j]! & 7;
  const headerLenOf = (pi: number, j: number): number => info[pi]![j]! >> 7;

  // 2. Select: the first copy of each id wins; objects kept elsewhere are left out. Selected
  //    objects are numbered in order; the table reads their ids where they already are.
  const srcPack = packs.length < LOOSE8 ? new Uint8Array(total) : new Uint16Array(total);
  const LOOSE = looseMark(srcPack);
  const srcIdx = new Uint32Array(total);
  const idOf = (v: number, ref: { buf: Uint8Array; pos: number }): void => {
    const pi = srcPack[v]!;
    if (pi === LOOSE) {
      ref.buf = input.loose[srcIdx[v]!]!;
      ref.pos = 0;
    } else {
      ref.buf = packs[pi]!.idx.ids;
      ref.pos = srcIdx[v]! * len;
    }
  };
  const table = new OidRefTable(len, total, idOf);
  let excluded = 0;
  let dups = 0;
  let counted = 0;
  for (let pi = 0; pi < packs.length; pi++) {
    const p = packs[pi]!;
    const order = p.order;
    const ids = p.idx.ids;
    for (let i = 0; i < order.length; i++) {
      const j = order[i]!;
      if (opts.excluded(ids, j * len)) {
        excluded++;
        continue;
      }
      const s = table.size;
      srcPack[s] = pi;
      srcIdx[s] = j;
      if (table.insert(s, ids, j * len) < 0) {
        dups++;
        continue;
      }
      if ((++counted & 0x3fff) === 0) progress?.('counting objects', counted, total);
    }
  }
  for (let li = 0; li < input.loose.length; li++) {
    const id = input.loose[li]!;
    if (opts.excluded(id, 0)) {
      excluded++;
      continue;
    }
    const s = table.size;
    srcPack[s] = LOOSE;
    srcIdx[s] = li;
    if (table.insert(s, id, 0) < 0) {
      dups++;
      continue;
    }
  }
  const n = table.size;
  progress?.('counting objects', n, n);
  // Each source entry's length: from here on nothing needs the sources' pack order (8 bytes per
  // object for the order and its inverse, against 4 for this).
  const entryLen = packs.map((p) => p.entryLengths());
  if (!opts.dryRun) for (const p of packs) p.releaseOrder();
  const entryEnd = (pi: number, j: number): number => packs[pi]!.idx.offsets[j]! + entryLen[pi]![j]!;

  // 3. Bases: a delta keeps its base if the base object is in the output (any copy of it).
  // base[s]: the selection number of s's base; NO_BASE, or WHOLE for a delta written whole
  // (its base is not in the output, or a cycle or the depth cap is broken there).
  const base = new Int32Array(n).fill(NO_BASE);
  for (let s = 0; s < n; s++) {
    if (srcPack[s] === LOOSE) continue;
    const pi = srcPack[s]!;
    const scan = scans[pi]!;
    const j = srcIdx[s]!;
    const par = scan.parent[j]!;
    if (par === NO_PARENT) continue;
    let b = -1;
    if (par >= 0) b = table.lookup(packs[pi]!.idx.ids, par * len);
    else if (par === EXTERNAL_PARENT) {
      const ext = scan.externalBase.get(j)!;
      b = table.lookup(ext, 0);
    } else if (par === BROKEN) {
      throw corrupt('bad-pack', packs[pi]!.packPath, packs[pi]!.idx.offsets[j]!, 'unparseable entry');
    }
    base[s] = b >= 0 ? b : WHOLE;
  }

  table.release(); // 8 bytes per object, needed only to find the bases
  for (const scan of scans) releaseNow(scan.parent); // read only above (4 bytes per object)
  // The writing needs the sources' offsets and CRC32s, not their ids (17 MB on git.git): they
  // are read from the .idx again for the new index.
  if (!opts.dryRun) for (const p of packs) p.releaseIds();

  // 4. Output order: selection order, each base hoisted before its deltas; a cycle across copies
  //    or a chain past the depth cap is broken by writing that delta whole.
  // In shared memory: the thread that writes a large pack reads the layout from them.
  const outOrder = new Uint32Array(new SharedArrayBuffer(4 * n));
  const state = new Uint8Array(n); // 0 new, 1 on the chain being placed, 2 placed
  const depth = new Uint16Array(n);
  let placed = 0;
  const chain: number[] = [];
  for (let s0 = 0; s0 < n; s0++) {
    if (state[s0] === 2) continue;
    chain.length = 0;
    let cur = s0;
    state[cur] = 1;
    chain.push(cur);
    for (;;) {
      const b = base[cur]!;
      if (b < 0 || state[b] === 2) break;
      if (state[b] === 1) {
        base[cur] = WHOLE;
        break;
      }
      state[b] = 1;
      chain.push(b);
      cur = b;
    }
    for (let k = chain.length - 1; k >= 0; k--) {
      const s = chain[k]!;
      const b = base[s]!;
      if (b >= 0) {
        const d = depth[b]! + 1;
        if (d > MAX_DELTA_DEPTH) base[s] = WHOLE;
        else depth[s] = d;
      }
      state[s] = 2;
      outOrder[placed++] = s;
    }
  }
  releaseNow(state, depth);

  /** The largest pack the entries could make: each at its raw length or its largest re-encoding. */
  const outputBound = (): number => {
    let bound = 12 + len;
    for (let s = 0; s < n; s++) {
      if (base[s] === WHOLE) return Infinity;
      const pi = srcPack[s]!;
      const j = srcIdx[s]!;
      const size = scans[pi]!.size[j]!;
      bound += MAX_ENTRY_HEADER + Math.max(entryLen[pi]![j]!, storedZlibLength(size), deflateBound(size));
    }
    return bound;
  };

  // 5. Write (or, for a dry run, measure) every entry in output order.
  const stats: RewriteStats = {
    objects: n,
    copied: 0,
    reencoded: emptyCounts(),
    whole: 0,
    loose: 0,
    duplicatesDropped: dups,
    excluded,
    bytesIn: 0,
    bytesOut: 0,
    sizeExact: true,
  };
  for (const p of packs) stats.bytesIn += p.size;
  // 32-bit offsets (4 bytes per object less) when the pack cannot reach 4 GiB whatever each entry
  // becomes: the bound counts every pack entry at its largest encoding; loose objects and
  // deltas written whole (sizes not known yet) and zstd output always get 64-bit ones.
  const zout = opts.zpack;
  const small = zout === undefined && input.loose.length === 0 && outputBound() < 0x100000000;
  const outOffset: Offsets = small ? new Uint32Array(new SharedArrayBuffer(4 * n)) : new Float64Array(new SharedArrayBuffer(8 * n));
  const outCrc = new Uint32Array(new SharedArrayBuffer(4 * n));
  const outType = new Uint8Array(n);
  if (zout !== undefined && opts.dryRun) throw new GitError('usage', 'a dry run cannot predict zstd sizes');
  const header = zout === undefined ? undefined : encodeZpackHeader({ count: n, algo, promisor: zout.promisor, level: zout.level, dicts: zout.dicts, refs: zout.refs });
  if (packs.filter((p) => p.isZpack).length > 1) throw new GitError('unsupported', 'only one zstd pack can be read per rewrite');
  const hdr = Buffer.allocUnsafe(MAX_ENTRY_HEADER);
  // `auto` decides per entry from its inflated size and current compressed length; the
  // fallback is what the other settings would give (pack.compression, core.compression, -1).
  // `keep` gives KEEP: the entry is copied as it is when it can be, else compressed at the fallback.
  const usesAuto = Object.values(levels).includes('auto');
  const levelOf = (t: number, size: number, packedLen: number | undefined, block = 0): number => {
    const l = levels[t as 1 | 2 | 3 | 4];
    return l === 'auto' ? autoLevel(size, packedLen, opts.autoFallback ?? -1, undefined, block) : l === 'keep' ? KEEP : l;
  };
  /** Whether `auto` compressed this entry at its fallback level: then a stream too long for its ratio is stored instead. */
  const settlesByLength = (t: number, level: number): boolean => levels[t as 1 | 2 | 3 | 4] === 'auto' && level !== 0 && level !== FIXED_HUFFMAN && zout === undefined;
  const isDirect = (s: number): boolean => srcPack[s] === LOOSE || base[s] === WHOLE;
  /** What happens to a pack entry: its type, level and whether its encoding already matches. */
  const classify = (s: number): { type: number; level: number; matches: boolean } => {
    const pack = packs[srcPack[s]!]!;
    const scan = scans[srcPack[s]!]!;
    const j = srcIdx[s]!;
    const inf = info[srcPack[s]!]![j]!;
    const stored = (inf >> 3) & 3;
    const off = pack.idx.offsets[j]!;
    const b = base[s]!;
    const type = b >= 0 ? outType[b]! : typeOf(srcPack[s]!, j);
    if (!isBaseType(type)) throw corrupt('bad-pack', pack.packPath, off, 'delta chain does not end in an object');
    outType[s] = type;
    let level = levelOf(type, usesAuto ? scan.size[j]! : 0, stored === 2 ? undefined : entryLen[srcPack[s]!]![j]! - headerLenOf(srcPack[s]!, j), stored);
    const keep = level === KEEP;
    if (keep) level = opts.autoFallback ?? -1;
    // A zstd pack written, or read (stored === 2: no zlib stream), never copies its data as is.
    const matches = zout === undefined && stored !== 2 && (keep || encodingMatches(level, (inf >> 5) & 3, stored));
    return { type, level, matches };
  };
  /** The same, counted in the stats. */
  const decide = (s: number): { type: number; level: number; matches: boolean } => {
    const d = classify(s);
    if (d.matches) stats.copied++;
    else bump(stats.reencoded, d.type);
    return d;
  };
  /**
   * Whether the pack written would be the one source pack byte for byte: every entry copied, in
   * the same order, at the same offset, with the same header. Then nothing is written at all.
   */
  const sameAsSource = (): boolean => {
    if (opts.skipIfUnchanged !== true || opts.dryRun || zout !== undefined) return false;
    if (packs.length !== 1 || input.loose.length > 0 || excluded > 0 || dups > 0) return false;
    const pack = packs[0]!;
    const scan = scans[0]!;
    if (pack.isZpack || n !== pack.count) return false;
    let off = 12;
    for (let k = 0; k < n; k++) {
      const s = outOrder[k]!;
      if (isDirect(s)) return false;
      const j = srcIdx[s]!;
      if (pack.idx.offsets[j] !== off) return false;
      const b = base[s]!;
      const { type, matches } = classify(s);
      if (!matches) return false;
      const end = entryEnd(0, j);
      let hl = encodeEntryHeader(b >= 0 ? OBJ_OFS_DELTA : type, scan.size[j]!, hdr, 0);
      if (b >= 0) hl += encodeOfsDistance(off - pack.idx.offsets[srcIdx[b]!]!, hdr, hl);
      if (hl !== headerLenOf(0, j)) return false;
      off = end;
    }
    return off === pack.dataEnd;
  };
  if (sameAsSource()) {
    stats.copied = n;
    stats.bytesOut = packs[0]!.size;
    return { stats, written: undefined, unchanged: true };
  }
  // While writing, each entry's size comes from its header as the re-encoding thread reads it:
  // the scan's sizes (4 bytes per object) are needed no longer, unless `auto` chooses by size.
  if (!opts.dryRun && !usesAuto) for (const sc of scans) releaseNow(sc.size);
  const pool = opts.dryRun ? undefined : new BatchPool(BatchPool.threadsFor(n));
  let writer: PackSink | undefined;
  let zwriter: PackFileWriter | undefined;
  try {
    if (pool === undefined) writer = undefined;
    else if (zout !== undefined || pool.threads === 0) writer = zwriter = new PackFileWriter(opts.tmp.pack, algo, n, outCrc, header);
    else writer = new ThreadedPackWriter(opts.tmp.pack, algo, n, { offsets: outOffset, order: outOrder, crcs: outCrc });
  } catch (e) {
    await pool?.close();
    throw e;
  }
  let offset = writer?.offset ?? 12;
  // Dictionary of each kind in the output (zstd), and the one zstd source pack's dictionaries.
  const outDictOfKind = DICT_KINDS.map((_, k) => (zout === undefined ? NO_DICT : zout.dicts.findIndex((d) => d.kind === k)));
  const zsrc = packs.filter((p) => p.isZpack);
  let mainZstd: ZstdCodec | undefined;

  /** Writes entry `s` with data `data[start, end)` (or, for a dry run, counts `data` bytes). */
  const emit = (s: number, type: number, size: number, baseSel: number, data: Buffer | number, start = 0, end = typeof data === 'number' ? data : data.length): void => {
    let hl = encodeEntryHeader(baseSel >= 0 ? OBJ_OFS_DELTA : type, size, hdr, 0);
    if (baseSel >= 0) hl += encodeOfsDistance(offset - outOffset[baseSel]!, hdr, hl);
    outOffset[s] = offset;
    if (writer !== undefined && typeof data !== 'number') writer.writeEntry(hdr, data, s, hl, start, end);
    offset += hl + end - start;
  };

  /** An object not copied from a pack entry: a loose object, or a delta written whole. */
  const direct = (s: number): { type: number; size: number; data: Buffer | number } => {
    const pi = srcPack[s]!;
    let obj: { type: number; data: Buffer };
    if (pi === LOOSE) {
      const id = input.loose[srcIdx[s]!]!;
      const file = loosePath(input.looseDir, id);
      obj = readLooseFile(file);
      checkId(algo, obj.type, obj.data, id, 0, file, 0);
      stats.loose++;
    } else {
      // The base is not in the output (kept elsewhere, or a cycle was broken here).
      const pack = packs[pi]!;
      const j = srcIdx[s]!;
      obj = opts.odb.readPacked(pack, pack.idx.offsets[j]!);
      checkId(algo, obj.type, obj.data, pack.idx.ids, j * len, pack.packPath, pack.idx.offsets[j]!);
      stats.whole++;
    }
    outType[s] = obj.type;
    let level = levelOf(obj.type, obj.data.length, undefined);
    if (level === KEEP) level = opts.autoFallback ?? -1;
    let data: Buffer | number;
    if (zout !== undefined) {
      mainZstd ??= zstdCodec(zout.dicts.map((d) => d.data));
      const dict = outDictOfKind[kindOf(obj.type, false)] ?? NO_DICT;
      const frame = zout.plainTypes?.has(obj.type) === true ? obj.data : mainZstd.compress(obj.data, zout.level, dict);
      data = frame.length < obj.data.length ? frame : obj.data;
    } else {
      data = opts.dryRun && level === 0 ? storedZlibLength(obj.data.length) : deflateAt(obj.data, level);
      if (typeof data !== 'number' && settlesByLength(obj.type, level) && data.length > autoMaxLength(obj.data.length)) {
        data = opts.dryRun ? storedZlibLength(obj.data.length) : deflateAt(obj.data, 0);
      }
    }
    return { type: obj.type, size: obj.data.length, data };
  };


  if (opts.dryRun) {
    for (let k = 0; k < n; k++) {
      const s = outOrder[k]!;
      if (isDirect(s)) {
        const d = direct(s);
        emit(s, d.type, d.size, -1, d.data);
        continue;
      }
      const { type, level, matches } = decide(s);
      const scan = scans[srcPack[s]!]!;
      const j = srcIdx[s]!;
      let dataLen = entryLen[srcPack[s]!]![j]! - headerLenOf(srcPack[s]!, j);
      if (!matches) {
        if (level === 0) dataLen = storedZlibLength(scan.size[j]!);
        else stats.sizeExact = false;
      }
      emit(s, type, scan.size[j]!, base[s]!, dataLen);
    }
    stats.bytesOut = offset + len;
    return { stats, written: undefined };
  }

  // Batches of consecutive output entries: their source bytes are read in as few spans as
  // possible, checked and re-encoded on worker threads (or inline), then written in order.
  if (pool === undefined) throw new Error('no thread pool for a rewrite that writes');
  if (zsrc.length > 0 || zout !== undefined) pool.setDicts(zsrc[0]?.zstdDicts.dicts, zout?.dicts.map((d) => d.data));
  const inflight: { promise: Promise<BatchResult>; from: number; to: number; directs: Map<number, { type: number; size: number; data: Buffer | number }>; modes: Uint8Array; rawStart: Uint32Array; headerLen: Uint8Array; rawLen: Uint32Array }[] = [];
  const pipelineDepth = Math.max(2, pool.threads + 2);
  let next = 0;
  // Buffers go round between batches (and threads) instead of being garbage: input buffers of
  // at least BATCH_BYTES, output buffers handed back by each result.
  const freeIn: ArrayBuffer[] = [];
  const spareOut: ArrayBuffer[] = [];
  const takeBuffer = (bytes: number): ArrayBuffer => {
    const i = freeIn.findIndex((b) => b.byteLength >= bytes);
    if (i >= 0) return freeIn.splice(i, 1)[0]!;
    return new ArrayBuffer(Math.max(bytes, BATCH_BYTES));
  };
  const buildBatch = (): void => {
    const from = next;
    let bytes = 0;
    let to = from;
    while (to < n && to - from < BATCH_MAX) {
      const s = outOrder[to]!;
      if (!isDirect(s)) {
        const j = srcIdx[s]!;
        const l = entryLen[srcPack[s]!]![j]!;
        if (bytes > 0 && bytes + l > BATCH_BYTES) break;
        bytes += l;
      }
      to++;
    }
    const m = to - from;
    const job: BatchJob = {
      buf: takeBuffer(bytes),
      spare: spareOut.pop(),
      srcDict: zsrc.length > 0 ? new Int8Array(m).fill(-2) : undefined,
      zstdOut: zout !== undefined,
      dstDict: zout !== undefined ? new Int8Array(m).fill(NO_DICT) : undefined,
      n: m,
      rawStart: new Uint32Array(m),
      rawLen: new Uint32Array(m),
      headerLen: new Uint8Array(m),
      hashLen: len,
      mode: new Uint8Array(m),
      level: new Int8Array(m),
      crc: new Uint32Array(m),
      files: packs.map((p) => p.packPath),
      fds: packs.map((p) => p.descriptor),
      spans: new Float64Array(0),
      fileIndex: new Uint16Array(m),
      offset: new Float64Array(m),
      maxLen: usesAuto && zout === undefined ? new Float64Array(m).fill(Infinity) : undefined,
    };
    const directs = new Map<number, { type: number; size: number; data: Buffer | number }>();
    let pos = 0;
    let spanPack: Pack | undefined;
    let spanStart = 0;
    let spanEnd = 0;
    let spanPos = 0;
    // Spans of consecutive source bytes, read by the thread that runs the batch.
    const spans: number[] = [];
    let spanFile = 0;
    const flush = (): void => {
      if (spanPack !== undefined && spanEnd > spanStart) spans.push(spanFile, spanStart, spanEnd - spanStart, spanPos);
      spanPack = undefined;
    };
    for (let i = 0; i < m; i++) {
      const s = outOrder[from + i]!;
      if (isDirect(s)) {
        directs.set(i, direct(s));
        continue;
      }
      const pi = srcPack[s]!;
      const pack = packs[pi]!;
      const j = srcIdx[s]!;
      const off = pack.idx.offsets[j]!;
      const end = entryEnd(pi, j);
      const { level, matches } = decide(s);
      const hasCrc = pack.idx.hasCrcs;
      job.mode[i] = matches ? (hasCrc ? COPY_CRC : COPY_INFLATE) : REENCODE;
      // In a zstd pack, level 0 stands for plain (a type in plainTypes).
      job.level[i] = zout === undefined ? level : zout.plainTypes?.has(outType[s]!) === true ? 0 : zout.level;
      if (!matches && job.maxLen !== undefined && settlesByLength(outType[s]!, level)) job.maxLen[i] = autoMaxLength(scans[pi]!.size[j]!);
      if (pack.isZpack) job.srcDict![i] = pack.zstdDicts.dictOfKind[kindOf(outType[s]!, isDelta(typeOf(pi, j)))] ?? NO_DICT;
      if (zout !== undefined) job.dstDict![i] = outDictOfKind[kindOf(outType[s]!, base[s]! >= 0)] ?? NO_DICT;
      job.crc[i] = hasCrc ? pack.idx.crc(j) : 0;
      job.rawStart[i] = pos;
      job.rawLen[i] = end - off;
      job.headerLen[i] = headerLenOf(pi, j);
      job.fileIndex[i] = pi;
      job.offset[i] = off;
      if (spanPack === pack && off === spanEnd) spanEnd = end;
      else {
        flush();
        spanPack = pack;
        spanFile = pi;
        spanStart = off;
        spanEnd = end;
        spanPos = pos;
      }
      pos += end - off;
    }
    flush();
    job.spans = Float64Array.from(spans);
    const modes = job.mode.slice();
    const rawStart = job.rawStart.slice();
    const headerLen = job.headerLen.slice();
    const rawLen = job.rawLen.slice();
    inflight.push({ promise: pool.run(job), from, to, directs, modes, rawStart, headerLen, rawLen });
    next = to;
  };

  try {
    while (next < n || inflight.length > 0) {
      while (inflight.length < pipelineDepth && next < n) buildBatch();
      const b = inflight.shift()!;
      const r = await b.promise;
      if (r.error) {
        const e = r.error;
        const code = e.code === 'verify-failed' ? 'verify-failed' : 'bad-pack';
        const detail = `${e.message.replace(`${e.file}: `, '').replace(/ at offset \d+$/, '')} at offset ${e.offset}`;
        throw packs.find((p) => p.packPath === e.file)?.corruptObject(e.offset, detail, code) ?? new GitError(code, `${e.file}: ${detail}`, { file: e.file, offset: e.offset });
      }
      const src = Buffer.from(r.buf);
      const out = Buffer.from(r.out);
      for (let i = 0; i < b.to - b.from; i++) {
        const s = outOrder[b.from + i]!;
        const d = b.directs.get(i);
        if (d !== undefined) {
          emit(s, d.type, d.size, -1, d.data);
          continue;
        }
        const size = r.size[i]!;
        if (b.modes[i] === REENCODE) emit(s, outType[s]!, size, base[s]!, out, r.outStart[i]!, r.outStart[i]! + r.outLen[i]!);
        else emit(s, outType[s]!, size, base[s]!, src, b.rawStart[i]! + b.headerLen[i]!, b.rawStart[i]! + b.rawLen[i]!);
      }
      if (r.buf.byteLength <= 2 * BATCH_BYTES && freeIn.length < SPARE_BUFFERS) freeIn.push(r.buf);
      if (r.out !== r.buf && r.out.byteLength > 0 && r.out.byteLength <= 4 * BATCH_BYTES && spareOut.length < SPARE_BUFFERS) spareOut.push(r.out);
      progress?.('writing objects', b.to, n);
      opts.signal?.throwIfAborted();
    }
    progress?.('writing objects', n, n);
    await pool.close(); // its threads' memory goes before the ids come back
    stats.bytesOut = offset + len;
    // What only the writing needed goes before the index is built (about 20 bytes per object).
    for (const scan of scans) releaseNow(scan.size);
    releaseNow(...info);
    releaseNow(base, outType, ...entryLen);
    for (const p of packs) p.idx.releaseCrcs();
    scans.length = 0;
    freeIn.length = 0;
    spareOut.length = 0;
    if (writer === undefined) return { stats, written: undefined };

    // A zstd pack carries its index, whose pack checksum is the hash of everything before it.
    const indexStart = writer.offset;
    let checksum: Buffer;
    let durable: Promise<void>;
    let readBackDone: Promise<void> | undefined;
    if (zwriter !== undefined && zout !== undefined) {
      checksum = zwriter.checksumSoFar();
      durable = Promise.resolve();
    } else ({ checksum, durable, readBack: readBackDone } = await writer.finish());
    // Index: ids sorted (merged from the already sorted source indexes), with the offsets and
    // CRCs just written; the ids are copied from where they are, straight into the idx.
    const sorted = sortedSelection(packs, input.loose, srcPack, srcIdx, n, len);
    const ref = { buf: new Uint8Array(0), pos: 0 };
    for (let r = 1; r < n; r++) {
      idOf(sorted[r - 1]!, ref);
      const a = ref.buf;
      const ap = ref.pos;
      idOf(sorted[r]!, ref);
      if (Buffer.compare(a.subarray(ap, ap + len), ref.buf.subarray(ref.pos, ref.pos + len)) >= 0) {
        throw new GitError('verify-failed', `object ids out of order or duplicated in the new index at ${r}`);
      }
    }
    const idxSource: IdxSource = {
      count: n,
      copyId: (r, out, pos) => {
        idOf(sorted[r]!, ref);
        out.set(ref.buf.subarray(ref.pos, ref.pos + len), pos);
      },
      offset: (r) => outOffset[sorted[r]!]!,
      crc: (r) => outCrc[sorted[r]!]!,
    };
    if (zout !== undefined) {
      const idxBuf = encodeIdxV2(idxSource, checksum, algo);
      zwriter!.appendRaw(idxBuf);
      zwriter!.appendRaw(encodeZpackFooter(indexStart));
      const trailer = zwriter!.finishSync();
      return { stats: { ...stats, bytesOut: zwriter!.offset }, written: { packPath: opts.tmp.pack, idxPath: opts.tmp.pack, revPath: undefined, checksum: trailer, count: n, durable } };
    }
    // Streamed: an index is 28 bytes per object (SHA-1), never held whole.
    writeChunksDurable(opts.tmp.idx, (write) => emitIdxV2(idxSource, checksum, algo, write), 0o444);
    let revPath: string | undefined;
    if (opts.writeRev) {
      const rankOf = new Uint32Array(n);
      for (let r = 0; r < n; r++) rankOf[sorted[r]!] = r;
      const packOrder = new Uint32Array(n);
      for (let k = 0; k < n; k++) packOrder[k] = rankOf[outOrder[k]!]!;
      writeDurable(opts.tmp.rev, encodeRev(packOrder, checksum, algo));
      releaseNow(rankOf, packOrder);
      revPath = opts.tmp.rev;
    }
    releaseNow(srcPack, srcIdx);
    const readBack = readBackDone === undefined ? undefined : readBackTables(readBackDone, outOffset, outCrc, sorted);
    return {
      stats,
      written: { packPath: opts.tmp.pack, idxPath: opts.tmp.idx, revPath, checksum, count: n, durable, readBack },
    };
  } catch (e) {
    await writer?.abort();
    throw e;
  } finally {
    await pool.close();
  }
}

/**
 * What the proof holds the new index against: the offsets and CRC32s written, by index rank.
 * Built out here because a closure made inside `rewritePartition` would keep its whole scope
 * alive (V8 gives all closures of a function one context): on git.git that held the scans and
 * the selection tables, ~30 MB, through the proof.
 */
function readBackTables(done: Promise<void>, outOffset: Offsets, outCrc: Uint32Array, sorted: Uint32Array): NonNullable<WrittenPack['readBack']> {
  return { done, offsetAt: (r) => outOffset[sorted[r]!]!, crcAt: (r) => outCrc[sorted[r]!]! };
}

/**
 * The selected objects in id order: a merge of the source indexes (each already sorted) and of
 * the sorted loose ids, keeping only the selected copy of each object. Many sources fall back
 * to sorting a gathered copy of the ids.
 */
function sortedSelection(packs: Pack[], loose: Buffer[], srcPack: Uint8Array | Uint16Array, srcIdx: Uint32Array, n: number, len: number): Uint32Array {
  const LOOSE = looseMark(srcPack);
  const out = new Uint32Array(n);
  if (packs.length > 32) {
    const ids = Buffer.allocUnsafe(n * len);
    for (let s = 0; s < n; s++) {
      const pi = srcPack[s]!;
      if (pi === LOOSE) loose[srcIdx[s]!]!.copy(ids, s * len);
      else packs[pi]!.idx.ids.copy(ids, s * len, srcIdx[s]! * len, (srcIdx[s]! + 1) * len);
    }
    out.set(sortIds(ids, n, len));
    return out;
  }
  const selOf = packs.map((p) => new Int32Array(p.count).fill(-1));
  const looseSel: number[] = [];
  for (let s = 0; s < n; s++) {
    const pi = srcPack[s]!;
    if (pi === LOOSE) looseSel.push(s);
    else selOf[pi]![srcIdx[s]!] = s;
  }
  const looseIds = Buffer.allocUnsafe(looseSel.length * len);
  looseSel.forEach((s, i) => loose[srcIdx[s]!]!.copy(looseIds, i * len));
  const looseOrder = sortIds(looseIds, looseSel.length, len);
  // Heads: the next selected position of each source.
  const k = packs.length + 1;
  const head = new Int32Array(k);
  const advance = (src: number): void => {
    if (src < packs.length) {
      const sel = selOf[src]!;
      let j = head[src]!;
      while (j < sel.length && sel[j]! < 0) j++;
      head[src] = j;
    }
  };
  for (let src = 0; src < k; src++) advance(src);
  const limit = (src: number): number => (src < packs.length ? selOf[src]!.length : looseSel.length);
  const idAt = (src: number): [Uint8Array, number] =>
    src < packs.length ? [packs[src]!.idx.ids, head[src]! * len] : [looseIds, looseOrder[head[src]!]! * len];
  for (let r = 0; r < n; r++) {
    let best = -1;
    let bb: Uint8Array = looseIds;
    let bp = 0;
    for (let src = 0; src < k; src++) {
      if (head[src]! >= limit(src)) continue;
      const [b, p] = idAt(src);
      if (best < 0 || Buffer.compare(b.subarray(p, p + len), bb.subarray(bp, bp + len)) < 0) {
        best = src;
        bb = b;
        bp = p;
      }
    }
    if (best < 0) throw new GitError('verify-failed', 'fewer objects than selected while sorting the new index');
    out[r] = best < packs.length ? selOf[best]![head[best]!]! : looseSel[looseOrder[head[best]!]!]!;
    head[best]!++;
    advance(best);
  }
  releaseNow(...selOf);
  return out;
}

function writeDurable(path: string, data: Uint8Array): void {
  writeFileDurable(path, data, 0o444);
}

function checkId(algo: HashAlgo, type: number, data: Uint8Array, want: Uint8Array, pos: number, file: string, offset: number): void {
  const h = algo.create();
  h.update(objectHeader(typeName(type), data.length));
  h.update(data);
  const got = h.digest();
  if (got.compare(want, pos, pos + algo.len) !== 0) {
    throw corrupt('bad-object', file, offset, `object hashes to ${toHex(got)}, expected ${toHex(want, pos, algo.len)}`);
  }
}
