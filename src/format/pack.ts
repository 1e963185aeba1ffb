import { corrupt } from '../errors.js';
import { OBJ_OFS_DELTA, OBJ_REF_DELTA, isBaseType, type EntryType } from './object-type.js';

/** "PACK" */
export const PACK_SIGNATURE = 0x5041434b;
export const PACK_HEADER_SIZE = 12;
/** Largest entry header: 1 + 7 bytes of size (53 bits) and a 10-byte OFS distance or a 32-byte REF id. */
export const MAX_ENTRY_HEADER = 8 + 32;
const MAX_SAFE = Number.MAX_SAFE_INTEGER;

export interface PackHeader {
  version: number;
  count: number;
}

export function parsePackHeader(buf: Uint8Array, file: string): PackHeader {
  if (buf.length < PACK_HEADER_SIZE) throw corrupt('bad-pack', file, 0, 'pack header truncated');
  const dv = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  if (dv.getUint32(0) !== PACK_SIGNATURE) throw corrupt('bad-pack', file, 0, 'bad pack signature');
  const version = dv.getUint32(4);
  if (version !== 2 && version !== 3)
    throw corrupt('bad-pack', file, 4, `pack version ${version} unsupported`);
  return { version, count: dv.getUint32(8) };
}

export function encodePackHeader(count: number, version = 2): Buffer {
  const b = Buffer.alloc(PACK_HEADER_SIZE);
  b.writeUInt32BE(PACK_SIGNATURE, 0);
  b.writeUInt32BE(version, 4);
  b.writeUInt32BE(count, 8);
  return b;
}

/** One decoded entry header; `baseDistance` for OFS_DELTA, `baseIdPos` (into the same buffer) for REF_DELTA. */
export interface EntryHeader {
  type: EntryType;
  /** Inflated size of the entry's data (for deltas: the delta's own size). */
  size: number;
  /** Bytes of the header, including the OFS distance or the REF base id. */
  headerLen: number;
  baseDistance: number;
  baseIdPos: number;
}

/**
 * Decodes an entry header at `pos` of `buf` (git's `unpack_object_header_buffer` plus the
 * base reference read by `unpack_entry`). `fileOffset` is `pos`'s offset in the pack, for errors.
 * Sizes are decoded with multiplication: no 32-bit surprises, and overflow past 2^53 is rejected.
 */
export function parseEntryHeader(
  buf: Uint8Array,
  pos: number,
  end: number,
  hashLen: number,
  file: string,
  fileOffset: number,
): EntryHeader {
  let p = pos;
  if (p >= end) throw corrupt('bad-pack', file, fileOffset, 'entry header truncated');
  let c = buf[p++]!;
  const type = (c >> 4) & 7;
  let size = c & 15;
  let mul = 16;
  while (c & 0x80) {
    if (p >= end) throw corrupt('bad-pack', file, fileOffset, 'entry header truncated');
    c = buf[p++]!;
    if (mul > 2 ** 46) throw corrupt('bad-pack', file, fileOffset, 'entry size overflows');
    size += (c & 0x7f) * mul;
    mul *= 128;
  }
  if (!isBaseType(type) && type !== OBJ_OFS_DELTA && type !== OBJ_REF_DELTA) {
    throw corrupt('bad-pack', file, fileOffset, `bad object type ${type}`);
  }
  let baseDistance = 0;
  let baseIdPos = -1;
  if (type === OBJ_OFS_DELTA) {
    if (p >= end) throw corrupt('bad-pack', file, fileOffset, 'delta base offset truncated');
    c = buf[p++]!;
    let d = c & 0x7f;
    while (c & 0x80) {
      if (p >= end) throw corrupt('bad-pack', file, fileOffset, 'delta base offset truncated');
      if (d >= MAX_SAFE / 128 - 1)
        throw corrupt('bad-pack', file, fileOffset, 'delta base offset overflows');
      c = buf[p++]!;
      d = (d + 1) * 128 + (c & 0x7f);
    }
    if (d === 0 || d >= fileOffset)
      throw corrupt('bad-pack', file, fileOffset, 'delta base offset out of bound');
    baseDistance = d;
  } else if (type === OBJ_REF_DELTA) {
    if (p + hashLen > end) throw corrupt('bad-pack', file, fileOffset, 'delta base id truncated');
    baseIdPos = p;
    p += hashLen;
  }
  return { type: type as EntryType, size, headerLen: p - pos, baseDistance, baseIdPos };
}

/** Type-and-size header (git's `encode_in_pack_object_header`). */
export function encodeEntryHeader(
  type: number,
  size: number,
  out: Uint8Array,
  pos: number,
): number {
  let p = pos;
  let c = (type << 4) | (size & 15);
  let rest = Math.floor(size / 16);
  while (rest > 0) {
    out[p++] = c | 0x80;
    c = rest & 0x7f;
    rest = Math.floor(rest / 128);
  }
  out[p++] = c;
  return p - pos;
}

/** OFS_DELTA distance in git's offset encoding (as written by `write_no_reuse_object`). */
export function encodeOfsDistance(distance: number, out: Uint8Array, pos: number): number {
  const n = ofsDistanceLength(distance);
  let d = distance;
  let i = pos + n - 1;
  out[i] = d & 127;
  d = Math.floor(d / 128);
  while (d > 0) {
    d -= 1;
    out[--i] = 0x80 | (d & 127);
    d = Math.floor(d / 128);
  }
  return n;
}

export function ofsDistanceLength(distance: number): number {
  let n = 1;
  let d = Math.floor(distance / 128);
  while (d > 0) {
    d -= 1;
    n++;
    d = Math.floor(d / 128);
  }
  return n;
}
