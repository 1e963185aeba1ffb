import type { HashAlgo } from '../hash/algo.js';
import { corrupt } from '../errors.js';

/**
 * A pack's reachability bitmap (`.bitmap`, git's Documentation/technical/bitmap-format.txt,
 * version 1), read as git 2.39's `load_bitmap_header` and `load_bitmap_entries_v1` read it and
 * written as `bitmap_writer_finish` writes it. Bits are positions in pack order; an entry's
 * commit position, the lookup table and the name-hash cache are in idx order.
 *
 *   "BITM", version 1 (u16), options (u16), entry count (u32), pack checksum (hash length)
 *   4 EWAH bitmaps: commits, trees, blobs, tags
 *   entries: commit position (u32), XOR offset (u8), flags (u8), EWAH bitmap
 *   [lookup table: (commit position u32, entry offset u64, XOR row u32) by commit position]
 *   [name-hash cache: u32 per object]
 *   checksum of all of the above
 */
export const BITMAP_SIGNATURE = 0x4249544d; // "BITM"
export const BITMAP_OPT_FULL_DAG = 0x1;
export const BITMAP_OPT_HASH_CACHE = 0x4;
export const BITMAP_OPT_LOOKUP_TABLE = 0x10;
/** The options git 2.39 writes; a file with any other is not ours to rewrite. */
const KNOWN_OPTIONS = BITMAP_OPT_FULL_DAG | BITMAP_OPT_HASH_CACHE | BITMAP_OPT_LOOKUP_TABLE;
/** An entry may be XORed with one of the 160 before it (git's MAX_XOR_OFFSET). */
export const MAX_XOR_OFFSET = 160;
const TRIPLET = 16; // BITMAP_LOOKUP_TABLE_TRIPLET_WIDTH

export interface BitmapEntry {
  /** The commit's position in the idx. */
  commitPos: number;
  /** Stored XORed with the bitmap of the entry this many places before (0: stored as it is). */
  xorOffset: number;
  flags: number;
  /** The serialized EWAH bitmap. */
  ewah: Buffer;
}

export interface PackBitmap {
  options: number;
  packChecksum: Buffer;
  /** Serialized EWAH bitmaps of the commits, trees, blobs and tags. */
  types: Buffer[];
  entries: BitmapEntry[];
  /** The name-hash of each object in idx order, 4 bytes big-endian each (BITMAP_OPT_HASH_CACHE). */
  hashCache: Buffer | undefined;
}

const TWO31 = 2 ** 31;

/**
 * The runs and literal words of a serialized EWAH (`ewah_each_bit`'s walk): `onRun(pos, words)`
 * for each run of 1-words, `onLiteral(pos, lo, hi)` for each literal word, positions in bits.
 */
function walkEwah(
  ewah: Buffer,
  onRun: (pos: number, words: number) => void,
  onLiteral: (pos: number, lo: number, hi: number) => void,
): void {
  const words = ewah.readUInt32BE(4);
  let pos = 0;
  for (let ptr = 0; ptr < words;) {
    const at = 8 + ptr * 8;
    const hi = ewah.readUInt32BE(at);
    const lo = ewah.readUInt32BE(at + 4);
    const run = (lo >>> 1) + (hi & 1) * TWO31;
    const literals = hi >>> 1;
    if ((lo & 1) !== 0 && run > 0) onRun(pos, run);
    pos += run * 64;
    ptr++;
    for (let k = 0; k < literals; k++, ptr++, pos += 64)
      onLiteral(pos, ewah.readUInt32BE(8 + ptr * 8 + 4), ewah.readUInt32BE(8 + ptr * 8));
  }
}

function popcount32(x: number): number {
  x -= (x >>> 1) & 0x55555555;
  x = (x & 0x33333333) + ((x >>> 2) & 0x33333333);
  return Math.imul((x + (x >>> 4)) & 0x0f0f0f0f, 0x01010101) >>> 24;
}

/** The set bits of a (checked) EWAH, in increasing order. */
export function ewahPositions(ewah: Buffer): Uint32Array {
  let n = 0;
  walkEwah(
    ewah,
    (_p, w) => (n += w * 64),
    (_p, lo, hi) => (n += popcount32(lo) + popcount32(hi)),
  );
  const out = new Uint32Array(n);
  let k = 0;
  walkEwah(
    ewah,
    (pos, w) => {
      for (let i = 0; i < w * 64; i++) out[k++] = pos + i;
    },
    (pos, lo, hi) => {
      for (let x = lo; x !== 0; x &= x - 1) out[k++] = pos + 31 - Math.clz32(x & -x);
      for (let x = hi; x !== 0; x &= x - 1) out[k++] = pos + 63 - Math.clz32(x & -x);
    },
  );
  return out;
}

/**
 * Checks the EWAH at `at` the way `ewah_read_mmap` reads it, and more: its words end within
 * `limit`, each run-length word's literals are within them, the stored RLW position is the last
 * run-length word, and no bit is set at or past `bits`. Returns where it ends.
 */
function checkEwah(
  buf: Buffer,
  at: number,
  limit: number,
  bits: number,
  file: string,
  what: string,
): number {
  if (limit - at < 12) throw corrupt('bad-bitmap', file, at, `${what}: truncated`);
  const words = buf.readUInt32BE(at + 4);
  const end = at + 12 + words * 8;
  if (end > limit) throw corrupt('bad-bitmap', file, at, `${what}: ${words} words do not fit`);
  let pos = 0;
  let lastRlw = 0;
  let top = -1;
  for (let ptr = 0; ptr < words;) {
    const w = at + 8 + ptr * 8;
    const hi = buf.readUInt32BE(w);
    const lo = buf.readUInt32BE(w + 4);
    const run = (lo >>> 1) + (hi & 1) * TWO31;
    const literals = hi >>> 1;
    lastRlw = ptr++;
    if (ptr + literals > words)
      throw corrupt('bad-bitmap', file, w, `${what}: ${literals} literal words past its end`);
    if ((lo & 1) !== 0 && run > 0) top = pos + run * 64 - 1;
    pos += run * 64;
    for (let k = 0; k < literals; k++, ptr++, pos += 64) {
      const l = buf.readUInt32BE(at + 8 + ptr * 8 + 4);
      const h = buf.readUInt32BE(at + 8 + ptr * 8);
      if (h !== 0) top = pos + 63 - Math.clz32(h);
      else if (l !== 0) top = pos + 31 - Math.clz32(l);
    }
  }
  if (buf.readUInt32BE(end - 4) !== lastRlw)
    throw corrupt(
      'bad-bitmap',
      file,
      end - 4,
      `${what}: run-length word position ${buf.readUInt32BE(end - 4)} is not the last one (${lastRlw})`,
    );
  if (top >= bits)
    throw corrupt(
      'bad-bitmap',
      file,
      at,
      `${what}: bit ${top} set, past the ${bits} objects of the pack`,
    );
  return end;
}

/**
 * A `.bitmap` of a pack of `count` objects, checked whole: git's header checks, then every EWAH,
 * every entry (git's `load_bitmap_entries_v1` checks), the lookup table against the entries, the
 * sizes of the optional sections, and the trailing checksum (which git does not read).
 */
export function parseBitmap(buf: Buffer, count: number, algo: HashAlgo, file: string): PackBitmap {
  const headerLen = 12 + algo.len;
  if (buf.length < headerLen + algo.len)
    throw corrupt('bad-bitmap', file, 0, 'bitmap file too small');
  if (buf.readUInt32BE(0) !== BITMAP_SIGNATURE)
    throw corrupt('bad-bitmap', file, 0, 'bitmap file has a bad signature');
  const version = buf.readUInt16BE(4);
  if (version !== 1) throw corrupt('bad-bitmap', file, 4, `unsupported bitmap version ${version}`);
  const options = buf.readUInt16BE(6);
  if ((options & BITMAP_OPT_FULL_DAG) === 0)
    throw corrupt('bad-bitmap', file, 6, 'bitmap without BITMAP_OPT_FULL_DAG');
  if ((options & ~KNOWN_OPTIONS) !== 0)
    throw corrupt('bad-bitmap', file, 6, `unknown bitmap options 0x${options.toString(16)}`);
  const trailerAt = buf.length - algo.len;
  if (!algo.digest(buf.subarray(0, trailerAt)).equals(buf.subarray(trailerAt)))
    throw corrupt('bad-bitmap', file, trailerAt, 'bitmap checksum mismatch');
  const entryCount = buf.readUInt32BE(8);
  let end = trailerAt;
  const cacheLen = options & BITMAP_OPT_HASH_CACHE ? count * 4 : 0;
  const tableLen = options & BITMAP_OPT_LOOKUP_TABLE ? entryCount * TRIPLET : 0;
  if (cacheLen + tableLen > end - headerLen)
    throw corrupt(
      'bad-bitmap',
      file,
      headerLen,
      'too short to fit its hash cache and lookup table',
    );
  end -= cacheLen + tableLen;
  let at = headerLen;
  const types: Buffer[] = [];
  for (const what of ['commit', 'tree', 'blob', 'tag']) {
    const e = checkEwah(buf, at, end, count, file, `${what} type bitmap`);
    types.push(buf.subarray(at, e));
    at = e;
  }
  const { entries, starts, end: last } = parseEntries(buf, at, end, entryCount, count, file);
  if (last !== end)
    throw corrupt('bad-bitmap', file, last, `${end - last} bytes after the last entry`);
  if (tableLen > 0) {
    const want = lookupTable(entries, starts);
    if (!want.equals(buf.subarray(end, end + tableLen)))
      throw corrupt('bad-bitmap', file, end, 'lookup table does not match the entries');
  }
  const hashCache =
    cacheLen > 0 ? buf.subarray(end + tableLen, end + tableLen + cacheLen) : undefined;
  return { options, packChecksum: buf.subarray(12, 12 + algo.len), types, entries, hashCache };
}

/** The entries (git's `load_bitmap_entries_v1`), with where each starts and where the last ends. */
function parseEntries(
  buf: Buffer,
  at: number,
  end: number,
  n: number,
  count: number,
  file: string,
): { entries: BitmapEntry[]; starts: number[]; end: number } {
  const entries: BitmapEntry[] = [];
  const starts: number[] = [];
  const seen = new Set<number>();
  for (let i = 0; i < n; i++) {
    if (end - at < 6) throw corrupt('bad-bitmap', file, at, `truncated header for entry ${i}`);
    starts.push(at);
    const commitPos = buf.readUInt32BE(at);
    const xorOffset = buf[at + 4]!;
    const flags = buf[at + 5]!;
    if (commitPos >= count)
      throw corrupt('bad-bitmap', file, at, `commit index ${commitPos} out of range`);
    if (seen.has(commitPos))
      throw corrupt('bad-bitmap', file, at, `duplicate entry for commit index ${commitPos}`);
    seen.add(commitPos);
    if (xorOffset > MAX_XOR_OFFSET || xorOffset > i)
      throw corrupt('bad-bitmap', file, at + 4, `XOR offset ${xorOffset} of entry ${i}`);
    const e = checkEwah(buf, at + 6, end, count, file, `bitmap of entry ${i}`);
    entries.push({ commitPos, xorOffset, flags, ewah: buf.subarray(at + 6, e) });
    at = e;
  }
  return { entries, starts, end: at };
}

/** git's `write_lookup_table`: by commit position, each entry's offset and its XOR base's row. */
function lookupTable(entries: BitmapEntry[], offsets: number[]): Buffer {
  const n = entries.length;
  const table = Array.from({ length: n }, (_, i) => i).sort(
    (a, b) => entries[a]!.commitPos - entries[b]!.commitPos,
  );
  const row = new Uint32Array(n);
  table.forEach((e, r) => (row[e] = r));
  const out = Buffer.alloc(n * TRIPLET);
  table.forEach((e, r) => {
    const x = entries[e]!;
    out.writeUInt32BE(x.commitPos, r * TRIPLET);
    out.writeBigUInt64BE(BigInt(offsets[e]!), r * TRIPLET + 4);
    out.writeUInt32BE(x.xorOffset > 0 ? row[e - x.xorOffset]! : 0xffffffff, r * TRIPLET + 12);
  });
  return out;
}

/** A `.bitmap` as git's `bitmap_writer_finish` writes it (with its trailing checksum). */
export function encodeBitmap(b: PackBitmap, algo: HashAlgo): Buffer {
  const head = Buffer.alloc(12 + algo.len);
  head.writeUInt32BE(BITMAP_SIGNATURE, 0);
  head.writeUInt16BE(1, 4);
  head.writeUInt16BE(b.options, 6);
  head.writeUInt32BE(b.entries.length, 8);
  b.packChecksum.copy(head, 12, 0, algo.len);
  const parts: Buffer[] = [head, ...b.types];
  let at = head.length + b.types.reduce((n, t) => n + t.length, 0);
  const offsets: number[] = [];
  for (const e of b.entries) {
    const h = Buffer.alloc(6);
    h.writeUInt32BE(e.commitPos, 0);
    h[4] = e.xorOffset;
    h[5] = e.flags;
    parts.push(h, e.ewah);
    offsets.push(at);
    at += 6 + e.ewah.length;
  }
  if (b.options & BITMAP_OPT_LOOKUP_TABLE) parts.push(lookupTable(b.entries, offsets));
  if (b.options & BITMAP_OPT_HASH_CACHE) {
    if (b.hashCache === undefined)
      throw new Error('a bitmap with BITMAP_OPT_HASH_CACHE needs its hash cache');
    parts.push(b.hashCache);
  }
  const body = Buffer.concat(parts);
  return Buffer.concat([body, algo.digest(body)]);
}

/** The EWAH with each bit `p` of `ewah` moved to `perm[p]` (XOR commutes with a permutation). */
export function permuteEwah(ewah: Buffer, perm: Uint32Array): Buffer {
  const pos = ewahPositions(ewah);
  for (let i = 0; i < pos.length; i++) pos[i] = perm[pos[i]!]!;
  return encodeEwah(pos.sort(), 'words');
}

/**
 * Builds an EWAH with git's own operations (ewah/ewah_bitmap.c: `add_empty_words`,
 * `add_literal`, `add_empty_word`), so that the bytes are the ones git would write for the
 * same bits. 64-bit words are held as (lo, hi) pairs.
 */
class EwahWriter {
  private buf = new Uint32Array(64);
  private size = 1; // ewah_clear: one run-length word, empty
  private rlw = 0;

  private runBit(): number {
    return this.buf[2 * this.rlw]! & 1;
  }
  private runLen(): number {
    return (this.buf[2 * this.rlw]! >>> 1) + (this.buf[2 * this.rlw + 1]! & 1) * TWO31;
  }
  private literals(): number {
    return this.buf[2 * this.rlw + 1]! >>> 1;
  }
  private setRunBit(v: number): void {
    this.buf[2 * this.rlw] = (this.buf[2 * this.rlw]! & ~1) | v;
  }
  private setRunLen(l: number): void {
    this.buf[2 * this.rlw] = (this.buf[2 * this.rlw]! & 1) | ((l % TWO31) << 1);
    this.buf[2 * this.rlw + 1] = (this.buf[2 * this.rlw + 1]! & ~1) | (l >= TWO31 ? 1 : 0);
  }
  private setLiterals(m: number): void {
    this.buf[2 * this.rlw + 1] = (this.buf[2 * this.rlw + 1]! & 1) | (m << 1);
  }
  private push(lo: number, hi: number): void {
    if (2 * this.size + 2 > this.buf.length) {
      const b = new Uint32Array(this.buf.length * 2);
      b.set(this.buf);
      this.buf = b;
    }
    this.buf[2 * this.size] = lo;
    this.buf[2 * this.size + 1] = hi;
    this.size++;
  }
  private pushRlw(): void {
    this.push(0, 0);
    this.rlw = this.size - 1;
  }

  /** git's `add_empty_words`. */
  addEmptyWords(v: number, n: number): void {
    if (this.runBit() !== v && this.runLen() + this.literals() === 0) this.setRunBit(v);
    else if (this.literals() !== 0 || this.runBit() !== v) {
      this.pushRlw();
      if (v) this.setRunBit(v);
    }
    const canAdd = Math.min(n, RLW_MAX_RUN - this.runLen());
    this.setRunLen(this.runLen() + canAdd);
    n -= canAdd;
    for (; n >= RLW_MAX_RUN; n -= RLW_MAX_RUN) {
      this.pushRlw();
      if (v) this.setRunBit(v);
      this.setRunLen(RLW_MAX_RUN);
    }
    if (n > 0) {
      this.pushRlw();
      if (v) this.setRunBit(v);
      this.setRunLen(n);
    }
  }

  /** git's `add_literal`. */
  addLiteral(lo: number, hi: number): void {
    const m = this.literals();
    if (m >= RLW_MAX_LITERALS) {
      this.pushRlw();
      this.setLiterals(1);
    } else this.setLiterals(m + 1);
    this.push(lo, hi);
  }

  /** git's `add_empty_word`. */
  addEmptyWord(v: number): void {
    const noLiteral = this.literals() === 0;
    const run = this.runLen();
    if (noLiteral && run === 0) this.setRunBit(v);
    if (noLiteral && this.runBit() === v && run < RLW_MAX_RUN) {
      this.setRunLen(run + 1);
      return;
    }
    this.pushRlw();
    this.setRunBit(v);
    this.setRunLen(1);
  }

  /** `ewah_serialize_to`: bit size, word count, the words, the last RLW's position. */
  serialize(bitSize: number): Buffer {
    const out = Buffer.alloc(12 + this.size * 8);
    out.writeUInt32BE(bitSize, 0);
    out.writeUInt32BE(this.size, 4);
    for (let i = 0; i < this.size; i++) {
      out.writeUInt32BE(this.buf[2 * i + 1]!, 8 + i * 8);
      out.writeUInt32BE(this.buf[2 * i]!, 12 + i * 8);
    }
    out.writeUInt32BE(this.rlw, 8 + this.size * 8);
    return out;
  }
}

const RLW_MAX_RUN = 2 ** 32 - 1; // RLW_LARGEST_RUNNING_COUNT
const RLW_MAX_LITERALS = TWO31 - 1; // RLW_LARGEST_LITERAL_COUNT

/**
 * The EWAH of the bits at `positions` (sorted, distinct), with git's bytes: as `ewah_set` makes
 * it bit by bit (`set`, the type bitmaps: bit size one past the last bit), or as
 * `bitmap_to_ewah` makes it from words (`words`, the commit bitmaps: bit size a whole word count).
 */
export function encodeEwah(positions: Uint32Array, style: 'set' | 'words'): Buffer {
  const w = new EwahWriter();
  let prev = -1;
  for (let i = 0; i < positions.length;) {
    const word = Math.floor(positions[i]! / 64);
    let lo = 0;
    let hi = 0;
    for (; i < positions.length && Math.floor(positions[i]! / 64) === word; i++) {
      const b = positions[i]! % 64;
      if (b < 32) lo |= 1 << b;
      else hi |= 1 << (b - 32);
    }
    if (word - prev > 1) w.addEmptyWords(0, word - prev - 1);
    // A full word is a run of ones (`ewah_add`; `ewah_set` turns a completed literal into one).
    if (lo === -1 && hi === -1) w.addEmptyWord(1);
    else w.addLiteral(lo >>> 0, hi >>> 0);
    prev = word;
  }
  const n = positions.length;
  if (style === 'set') return w.serialize(n === 0 ? 0 : positions[n - 1]! + 1);
  if (n === 0) w.addEmptyWord(0); // bitmap_to_ewah's final ewah_add of an empty word
  return w.serialize(n === 0 ? 64 : (prev + 1) * 64);
}
