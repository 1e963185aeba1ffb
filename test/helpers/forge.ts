/**
 * A small, independent pack and index writer for hostile inputs: entries with any type, declared
 * size, zlib stream, OFS distance or REF base; an idx v2 with any ids, offsets and CRCs. It shares
 * nothing with src/ (the tests must not build their damaged inputs with the code under test).
 */
import { createHash } from 'node:crypto';
import { crc32, deflateSync } from 'node:zlib';

export type HashName = 'sha1' | 'sha256';

export function hashLen(h: HashName): number {
  return h === 'sha1' ? 20 : 32;
}

export const OBJ = { commit: 1, tree: 2, blob: 3, tag: 4, ofs: 6, ref: 7 } as const;
const TYPE_NAME: Record<number, string> = { 1: 'commit', 2: 'tree', 3: 'blob', 4: 'tag' };

/** git's object id of `data` as a `type`. */
export function objectId(type: number, data: Buffer, h: HashName): Buffer {
  return createHash(h).update(`${TYPE_NAME[type]} ${data.length}\0`).update(data).digest();
}

/** Entry header: type and size, 4 bits then 7 per byte (git's `encode_in_pack_object_header`). */
export function entryHeader(type: number, size: number): Buffer {
  const out: number[] = [];
  let c = (type << 4) | (size % 16);
  let rest = Math.floor(size / 16);
  while (rest > 0) {
    out.push(c | 0x80);
    c = rest % 128;
    rest = Math.floor(rest / 128);
  }
  out.push(c);
  return Buffer.from(out);
}

/** OFS_DELTA distance in git's offset encoding. */
export function ofsDistance(d: number): Buffer {
  const out = [d % 128];
  let v = Math.floor(d / 128);
  while (v > 0) {
    v -= 1;
    out.unshift(0x80 | (v % 128));
    v = Math.floor(v / 128);
  }
  return Buffer.from(out);
}

/** A delta's size varint. */
export function deltaVarint(n: number): Buffer {
  const out: number[] = [];
  let v = n;
  do {
    let c = v % 128;
    v = Math.floor(v / 128);
    if (v > 0) c |= 0x80;
    out.push(c);
  } while (v > 0);
  return Buffer.from(out);
}

/** A copy instruction (offset, size) of git's delta format. */
export function copyOp(offset: number, size: number): Buffer {
  const bytes: number[] = [];
  let cmd = 0x80;
  for (let i = 0; i < 4; i++) {
    const b = Math.floor(offset / 2 ** (8 * i)) % 256;
    if (b) {
      cmd |= 1 << i;
      bytes.push(b);
    }
  }
  const s = size === 0x10000 ? 0 : size;
  for (let i = 0; i < 3; i++) {
    const b = Math.floor(s / 2 ** (8 * i)) % 256;
    if (b) {
      cmd |= 0x10 << i;
      bytes.push(b);
    }
  }
  return Buffer.from([cmd, ...bytes]);
}

/** An insert instruction (at most 127 bytes). */
export function insertOp(data: Buffer): Buffer {
  if (data.length === 0 || data.length > 127) throw new Error('insertOp: 1..127 bytes');
  return Buffer.concat([Buffer.from([data.length]), data]);
}

export function delta(srcSize: number, dstSize: number, ops: Buffer[]): Buffer {
  return Buffer.concat([deltaVarint(srcSize), deltaVarint(dstSize), ...ops]);
}

export interface ForgeEntry {
  type: number;
  /** Inflated data (for a delta, its instructions). */
  data: Buffer;
  /** Size written in the header (default: data.length). */
  declaredSize?: number;
  /** OFS_DELTA: index of the base entry in the list (earlier), or a raw distance. */
  ofsBase?: number;
  ofsRaw?: number;
  /** REF_DELTA: the base id. */
  refBase?: Buffer;
  /** The compressed bytes, if not `deflate(data)`. */
  zlib?: Buffer;
}

export interface ForgedPack {
  pack: Buffer;
  offsets: number[];
  crcs: number[];
  checksum: Buffer;
}

/** Writes entries as a version 2 pack; `count` overrides the header's object count. */
export function buildPack(entries: ForgeEntry[], h: HashName, count = entries.length): ForgedPack {
  const parts: Buffer[] = [];
  const head = Buffer.alloc(12);
  head.write('PACK', 0, 'latin1');
  head.writeUInt32BE(2, 4);
  head.writeUInt32BE(count, 8);
  parts.push(head);
  let off = 12;
  const offsets: number[] = [];
  const crcs: number[] = [];
  for (const e of entries) {
    const z = e.zlib ?? deflateSync(e.data);
    const bits: Buffer[] = [entryHeader(e.type, e.declaredSize ?? e.data.length)];
    if (e.type === OBJ.ofs) bits.push(ofsDistance(e.ofsRaw ?? off - offsets[e.ofsBase!]!));
    if (e.type === OBJ.ref) bits.push(e.refBase!);
    bits.push(z);
    const raw = Buffer.concat(bits);
    offsets.push(off);
    crcs.push(crc32(raw));
    parts.push(raw);
    off += raw.length;
  }
  const body = Buffer.concat(parts);
  const checksum = createHash(h).update(body).digest();
  return { pack: Buffer.concat([body, checksum]), offsets, crcs, checksum };
}

/** An idx v2 for these (id, offset, crc) triples, sorted by id as git writes it. */
export function buildIdx(
  ids: Buffer[],
  offsets: number[],
  crcs: number[],
  packChecksum: Buffer,
  h: HashName,
): Buffer {
  const len = hashLen(h);
  const order = ids.map((_, i) => i).sort((a, b) => Buffer.compare(ids[a]!, ids[b]!));
  const n = ids.length;
  const large = offsets.filter((o) => o >= 0x80000000).length;
  const out = Buffer.alloc(8 + 1024 + n * (len + 8) + large * 8 + 2 * len);
  out.writeUInt32BE(0xff744f63, 0);
  out.writeUInt32BE(2, 4);
  const fan = new Array<number>(256).fill(0);
  for (const id of ids) fan[id[0]!]!++;
  let acc = 0;
  for (let b = 0; b < 256; b++) out.writeUInt32BE((acc += fan[b]!), 8 + b * 4);
  const idsAt = 8 + 1024;
  const crcAt = idsAt + n * len;
  const offAt = crcAt + n * 4;
  const bigAt = offAt + n * 4;
  let k = 0;
  order.forEach((i, r) => {
    ids[i]!.copy(out, idsAt + r * len);
    out.writeUInt32BE(crcs[i]! >>> 0, crcAt + r * 4);
    const o = offsets[i]!;
    if (o >= 0x80000000) {
      out.writeUInt32BE((0x80000000 | k) >>> 0, offAt + r * 4);
      out.writeUInt32BE(Math.floor(o / 2 ** 32), bigAt + k * 8);
      out.writeUInt32BE(o % 2 ** 32, bigAt + k * 8 + 4);
      k++;
    } else out.writeUInt32BE(o, offAt + r * 4);
  });
  const trailer = bigAt + large * 8;
  packChecksum.copy(out, trailer);
  createHash(h)
    .update(out.subarray(0, trailer + len))
    .digest()
    .copy(out, trailer + len);
  return out;
}

/** Recomputes the trailing checksum of a pack, idx or rev after an edit (so that only the edit is wrong). */
export function resum(buf: Buffer, h: HashName): Buffer {
  const len = hashLen(h);
  const out = Buffer.from(buf);
  createHash(h)
    .update(out.subarray(0, out.length - len))
    .digest()
    .copy(out, out.length - len);
  return out;
}

/** A pack and idx of `entries`, with ids given or computed (a base object's id is its content's). */
export function forge(
  entries: ForgeEntry[],
  ids: Buffer[],
  h: HashName,
  count?: number,
): { pack: Buffer; idx: Buffer; name: string; offsets: number[] } {
  const p = buildPack(entries, h, count);
  const idx = buildIdx(ids, p.offsets, p.crcs, p.checksum, h);
  return { pack: p.pack, idx, name: `pack-${p.checksum.toString('hex')}`, offsets: p.offsets };
}

/** A made-up id that no real object has (deterministic). */
export function fakeId(seed: string, h: HashName): Buffer {
  return createHash(h).update(`not an object: ${seed}`).digest();
}
