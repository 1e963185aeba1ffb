import type { HashAlgo } from '../hash/algo.js';
import { crc32 } from 'node:zlib';
import { corrupt } from '../errors.js';
import { releaseNow } from '../release.js';

export const IDX_MAGIC = 0xff744f63; // "\377tOc"
export const FANOUT_BYTES = 256 * 4;
/** Offsets above this go to the 64-bit table (git's default `pack_idx_opts.off32_limit`). */
export const DEFAULT_OFF32_LIMIT = 0x7fffffff;

/** Offsets by idx position; 4 bytes per object when every offset fits (packs under 2 GiB). */
export type Offsets = Float64Array | Uint32Array;

/**
 * A pack's `.idx` (v1 or v2), parsed once into typed arrays: ids stay bytes in one buffer,
 * sorted as in the file. Lookup is fanout plus binary search (git's `bsearch_pack`).
 */
export class PackIndex {
  private idsHeld: Buffer | undefined;
  private rawHeld: Buffer | undefined;
  /** Where `crc` reads (the file, or a copy of its CRC32 table once the file is let go). */
  private crcs: Buffer | undefined;
  /** CRC32s of the id and CRC32 tables, taken when they were first let go. */
  private idsCrc = 0;
  private crcsCrc = 0;

  constructor(
    readonly file: string,
    readonly version: 1 | 2,
    readonly algo: HashAlgo,
    readonly count: number,
    readonly fanout: Uint32Array,
    /** `count * algo.len` bytes, sorted. */
    ids: Buffer,
    /** Entry offsets by idx position: 32-bit unless the idx has a 64-bit offset table. */
    readonly offsets: Offsets,
    /** The idx file itself (ids and CRC32s are read from it, not copied). */
    raw: Buffer,
    /** Where the CRC32 table starts in `raw`; -1 for idx v1, which has none. */
    private crcAt: number,
    readonly packChecksum: Buffer,
    readonly idxChecksum: Buffer,
    /** How many offsets the 64-bit table holds (v2). */
    readonly largeOffsets: number,
  ) {
    this.idsHeld = ids;
    this.rawHeld = raw;
    this.crcs = raw;
  }

  /** The sorted ids (read from the file again if `releaseIds` let them go). */
  get ids(): Buffer {
    return (this.idsHeld ??= this.readAgain(
      8 + FANOUT_BYTES,
      this.count * this.algo.len,
      this.idsCrc,
      'object ids',
    ));
  }

  /** The idx file as read (verify checks it whole); gone after `releaseIds`. */
  get raw(): Buffer {
    if (this.rawHeld === undefined) throw new Error(`${this.file}: index file no longer held`);
    return this.rawHeld;
  }

  /** Reads `len` bytes of the index file at `at` again (set by `releaseIds`). */
  private reload: ((at: number, len: number) => Buffer) | undefined;

  /**
   * Gives the memory of the ids (20 or 32 bytes per object) back while a long phase needs only
   * the offsets and CRC32s (the rewrite's writing): the file's buffer goes, a copy of its CRC32
   * table stays; `ids` reads them again through `reload` (the owner of the file, which this codec
   * knows nothing of), and checks they are the same bytes. Index version 2 only.
   */
  releaseIds(reload: (at: number, len: number) => Buffer): void {
    if (this.version !== 2 || this.idsHeld === undefined) return;
    this.reload = reload;
    const raw = this.rawHeld;
    if (raw !== undefined) {
      this.idsCrc = crc32(this.idsHeld);
      this.crcs = Buffer.from(raw.subarray(this.crcAt, this.crcAt + 4 * this.count));
      this.crcsCrc = crc32(this.crcs);
      this.crcAt = 0;
      this.rawHeld = undefined;
      releaseNow(raw);
    }
    this.idsHeld = undefined;
  }

  /** After `releaseIds`, the CRC32 table goes too (read again, checked, if `crc` is called). */
  releaseCrcs(): void {
    if (this.reload === undefined || this.rawHeld !== undefined || this.crcs === undefined) return;
    releaseNow(this.crcs);
    this.crcs = undefined;
  }

  /** `len` bytes of the file at `at` that must have the CRC32 `want`. */
  private readAgain(at: number, len: number, want: number, what: string): Buffer {
    if (this.reload === undefined) throw new Error(`${this.file}: ${what} were never let go`);
    const out = this.reload(at, len);
    if (crc32(out) !== want)
      throw corrupt('bad-idx', this.file, at, `${what} changed since the index was first read`);
    return out;
  }

  /** Position of `id` (the `len` bytes at `pos` of `buf`), or -1. */
  find(buf: Uint8Array, pos: number): number {
    const len = this.algo.len;
    const first = buf[pos]!;
    let lo = first === 0 ? 0 : this.fanout[first - 1]!;
    let hi = this.fanout[first]!;
    const ids = this.ids;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const c = ids.compare(buf, pos, pos + len, mid * len, mid * len + len);
      if (c === 0) return mid;
      if (c < 0) lo = mid + 1;
      else hi = mid;
    }
    return -1;
  }

  get hasCrcs(): boolean {
    return this.crcAt >= 0;
  }

  /** CRC32 of the entry at idx position `i` (idx v2 only). */
  crc(i: number): number {
    this.crcs ??= this.readAgain(
      8 + FANOUT_BYTES + this.count * this.algo.len,
      4 * this.count,
      this.crcsCrc,
      'CRC32s',
    );
    return this.crcs.readUInt32BE(this.crcAt + i * 4);
  }

  /** All CRC32s as an array (for re-encoding an idx). */
  crcArray(): Uint32Array {
    const out = new Uint32Array(this.count);
    for (let i = 0; i < this.count; i++) out[i] = this.crc(i);
    return out;
  }

  idAt(i: number): Buffer {
    const len = this.algo.len;
    return this.ids.subarray(i * len, i * len + len);
  }
}

/** Parses an `.idx` file held in memory (its size grows with the object count, not the pack). */
export function parseIdx(buf: Buffer, algo: HashAlgo, file: string): PackIndex {
  const len = algo.len;
  if (buf.length < FANOUT_BYTES + 2 * len)
    throw corrupt('bad-idx', file, 0, 'index file too small');
  const v2 = buf.readUInt32BE(0) === IDX_MAGIC;
  const fanoutAt = v2 ? 8 : 0;
  if (v2) {
    const version = buf.readUInt32BE(4);
    if (version !== 2) throw corrupt('bad-idx', file, 4, `index version ${version} unsupported`);
  }
  if (buf.length < fanoutAt + FANOUT_BYTES + 2 * len)
    throw corrupt('bad-idx', file, 0, 'index file too small');
  const fanout = new Uint32Array(256);
  let prev = 0;
  for (let i = 0; i < 256; i++) {
    const n = buf.readUInt32BE(fanoutAt + i * 4);
    if (n < prev) throw corrupt('bad-idx', file, fanoutAt + i * 4, 'non-monotonic fanout');
    fanout[i] = prev = n;
  }
  const count = prev;
  const body = fanoutAt + FANOUT_BYTES;
  const trailer = buf.length - 2 * len;
  // Copies: the file's buffer may be let go (`releaseIds`).
  const packChecksum = Buffer.from(buf.subarray(trailer, trailer + len));
  const idxChecksum = Buffer.from(buf.subarray(trailer + len));
  // The size must fit the count before anything is allocated for it (a damaged fanout may
  // claim 2^32 objects).
  const minSize = v2 ? body + count * (len + 8) : body + count * (4 + len);
  if (v2 ? minSize > trailer : minSize !== trailer) {
    throw corrupt(
      'bad-idx',
      file,
      fanoutAt + 255 * 4,
      `index size ${buf.length} does not match the ${count} objects its fanout claims`,
    );
  }
  if (!v2) {
    const offsets = new Uint32Array(count);
    const rec = 4 + len;
    const ids = Buffer.allocUnsafe(count * len);
    for (let i = 0; i < count; i++) {
      const at = body + i * rec;
      offsets[i] = buf.readUInt32BE(at);
      buf.copy(ids, i * len, at + 4, at + rec);
    }
    return new PackIndex(
      file,
      1,
      algo,
      count,
      fanout,
      ids,
      offsets,
      buf,
      -1,
      packChecksum,
      idxChecksum,
      0,
    );
  }

  const idsAt = body;
  const crcAt = idsAt + count * len;
  const off32At = crcAt + count * 4;
  const off64At = off32At + count * 4;
  if (off64At > trailer || (trailer - off64At) % 8 !== 0) {
    throw corrupt('bad-idx', file, 0, `index size ${buf.length} does not match ${count} objects`);
  }
  const largeOffsets = (trailer - off64At) / 8;
  const offsets: Offsets = largeOffsets > 0 ? new Float64Array(count) : new Uint32Array(count);
  for (let i = 0; i < count; i++) {
    const o = buf.readUInt32BE(off32At + i * 4);
    if (o & 0x80000000) {
      const k = o & 0x7fffffff;
      if (k >= largeOffsets)
        throw corrupt('bad-idx', file, off32At + i * 4, 'large offset index out of range');
      const hi = buf.readUInt32BE(off64At + k * 8);
      const lo = buf.readUInt32BE(off64At + k * 8 + 4);
      if (hi >= 0x200000) throw corrupt('bad-idx', file, off64At + k * 8, 'offset beyond 2^53');
      offsets[i] = hi * 0x100000000 + lo;
    } else {
      offsets[i] = o;
    }
  }
  const ids = buf.subarray(idsAt, idsAt + count * len);
  return new PackIndex(
    file,
    2,
    algo,
    count,
    fanout,
    ids,
    offsets,
    buf,
    crcAt,
    packChecksum,
    idxChecksum,
    largeOffsets,
  );
}

/**
 * Checks that the ids are strictly increasing (git's `bsearch_pack` and every merge rely on it);
 * returns the first position out of order, or -1.
 */
export function firstUnsortedId(idx: PackIndex): number {
  const len = idx.algo.len;
  const ids = idx.ids;
  for (let i = 1; i < idx.count; i++) {
    const a = (i - 1) * len;
    const b = i * len;
    // The first three bytes decide almost always (read as bytes: a short run's loop is not yet
    // optimised, and a call per id was most of its time).
    const x = (ids[a]! << 16) | (ids[a + 1]! << 8) | ids[a + 2]!;
    const y = (ids[b]! << 16) | (ids[b + 1]! << 8) | ids[b + 2]!;
    if (x < y) continue;
    if (x > y || ids.compare(ids, a, a + len, b, b + len) <= 0) return i;
  }
  return -1;
}

/** Where the id at idx position `i` is stored in the file (for error messages). */
export function idOffsetInFile(idx: PackIndex, i: number): number {
  const len = idx.algo.len;
  return idx.version === 2 ? 8 + FANOUT_BYTES + i * len : FANOUT_BYTES + i * (4 + len) + 4;
}

/** Where the offset of idx position `i` is stored in the file. */
export function offsetOffsetInFile(idx: PackIndex, i: number): number {
  const len = idx.algo.len;
  return idx.version === 2
    ? 8 + FANOUT_BYTES + idx.count * (len + 4) + i * 4
    : FANOUT_BYTES + i * (4 + len);
}

/** Checks the idx trailer hash over everything before it. */
export function idxChecksumOk(buf: Buffer, algo: HashAlgo): boolean {
  const h = algo.create();
  h.update(buf.subarray(0, buf.length - algo.len));
  return h.digest().equals(buf.subarray(buf.length - algo.len));
}

/** Entries sorted by id: the input of the idx writer. */
export interface SortedEntries {
  count: number;
  ids: Buffer;
  offsets: Offsets;
  crcs: Uint32Array;
}

/** The same, read through accessors, so that no sorted copy of the ids needs to exist. */
export interface IdxSource {
  count: number;
  /** Copies the id of the i-th entry (in id order) to `out` at `pos`. */
  copyId(i: number, out: Buffer, pos: number): void;
  offset(i: number): number;
  crc(i: number): number;
  /** How many ids begin with each byte value, when the source has counted them already. */
  fanout?: Uint32Array | undefined;
}

function arraySource(e: SortedEntries, len: number): IdxSource {
  return {
    count: e.count,
    copyId: (i, out, pos) => void e.ids.copy(out, pos, i * len, (i + 1) * len),
    offset: (i) => e.offsets[i]!,
    crc: (i) => e.crcs[i]!,
  };
}

/** Writes an idx v2 exactly as git's `write_idx_file` does (64-bit table past `off32Limit`). */
export function encodeIdxV2(
  entries: SortedEntries | IdxSource,
  packChecksum: Uint8Array,
  algo: HashAlgo,
  off32Limit = DEFAULT_OFF32_LIMIT,
): Buffer {
  const parts: Buffer[] = [];
  emitIdxV2(entries, packChecksum, algo, (b) => parts.push(Buffer.from(b)), off32Limit);
  return Buffer.concat(parts);
}

/** Entries per chunk when an idx is emitted piece by piece. */
const CHUNK_ENTRIES = 1 << 14;

/**
 * The same bytes as `encodeIdxV2`, handed to `emit` in pieces of at most a few hundred KiB (each
 * valid only during the call), so that writing a large index needs no buffer of its size.
 */
export function emitIdxV2(
  entries: SortedEntries | IdxSource,
  packChecksum: Uint8Array,
  algo: HashAlgo,
  emit: (chunk: Buffer) => void,
  off32Limit = DEFAULT_OFF32_LIMIT,
): void {
  const len = algo.len;
  const e = 'ids' in entries ? arraySource(entries, len) : entries;
  const n = e.count;
  const h = algo.create();
  const put = (b: Buffer): void => {
    h.update(b);
    emit(b);
  };
  const isLarge = (off: number): boolean => off > off32Limit || off >= 0x80000000;
  const chunk = Buffer.alloc(CHUNK_ENTRIES * Math.max(len, 8));
  // Header and fanout (from each id's first byte).
  const head = Buffer.alloc(8 + FANOUT_BYTES);
  head.writeUInt32BE(IDX_MAGIC, 0);
  head.writeUInt32BE(2, 4);
  let fan = e.fanout;
  if (fan === undefined) {
    fan = new Uint32Array(256);
    for (let i = 0; i < n; i++) {
      e.copyId(i, chunk, 0);
      fan[chunk[0]!]!++;
    }
  }
  let large = 0;
  for (let i = 0; i < n; i++) if (isLarge(e.offset(i))) large++;
  let acc = 0;
  for (let b = 0; b < 256; b++) {
    acc += fan[b]!;
    head.writeUInt32BE(acc, 8 + b * 4);
  }
  put(head);
  // Ids, CRC32s, 32-bit offsets (or the index into the 64-bit table), 64-bit offsets.
  const sections: [number, (i: number, at: number) => void][] = [
    [len, (i, at) => e.copyId(i, chunk, at)],
    [4, (i, at) => void chunk.writeUInt32BE(e.crc(i), at)],
  ];
  let k = 0;
  sections.push([
    4,
    (i, at) => {
      const off = e.offset(i);
      chunk.writeUInt32BE(isLarge(off) ? (0x80000000 | k++) >>> 0 : off, at);
    },
  ]);
  for (const [width, fill] of sections) {
    for (let i0 = 0; i0 < n; i0 += CHUNK_ENTRIES) {
      const m = Math.min(CHUNK_ENTRIES, n - i0);
      for (let i = 0; i < m; i++) fill(i0 + i, i * width);
      put(chunk.subarray(0, m * width));
    }
  }
  let used = 0;
  for (let i = 0; i < n; i++) {
    const off = e.offset(i);
    if (!isLarge(off)) continue;
    chunk.writeUInt32BE(Math.floor(off / 0x100000000), used);
    chunk.writeUInt32BE(off % 0x100000000, used + 4);
    used += 8;
    if (used === chunk.length) {
      put(chunk.subarray(0, used));
      used = 0;
    }
  }
  if (used > 0) put(chunk.subarray(0, used));
  put(Buffer.from(packChecksum));
  emit(h.digest());
}
