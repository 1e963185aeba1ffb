import { corrupt } from '../errors.js';
import { SEQUENTIAL_CHUNK, type Pack } from './pack.js';

/**
 * Visits every entry in pack order with its raw bytes, reading the pack in large sequential
 * chunks (an entry larger than a chunk is read on its own). `raw` is only valid in the callback.
 * `onBytes`, when given, sees every byte from offset 12 to the end of the last entry exactly
 * once and in order (for hashing the pack in the same pass).
 */
export function scanEntries(pack: Pack, visit: (j: number, offset: number, raw: Buffer) => void, chunkSize = SEQUENTIAL_CHUNK, onBytes?: (bytes: Buffer) => void): void {
  const order = pack.order;
  const offs = pack.idx.offsets;
  let chunk = Buffer.allocUnsafe(Math.min(chunkSize, Math.max(pack.dataEnd, 1)));
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
    if (len > chunkSize) {
      const big = pack.read(off, len);
      if (onBytes && off === fed) {
        onBytes(big);
        fed = end;
      }
      visit(j, off, big);
      continue;
    }
    if (off < chunkStart || end > chunkStart + chunkLen) {
      chunkStart = off;
      chunkLen = Math.min(chunkSize, pack.dataEnd - off);
      if (chunk.length < chunkLen) chunk = Buffer.allocUnsafe(chunkLen);
      pack.read(off, chunkLen, chunk.subarray(0, chunkLen));
      if (onBytes && fed >= chunkStart && fed < chunkStart + chunkLen) {
        onBytes(chunk.subarray(fed - chunkStart, chunkLen));
        fed = chunkStart + chunkLen;
      }
    }
    visit(j, off, chunk.subarray(off - chunkStart, end - chunkStart));
  }
}
