/**
 * A zstd pack ("zpack", docs/zstd-pack-format.md) written by hand for hostile inputs: any ids,
 * any refs section, entries whose data is stored plain (exactly the declared size, so no zstd
 * is needed to make one). Shares nothing with src/ (forge.ts writes the entries and the idx).
 */
import { createHash } from 'node:crypto';
import { crc32 } from 'node:zlib';
import {
  buildIdx,
  entryHeader,
  hashLen,
  objectId,
  ofsDistance,
  OBJ,
  type HashName,
} from './forge.js';

export interface ZpackEntry {
  type: number;
  /** The object's bytes, or a delta's instructions, stored plain. */
  data: Buffer;
  /** The id the index gives it (default: the content's own id; deltas must give one). */
  id?: Buffer;
  /** OFS_DELTA: index of the base entry (earlier in the list). */
  ofsBase?: number;
}

export interface ZpackOptions {
  /** The refs section as written ("<hex> <refname>\n" lines), any bytes. */
  refs?: string | Buffer;
  promisor?: boolean;
}

/** A zpack of `entries` (no dictionaries, level 0), with the index, footer and trailer right. */
export function forgeZpack(entries: ZpackEntry[], h: HashName, o: ZpackOptions = {}): Buffer {
  const refs =
    typeof o.refs === 'string' ? Buffer.from(o.refs, 'utf8') : (o.refs ?? Buffer.alloc(0));
  const fixed = Buffer.alloc(16);
  Buffer.from([0x89, 0x5a, 0x50, 0x4b]).copy(fixed, 0);
  fixed.writeUInt32BE(1, 4);
  fixed.writeUInt32BE(entries.length, 8);
  fixed.writeUInt8(h === 'sha1' ? 1 : 2, 12);
  fixed.writeUInt8(o.promisor === true ? 1 : 0, 13);
  const rl = Buffer.alloc(4);
  rl.writeUInt32BE(refs.length, 0);
  const parts = [fixed, rl, refs];
  let off = fixed.length + 4 + refs.length;
  const offsets: number[] = [];
  const crcs: number[] = [];
  const ids: Buffer[] = [];
  for (const e of entries) {
    const bits = [entryHeader(e.type, e.data.length)];
    if (e.type === OBJ.ofs) bits.push(ofsDistance(off - offsets[e.ofsBase!]!));
    bits.push(e.data);
    const raw = Buffer.concat(bits);
    offsets.push(off);
    crcs.push(crc32(raw));
    ids.push(e.id ?? objectId(e.type, e.data, h));
    parts.push(raw);
    off += raw.length;
  }
  const body = Buffer.concat(parts);
  const idx = buildIdx(ids, offsets, crcs, createHash(h).update(body).digest(), h);
  const footer = Buffer.alloc(8);
  footer.writeUInt32BE(Math.floor(body.length / 2 ** 32), 0);
  footer.writeUInt32BE(body.length % 2 ** 32, 4);
  const all = Buffer.concat([body, idx, footer]);
  const out = Buffer.concat([all, createHash(h).update(all).digest()]);
  if (out.length !== all.length + hashLen(h)) throw new Error('forgeZpack: trailer');
  return out;
}

/** Where a zpack's parts are, read from its bytes (docs/zstd-pack-format.md), for damage aimed at each. */
export interface ZpackLayout {
  count: number;
  /** Dictionary table, dictionaries, refs length field, refs, entries, index, footer, trailer. */
  dictTable: number;
  dicts: number;
  refsLen: number;
  refs: number;
  entries: number;
  index: number;
  footer: number;
  trailer: number;
  /** Entry offsets in file order. */
  offsets: number[];
}

export function zpackLayout(buf: Buffer, h: HashName): ZpackLayout {
  const len = hashLen(h);
  const count = buf.readUInt32BE(8);
  const ndicts = buf.readUInt8(15);
  let pos = 16 + ndicts * 8;
  const dicts = pos;
  for (let i = 0; i < ndicts; i++) pos += buf.readUInt32BE(16 + i * 8 + 4);
  const refsLen = pos;
  const entries = pos + 4 + buf.readUInt32BE(pos);
  const footer = buf.length - len - 8;
  const index = buf.readUInt32BE(footer) * 2 ** 32 + buf.readUInt32BE(footer + 4);
  const offAt = index + 8 + 1024 + count * (len + 4);
  const offsets: number[] = [];
  for (let i = 0; i < count; i++) offsets.push(buf.readUInt32BE(offAt + i * 4)); // (small files: no 64-bit table)
  offsets.sort((a, b) => a - b);
  return {
    count,
    dictTable: 16,
    dicts,
    refsLen,
    refs: refsLen + 4,
    entries,
    index,
    footer,
    trailer: buf.length - len,
    offsets,
  };
}

/**
 * Makes every checksum of a damaged zpack right again (each entry's CRC32 in the index, the
 * index's pack checksum and its own, the file's trailer), so that only the damage is wrong and
 * it reaches the decoders behind them.
 */
export function refixZpack(damaged: Buffer, h: HashName): Buffer {
  const buf = Buffer.from(damaged);
  const len = hashLen(h);
  const L = zpackLayout(buf, h);
  const crcAt = L.index + 8 + 1024 + L.count * len;
  const offAt = crcAt + L.count * 4;
  for (let r = 0; r < L.count; r++) {
    const off = buf.readUInt32BE(offAt + r * 4);
    const k = L.offsets.indexOf(off);
    const end = k + 1 < L.offsets.length ? L.offsets[k + 1]! : L.index;
    buf.writeUInt32BE(crc32(buf.subarray(off, end)) >>> 0, crcAt + r * 4);
  }
  const idxEnd = L.footer; // the index runs up to the footer
  createHash(h)
    .update(buf.subarray(0, L.index))
    .digest()
    .copy(buf, idxEnd - 2 * len);
  createHash(h)
    .update(buf.subarray(L.index, idxEnd - len))
    .digest()
    .copy(buf, idxEnd - len);
  createHash(h).update(buf.subarray(0, L.trailer)).digest().copy(buf, L.trailer);
  return buf;
}
