import { crc32 } from 'node:zlib';
import { corrupt } from '../errors.js';
import { MAX_ENTRY_HEADER } from '../format/pack.js';
import { SEQUENTIAL_CHUNK, type Pack } from './pack.js';

/** An entry's header and the first bytes of its zlib stream (header, and the first block's type). */
const HEAD_BYTES = MAX_ENTRY_HEADER + 8;
/**
 * In a pass over headers, an entry larger than this that the current chunk does not hold has
 * only its head read: one small read instead of a chunk mostly of its data.
 */
const HEAD_ONLY_ABOVE = 64 << 10;

/**
 * Visits every entry in pack order (`rank`) with its raw bytes `buf[start, end)`, reading the pack
 * in large sequential chunks (an entry larger than a chunk is read on its own). `buf` is only
 * valid in the callback, and holds other entries' bytes around them: no view of each entry is
 * made (a view per entry was a fifth of the scan's time on 53k entries).
 * `onBytes`, when given, sees every byte from offset 12 to the end of the last entry exactly
 * once and in order (for hashing the pack in the same pass). `large` says what becomes of an
 * entry larger than a chunk:
 * - 'whole': it is read whole;
 * - 'stream': it is read a chunk at a time and never held: `raw` is its first chunk, and `whole`
 *   gives its length and CRC32 (a 1.5 GiB blob was held whole by every scan: issue 20);
 * - 'head': only its first HEAD_BYTES are read, and so are those of any entry over
 *   HEAD_ONLY_ABOVE that the current chunk does not hold: `raw` is that head, `whole` gives the
 *   length and no CRC32 (NaN). For a pass that needs only headers (inspect read all of a 4.2 GiB
 *   pack for them: issue 20); not with `onBytes`.
 */
export function scanEntries(
  pack: Pack,
  visit: (
    j: number,
    offset: number,
    buf: Buffer,
    start: number,
    end: number,
    rank: number,
    whole?: { len: number; crc: number },
  ) => void,
  chunkSize = SEQUENTIAL_CHUNK,
  onBytes?: (bytes: Buffer) => void,
  large: 'whole' | 'stream' | 'head' = 'whole',
): void {
  if (large === 'head' && onBytes)
    throw new Error('scanEntries: a pass over headers only sees no bytes');
  const head = large === 'head' ? Buffer.allocUnsafe(HEAD_BYTES) : undefined;
  const want = Math.min(chunkSize, Math.max(pack.dataEnd, 1));
  // The last scan's chunk, when it is large enough: a new one costs a page fault per page the
  // first time it is filled (4-5 ms a MiB on this machine's VM: docs/decisions.md, "First
  // touch"), and a rewrite scans twice (its plan, its proof). Taken, not shared: a scan inside
  // a visit gets a chunk of its own.
  const chunk =
    spareChunk !== undefined && spareChunk.length >= want && spareChunk.length <= 2 * want
      ? spareChunk
      : Buffer.allocUnsafe(want);
  if (chunk === spareChunk) spareChunk = undefined;
  try {
    scanChunks(pack, visit, chunkSize, onBytes, large, head, chunk);
  } finally {
    if (chunk.length <= SEQUENTIAL_CHUNK) spareChunk = chunk;
  }
}

/** Kept between scans (see scanEntries). */
let spareChunk: Buffer | undefined;

function scanChunks(
  pack: Pack,
  visit: Parameters<typeof scanEntries>[1],
  chunkSize: number,
  onBytes: ((bytes: Buffer) => void) | undefined,
  large: 'whole' | 'stream' | 'head',
  head: Buffer | undefined,
  /** At least min(chunkSize, pack.dataEnd) bytes: every chunk read fits. */
  chunk: Buffer,
): void {
  const order = pack.order;
  const offs = pack.idx.offsets;
  let chunkStart = 0;
  let chunkLen = 0;
  let fed = pack.dataStart;
  for (let i = 0; i < order.length; i++) {
    const j = order[i]!;
    const off = offs[j]!;
    const end = i + 1 < order.length ? offs[order[i + 1]!]! : pack.dataEnd;
    const len = end - off;
    if (off < pack.dataStart || len <= 0 || end > pack.dataEnd) {
      throw corrupt('bad-pack', pack.packPath, off, 'entry offset out of range');
    }
    if (
      head !== undefined &&
      len > HEAD_ONLY_ABOVE &&
      (off < chunkStart || end > chunkStart + chunkLen)
    ) {
      const n = Math.min(len, HEAD_BYTES);
      visit(j, off, pack.read(off, n, head.subarray(0, n)), 0, n, i, { len, crc: NaN });
      continue;
    }
    if (len > chunkSize && large === 'stream') {
      const head = pack.read(off, chunkSize);
      let crc = crc32(head);
      if (onBytes && off === fed) onBytes(head);
      let piece: Buffer | undefined;
      for (let p = off + chunkSize; p < end; p += chunkSize) {
        const l = Math.min(chunkSize, end - p);
        piece = pack.read(p, l, (piece ??= Buffer.allocUnsafe(chunkSize)).subarray(0, l));
        crc = crc32(piece, crc);
        if (onBytes && off === fed) onBytes(piece);
      }
      if (onBytes && off === fed) fed = end;
      visit(j, off, head, 0, head.length, i, { len, crc });
      continue;
    }
    if (len > chunkSize) {
      const big = pack.read(off, len);
      if (onBytes && off === fed) {
        onBytes(big);
        fed = end;
      }
      visit(j, off, big, 0, big.length, i);
      continue;
    }
    if (off < chunkStart || end > chunkStart + chunkLen) {
      chunkStart = off;
      chunkLen = Math.min(chunkSize, pack.dataEnd - off);
      pack.read(off, chunkLen, chunk.subarray(0, chunkLen));
      if (onBytes && fed >= chunkStart && fed < chunkStart + chunkLen) {
        onBytes(chunk.subarray(fed - chunkStart, chunkLen));
        fed = chunkStart + chunkLen;
      }
    }
    visit(j, off, chunk, off - chunkStart, end - chunkStart, i);
  }
}
