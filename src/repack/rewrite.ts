import { deflateSync, inflateSync, crc32 } from 'node:zlib';
import { GitError, corrupt } from '../errors.js';
import { objectHeader, toHex, type HashAlgo } from '../hash/algo.js';
import { OidTable } from '../hash/oid-table.js';
import { sortIds } from '../hash/sort.js';
import { encodeIdxV2 } from '../format/idx.js';
import { encodeRev } from '../format/rev.js';
import { OBJ_OFS_DELTA, isBaseType, isDelta, typeName } from '../format/object-type.js';
import { encodeEntryHeader, encodeOfsDistance, parseEntryHeader, MAX_ENTRY_HEADER } from '../format/pack.js';
import { writeFileDurable } from '../store/files.js';
import { PackFileWriter } from '../format/pack-writer.js';
import { storedZlib, storedZlibEquals, storedZlibLength } from '../format/zlib-stored.js';
import { readLooseFile, loosePath } from '../store/loose.js';
import { MAX_DELTA_DEPTH, type ObjectDatabase } from '../store/odb.js';
import { inflateExact, type Pack } from '../store/pack.js';
import { BROKEN, EXTERNAL_PARENT, NO_PARENT, scanPack, type PackScan } from '../store/pack-scan.js';
import { autoLevel } from './auto.js';
import { encodingMatches, type Levels } from './levels.js';

/** srcPack value of a loose object. */
const LOOSE = 0xffff;

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
  /** The ids in the new pack, sorted (`count * len` bytes): the proof compares them with the old packs. */
  sortedIds: Buffer;
  count: number;
}

export interface RewriteOptions {
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
}

function emptyCounts(): TypeCounts {
  return { commit: 0, tree: 0, blob: 0, tag: 0 };
}

function bump(c: TypeCounts, type: number): void {
  const n = typeName(type);
  if (n === 'commit' || n === 'tree' || n === 'blob' || n === 'tag') c[n]++;
}

/** Deflates at a zlib level; level 0 is written directly as stored blocks, exactly as zlib would. */
export function deflateAt(data: Uint8Array, level: number): Buffer {
  if (level === 0) return storedZlib(data);
  return deflateSync(data, { level });
}

/**
 * Rewrites one partition (all its packs and loose objects) into one new pack in temporary files:
 * every delta kept, only entries whose encoding differs from the target re-encoded, bases placed
 * before their deltas, OFS_DELTA distances recomputed. Every entry is checked on the way through
 * (CRC32 against the old idx for copies, inflate-compare for re-encodes, re-hash for objects
 * resolved whole and loose objects).
 */
export function rewritePartition(input: PartitionInput, opts: RewriteOptions): { stats: RewriteStats; written: WrittenPack | undefined } {
  const { algo, levels } = opts;
  const len = algo.len;
  const progress = opts.onProgress;
  const packs = input.packs;
  const scans: PackScan[] = [];
  let total = input.loose.length;
  for (const p of packs) total += p.count;

  // 1. Scan the source packs (headers, bases, zlib headers; no inflating).
  for (const p of packs) {
    scans.push(
      scanPack(p, {
        checkCrc: false,
        onProblem: (pr) => {
          throw corrupt('bad-pack', pr.file, pr.offset, pr.message);
        },
      }),
    );
  }

  // 2. Select: the first copy of each id wins; objects kept elsewhere are left out.
  const table = new OidTable(len, total);
  const srcPack = new Uint16Array(total);
  const srcIdx = new Uint32Array(total);
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
      const s = table.insert(ids, j * len);
      if (s < 0) {
        dups++;
        continue;
      }
      srcPack[s] = pi;
      srcIdx[s] = j;
      if ((++counted & 0x3fff) === 0) progress?.('counting objects', counted, total);
    }
  }
  for (let li = 0; li < input.loose.length; li++) {
    const id = input.loose[li]!;
    if (opts.excluded(id, 0)) {
      excluded++;
      continue;
    }
    const s = table.insert(id, 0);
    if (s < 0) {
      dups++;
      continue;
    }
    srcPack[s] = LOOSE;
    srcIdx[s] = li;
  }
  const n = table.size;
  progress?.('counting objects', n, n);

  // 3. Bases: a delta keeps its base if the base object is in the output (any copy of it).
  const base = new Int32Array(n).fill(-1);
  const wantWhole = new Uint8Array(n);
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
    if (b >= 0) base[s] = b;
    else wantWhole[s] = 1;
  }

  // 4. Output order: selection order, each base hoisted before its deltas; a cycle across copies
  //    or a chain past the depth cap is broken by writing that delta whole.
  const outOrder = new Uint32Array(n);
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
        base[cur] = -1;
        wantWhole[cur] = 1;
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
        if (d > MAX_DELTA_DEPTH) {
          base[s] = -1;
          wantWhole[s] = 1;
        } else depth[s] = d;
      }
      state[s] = 2;
      outOrder[placed++] = s;
    }
  }

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
  const outOffset = new Float64Array(n);
  const outCrc = new Uint32Array(n);
  const outType = new Uint8Array(n);
  const writer = opts.dryRun ? undefined : new PackFileWriter(opts.tmp.pack, algo, n);
  let offset = 12;
  const hdr = Buffer.allocUnsafe(MAX_ENTRY_HEADER);
  // `auto` decides per entry from its inflated size and current compressed length; the
  // fallback is what the other settings would give (pack.compression, core.compression, -1).
  const levelOf = (t: number, size: number, packedLen: number | undefined): number => {
    const l = levels[t as 1 | 2 | 3 | 4];
    return l === 'auto' ? autoLevel(size, packedLen, opts.autoFallback ?? -1) : l;
  };

  const emit = (s: number, type: number, size: number, baseSel: number, data: Uint8Array | number): void => {
    let hl = encodeEntryHeader(baseSel >= 0 ? OBJ_OFS_DELTA : type, size, hdr, 0);
    if (baseSel >= 0) hl += encodeOfsDistance(offset - outOffset[baseSel]!, hdr, hl);
    outOffset[s] = offset;
    outType[s] = type;
    if (writer === undefined || typeof data === 'number') {
      offset += hl + (typeof data === 'number' ? data : data.length); // dry run: just the size
    } else {
      outCrc[s] = writer!.writeEntry(hdr.subarray(0, hl), data);
      offset += hl + data.length;
    }
  };

  try {
    for (let k = 0; k < n; k++) {
      const s = outOrder[k]!;
      if ((k & 0x3fff) === 0) {
        progress?.('writing objects', k, n);
        opts.signal?.throwIfAborted();
      }
      const pi = srcPack[s]!;
      if (pi === LOOSE) {
        const id = input.loose[srcIdx[s]!]!;
        const file = loosePath(input.looseDir, id);
        const obj = readLooseFile(file);
        checkId(algo, obj.type, obj.data, id, 0, file, 0);
        const level = levelOf(obj.type, obj.data.length, undefined);
        stats.loose++;
        emit(s, obj.type, obj.data.length, -1, opts.dryRun && level === 0 ? storedZlibLength(obj.data.length) : deflateAt(obj.data, level));
        continue;
      }
      const pack = packs[pi]!;
      const scan = scans[pi]!;
      const j = srcIdx[s]!;
      const off = pack.idx.offsets[j]!;
      const end = pack.ends[j]!;
      const entryType = scan.type[j]!;
      const b = base[s]!;
      if (wantWhole[s] && isDelta(entryType)) {
        // The base is not in the output (kept elsewhere, or a cycle was broken here).
        const obj = opts.odb.readPacked(pack, off);
        checkId(algo, obj.type, obj.data, pack.idx.ids, j * len, pack.packPath, off);
        stats.whole++;
        const level = levelOf(obj.type, obj.data.length, undefined);
        emit(s, obj.type, obj.data.length, -1, opts.dryRun && level === 0 ? storedZlibLength(obj.data.length) : deflateAt(obj.data, level));
        continue;
      }
      const type = b >= 0 ? outType[b]! : entryType;
      if (!isBaseType(type)) throw corrupt('bad-pack', pack.packPath, off, 'delta chain does not end in an object');
      const level = levelOf(type, scan.size[j]!, scan.stored[j] === 2 ? undefined : end - off - scan.headerLen[j]!);
      const matches = encodingMatches(level, scan.flevel[j]!, scan.stored[j] === 1);
      if (opts.dryRun) {
        const hl = scan.headerLen[j]!;
        const size = scan.size[j]!;
        let dataLen = end - off - hl;
        if (!matches) {
          bump(stats.reencoded, type);
          if (level === 0) dataLen = storedZlibLength(size);
          else stats.sizeExact = false;
        } else stats.copied++;
        emit(s, type, size, b, dataLen);
        continue;
      }
      const raw = pack.windowed(off, end);
      const h = parseEntryHeader(raw, 0, Math.min(raw.length, MAX_ENTRY_HEADER), len, pack.packPath, off);
      const data = raw.subarray(h.headerLen);
      if (matches) {
        // Copied byte for byte: the old idx's CRC32 proves these are the bytes git indexed.
        const crcs = pack.idx.crcs;
        if (crcs !== null) {
          if (crc32(raw) !== crcs[j]) throw corrupt('bad-pack', pack.packPath, off, 'entry does not match its CRC32 in the index');
        } else {
          inflateExact(data, h.size, pack.packPath, off + h.headerLen);
        }
        stats.copied++;
        emit(s, type, h.size, b, data);
      } else {
        const plain = inflateExact(data, h.size, pack.packPath, off + h.headerLen);
        const again = deflateAt(plain, level);
        // Proof of the re-encode: the new stream inflates to the very same bytes (stored blocks
        // are inflated by our own checker, which needs no zlib engine per entry).
        const same = level === 0 ? storedZlibEquals(again, plain) : inflateSync(again).equals(plain);
        if (!same) {
          throw new GitError('verify-failed', `re-encoded entry at offset ${off} of ${pack.packPath} does not inflate to the same bytes`);
        }
        bump(stats.reencoded, type);
        emit(s, type, h.size, b, again);
      }
    }
    progress?.('writing objects', n, n);
    for (const p of packs) p.releaseWindow();
    stats.bytesOut = offset + len;
    if (opts.dryRun || writer === undefined) return { stats, written: undefined };

    const checksum = writer.finish();
    // Index: ids sorted, with the offsets and CRCs just written.
    const ids = table.idBuffer();
    const sorted = sortIds(ids, n, len);
    const sortedIds = Buffer.allocUnsafe(n * len);
    const sOffsets = new Float64Array(n);
    const sCrcs = new Uint32Array(n);
    const rankOf = new Uint32Array(n);
    for (let r = 0; r < n; r++) {
      const s = sorted[r]!;
      ids.copy(sortedIds, r * len, s * len, s * len + len);
      sOffsets[r] = outOffset[s]!;
      sCrcs[r] = outCrc[s]!;
      rankOf[s] = r;
    }
    for (let r = 1; r < n; r++) {
      if (sortedIds.compare(sortedIds, (r - 1) * len, r * len, r * len, (r + 1) * len) === 0) {
        throw new GitError('verify-failed', `duplicate object ${toHex(sortedIds, r * len, len)} in the new pack`);
      }
    }
    const idxBuf = encodeIdxV2({ count: n, ids: sortedIds, offsets: sOffsets, crcs: sCrcs }, checksum, algo);
    writeDurable(opts.tmp.idx, idxBuf);
    let revPath: string | undefined;
    if (opts.writeRev) {
      const packOrder = new Uint32Array(n);
      for (let k = 0; k < n; k++) packOrder[k] = rankOf[outOrder[k]!]!;
      writeDurable(opts.tmp.rev, encodeRev(packOrder, checksum, algo));
      revPath = opts.tmp.rev;
    }
    return {
      stats,
      written: { packPath: opts.tmp.pack, idxPath: opts.tmp.idx, revPath, checksum, sortedIds, count: n },
    };
  } catch (e) {
    writer?.abort();
    throw e;
  }
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
