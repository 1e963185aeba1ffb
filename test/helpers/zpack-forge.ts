/**
 * A zstd pack ("zpack", docs/zstd-pack-format.md) written by hand for hostile inputs: any ids,
 * any refs section, entries whose data is stored plain (exactly the declared size, so no zstd
 * is needed to make one). Shares nothing with src/ (forge.ts writes the entries and the idx).
 */
import { createHash } from 'node:crypto';
import { crc32 } from 'node:zlib';
import { buildIdx, entryHeader, hashLen, objectId, ofsDistance, OBJ, type HashName } from './forge.js';

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
  const refs = typeof o.refs === 'string' ? Buffer.from(o.refs, 'utf8') : (o.refs ?? Buffer.alloc(0));
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
