/**
 * What is known of zlib streams without running zlib: the length of a level-0 stream (stored
 * deflate blocks, as zlib writes them at Z_NO_COMPRESSION: header 78 01, blocks of at most 65535
 * bytes, Adler-32), what the first block of a stream says of the level that wrote it, zlib's
 * bound. The level-0 streams themselves are written and read back in codec/zlib.ts, beside the
 * one Adler-32.
 */
const MAX_STORED = 65535;

export function storedZlibLength(n: number): number {
  const blocks = Math.max(1, Math.ceil(n / MAX_STORED));
  return 2 + blocks * 5 + n + 4;
}

/** Block codes (PackScan.block): what the scan saw of an entry's zlib stream. Anything else: */
export const BLOCK_OTHER = 0;
/** A stream of stored blocks only, in FLEVEL 0 (what level 0 writes). */
export const BLOCK_STORED = 1;
/** Not a zlib stream (a zstd pack's entry). */
export const BLOCK_NOT_ZLIB = 2;
/** A first block with fixed Huffman codes in a FLEVEL 0 stream (what Z_FIXED writes). */
export const BLOCK_FIXED = 3;

/**
 * The block code of a zlib stream with header FLEVEL `flevel` whose deflate data starts with
 * byte `first` (BTYPE is its bits 1-2: 00 stored, 01 fixed Huffman codes), `dataLen` bytes long,
 * inflating to `size` bytes. Only FLEVEL 0 streams get a code: stored when the whole stream is
 * stored blocks (no shorter than `size` in stored blocks: a level-1 stream may start with a
 * stored block and compress the rest), fixed codes. zlib at level 6 and up also starts short
 * streams with fixed codes, and stores blocks it cannot shrink; those are that level's ordinary
 * output (BLOCK_OTHER).
 */
export function firstBlockCode(
  flevel: number,
  first: number | undefined,
  dataLen = Infinity,
  size = 0,
): number {
  if (flevel !== 0 || first === undefined) return BLOCK_OTHER;
  const btype = (first >> 1) & 3;
  if (btype === 0) return dataLen >= storedZlibLength(size) ? BLOCK_STORED : BLOCK_OTHER;
  return btype === 1 ? BLOCK_FIXED : BLOCK_OTHER;
}

/** zlib's `compressBound`: the most a zlib stream of `n` bytes can take at any level. */
export function deflateBound(n: number): number {
  return n + Math.floor(n / 4096) + Math.floor(n / 16384) + Math.floor(n / 33554432) + 13;
}

/**
 * Writes `data` as a level-0 zlib stream into `out` at `pos` with `adler`, its Adler-32, as
 * trailer; returns the bytes written (codec/zlib.ts's `writeStoredZlib` computes the checksum).
 */
export function writeStoredBlocks(
  data: Uint8Array,
  out: Uint8Array,
  pos: number,
  adler: number,
): number {
  let p = pos;
  out[p++] = 0x78;
  out[p++] = 0x01;
  const n = data.length;
  let i = 0;
  do {
    const len = Math.min(MAX_STORED, n - i);
    const last = i + len >= n;
    out[p++] = last ? 1 : 0;
    out[p++] = len & 0xff;
    out[p++] = len >> 8;
    out[p++] = ~len & 0xff;
    out[p++] = (~len >> 8) & 0xff;
    out.set(data.subarray(i, i + len), p);
    p += len;
    i += len;
  } while (i < n);
  out[p++] = adler >>> 24;
  out[p++] = (adler >>> 16) & 0xff;
  out[p++] = (adler >>> 8) & 0xff;
  out[p++] = adler & 0xff;
  return p - pos;
}

/** Buffer's compare of two ranges, for any Uint8Array as `this` (no view of either range). */
const compareRanges = Buffer.prototype.compare as (
  this: Uint8Array,
  target: Uint8Array,
  targetStart: number,
  targetEnd: number,
  sourceStart: number,
  sourceEnd: number,
) => number;

/**
 * Inflates a stream made only of stored blocks and compares it with `plain` without zlib: the
 * block framing (LEN/NLEN), the content and the Adler-32 must all agree. Returns false for any
 * stream that is not exactly `plain` in stored blocks (the caller then falls back to zlib).
 * `adler` is the Adler-32 of `plain`, or a function that computes it (called only when all else agrees).
 */
export function storedBlocksEqual(
  stream: Uint8Array,
  plain: Uint8Array,
  adler: number | (() => number),
): boolean {
  if (
    stream.length < 7 ||
    stream[0] !== 0x78 ||
    ((stream[0]! << 8) | stream[1]!) % 31 !== 0 ||
    stream[1]! & 0x20
  )
    return false;
  let p = 2;
  let i = 0;
  for (;;) {
    if (p + 5 > stream.length) return false;
    const head = stream[p]!;
    if (head >> 1 !== 0) return false; // BTYPE must be 00 (and no stray bits)
    const len = stream[p + 1]! | (stream[p + 2]! << 8);
    const nlen = stream[p + 3]! | (stream[p + 4]! << 8);
    if ((len ^ 0xffff) !== nlen) return false;
    p += 5;
    if (p + len > stream.length || i + len > plain.length) return false;
    // (by ranges: a view of each side per block was a tenth of what a rewrite's batches allocated)
    if (compareRanges.call(stream, plain, i, i + len, p, p + len) !== 0) return false;
    p += len;
    i += len;
    if (head & 1) break;
  }
  if (i !== plain.length || p + 4 !== stream.length) return false;
  const ad =
    ((stream[p]! << 24) | (stream[p + 1]! << 16) | (stream[p + 2]! << 8) | stream[p + 3]!) >>> 0;
  return ad === (typeof adler === 'number' ? adler : adler());
}
