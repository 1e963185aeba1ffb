import { corrupt } from '../errors.js';
import type { HashAlgo } from '../hash/algo.js';
import { SHA1, SHA256 } from '../hash/algo.js';

/**
 * The zstd-framed pack ("zpack"), version 1. Byte for byte in docs/zstd-pack-format.md.
 *
 *   header   magic 89 5A 50 4B ("\x89ZPK": never "PACK", so git cannot mistake it for a pack),
 *            version u32, object count u32, hash id u8 (1 sha1, 2 sha256), flags u8 (bit 0:
 *            promisor objects), level i8, dictionary count u8
 *   dicts    per dictionary: kind u8, 3 zero bytes, length u32; then the dictionaries' bytes
 *   refs     length u32, then lines "<hex id> <refname>\n" (HEAD included when it resolves)
 *   entries  git pack entries (type and size, OFS_DELTA distance or REF_DELTA id), whose data is
 *            either the plain bytes (exactly the declared size) or one magicless zstd frame
 *            (shorter than the declared size), with the dictionary of the entry's kind if any
 *   index    an idx v2 of the entries; its "pack checksum" is the hash of everything before it
 *   footer   offset of the index u64
 *   trailer  hash of everything before it
 * All integers big-endian.
 */
export const ZPACK_MAGIC = Buffer.from([0x89, 0x5a, 0x50, 0x4b]);
export const ZPACK_VERSION = 1;
export const ZPACK_FLAG_PROMISOR = 1;
const FIXED = 16;

export interface ZpackDict {
  kind: number;
  data: Buffer;
}

export interface ZpackHeader {
  version: number;
  count: number;
  algo: HashAlgo;
  promisor: boolean;
  level: number;
  dicts: ZpackDict[];
  refs: string;
  /** Offset of the first entry. */
  dataStart: number;
}

export function isZpack(head: Uint8Array): boolean {
  return head.length >= 4 && Buffer.from(head.subarray(0, 4)).equals(ZPACK_MAGIC);
}

export function encodeZpackHeader(h: Omit<ZpackHeader, 'dataStart' | 'version'>): Buffer {
  const refs = Buffer.from(h.refs, 'utf8');
  const parts: Buffer[] = [];
  const fixed = Buffer.alloc(FIXED);
  ZPACK_MAGIC.copy(fixed, 0);
  fixed.writeUInt32BE(ZPACK_VERSION, 4);
  fixed.writeUInt32BE(h.count, 8);
  fixed.writeUInt8(h.algo.revId, 12);
  fixed.writeUInt8(h.promisor ? ZPACK_FLAG_PROMISOR : 0, 13);
  fixed.writeInt8(h.level, 14);
  fixed.writeUInt8(h.dicts.length, 15);
  parts.push(fixed);
  for (const d of h.dicts) {
    const t = Buffer.alloc(8);
    t.writeUInt8(d.kind, 0);
    t.writeUInt32BE(d.data.length, 4);
    parts.push(t);
  }
  for (const d of h.dicts) parts.push(d.data);
  const rl = Buffer.alloc(4);
  rl.writeUInt32BE(refs.length, 0);
  parts.push(rl, refs);
  return Buffer.concat(parts);
}

/** Parses the header region; `read(pos, len)` reads the file. Every length is checked against `size`. */
export function parseZpackHeader(
  read: (pos: number, len: number) => Buffer,
  size: number,
  file: string,
): ZpackHeader {
  if (size < FIXED) throw corrupt('bad-pack', file, 0, 'zstd pack header truncated');
  const fixed = read(0, FIXED);
  if (!isZpack(fixed)) throw corrupt('bad-pack', file, 0, 'bad zstd pack signature');
  const version = fixed.readUInt32BE(4);
  if (version !== ZPACK_VERSION)
    throw corrupt('bad-pack', file, 4, `zstd pack version ${version} unsupported`);
  const count = fixed.readUInt32BE(8);
  const algoId = fixed.readUInt8(12);
  const algo = algoId === 1 ? SHA1 : algoId === 2 ? SHA256 : undefined;
  if (algo === undefined) throw corrupt('bad-pack', file, 12, `unknown hash id ${algoId}`);
  const flags = fixed.readUInt8(13);
  if (flags & ~ZPACK_FLAG_PROMISOR) throw corrupt('bad-pack', file, 13, `unknown flags ${flags}`);
  const level = fixed.readInt8(14);
  const ndicts = fixed.readUInt8(15);
  let pos = FIXED;
  if (pos + ndicts * 8 > size) throw corrupt('bad-pack', file, pos, 'dictionary table truncated');
  const table = read(pos, ndicts * 8);
  pos += ndicts * 8;
  const dicts: ZpackDict[] = [];
  for (let i = 0; i < ndicts; i++) {
    const kind = table.readUInt8(i * 8);
    const len = table.readUInt32BE(i * 8 + 4);
    if (pos + len > size)
      throw corrupt(
        'bad-pack',
        file,
        FIXED + i * 8 + 4,
        `dictionary of ${len} bytes runs past the end of the file`,
      );
    dicts.push({ kind, data: read(pos, len) });
    pos += len;
  }
  if (pos + 4 > size) throw corrupt('bad-pack', file, pos, 'refs section truncated');
  const rlen = read(pos, 4).readUInt32BE(0);
  pos += 4;
  if (pos + rlen > size)
    throw corrupt(
      'bad-pack',
      file,
      pos - 4,
      `refs section of ${rlen} bytes runs past the end of the file`,
    );
  const refs = read(pos, rlen).toString('utf8');
  pos += rlen;
  return {
    version,
    count,
    algo,
    promisor: (flags & ZPACK_FLAG_PROMISOR) !== 0,
    level,
    dicts,
    refs,
    dataStart: pos,
  };
}

export function encodeZpackFooter(indexStart: number): Buffer {
  const b = Buffer.alloc(8);
  b.writeUInt32BE(Math.floor(indexStart / 0x100000000), 0);
  b.writeUInt32BE(indexStart % 0x100000000, 4);
  return b;
}

export function parseZpackFooter(b: Buffer): number {
  return b.readUInt32BE(0) * 0x100000000 + b.readUInt32BE(4);
}
