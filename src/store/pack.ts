import { closeSync, existsSync, fstatSync, openSync, readFileSync, readSync } from 'node:fs';
import { basename } from 'node:path';
import { inflateSync } from 'node:zlib';
import { GitError, corrupt } from '../errors.js';
import type { HashAlgo } from '../hash/algo.js';
import { PackIndex, parseIdx } from '../format/idx.js';
import { MAX_ENTRY_HEADER, PACK_HEADER_SIZE, parseEntryHeader, parsePackHeader, type EntryHeader } from '../format/pack.js';
import { packOrderFromOffsets, parseRev, revPackChecksum } from '../format/rev.js';

/** One entry's raw bytes and decoded header; `raw` is valid until the next read of the same pack. */
export interface RawEntry {
  offset: number;
  /** Header plus compressed data. */
  raw: Buffer;
  hdr: EntryHeader;
}

const SCRATCH = 1 << 20;

/**
 * A `.pack` and its `.idx` (and `.rev` when present). The pack is read with positioned reads of
 * exactly the bytes an entry spans (known from the sorted offsets), never whole into memory.
 */
export class Pack {
  readonly name: string;
  readonly idx: PackIndex;
  readonly version: number;
  readonly count: number;
  readonly size: number;
  /** `order[i]`: idx position of the i-th entry in pack order. */
  private orderCache: Uint32Array | undefined;
  /** `rank[j]`: position in pack order of the entry at idx position j. */
  private rankCache: Uint32Array | undefined;
  private fd: number;
  private scratch = Buffer.allocUnsafe(SCRATCH);
  /** The `.rev` next to the pack, if there is one. */
  readonly revPath: string | undefined;

  private constructor(
    readonly packPath: string,
    readonly idxPath: string,
    readonly algo: HashAlgo,
    fd: number,
    size: number,
    idx: PackIndex,
    header: { version: number; count: number },
  ) {
    this.name = basename(packPath, '.pack');
    this.fd = fd;
    this.size = size;
    this.idx = idx;
    this.version = header.version;
    this.count = header.count;
    const rev = packPath.endsWith('.pack') ? packPath.slice(0, -5) + '.rev' : undefined;
    this.revPath = rev !== undefined && existsSync(rev) ? rev : undefined;
  }

  /** Opens `<name>.pack` with `<name>.idx`; checks they agree on the object count and checksum. */
  static open(packPath: string, algo: HashAlgo, idxPath = packPath.replace(/\.pack$/, '.idx')): Pack {
    let idxBuf: Buffer;
    try {
      idxBuf = readFileSync(idxPath);
    } catch (e) {
      throw new GitError('io', `cannot read ${idxPath}: ${(e as Error).message}`, { file: idxPath });
    }
    const idx = parseIdx(idxBuf, algo, idxPath);
    let fd: number;
    try {
      fd = openSync(packPath, 'r');
    } catch (e) {
      throw new GitError('io', `cannot open ${packPath}: ${(e as Error).message}`, { file: packPath });
    }
    try {
      const size = fstatSync(fd).size;
      const head = Buffer.alloc(PACK_HEADER_SIZE);
      const got = readSync(fd, head, 0, PACK_HEADER_SIZE, 0);
      if (got < PACK_HEADER_SIZE) throw corrupt('bad-pack', packPath, got, 'pack header truncated');
      const header = parsePackHeader(head, packPath);
      if (size < PACK_HEADER_SIZE + algo.len) throw corrupt('bad-pack', packPath, size, 'pack file truncated');
      if (header.count !== idx.count) {
        throw corrupt('bad-pack', packPath, 8, `pack has ${header.count} objects but ${idxPath} has ${idx.count}`);
      }
      const trailer = Buffer.alloc(algo.len);
      readSync(fd, trailer, 0, algo.len, size - algo.len);
      if (!trailer.equals(idx.packChecksum)) {
        throw corrupt('bad-pack', packPath, size - algo.len, `pack trailer does not match the checksum recorded in ${idxPath}`);
      }
      return new Pack(packPath, idxPath, algo, fd, size, idx, header);
    } catch (e) {
      closeSync(fd);
      throw e;
    }
  }

  close(): void {
    if (this.fd >= 0) closeSync(this.fd);
    this.fd = -1;
  }

  /** Offset where the entries end and the trailer begins. */
  get dataEnd(): number {
    return this.size - this.algo.len;
  }

  /** Idx positions in pack (offset) order, from the `.rev` when it is valid, else by sorting. */
  get order(): Uint32Array {
    if (this.orderCache) return this.orderCache;
    let order: Uint32Array | undefined;
    const revPath = this.revPath;
    if (revPath !== undefined) {
      try {
        const buf = readFileSync(revPath);
        if (revPackChecksum(buf, this.algo).equals(this.idx.packChecksum)) order = parseRev(buf, this.count, this.algo, revPath);
      } catch {
        order = undefined; // a bad .rev is not fatal for reading: git falls back too
      }
      if (order) {
        const offs = this.idx.offsets;
        for (let i = 1; i < order.length; i++) {
          if (offs[order[i]!]! <= offs[order[i - 1]!]!) {
            order = undefined;
            break;
          }
        }
      }
    }
    this.orderCache = order ?? packOrderFromOffsets(this.idx.offsets);
    return this.orderCache;
  }

  /** Pack-order position of each idx position (the inverse of `order`). */
  get rank(): Uint32Array {
    if (this.rankCache) return this.rankCache;
    const order = this.order;
    const rank = new Uint32Array(order.length);
    for (let i = 0; i < order.length; i++) rank[order[i]!] = i;
    this.rankCache = rank;
    return rank;
  }

  /** Offset of the i-th entry in pack order. */
  offsetAtRank(i: number): number {
    return this.idx.offsets[this.order[i]!]!;
  }

  /** End offset (exclusive) of the entry at idx position `j`: the next entry's offset, or the trailer. */
  end(j: number): number {
    const r = this.rank[j]! + 1;
    return r < this.count ? this.idx.offsets[this.order[r]!]! : this.dataEnd;
  }

  /** Drops the derived tables (order, rank, window); they are rebuilt if needed again. */
  dropCaches(): void {
    this.orderCache = undefined;
    this.rankCache = undefined;
    this.win = undefined;
  }

  /** Idx position of the entry that starts at `offset`, or -1 (an OFS_DELTA base is named by offset only). */
  positionOf(offset: number): number {
    const order = this.order;
    const offs = this.idx.offsets;
    let lo = 0;
    let hi = order.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      const v = offs[order[mid]!]!;
      if (v === offset) return order[mid]!;
      if (v < offset) lo = mid + 1;
      else hi = mid - 1;
    }
    return -1;
  }

  /** End of the entry that starts at `offset`. */
  endOf(offset: number): number {
    const j = this.positionOf(offset);
    if (j < 0) throw corrupt('bad-pack', this.packPath, offset, 'no object in the index starts at this offset');
    return this.end(j);
  }

  private win: Buffer | undefined = undefined;
  private winStart = 0;
  private winLen = 0;

  /**
   * The bytes [offset, end) through a large read-ahead window: cheap for the mostly sequential
   * reads of a rewrite. The view is valid until the next call; entries larger than the window are
   * read on their own.
   */
  windowed(offset: number, end: number, windowSize = 8 << 20): Buffer {
    const len = end - offset;
    if (offset < PACK_HEADER_SIZE || len <= 0 || end > this.dataEnd) {
      throw corrupt('bad-pack', this.packPath, offset, 'entry offset out of range');
    }
    if (len > windowSize) return this.read(offset, len);
    if (this.win === undefined || offset < this.winStart || end > this.winStart + this.winLen) {
      this.win ??= Buffer.allocUnsafe(windowSize);
      this.winStart = offset;
      this.winLen = Math.min(this.win.length, this.dataEnd - offset);
      this.read(offset, this.winLen, this.win.subarray(0, this.winLen));
    }
    return this.win.subarray(offset - this.winStart, end - this.winStart);
  }

  /** Drops the read-ahead window (memory goes back once a rewrite has passed this pack). */
  releaseWindow(): void {
    this.win = undefined;
  }

  /** Reads `len` bytes at `pos` into a fresh buffer (or `into`). */
  read(pos: number, len: number, into?: Buffer): Buffer {
    if (pos < 0 || pos + len > this.size) throw corrupt('bad-pack', this.packPath, pos, `read of ${len} bytes beyond end of pack`);
    const buf = into ?? Buffer.allocUnsafe(len);
    let done = 0;
    while (done < len) {
      const n = readSync(this.fd, buf, done, len - done, pos + done);
      if (n === 0) throw corrupt('bad-pack', this.packPath, pos + done, 'unexpected end of pack file');
      done += n;
    }
    return buf;
  }

  /** The raw entry at idx position `j`; its bytes live in a scratch buffer unless `copy`. */
  entry(j: number, copy = false): RawEntry {
    return this.entryAt(this.idx.offsets[j]!, this.end(j), copy);
  }

  entryAt(offset: number, end: number, copy = false): RawEntry {
    const len = end - offset;
    if (offset < PACK_HEADER_SIZE || len <= 0 || end > this.dataEnd) {
      throw corrupt('bad-pack', this.packPath, offset, 'entry offset out of range');
    }
    let buf: Buffer;
    if (!copy && len <= SCRATCH) buf = this.read(offset, len, this.scratch.subarray(0, len));
    else buf = this.read(offset, len);
    const hdr = parseEntryHeader(buf, 0, Math.min(len, MAX_ENTRY_HEADER), this.algo.len, this.packPath, offset);
    return { offset, raw: buf, hdr };
  }

  /**
   * Inflates an entry's data: the zlib stream must end exactly at the entry's end and yield exactly
   * the declared size. The declared size bounds the allocation.
   */
  inflate(e: RawEntry): Buffer {
    return inflateExact(e.raw.subarray(e.hdr.headerLen), e.hdr.size, this.packPath, e.offset + e.hdr.headerLen);
  }

  /**
   * Visits every entry in pack order with its raw bytes, reading the pack in large sequential
   * chunks (an entry larger than a chunk is read on its own). `raw` is only valid in the callback.
   * `onBytes`, when given, sees every byte from offset 12 to the end of the last entry exactly
   * once and in order (for hashing the pack in the same pass).
   */
  scan(visit: (j: number, offset: number, raw: Buffer) => void, chunkSize = 8 << 20, onBytes?: (bytes: Buffer) => void): void {
    const order = this.order;
    const offs = this.idx.offsets;
    let chunk = Buffer.allocUnsafe(Math.min(chunkSize, Math.max(this.dataEnd, 1)));
    let chunkStart = 0;
    let chunkLen = 0;
    let fed = PACK_HEADER_SIZE;
    for (let i = 0; i < order.length; i++) {
      const j = order[i]!;
      const off = offs[j]!;
      const end = i + 1 < order.length ? offs[order[i + 1]!]! : this.dataEnd;
      const len = end - off;
      if (off < PACK_HEADER_SIZE || len <= 0 || end > this.dataEnd) {
        throw corrupt('bad-pack', this.packPath, off, 'entry offset out of range');
      }
      if (len > chunkSize) {
        const big = this.read(off, len);
        if (onBytes && off === fed) {
          onBytes(big);
          fed = end;
        }
        visit(j, off, big);
        continue;
      }
      if (off < chunkStart || end > chunkStart + chunkLen) {
        chunkStart = off;
        chunkLen = Math.min(chunkSize, this.dataEnd - off);
        if (chunk.length < chunkLen) chunk = Buffer.allocUnsafe(chunkLen);
        this.read(off, chunkLen, chunk.subarray(0, chunkLen));
        if (onBytes && fed >= chunkStart && fed < chunkStart + chunkLen) {
          onBytes(chunk.subarray(fed - chunkStart, chunkLen));
          fed = chunkStart + chunkLen;
        }
      }
      visit(j, off, chunk.subarray(off - chunkStart, end - chunkStart));
    }
  }

  /** Hashes the pack up to its trailer in chunks and compares with the trailer. */
  checksumOk(): { ok: boolean; actual: Buffer } {
    const h = this.algo.create();
    const chunk = Buffer.allocUnsafe(8 << 20);
    for (let pos = 0; pos < this.dataEnd; ) {
      const n = Math.min(chunk.length, this.dataEnd - pos);
      this.read(pos, n, chunk.subarray(0, n));
      h.update(chunk.subarray(0, n));
      pos += n;
    }
    const actual = h.digest();
    return { ok: actual.equals(this.idx.packChecksum), actual };
  }

  findOffset(id: Uint8Array, pos = 0): number {
    const j = this.idx.find(id, pos);
    return j < 0 ? -1 : this.idx.offsets[j]!;
  }
}

/** Inflates a complete zlib stream of known output size; any deviation is a corrupt-entry error. */
export function inflateExact(data: Uint8Array, size: number, file: string, offset: number): Buffer {
  let r: { buffer: Buffer; engine: { bytesWritten: number } };
  try {
    // chunkSize: one allocation of exactly the declared size. The default (16 KiB chunks) would
    // keep 16 KiB alive behind every small object until the next GC.
    r = inflateSync(data, { info: true, maxOutputLength: Math.max(size, 1), chunkSize: Math.max(64, size + 1) }) as unknown as typeof r;
  } catch (e) {
    const err = e as NodeJS.ErrnoException;
    const why = err.code === 'ERR_BUFFER_TOO_LARGE' ? `inflates to more than the declared ${size} bytes` : `zlib: ${err.message}`;
    throw corrupt('bad-object', file, offset, `corrupt object data (${why})`);
  }
  if (r.buffer.length !== size) {
    throw corrupt('bad-object', file, offset, `inflated size ${r.buffer.length} does not match declared size ${size}`);
  }
  if (r.engine.bytesWritten !== data.length) {
    throw corrupt('bad-object', file, offset, `zlib stream ends after ${r.engine.bytesWritten} of ${data.length} bytes`);
  }
  return r.buffer;
}
