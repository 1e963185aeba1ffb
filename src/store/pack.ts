import { closeSync, existsSync, readSync } from 'node:fs';
import { idxRereader, openPackFiles, openZpackFile, type OpenedPack } from './pack-open.js';
import { hasExt, shownPath, swapExt, type FsPath } from './fs-path.js';
import { basename } from 'node:path';
import { inflateExact, inflatePiecesExact } from '../codec/zlib.js';
import { GitError, codecDiagnostic, corrupt, type ErrorCode } from '../errors.js';
import { toHex, type HashAlgo } from '../hash/algo.js';
import type { PackIndex } from '../format/idx.js';
import { releaseNow } from '../release.js';
import { MAX_ENTRY_HEADER, parseEntryHeader, type EntryHeader } from '../format/pack.js';
import type { ZpackHeader } from '../format/zpack.js';
import { isDelta, typeName } from '../format/object-type.js';
import { DICT_KINDS, NO_DICT, kindOf } from '../codec/dict.js';
import { unzstdPieces, zstdCodec, type ZstdCodec } from '../codec/zstd.js';
import { packOrderFromOffsets } from '../format/rev.js';
import { revFileOrder } from './rev-order.js';

/** One entry's raw bytes and decoded header; `raw` is valid until the next read of the same pack. */
export interface RawEntry {
  offset: number;
  /** Header plus compressed data. */
  raw: Buffer;
  hdr: EntryHeader;
}

const SCRATCH = 1 << 20;
/** Sequential passes (scan, checksums) read 1 MiB at a time: as fast as 8 MiB here, and a read buffer left
 *  for the GC is small (nothing forces a collection: see docs/decisions.md, "No forced GC"). */
export const SEQUENTIAL_CHUNK = 1 << 20;

/** A `.pack` and its `.idx` (and `.rev` when present). The pack is read with positioned reads of exactly
 *  the bytes an entry spans (known from the sorted offsets), never whole into memory. */
export class Pack {
  readonly name: string;
  readonly algo: HashAlgo;
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
  /** The `.rev` next to the pack (or the one given to `open`), if there is one. */
  readonly revPath: string | undefined;
  /** The files as the file system names them (bytes where a name is not valid UTF-8); `packPath`, `idxPath` and `revPath` show them. */
  readonly files: { pack: FsPath; idx: FsPath; rev: FsPath | undefined };
  /** Promised objects' pack: a `.promisor` beside it, or a zstd pack of promisor objects (git's `pack_promisor`). */
  readonly promisor: boolean;
  readonly packPath: string;
  readonly idxPath: string;
  /** Where the entries start and end: [12, trailer) in a git pack. */
  readonly dataStart: number;
  readonly dataEnd: number;
  /** A zstd pack's header (dictionaries, refs); undefined for a git pack. */
  readonly zpack: ZpackHeader | undefined;
  private zstd: ZstdCodec | undefined;
  /** Dictionary index per kind (DICT_KINDS), -1 for none. */
  private dictOfKind: number[] = [];

  private constructor(parts: OpenedPack) {
    const { files, fd, size, idx, header, layout, revPath } = parts;
    this.algo = parts.algo;
    this.packPath = shownPath(files.pack);
    this.idxPath = shownPath(files.idx);
    this.name = basename(this.packPath).replace(/\.(pack|zpack)$/, '');
    this.fd = fd;
    this.size = size;
    this.idx = idx;
    this.version = header.version;
    this.count = header.count;
    this.dataStart = layout.dataStart;
    this.dataEnd = layout.dataEnd;
    this.zpack = layout.zpack;
    const besidePack = (ext: string): FsPath | undefined =>
      hasExt(files.pack, '.pack') ? swapExt(files.pack, '.pack', ext) : undefined;
    const rev = revPath ?? besidePack('.rev');
    this.files = { ...files, rev: rev !== undefined && existsSync(rev) ? rev : undefined };
    this.revPath = this.files.rev === undefined ? undefined : shownPath(this.files.rev);
    const marker = besidePack('.promisor');
    this.promisor =
      layout.zpack !== undefined
        ? layout.zpack.promisor
        : marker !== undefined && existsSync(marker);
    const dicts = layout.zpack?.dicts ?? [];
    if (layout.zpack !== undefined)
      this.dictOfKind = DICT_KINDS.map((_, k) => dicts.findIndex((d) => d.kind === k));
  }

  /** Is this a zstd-framed pack (our format, never in objects/pack)? */
  get isZpack(): boolean {
    return this.zpack !== undefined;
  }

  /**
   * Opens `<name>.pack` with `<name>.idx` (checking that they agree on the object count and
   * checksum), or a zstd pack, which carries its own index. `revPath` names a `.rev` that is not
   * next to the pack (one just written under a temporary name); like any `.rev` it is used only
   * when it matches the pack and orders the idx offsets.
   */
  static open(
    packFile: FsPath,
    algo: HashAlgo,
    idxFile: FsPath = hasExt(packFile, '.pack') ? swapExt(packFile, '.pack', '.idx') : packFile,
    revPath?: FsPath,
  ): Pack {
    return new Pack(openPackFiles(packFile, algo, idxFile, revPath));
  }

  /** The zstd pack at `path`, or undefined when the file does not start with its signature. */
  static tryZpack(path: FsPath): Pack | undefined {
    const parts = openZpackFile(path);
    return parts === undefined ? undefined : new Pack(parts);
  }

  /** The open file, for positioned reads on other threads while this pack stays open. */
  get descriptor(): number {
    return this.fd;
  }

  close(): void {
    if (this.fd >= 0) closeSync(this.fd);
    this.fd = -1;
  }

  /** Idx positions in pack (offset) order, from the `.rev` when it is valid, else by sorting. */
  get order(): Uint32Array {
    if (this.orderCache) return this.orderCache;
    const fromRev =
      this.files.rev === undefined
        ? undefined
        : revFileOrder(this.files.rev, this.revPath!, this.idx, this.count, this.algo);
    this.orderCache = fromRev ?? packOrderFromOffsets(this.idx.offsets);
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

  /**
   * Each entry's length in the pack (header and data) by idx position, for a job that needs it
   * without the pack order; 32-bit unless the pack is 4 GiB or more.
   */
  entryLengths(): Uint32Array | Float64Array {
    const order = this.order;
    const offs = this.idx.offsets;
    const out =
      this.dataEnd < 0x100000000 ? new Uint32Array(this.count) : new Float64Array(this.count);
    for (let r = 0; r < order.length; r++) {
      const j = order[r]!;
      out[j] = (r + 1 < order.length ? offs[order[r + 1]!]! : this.dataEnd) - offs[j]!;
    }
    return out;
  }

  /** Frees the order and rank tables now (they are rebuilt if needed again). */
  releaseOrder(): void {
    releaseNow(this.orderCache, this.rankCache);
    this.orderCache = undefined;
    this.rankCache = undefined;
  }

  /** Frees the derived tables (order, rank); they are rebuilt if needed again. */
  dropCaches(): void {
    this.releaseOrder();
  }

  /**
   * Lets the index's ids go (`PackIndex.releaseIds`); they are read from the `.idx` file again
   * when needed. Not for a zstd pack, whose index is inside the pack.
   */
  releaseIds(): void {
    if (this.isZpack) return;
    this.idx.releaseIds(idxRereader(this.files.idx, this.idxPath));
  }

  /** Idx position of the entry at `offset`, or -1 (an OFS_DELTA base is named by offset only), among the first
   *  `below` in pack order, searched back from there by doubling steps (a base is most often just before). */
  positionOf(offset: number, below = this.order.length): number {
    const order = this.order;
    const offs = this.idx.offsets;
    let hi = below - 1;
    let lo = hi - 1;
    for (let step = 2; lo > 0 && offs[order[lo]!]! > offset; step *= 2)
      ((hi = lo - 1), (lo -= step));
    lo = Math.max(lo, 0);
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
    if (j < 0)
      throw corrupt(
        'bad-pack',
        this.packPath,
        offset,
        'no object in the index starts at this offset',
      );
    return this.end(j);
  }

  /** Reads `len` bytes at `pos` into a fresh buffer (or `into`). */
  read(pos: number, len: number, into?: Buffer): Buffer {
    if (pos < 0 || pos + len > this.size)
      throw corrupt('bad-pack', this.packPath, pos, `read of ${len} bytes beyond end of pack`);
    const buf = into ?? Buffer.allocUnsafe(len);
    let done = 0;
    while (done < len) {
      const n = readSync(this.fd, buf, done, len - done, pos + done);
      if (n === 0)
        throw corrupt('bad-pack', this.packPath, pos + done, 'unexpected end of pack file');
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
    if (offset < this.dataStart || len <= 0 || end > this.dataEnd) {
      throw corrupt('bad-pack', this.packPath, offset, 'entry offset out of range');
    }
    let buf: Buffer;
    if (!copy && len <= SCRATCH) buf = this.read(offset, len, this.scratch.subarray(0, len));
    else buf = this.read(offset, len);
    const hdr = parseEntryHeader(
      buf,
      0,
      Math.min(len, MAX_ENTRY_HEADER),
      this.algo.len,
      this.packPath,
      offset,
    );
    return { offset, raw: buf, hdr };
  }

  /**
   * Inflates an entry's data: the zlib stream must end exactly at the entry's end and yield exactly
   * the declared size. The declared size bounds the allocation. In a zstd pack the entry's
   * dictionary follows from its real type (the type at the bottom of its delta chain), which the
   * caller knows.
   */
  inflate(e: RawEntry, realType = 0, into?: Buffer): Buffer {
    const data = e.raw.subarray(e.hdr.headerLen);
    try {
      if (this.zpack === undefined)
        return inflateExact(data, e.hdr.size, this.packPath, e.offset + e.hdr.headerLen, into);
      return this.unzstd(
        data,
        e.hdr.size,
        isDelta(e.hdr.type) ? realType : e.hdr.type,
        isDelta(e.hdr.type),
        e.offset + e.hdr.headerLen,
        into,
      );
    } catch (err) {
      throw this.namedCorruption(err, e);
    }
  }

  /** The header of the entry [offset, end), from its first bytes only. */
  entryHead(offset: number, end: number): EntryHeader {
    return this.entryAt(offset, Math.min(end, offset + MAX_ENTRY_HEADER)).hdr;
  }

  private pieceOut: Buffer | undefined; // inflateChunked's output without `into`
  /**
   * The data of the entry [off, end) of a git pack, inflated as it is read a chunk at a time, so
   * that its compressed bytes are never held (issue 20): into `into` when it has room for the
   * declared size + 1 bytes (and returned), else through a reused 1 MiB buffer, piece by piece,
   * to `sink`. Checked and named as `inflate` does.
   */
  inflateChunked(
    off: number,
    end: number,
    sink: (bytes: Uint8Array) => void,
    into?: Buffer,
    realType?: number,
  ): Buffer {
    const e = this.entryAt(off, Math.min(end, off + SCRATCH)); // the first chunk, in `scratch`
    const { size, headerLen } = e.hdr;
    if (into !== undefined && into.length <= size)
      throw new RangeError(`inflateChunked: room for ${into.length} bytes, ${size + 1} needed`);
    const out = into ?? (this.pieceOut ??= Buffer.allocUnsafeSlow(SEQUENTIAL_CHUNK));
    const pieces = function* (pack: Pack): Generator<Buffer> {
      yield e.raw.subarray(headerLen);
      for (let p = off + e.raw.length, n = 0; p < end; p += n)
        yield pack.read(p, (n = Math.min(SCRATCH, end - p)), pack.scratch.subarray(0, n));
    };
    try {
      if (this.isZpack)
        unzstdPieces(
          this.zstdCodec(),
          this.dictFor(realType ?? e.hdr.type, isDelta(e.hdr.type)),
          pieces(this),
          end - off - headerLen,
          size,
          into,
          sink,
          this.packPath,
          off + headerLen,
        );
      else
        inflatePiecesExact(
          pieces(this),
          end - off - headerLen,
          size,
          out,
          sink,
          this.packPath,
          off + headerLen,
        );
    } catch (err) {
      throw this.namedCorruption(err, e);
    }
    return out.subarray(0, size);
  }

  private namedCorruption(err: unknown, e: RawEntry): unknown {
    if (!(err instanceof GitError) || err.code !== 'bad-object') return err;
    return (
      // the entry's offset, as git verify-pack lists it (the data's own is in the cause)
      this.corruptObject(e.offset, err.detail, err.code, typeName(e.hdr.type), err) ?? err
    );
  }

  /**
   * The error for the entry at `offset`: `corruptObject`'s, or the plain file-and-offset one
   * when the index cannot say which object starts there.
   */
  entryError(offset: number, detail: string, code: ErrorCode, cause?: unknown): GitError {
    return (
      this.corruptObject(offset, detail, code, undefined, cause) ??
      corrupt(code, this.packPath, offset, detail, undefined, cause)
    );
  }

  /**
   * git's `packed object <id> (stored in <pack>) is corrupt` (packfile.c) for the entry at `offset`,
   * with our detail, the offset `at` (the entry's unless given) and the entry's type (read from its
   * header when not given); undefined when the index cannot say which object starts there.
   */
  corruptObject(
    offset: number,
    detail: string,
    code: ErrorCode,
    type?: string,
    cause?: unknown,
    at = offset,
  ): GitError | undefined {
    let hex: string;
    try {
      const j = this.positionOf(offset);
      if (j < 0) return undefined;
      hex = toHex(this.idx.idAt(j));
    } catch {
      return undefined; // the index itself is unreadable: the plain message says where
    }
    try {
      type ??= typeName(this.entryAt(offset, this.endOf(offset)).hdr.type);
    } catch {
      // a header too damaged to name a type: the message goes without it
    }
    const what = type === undefined ? '' : ` (${type} entry)`;
    return new GitError(
      code,
      `packed object ${hex} (stored in ${this.packPath}) is corrupt: ${detail} at offset ${at}${what}`,
      { file: this.packPath, offset: at, objectId: hex, detail, cause },
    );
  }

  /**
   * A zstd pack entry's data: plain when it has exactly the declared size, else one frame. With
   * `into` (for data used once, right away) the result may live there or in `data`.
   */
  unzstd(
    data: Uint8Array,
    size: number,
    realType: number,
    delta: boolean,
    offset: number,
    into?: Buffer,
  ): Buffer {
    if (data.length === size)
      return into !== undefined
        ? Buffer.from(data.buffer, data.byteOffset, data.length)
        : Buffer.from(data);
    if (data.length > size && size > 0)
      throw corrupt(
        'bad-object',
        this.packPath,
        offset,
        `zstd frame of ${data.length} bytes for ${size} bytes of data`,
      );
    try {
      return this.zstdCodec().decompress(data, size, this.dictFor(realType, delta), into);
    } catch (e) {
      throw corrupt('bad-object', this.packPath, offset, codecDiagnostic(e), undefined, e);
    }
  }

  private zstdCodec(): ZstdCodec {
    return (this.zstd ??= zstdCodec(this.zpack!.dicts.map((d) => d.data)));
  }

  /** The dictionary of a zstd pack's entry of (real) type `type`. */
  private dictFor(type: number, delta: boolean): number {
    return kindOf(type, delta) >= 0 ? this.dictOfKind[kindOf(type, delta)]! : NO_DICT;
  }

  /** The dictionaries of a zstd pack, for threads that decompress its entries. */
  get zstdDicts(): { dicts: Buffer[]; dictOfKind: number[] } {
    return { dicts: (this.zpack?.dicts ?? []).map((d) => d.data), dictOfKind: this.dictOfKind };
  }

  /** Hashes the pack up to its trailer in chunks and compares with the trailer. */
  checksumOk(): { ok: boolean; actual: Buffer } {
    const actual = this.hashPrefix(this.dataEnd);
    return { ok: actual.equals(this.idx.packChecksum), actual };
  }

  /** A zstd pack's trailer: the hash of everything before it (a git pack's is checked by checksumOk). */
  trailerOk(): boolean {
    const end = this.size - this.algo.len;
    return this.hashPrefix(end).equals(this.read(end, this.algo.len));
  }

  /** The hash of the file's bytes [0, end), read in sequential chunks. */
  private hashPrefix(end: number): Buffer {
    const h = this.algo.create();
    const chunk = Buffer.allocUnsafe(SEQUENTIAL_CHUNK);
    for (let pos = 0, n = 0; pos < end; pos += n)
      h.update(this.read(pos, (n = Math.min(chunk.length, end - pos)), chunk.subarray(0, n)));
    return h.digest();
  }

  findOffset(id: Uint8Array, pos = 0): number {
    const j = this.idx.find(id, pos);
    return j < 0 ? -1 : this.idx.offsets[j]!;
  }
}
