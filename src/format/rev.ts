import type { HashAlgo } from '../hash/algo.js';
import { corrupt } from '../errors.js';

export const RIDX_SIGNATURE = 0x52494458; // "RIDX"
export const REV_HEADER = 12;

/**
 * A `.rev` file: for each position in pack order, the object's position in the `.idx`.
 * Validated like git's `load_revindex_from_disk`: signature, version 1, hash id, size.
 */
const LITTLE_ENDIAN = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;

export function parseRev(buf: Buffer, count: number, algo: HashAlgo, file: string): Uint32Array {
  if (buf.length < REV_HEADER || buf.readUInt32BE(0) !== RIDX_SIGNATURE)
    throw corrupt('bad-rev', file, 0, 'reverse-index file has bad signature');
  const version = buf.readUInt32BE(4);
  if (version !== 1)
    throw corrupt('bad-rev', file, 4, `reverse-index file has unsupported version ${version}`);
  const hashId = buf.readUInt32BE(8);
  if (hashId !== algo.revId)
    throw corrupt('bad-rev', file, 8, `reverse-index file has unsupported hash id ${hashId}`);
  if (buf.length !== REV_HEADER + count * 4 + 2 * algo.len)
    throw corrupt('bad-rev', file, 0, 'reverse-index file is truncated or has the wrong size');
  // Copied and byte-swapped whole (native), then checked: a readUInt32BE per entry ran cold on
  // small packs.
  const order = new Uint32Array(count);
  const bytes = Buffer.from(order.buffer, 0, count * 4);
  buf.copy(bytes, 0, REV_HEADER, REV_HEADER + count * 4);
  if (LITTLE_ENDIAN) bytes.swap32();
  for (let i = 0; i < count; i++) {
    if (order[i]! >= count)
      throw corrupt('bad-rev', file, REV_HEADER + i * 4, 'reverse-index entry out of range');
  }
  return order;
}

/** The pack checksum a `.rev` file claims to belong to. */
export function revPackChecksum(buf: Buffer, algo: HashAlgo): Buffer {
  return buf.subarray(buf.length - 2 * algo.len, buf.length - algo.len);
}

/** Writes a `.rev` as git's `write_rev_file` does. `order[i]` = idx position of the i-th entry in pack order. */
export function encodeRev(order: Uint32Array, packChecksum: Uint8Array, algo: HashAlgo): Buffer {
  const n = order.length;
  const out = Buffer.alloc(REV_HEADER + n * 4 + 2 * algo.len);
  out.writeUInt32BE(RIDX_SIGNATURE, 0);
  out.writeUInt32BE(1, 4);
  out.writeUInt32BE(algo.revId, 8);
  for (let i = 0; i < n; i++) out.writeUInt32BE(order[i]!, REV_HEADER + i * 4);
  out.set(packChecksum, REV_HEADER + n * 4);
  const h = algo.create();
  h.update(out.subarray(0, REV_HEADER + n * 4 + algo.len));
  h.digest().copy(out, REV_HEADER + n * 4 + algo.len);
  return out;
}

/** Pack order from offsets alone, when there is no `.rev` (git's `create_pack_revindex`). */
export function packOrderFromOffsets(offsets: Float64Array | Uint32Array): Uint32Array {
  const n = offsets.length;
  // Fast path: offset and position packed in one exactly representable number, sorted natively.
  let max = 0;
  for (let i = 0; i < n; i++) if (offsets[i]! > max) max = offsets[i]!;
  const bits = Math.max(1, Math.ceil(Math.log2(n + 1)));
  if (max * 2 ** bits < 2 ** 53) {
    const keys = new Float64Array(n);
    const scale = 2 ** bits;
    for (let i = 0; i < n; i++) keys[i] = offsets[i]! * scale + i;
    keys.sort();
    const out = new Uint32Array(n);
    for (let i = 0; i < n; i++) out[i] = keys[i]! % scale;
    return out;
  }
  const order = new Uint32Array(n);
  for (let i = 0; i < n; i++) order[i] = i;
  order.sort((a, b) => offsets[a]! - offsets[b]!);
  return order;
}
