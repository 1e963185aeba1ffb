import { closeSync, fstatSync, openSync, readFileSync, readSync, writeSync } from 'node:fs';
import { GitError, corrupt } from '../errors.js';
import type { HashAlgo } from '../hash/algo.js';
import { sortIds } from '../hash/sort.js';
import { OBJ_BLOB, OBJ_OFS_DELTA, OBJ_REF_DELTA, isBaseType } from '../format/object-type.js';
import { MAX_ENTRY_HEADER, encodeEntryHeader, encodePackHeader, parseEntryHeader } from '../format/pack.js';
import { REV_HEADER, packOrderFromOffsets } from '../format/rev.js';

/** Sequential reads of the new pack, this many bytes at a time. */
const CHUNK = 1 << 20;

/** Which entries of a new pack had their bytes written anew (not copied from a source entry). */
export interface ChangedSelection {
  /** Object types the rewrite re-encoded at least one entry of: every entry of them is taken. */
  types: ReadonlySet<number>;
  /** Ids of loose objects packed (deflated by us): taken whatever their type. */
  looseIds: Buffer[];
  /** Deltas were written whole (their base left the output): every whole entry is taken. */
  allWhole: boolean;
}

/** The pack of changed entries: how many, and which whole objects git must hash to their ids. */
export interface ChangedPack {
  count: number;
  /** By idx position of the new pack: 1 for a whole object taken (git's index must list its id). */
  whole: Uint8Array;
  wholeCount: number;
  bytes: number;
}

/** Buffered sequential writes. */
class Out {
  private readonly fd: number;
  private readonly buf = Buffer.allocUnsafe(1 << 20);
  private used = 0;
  written = 0;


  constructor(readonly path: string) {
    this.fd = openSync(path, 'wx', 0o600);
  }

  /** `src[start, end)`, copied without making a view of it (one entry after another). */
  put(src: Buffer, start: number, end: number): void {
    const n = end - start;
    if (this.used + n > this.buf.length) this.flush();
    if (n >= this.buf.length) this.raw(src.subarray(start, end));
    else this.used += src.copy(this.buf, this.used, start, end);
  }

  flush(): void {
    this.raw(this.buf.subarray(0, this.used));
    this.used = 0;
  }

  private raw(data: Uint8Array): void {
    for (let done = 0; done < data.length; ) done += writeSync(this.fd, data, done, data.length - done, this.written + done);
    this.written += data.length;
  }

  /** Writes `data` at `pos` (outside the sequence). */
  at(pos: number, data: Uint8Array): void {
    for (let done = 0; done < data.length; ) done += writeSync(this.fd, data, done, data.length - done, pos + done);
  }

  close(): void {
    closeSync(this.fd);
  }
}

/**
 * The new pack as the scan needs it: each entry's offset and idx position, in pack order (from
 * the `.rev` when there is one). 8 bytes per entry under 4 GiB: this runs at the rewrite's
 * memory peak on git.git.
 */
function packOrder(w: { idxPath: string; revPath: string | undefined }, algo: HashAlgo, count: number): { offsets: Uint32Array | Float64Array; position: Uint32Array } {
  const len = algo.len;
  const fd = openSync(w.idxPath, 'r');
  let small: Buffer;
  let large: Buffer;
  try {
    // idx v2: header and fanout, ids, CRC32s, 32-bit offsets, then the 64-bit ones.
    const at = 8 + 1024 + count * (len + 4);
    small = readExactly(fd, w.idxPath, at, count * 4);
    large = readExactly(fd, w.idxPath, at + count * 4, Math.max(0, fstatSync(fd).size - at - count * 4 - 2 * len));
  } finally {
    closeSync(fd);
  }
  const offsetOf = (j: number): number => {
    const o = small.readUInt32BE(j * 4);
    if ((o & 0x80000000) === 0) return o;
    const k = (o & 0x7fffffff) * 8;
    if (k + 8 > large.length) throw new GitError('verify-failed', `${w.idxPath}: a 64-bit offset past the table at entry ${j}`);
    return large.readUInt32BE(k) * 0x100000000 + large.readUInt32BE(k + 4);
  };
  let position: Uint32Array;
  if (w.revPath !== undefined) {
    const rv = readFileSync(w.revPath);
    position = new Uint32Array(count);
    for (let r = 0; r < count; r++) position[r] = rv.readUInt32BE(REV_HEADER + r * 4);
  } else {
    const byPosition = new Float64Array(count);
    for (let j = 0; j < count; j++) byPosition[j] = offsetOf(j);
    position = packOrderFromOffsets(byPosition);
  }
  const offsets = large.length === 0 ? new Uint32Array(count) : new Float64Array(count);
  for (let r = 0; r < count; r++) {
    const j = position[r]!;
    if (j >= count) throw new GitError('verify-failed', `${w.revPath ?? w.idxPath}: an entry out of range at ${r}`);
    offsets[r] = offsetOf(j);
    if (r > 0 && offsets[r]! <= offsets[r - 1]!) throw new GitError('verify-failed', `${w.revPath ?? w.idxPath}: entries not in pack order at ${r}`);
  }
  return { offsets, position };
}

function readExactly(fd: number, path: string, at: number, bytes: number, into?: Buffer): Buffer {
  const buf: Buffer = (into ?? Buffer.allocUnsafe(bytes)).subarray(0, bytes);
  for (let done = 0; done < bytes; ) {
    const n = readSync(fd, buf, done, bytes - done, at + done);
    if (n === 0) throw new GitError('verify-failed', `${path}: ends before offset ${at + bytes}`);
    done += n;
  }
  return buf;
}

/** The pack-order rank of the entry at `offset` (sorted `offsets`), or -1. */
function rankAt(offsets: Uint32Array | Float64Array, offset: number, below: number): number {
  let lo = 0;
  let hi = below - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    const v = offsets[mid]!;
    if (v === offset) return mid;
    if (v < offset) lo = mid + 1;
    else hi = mid - 1;
  }
  return -1;
}

/**
 * Writes `out`, a pack of the entries of the new pack whose bytes the rewrite wrote anew, for
 * `git index-pack` to read back (`validateChangedPack`): each whole object as it is (git inflates
 * it and hashes it to its id), each delta as a blob of its own data (git inflates every byte of
 * it and checks its declared size, without resolving the chain: resolving git.git's tree deltas
 * means hashing 5.8 GB of trees). The entries' zlib bytes are copied as they are in the new
 * pack: what git reads is what will be installed. One sequential read of the new pack; memory
 * ~14 bytes per entry (git.git: 12 MB), the new index is never held.
 */
export function writeChangedPack(w: { packPath: string; idxPath: string; revPath: string | undefined; count: number }, algo: HashAlgo, sel: ChangedSelection, outPath: string): ChangedPack {
  const len = algo.len;
  const n = w.count;
  const { offsets, position } = packOrder(w, algo, n);
  const loose = sortedLoose(sel.looseIds, len);
  const typeAt = new Uint8Array(n); // by rank
  const whole = new Uint8Array(n); // by idx position
  let wholeCount = 0;
  let count = 0;
  const out = new Out(outPath);
  const hdr = Buffer.allocUnsafe(MAX_ENTRY_HEADER);
  const pack = openSync(w.packPath, 'r');
  const dataEnd = fstatSync(pack).size - len;
  const chunk = Buffer.allocUnsafe(CHUNK);
  let chunkStart = 0;
  let chunkLen = 0;
  const idAt = Buffer.allocUnsafe(len);
  const idxFd = loose.length > 0 ? openSync(w.idxPath, 'r') : -1;
  try {
    const head = encodePackHeader(0);
    out.put(head, 0, head.length);
    for (let r = 0; r < n; r++) {
      const off = offsets[r]!;
      const end = r + 1 < n ? offsets[r + 1]! : dataEnd;
      if (end > dataEnd || end <= off) throw corrupt('verify-failed', w.packPath, off, 'entry out of range', 'new pack');
      let raw: Buffer;
      // An entry over a chunk: its first chunk only, the rest copied a chunk at a time (issue 21).
      if (end - off > CHUNK) {
        raw = readExactly(pack, w.packPath, off, CHUNK, chunk);
        chunkStart = off;
        chunkLen = CHUNK;
      } else {
        if (off < chunkStart || end > chunkStart + chunkLen) {
          chunkStart = off;
          chunkLen = Math.min(CHUNK, dataEnd - off);
          readExactly(pack, w.packPath, off, chunkLen, chunk);
        }
        raw = chunk.subarray(off - chunkStart, end - chunkStart);
      }
      const h = parseEntryHeader(raw, 0, Math.min(raw.length, MAX_ENTRY_HEADER), len, w.packPath, off);
      let type: number = h.type;
      if (type === OBJ_OFS_DELTA) type = typeAt[rankAt(offsets, off - h.baseDistance, r)] ?? 0;
      else if (type === OBJ_REF_DELTA) type = 0; // the rewrite writes OFS_DELTA only
      if (!isBaseType(type)) throw corrupt('verify-failed', w.packPath, off, 'a delta whose base is not before it', 'new pack');
      typeAt[r] = type;
      const j = position[r]!;
      const isWhole = isBaseType(h.type);
      let take = sel.types.has(type) || (isWhole && sel.allWhole);
      if (!take && isWhole && loose.length > 0) {
        readExactly(idxFd, w.idxPath, 8 + 1024 + j * len, len, idAt);
        take = contains(loose, idAt, 0, len);
      }
      if (!take) continue;
      out.put(hdr, 0, encodeEntryHeader(isWhole ? h.type : OBJ_BLOB, h.size, hdr, 0));
      out.put(raw, h.headerLen, raw.length);
      for (let p = off + raw.length; p < end; p += CHUNK) {
        out.put(readExactly(pack, w.packPath, p, Math.min(CHUNK, end - p), chunk), 0, Math.min(CHUNK, end - p));
        chunkLen = 0; // (the chunk now holds a piece of this entry)
      }
      if (isWhole) {
        whole[j] = 1;
        wholeCount++;
      }
      count++;
    }
    out.flush();
    out.at(0, encodePackHeader(count));
    out.at(out.written, hashFile(outPath, out.written, algo));
  } finally {
    out.close();
    closeSync(pack);
    if (idxFd >= 0) closeSync(idxFd);
  }
  return { count, whole, wholeCount, bytes: out.written + len };
}

/** The hash of a file's first `size` bytes (a pack's trailer). */
function hashFile(path: string, size: number, algo: HashAlgo): Buffer {
  const h = algo.create();
  const fd = openSync(path, 'r');
  const buf = Buffer.allocUnsafe(1 << 20);
  try {
    for (let pos = 0; pos < size; ) {
      const n = readSync(fd, buf, 0, Math.min(buf.length, size - pos), pos);
      if (n === 0) throw new GitError('io', `${path}: shorter than written`);
      h.update(buf.subarray(0, n));
      pos += n;
    }
  } finally {
    closeSync(fd);
  }
  return h.digest();
}

function sortedLoose(ids: Buffer[], len: number): Buffer {
  if (ids.length === 0) return Buffer.alloc(0);
  const all = Buffer.concat(ids);
  const out = Buffer.allocUnsafe(all.length);
  sortIds(all, ids.length, len).forEach((i, r) => all.copy(out, r * len, i * len, (i + 1) * len));
  return out;
}

/** Is the id at `pos` of `buf` in sorted `ids`? */
function contains(ids: Buffer, buf: Buffer, pos: number, len: number): boolean {
  let lo = 0;
  let hi = ids.length / len;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    const c = ids.compare(buf, pos, pos + len, mid * len, (mid + 1) * len);
    if (c === 0) return true;
    if (c < 0) lo = mid + 1;
    else hi = mid;
  }
  return false;
}

/**
 * Did git index every whole object of the pack of changed entries under the id the new pack's
 * idx gives it? Both indexes are sorted by id: one merge, a chunk of each at a time. Every
 * position `cp.whole` marks must be found in git's index (`idxPath`), which must hold
 * `cp.count` objects. Returns what is wrong (the first object not found, as hex), or undefined.
 */
export function wholeNotIndexed(idxPath: string, cp: ChangedPack, newIdxPath: string, algo: HashAlgo): string | undefined {
  const len = algo.len;
  const theirs = new IdReader(idxPath, len);
  const ours = new IdReader(newIdxPath, len);
  try {
    if (theirs.count !== cp.count) return `git indexed ${theirs.count} objects of ${cp.count}`;
    for (let j = 0; j < ours.count; j++) {
      const id = ours.next();
      if (cp.whole[j] !== 1) continue;
      let c = -1;
      while (theirs.left > 0 && (c = theirs.peek().compare(id)) < 0) theirs.next();
      if (c !== 0) return id.toString('hex');
    }
    return undefined;
  } finally {
    theirs.close();
    ours.close();
  }
}

/** The ids of an idx v2 in order, read a chunk at a time. */
class IdReader {
  private readonly fd: number;
  readonly count: number;
  private readonly buf: Buffer;
  private at = 0;
  private pos = 0;
  private have = 0;

  constructor(
    private readonly path: string,
    private readonly len: number,
  ) {
    this.fd = openSync(path, 'r');
    const head = readExactly(this.fd, path, 0, 8 + 1024);
    if (head.readUInt32BE(0) !== 0xff744f63 || head.readUInt32BE(4) !== 2) throw corrupt('verify-failed', path, 0, 'not an index version 2');
    this.count = head.readUInt32BE(8 + 1020);
    this.buf = Buffer.allocUnsafe(4096 * len);
  }

  get left(): number {
    return this.count - this.at;
  }

  peek(): Buffer {
    if (this.pos === this.have) {
      const m = Math.min(4096, this.count - this.at);
      readExactly(this.fd, this.path, 8 + 1024 + this.at * this.len, m * this.len, this.buf);
      this.pos = 0;
      this.have = m;
    }
    return this.buf.subarray(this.pos * this.len, (this.pos + 1) * this.len);
  }

  next(): Buffer {
    const id = this.peek();
    this.pos++;
    this.at++;
    return id;
  }

  close(): void {
    closeSync(this.fd);
  }
}
