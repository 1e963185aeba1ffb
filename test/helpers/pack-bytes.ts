/**
 * Minimal, independent readers of pack/idx bytes for asserting properties of
 * the fixtures (deliberately not shared with src/: the tests must not trust
 * the code under test to check the fixtures).
 */
import * as fs from 'node:fs';

export const OBJ_COMMIT = 1;
export const OBJ_TREE = 2;
export const OBJ_BLOB = 3;
export const OBJ_TAG = 4;
export const OBJ_OFS_DELTA = 6;
export const OBJ_REF_DELTA = 7;

/** The type field (bits 4-6 of the first byte) of the pack entry at `offset`. */
export function packEntryType(pack: Buffer, offset: number): number {
  const b = pack[offset];
  if (b === undefined) throw new Error(`offset ${offset} beyond the pack (${pack.length} bytes)`);
  return (b >> 4) & 7;
}

export interface PackHeader {
  signature: string;
  version: number;
  count: number;
}

export function readPackHeader(pack: Buffer): PackHeader {
  return {
    signature: pack.subarray(0, 4).toString('latin1'),
    version: pack.readUInt32BE(4),
    count: pack.readUInt32BE(8),
  };
}

export const IDX_V2_MAGIC = Buffer.from([0xff, 0x74, 0x4f, 0x63]); // "\377tOc"

export interface IdxInfo {
  version: 1 | 2;
  count: number;
  oids: string[];
  /** Pack offsets, in index (sorted oid) order. */
  offsets: number[];
  /** v2: number of 4-byte offset entries with the MSB set (they index the 64-bit table). */
  msbEntries: number;
  /** v2: number of entries of the 64-bit offset table (from the file size). */
  largeOffsetEntries: number;
}

/** Parse a version 1 or 2 pack index; `hashLen` is 20 (sha1) or 32 (sha256). */
export function readIdx(idxPath: string, hashLen = 20): IdxInfo {
  const buf = fs.readFileSync(idxPath);
  if (buf.subarray(0, 4).equals(IDX_V2_MAGIC)) {
    const version = buf.readUInt32BE(4);
    if (version !== 2) throw new Error(`${idxPath}: unsupported idx version ${version}`);
    const count = buf.readUInt32BE(8 + 255 * 4);
    const namesAt = 8 + 256 * 4;
    const crcAt = namesAt + count * hashLen;
    const offAt = crcAt + count * 4;
    const largeAt = offAt + count * 4;
    const trailer = 2 * hashLen;
    const largeOffsetEntries = (buf.length - trailer - largeAt) / 8;
    if (!Number.isInteger(largeOffsetEntries) || largeOffsetEntries < 0) {
      throw new Error(`${idxPath}: inconsistent idx v2 size ${buf.length}`);
    }
    const oids: string[] = [];
    const offsets: number[] = [];
    let msbEntries = 0;
    for (let i = 0; i < count; i++) {
      oids.push(buf.subarray(namesAt + i * hashLen, namesAt + (i + 1) * hashLen).toString('hex'));
      const o = buf.readUInt32BE(offAt + i * 4);
      if (o & 0x80000000) {
        msbEntries++;
        const k = o & 0x7fffffff;
        offsets.push(Number(buf.readBigUInt64BE(largeAt + k * 8)));
      } else {
        offsets.push(o);
      }
    }
    return { version: 2, count, oids, offsets, msbEntries, largeOffsetEntries };
  }
  // Version 1: fanout, then (4-byte offset, oid) pairs, then two checksums.
  const count = buf.readUInt32BE(255 * 4);
  const entriesAt = 256 * 4;
  if (buf.length !== entriesAt + count * (4 + hashLen) + 2 * hashLen) {
    throw new Error(`${idxPath}: inconsistent idx v1 size ${buf.length}`);
  }
  const oids: string[] = [];
  const offsets: number[] = [];
  for (let i = 0; i < count; i++) {
    const at = entriesAt + i * (4 + hashLen);
    offsets.push(buf.readUInt32BE(at));
    oids.push(buf.subarray(at + 4, at + 4 + hashLen).toString('hex'));
  }
  return { version: 1, count, oids, offsets, msbEntries: 0, largeOffsetEntries: 0 };
}

/** Where the zlib data of the entry at `offset` starts: after its type/size varint and its OFS_DELTA distance or REF_DELTA base id. */
export function entryDataStart(pack: Buffer, offset: number, hashLen: number): number {
  let p = offset;
  let c = pack[p++]!;
  const type = (c >> 4) & 7;
  while (c & 0x80) c = pack[p++]!;
  if (type === OBJ_OFS_DELTA) {
    c = pack[p++]!;
    while (c & 0x80) c = pack[p++]!;
  } else if (type === OBJ_REF_DELTA) {
    p += hashLen;
  }
  return p;
}

/**
 * The zlib stream header of the entry at `offset` (entryDataStart): CMF/FLG and the first
 * block's BTYPE. `flevel` is zlib's FLEVEL (0 for levels 0-1, 1 for 2-5, 2 for 6, 3 for 7-9);
 * `stored` means the first deflate block is a stored one.
 */
export function entryZlibInfo(
  pack: Buffer,
  offset: number,
  hashLen: number,
): { flevel: number; stored: boolean } {
  const p = entryDataStart(pack, offset, hashLen);
  const cmf = pack[p]!;
  const flg = pack[p + 1]!;
  if ((cmf & 0x0f) !== 8 || ((cmf << 8) | flg) % 31 !== 0)
    throw new Error(`no zlib header at ${p} (entry ${offset})`);
  return { flevel: flg >> 6, stored: ((pack[p + 2]! >> 1) & 3) === 0 };
}

/** Flips bits of one byte of a file (read-only pack files included) at `at`: XOR with `mask`. */
export function flipByte(file: string, at: number, mask = 0xff): void {
  fs.chmodSync(file, 0o644);
  const fd = fs.openSync(file, 'r+');
  const b = Buffer.alloc(1);
  fs.readSync(fd, b, 0, 1, at);
  b[0]! ^= mask;
  fs.writeSync(fd, b, 0, 1, at);
  fs.closeSync(fd);
}
