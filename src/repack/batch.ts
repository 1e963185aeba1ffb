import { readSync } from 'node:fs';
import { crc32 } from 'node:zlib';
import { inflateExact, inflatesTo, storedZlibEquals, writeStoredZlib } from '../codec/zlib.js';
import { storedZlibLength } from '../format/zlib-stored.js';
import { deflateAt } from './deflate.js';
import { GitError, corrupt, errorDetail } from '../errors.js';
import { zstdCodec, type ZstdCodec } from '../codec/zstd.js';
import { sameEncoding } from './encoding.js';

/** Entry modes in a batch. */
export const COPY_CRC = 1;
export const COPY_INFLATE = 2;
export const REENCODE = 3;
/** A dry run's copy: counted by the main thread, not read. */
export const SKIP = 4;
/**
 * A copy too large to hold: only its header is read here (for its size); the main thread reads,
 * CRCs and writes the rest a chunk at a time (rewrite.ts, `copyStreaming`).
 */
export const COPY_STREAM = 5;
/** A re-encode too large to hold (an object of a zstd pack above core.bigFileThreshold, any entry over a chunk into one): the same, streamed.ts. */
export const REENCODE_STREAM = 6;

/**
 * A run of consecutive output entries whose source bytes sit in one buffer. It is the unit of
 * work shipped to a worker thread (or run inline): check what is copied, re-encode the rest,
 * prove each re-encode inflates to the original bytes.
 */
export interface BatchJob {
  buf: ArrayBuffer;
  n: number;
  /** Where each entry's raw bytes (header + data) start in `buf`, and their length. */
  rawStart: Uint32Array;
  rawLen: Uint32Array;
  headerLen: Uint8Array;
  /** Object id length of the packs (a REF_DELTA header holds one). */
  hashLen: number;
  mode: Uint8Array;
  level: Int8Array;
  /** Expected CRC32 of the raw entry (COPY_CRC). */
  crc: Uint32Array;
  /** A buffer from an earlier result to write the output into, if it is large enough. */
  spare?: ArrayBuffer | undefined;
  /** For messages: the source files, each entry's index into them and its offset there. */
  files: string[];
  /**
   * The source packs' open descriptors (by file index), and what to read into `buf` before
   * anything else: (file index, offset, length, position in `buf`) per span.
   */
  fds: number[];
  spans: Float64Array;
  fileIndex: Uint16Array;
  offset: Float64Array;
  /**
   * zstd packs: `srcDict[i]` is the source dictionary of an entry read from a zstd pack (-1: none,
   * -2: the source is a zlib pack); with `zstdOut`, every re-encoded entry is written as a zstd
   * frame with dictionary `dstDict[i]` (-1: none), or plain when that is no smaller or its level
   * is 0 (a type stored plain).
   */
  srcDict?: Int8Array | undefined;
  zstdOut?: boolean | undefined;
  dstDict?: Int8Array | undefined;
  /**
   * `auto` (auto.ts): the longest zlib stream a re-encode at a non-zero level may give; a longer
   * one is stored instead, so that the next run, judging the stream written now, decides the
   * same. Absent, or Infinity for an entry: no limit.
   */
  maxLen?: Float64Array | undefined;
}

/**
 * A job for `m` entries with every table allocated and zeroed: `buf` for their source bytes,
 * `spare` for the output; zstd dictionaries per entry when reading or writing zstd, and the
 * length limit when `auto` is in play.
 */
export function emptyJob(
  m: number,
  buf: ArrayBuffer,
  spare: ArrayBuffer | undefined,
  o: {
    hashLen: number;
    files: { path: string; fd: number }[];
    zstdIn: boolean;
    zstdOut: boolean;
    maxLen: boolean;
  },
): BatchJob {
  return {
    buf,
    spare,
    srcDict: o.zstdIn ? new Int8Array(m).fill(-2) : undefined,
    zstdOut: o.zstdOut,
    dstDict: o.zstdOut ? new Int8Array(m).fill(-1) : undefined,
    n: m,
    rawStart: new Uint32Array(m),
    rawLen: new Uint32Array(m),
    headerLen: new Uint8Array(m),
    hashLen: o.hashLen,
    mode: new Uint8Array(m),
    level: new Int8Array(m),
    crc: new Uint32Array(m),
    files: o.files.map((f) => f.path),
    fds: o.files.map((f) => f.fd),
    spans: new Float64Array(0),
    fileIndex: new Uint16Array(m),
    offset: new Float64Array(m),
    maxLen: o.maxLen ? new Float64Array(m).fill(Infinity) : undefined,
  };
}

/**
 * Every buffer of a job or a result, for `postMessage`'s transfer list: moved to the other thread,
 * not copied. Cloning the small tables was most of the cost of a message (a result's four tables
 * copied by the serializer: 0.38 ms a message with glibc's mmap threshold fixed at 128 KiB, as
 * the launcher sets it; 19 % of the re-encoding thread's time on git.git).
 */
export function transferList(o: BatchJob | BatchResult): ArrayBuffer[] {
  const list: ArrayBuffer[] = [];
  for (const v of Object.values(o)) {
    // (a view of part of a buffer, such as Node's pool, is copied: the rest is not ours to move)
    const b =
      v instanceof ArrayBuffer
        ? v
        : ArrayBuffer.isView(v) && v.byteOffset === 0 && v.byteLength === v.buffer.byteLength
          ? v.buffer
          : undefined;
    if (b instanceof ArrayBuffer && !list.includes(b)) list.push(b);
  }
  return list;
}

/** The dictionaries of the zstd packs read and written (set once per thread). */
let zstdIn: ZstdCodec | undefined;
let zstdOut: ZstdCodec | undefined;

export function setBatchDicts(src: Buffer[] | undefined, dst: Buffer[] | undefined): void {
  zstdIn = src !== undefined ? zstdCodec(src) : undefined;
  zstdOut = dst !== undefined ? zstdCodec(dst) : undefined;
}

const FROM_ZLIB = -2;

/** Where level-0 re-encodes inflate to (grows to the largest entry; large ones are let go). */
let scratch = Buffer.allocUnsafeSlow(1 << 16);

/**
 * An entry's data as it was before compression, from a zlib stream (whose Adler-32 zlib checks)
 * or a zstd pack's encoding (lean frames carry no checksum: the entry's CRC32 in the zstd
 * pack's index is checked first).
 */
function plainOf(
  job: BatchJob,
  i: number,
  size: number,
  raw: Buffer,
  data: Buffer,
  into?: Buffer,
): Buffer {
  const sd = job.srcDict?.[i] ?? FROM_ZLIB;
  if (sd === FROM_ZLIB)
    return inflateExact(data, size, fileOf(job, i), job.offset[i]! + job.headerLen[i]!, into);
  if (crc32(raw) !== job.crc[i])
    throw corrupt(
      'bad-pack',
      fileOf(job, i),
      job.offset[i]!,
      'entry does not match its CRC32 in the index',
    );
  if (data.length === size) return data;
  if (zstdIn === undefined)
    throw new GitError('unsupported', 'zstd dictionaries were not set for this thread');
  return zstdIn.decompress(data, size, sd);
}

export interface BatchResult {
  /** The input buffer, handed back. */
  buf: ArrayBuffer;
  /** Re-encoded data of REENCODE entries, back to back, and where each one is. */
  out: ArrayBuffer;
  outStart: Uint32Array;
  outLen: Uint32Array;
  /**
   * Each entry's declared size, from its header as read here (the main thread writes the new
   * header from it and keeps no table of sizes while writing).
   */
  size: Float64Array;
  /** 1 for a REENCODE entry whose new stream has the encoding its old one had: the old one is written. */
  kept: Uint8Array;
  error?: { file: string; offset: number; message: string; code: string };
}

/** A batch's output as it is written: level-0 streams straight into `out`, others collected. */
interface BatchOut {
  out: Buffer;
  storedAt: number;
  others: { i: number; data: Buffer }[];
  outStart: Uint32Array;
  outLen: Uint32Array;
  kept: Uint8Array;
}

/** Checks, re-encodes and proves each entry of a job (see BatchJob); the first failure is the result. */
export function runBatch(job: BatchJob): BatchResult {
  const src = Buffer.from(job.buf);
  const failed = readSpans(job, src);
  if (failed !== undefined) return failed;
  const sizes = new Float64Array(job.n);
  // Level-0 entries are written straight into the result, which grows as needed once each
  // entry's inflate has proved its size (a declared size is never trusted for an allocation);
  // other levels are collected and appended after them.
  const o: BatchOut = {
    out: Buffer.from(job.spare ?? new ArrayBuffer(1 << 20)),
    storedAt: 0,
    others: [],
    outStart: new Uint32Array(job.n),
    outLen: new Uint32Array(job.n),
    kept: new Uint8Array(job.n),
  };
  for (let i = 0; i < job.n; i++) {
    const mode = job.mode[i]!;
    if (mode === 0 || mode === SKIP) continue; // the main thread writes these itself (loose, whole) or counts them
    const rs = job.rawStart[i]!;
    const hl = job.headerLen[i]!;
    const raw = src.subarray(rs, rs + job.rawLen[i]!);
    try {
      const size = entrySize(src, rs, rs + hl);
      if (size < 0)
        return fail(job, i, 'entry header changed since the pack was scanned', 'bad-pack');
      sizes[i] = size;
      if (mode === COPY_STREAM || mode === REENCODE_STREAM) continue;
      const why =
        mode === REENCODE
          ? job.zstdOut
            ? reencodeZstd(job, i, size, raw, o)
            : reencodeZlib(job, i, size, raw, o)
          : checkReused(job, i, size, raw, mode);
      if (why !== undefined) return fail(job, i, why[0], why[1]);
    } catch (e) {
      return fail(job, i, errorDetail(e), (e as { code?: string }).code ?? 'bad-object');
    }
  }
  if (scratch.length > 16 << 20) scratch = Buffer.allocUnsafeSlow(1 << 16);
  const { outStart, outLen, kept } = o;
  return { buf: job.buf, out: appendOthers(o), outStart, outLen, size: sizes, kept };
}

/** Reads a job's spans of source bytes into `src`; a failure's result, or undefined. */
function readSpans(job: BatchJob, src: Buffer): BatchResult | undefined {
  for (let k = 0; k + 3 < job.spans.length; k += 4) {
    const file = job.spans[k]!;
    const start = job.spans[k + 1]!;
    const len = job.spans[k + 2]!;
    const at = job.spans[k + 3]!;
    let done = 0;
    try {
      while (done < len) {
        const n = readSync(job.fds[file]!, src, at + done, len - done, start + done);
        if (n === 0)
          return failAt(
            job.files[file] ?? '',
            start + done,
            'unexpected end of pack file',
            'bad-pack',
          );
        done += n;
      }
    } catch (e) {
      const err = e as NodeJS.ErrnoException;
      return failAt(job.files[file] ?? '', start + done, errorDetail(e), err.code ?? 'io');
    }
  }
  return undefined;
}

/** A failure's message and code. */
type Why = [string, string] | undefined;

/** An entry copied as it is (git's write_reuse_object): proved to be the bytes git indexed. */
function checkReused(job: BatchJob, i: number, size: number, raw: Buffer, mode: number): Why {
  // Copied byte for byte: the old idx's CRC32 proves these are the bytes git indexed.
  if (mode === COPY_CRC)
    return crc32(raw) !== job.crc[i]
      ? ['entry does not match its CRC32 in the index', 'bad-pack']
      : undefined;
  // An idx v1 has no CRC32: zlib's own Adler-32 check stands in for it.
  const hl = job.headerLen[i]!;
  inflateExact(raw.subarray(hl), size, fileOf(job, i), job.offset[i]! + hl);
  return undefined;
}

/** An entry encoded anew as a zstd frame (git's write_no_reuse_object), proved by decompressing it. */
function reencodeZstd(job: BatchJob, i: number, size: number, raw: Buffer, o: BatchOut): Why {
  const plain = plainOf(job, i, size, raw, raw.subarray(job.headerLen[i]!));
  if (zstdOut === undefined)
    throw new GitError('unsupported', 'zstd dictionaries were not set for this thread');
  const dict = job.dstDict![i]!;
  // Level 0: stored plain (no frame), as the reader tells plain data by its length.
  let frame = job.level[i] === 0 ? plain : zstdOut.compress(plain, job.level[i]!, dict);
  // Plain when zstd does not make it smaller: the reader tells them apart by length.
  if (frame.length >= plain.length) frame = plain;
  else if (!zstdOut.decompress(frame, plain.length, dict).equals(plain))
    return ['entry re-encoded does not decompress to the same bytes', 'verify-failed'];
  o.others.push({ i, data: Buffer.from(frame) });
  return undefined;
}

/**
 * An entry deflated anew (git's write_no_reuse_object), proved by inflating the new stream to the
 * same bytes; its old stream stays (`kept`) when the new one has the same encoding.
 */
function reencodeZlib(job: BatchJob, i: number, size: number, raw: Buffer, o: BatchOut): Why {
  const level = job.level[i]!;
  const data = raw.subarray(job.headerLen[i]!);
  // Level 0 inflates into this thread's scratch buffer: the bytes are copied into the
  // result right away.
  if (level === 0 && size + 1 > scratch.length)
    scratch = Buffer.allocUnsafeSlow(Math.max(size + 1, scratch.length * 2));
  const plain = plainOf(job, i, size, raw, data, level === 0 ? scratch : undefined);
  // Proof of the re-encode: the new stream inflates to the very same bytes (stored blocks
  // are inflated by our own checker, which needs no zlib engine per entry).
  const again = level === 0 ? undefined : deflateAt(plain, level);
  const fromZlib = (job.srcDict?.[i] ?? FROM_ZLIB) === FROM_ZLIB;
  const bad: Why = ['entry re-encoded does not inflate to the same bytes', 'verify-failed'];
  if (again !== undefined && again.length <= (job.maxLen?.[i] ?? Infinity)) {
    if (!inflatesTo(again, plain)) return bad;
    if (fromZlib && sameEncoding(data, again, plain.length)) o.kept[i] = 1;
    else o.others.push({ i, data: again });
    return undefined;
  }
  // From a zlib source, the Adler-32 of the bytes is its trailer, which zlib has checked.
  const adler = fromZlib ? data.readUInt32BE(data.length - 4) : undefined;
  const need = o.storedAt + storedZlibLength(plain.length);
  if (need > o.out.length) {
    const grown = Buffer.from(new ArrayBuffer(Math.max(need, o.out.length * 2)));
    o.out.copy(grown, 0, 0, o.storedAt);
    o.out = grown;
  }
  const n = writeStoredZlib(plain, o.out, o.storedAt, adler);
  const stream = o.out.subarray(o.storedAt, o.storedAt + n);
  if (!storedZlibEquals(stream, plain, adler)) return bad;
  // The old stream (which zlib has just inflated and checked) stays when it is as stored.
  if (fromZlib && sameEncoding(data, stream, plain.length)) {
    o.kept[i] = 1;
    return undefined;
  }
  o.outStart[i] = o.storedAt;
  o.outLen[i] = n;
  o.storedAt += n;
  return undefined;
}

/** The collected streams, appended after the level-0 ones: the result's output buffer. */
function appendOthers(o: BatchOut): ArrayBuffer {
  if (o.others.length === 0) return o.out.buffer as ArrayBuffer;
  let total = o.storedAt;
  for (const x of o.others) total += x.data.length;
  const grown = total <= o.out.length ? o.out : Buffer.from(new ArrayBuffer(total));
  if (grown !== o.out) o.out.copy(grown, 0, 0, o.storedAt);
  let p = o.storedAt;
  for (const x of o.others) {
    grown.set(x.data, p);
    o.outStart[x.i] = p;
    o.outLen[x.i] = x.data.length;
    p += x.data.length;
  }
  return grown.buffer as ArrayBuffer;
}

/**
 * The declared size in an entry header at `buf[pos, end)` (its type and size varint; the scan
 * has parsed the whole header before), or -1 when the varint does not end inside it.
 */
function entrySize(buf: Buffer, pos: number, end: number): number {
  let p = pos;
  let c = buf[p++]!;
  let size = c & 15;
  let mul = 16;
  while (c & 0x80) {
    if (p >= end || mul > 2 ** 46) return -1;
    c = buf[p++]!;
    size += (c & 0x7f) * mul;
    mul *= 128;
  }
  return size;
}

function fileOf(job: BatchJob, i: number): string {
  return job.files[job.fileIndex[i]!] ?? '';
}

function fail(job: BatchJob, i: number, message: string, code: string): BatchResult {
  return failAt(fileOf(job, i), job.offset[i]!, message, code);
}

function failAt(file: string, offset: number, message: string, code: string): BatchResult {
  const empty = new Uint32Array(0);
  return {
    buf: new ArrayBuffer(0),
    out: new ArrayBuffer(0),
    outStart: empty,
    outLen: empty,
    size: new Float64Array(0),
    kept: new Uint8Array(0),
    error: { file, offset, message, code },
  };
}
