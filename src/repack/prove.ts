import { scanEntries } from '../store/pack-entries.js';
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import type { Hash } from 'node:crypto';
import { crc32 } from 'node:zlib';
import { GitError, corrupt } from '../errors.js';
import { toHex } from '../hash/algo.js';
import { FANOUT_BYTES, IDX_MAGIC } from '../format/idx.js';
import { REV_HEADER, RIDX_SIGNATURE } from '../format/rev.js';
import { sortIds } from '../hash/sort.js';
import { MAX_ENTRY_HEADER, encodePackHeader, parseEntryHeader } from '../format/pack.js';
import type { HashAlgo } from '../hash/algo.js';
import { Pack } from '../store/pack.js';
import type { WrittenPack } from './rewrite.js';

/**
 * The proof that a written pack may replace the old ones, before anything is removed:
 * - the file as it is on disk: one sequential read checks every entry's CRC32 against the new idx
 *   (whose CRCs were computed from the bytes handed to the writer, which hashed those same
 *   bytes into the trailer), and the 12-byte header and the trailer are compared byte for byte
 *   with what was written. The file is therefore what the writer hashed: no second SHA pass
 *   (when the writing thread has already read the pack back, `proveWrittenStreamed` instead);
 * - completeness: every id of every old pack and loose object is in the new pack or stays in a
 *   retained pack (a merge of sorted id lists, no hashing of contents needed: the entries were
 *   checked on the way in — CRC against the old idx for copies, inflate-compare for re-encodes,
 *   re-hash for whole and loose objects).
 */
export function proveWritten(
  np: Pack,
  written: { header: Buffer; checksum: Buffer },
  oldPacks: Pack[],
  looseIds: Buffer[],
  retained: (id: Uint8Array, pos: number) => boolean,
  onProgress?: (phase: string, done: number, total: number) => void,
): void {
  const algo = np.algo;
  const len = algo.len;
  const idx = np.idx;
  const n = np.count;
  onProgress?.('validating', 0, n);
  if (n > 0 && np.offsetAtRank(0) !== 12)
    throw new GitError('verify-failed', `new pack ${np.packPath}: first entry not at offset 12`);
  if (!np.read(0, 12).equals(written.header))
    throw new GitError(
      'verify-failed',
      `new pack ${np.packPath}: header does not read back as written`,
    );
  if (
    !np.read(np.dataEnd, len).equals(written.checksum) ||
    !idx.packChecksum.equals(written.checksum)
  ) {
    throw new GitError(
      'verify-failed',
      `new pack ${np.packPath}: trailer does not read back as written`,
    );
  }
  let done = 0;
  scanEntries(
    np,
    (j, off, buf, start, end, _rank, whole) => {
      if ((whole?.crc ?? crc32(buf.subarray(start, end))) !== idx.crc(j))
        throw new GitError(
          'verify-failed',
          `new pack ${np.packPath} does not read back as written at offset ${off}`,
          { file: np.packPath, offset: off, detail: 'does not read back as written' },
        );
      parseEntryHeader(buf, start, Math.min(end, start + MAX_ENTRY_HEADER), len, np.packPath, off);
      if ((++done & 0xffff) === 0) onProgress?.('validating', done, n);
    },
    undefined,
    undefined,
    'stream', // an entry over a chunk is read a chunk at a time, never held (issue 21)
  );
  if (done !== n)
    throw new GitError(
      'verify-failed',
      `new pack ${np.packPath}: ${done} entries read back, ${n} written`,
    );
  for (const p of oldPacks) {
    // The common case, one pack rewritten whole: the same sorted ids, one comparison.
    if (p.idx.ids.equals(idx.ids)) continue;
    const missing = firstMissing(p.idx.ids, idx.ids, len, retained);
    if (missing !== undefined)
      throw new GitError(
        'verify-failed',
        `object ${missing} of ${p.packPath} is missing from the new pack`,
      );
  }
  if (looseIds.length > 0) {
    const missing = firstMissing(sortedIds(looseIds, len), idx.ids, len, retained);
    if (missing !== undefined)
      throw new GitError('verify-failed', `loose object ${missing} is missing from the new pack`);
  }
  onProgress?.('validating', n, n);
}

/** Loose object ids as one sorted list. */
function sortedIds(ids: Buffer[], len: number): Buffer {
  const all = Buffer.concat(ids);
  const sorted = Buffer.allocUnsafe(all.length);
  sortIds(all, ids.length, len).forEach((i, r) =>
    all.copy(sorted, r * len, i * len, (i + 1) * len),
  );
  return sorted;
}

/**
 * `proveWritten` for a pack `rewritePartition` wrote: opens it with its temporary idx and rev,
 * waits for the writing thread's read-back, proves it, then waits until it is on disk (the
 * writing thread fsyncs while the proof reads) — before anything is installed or removed.
 */
export async function proveWrittenPack(
  w: WrittenPack,
  algo: HashAlgo,
  oldPacks: Pack[],
  looseIds: Buffer[],
  retained: (id: Uint8Array, pos: number) => boolean,
  onProgress?: (phase: string, done: number, total: number) => void,
): Promise<void> {
  if (w.readBack !== undefined) {
    await w.readBack.done;
    onProgress?.('validating', 0, w.count);
    const olds = oldPacks.map((p) => ({ ids: p.idx.ids, what: p.packPath }));
    if (looseIds.length > 0)
      olds.push({ ids: sortedIds(looseIds, algo.len), what: 'the loose objects' });
    proveWrittenStreamed(w, algo, w.readBack, olds, retained);
    onProgress?.('validating', w.count, w.count);
    await w.durable;
    return;
  }
  const np = Pack.open(w.packPath, algo, w.idxPath, w.revPath);
  try {
    proveWritten(
      np,
      { header: encodePackHeader(w.count), checksum: w.checksum },
      oldPacks,
      looseIds,
      retained,
      onProgress,
    );
    await w.durable;
  } finally {
    np.close();
  }
}

/** The first id of sorted `want` that is neither in sorted `have` nor `elsewhere`, as hex. */
export function firstMissing(
  want: Buffer,
  have: Buffer,
  len: number,
  elsewhere: (id: Uint8Array, pos: number) => boolean,
): string | undefined {
  const n = want.length / len;
  const m = have.length / len;
  let k = 0;
  for (let i = 0; i < n; i++) {
    let c = 1;
    while (k < m && (c = have.compare(want, i * len, (i + 1) * len, k * len, (k + 1) * len)) < 0)
      k++;
    if (k < m && c === 0) continue;
    if (!elsewhere(want, i * len)) return toHex(want, i * len, len);
  }
  return undefined;
}

/** Reads a file front to back in chunks, hashing what it hands out. */
class ChunkedFile {
  private readonly fd: number;
  readonly size: number;
  private pos = 0;
  private readonly buf = Buffer.allocUnsafe(1 << 20);
  readonly hash: Hash;

  constructor(
    readonly path: string,
    algo: HashAlgo,
  ) {
    this.fd = openSync(path, 'r');
    this.size = fstatSync(this.fd).size;
    this.hash = algo.create();
  }

  get offset(): number {
    return this.pos;
  }

  /** The next `bytes` bytes (at most 1 MiB), valid until the next call; hashed unless told. */
  take(bytes: number, hashed = true): Buffer {
    if (this.pos + bytes > this.size)
      throw corrupt(
        'verify-failed',
        this.path,
        this.pos,
        `ends at offset ${this.size}, ${bytes} more bytes expected`,
      );
    const view = this.buf.subarray(0, bytes);
    if (!this.readAt(view, this.pos))
      throw new GitError(
        'verify-failed',
        `${this.path}: unexpected end of file after offset ${this.pos}`,
      );
    this.pos += bytes;
    if (hashed) this.hash.update(view);
    return view;
  }

  /** Reads `into.length` bytes at `pos` (outside the sequence); false when the file ends first. */
  readAt(into: Buffer, pos: number): boolean {
    for (let done = 0; done < into.length;) {
      const n = readSync(this.fd, into, done, into.length - done, pos + done);
      if (n === 0) return false;
      done += n;
    }
    return true;
  }

  /** `n` records of `size` bytes, handed to `fn` a chunk at a time with the first one's number. */
  records(
    n: number,
    size: number,
    fn: (chunk: Buffer, first: number, count: number) => void,
  ): void {
    const per = Math.floor(this.buf.length / size);
    for (let first = 0; first < n; first += per) {
      const count = Math.min(per, n - first);
      fn(this.take(count * size), first, count);
    }
  }

  close(): void {
    closeSync(this.fd);
  }
}

/** What the writing thread read back: each idx rank's offset and CRC32. */
interface ReadBackTables {
  offsetAt(rank: number): number;
  crcAt(rank: number): number;
}

type Written = {
  packPath: string;
  idxPath: string;
  revPath: string | undefined;
  checksum: Buffer;
  count: number;
};
type OldIds = { ids: Buffer; what: string };
type Bad = (what: string, at: number) => GitError;

/**
 * `proveWritten` for a pack whose writing thread has read it back, without opening it: the
 * `.idx` and `.rev` are read from disk a chunk at a time (never whole: on git.git the index alone
 * is 24 MB), so the proof needs no memory per object beyond the old ids already held.
 * - pack: its 12-byte header and its trailer as written; every entry's header parsed and its
 *   CRC32 checked by the read-back;
 * - `.idx`: version 2, a monotonic fanout that agrees with the ids, ids strictly increasing,
 *   each CRC32 and offset (32-bit or through the 64-bit table) the one read back, the first
 *   entry at offset 12, the pack checksum, and the file's own checksum;
 * - `.rev` (when written): signature, version, hash id, a position per entry in strictly
 *   increasing offset order (so a permutation), both checksums;
 * - completeness: merged with the sorted ids of each old pack (and of the loose objects), every
 *   old id is in the new index or retained elsewhere.
 */
export function proveWrittenStreamed(
  w: Written,
  algo: HashAlgo,
  readBack: ReadBackTables,
  olds: OldIds[],
  retained: (id: Uint8Array, pos: number) => boolean,
): void {
  const dataEnd = provePackEnds(w, algo);
  proveIdxStreamed(w, algo, readBack, dataEnd, olds, retained);
  if (w.revPath !== undefined) proveRevStreamed(w.revPath, w, algo, readBack);
}

/** The pack's 12-byte header and its trailer as written; returns where its data ends. */
function provePackEnds(w: Written, algo: HashAlgo): number {
  const len = algo.len;
  const n = w.count;
  const pack = new ChunkedFile(w.packPath, algo);
  try {
    if (!pack.take(12, false).equals(encodePackHeader(n)))
      throw new GitError(
        'verify-failed',
        `new pack ${w.packPath}: header does not read back as written`,
      );
    const dataEnd = pack.size - len;
    if (dataEnd < 12)
      throw corrupt('verify-failed', w.packPath, pack.size, 'truncated', 'new pack');
    const trailer = Buffer.allocUnsafe(len);
    if (!pack.readAt(trailer, dataEnd) || !trailer.equals(w.checksum)) {
      throw corrupt(
        'verify-failed',
        w.packPath,
        dataEnd,
        'trailer does not read back as written',
        'new pack',
      );
    }
    return dataEnd;
  } finally {
    pack.close();
  }
}

/** The `.idx`, a chunk at a time: header and fanout, ids (and completeness), CRC32s, offsets, checksums. */
function proveIdxStreamed(
  w: Written,
  algo: HashAlgo,
  readBack: ReadBackTables,
  dataEnd: number,
  olds: OldIds[],
  retained: (id: Uint8Array, pos: number) => boolean,
): void {
  const len = algo.len;
  const n = w.count;
  const f = new ChunkedFile(w.idxPath, algo);
  try {
    const bad: Bad = (what, at) => corrupt('verify-failed', w.idxPath, at, what, 'new index');
    const head = f.take(8 + FANOUT_BYTES);
    if (head.readUInt32BE(0) !== IDX_MAGIC || head.readUInt32BE(4) !== 2)
      throw bad('not an index version 2', 0);
    const fanout = new Uint32Array(256);
    for (let b = 0; b < 256; b++) {
      fanout[b] = head.readUInt32BE(8 + b * 4);
      if (b > 0 && fanout[b]! < fanout[b - 1]!) throw bad('non-monotonic fanout', 8 + b * 4);
    }
    if (fanout[255] !== n)
      throw bad(`fanout counts ${fanout[255]} objects, ${n} written`, 8 + 255 * 4);
    const body = 8 + FANOUT_BYTES + n * (len + 8);
    const large = (f.size - 2 * len - body) / 8;
    if (!Number.isInteger(large) || large < 0)
      throw bad(`size ${f.size} does not fit ${n} objects`, 0);
    proveIdsComplete(f, n, len, fanout, olds, retained, bad);
    proveCrcsAndOffsets(f, n, readBack, dataEnd, large, body, len, bad);
    if (!f.take(len).equals(w.checksum))
      throw bad('pack checksum is not the new pack', f.offset - len);
    const own = f.hash.digest();
    if (!f.take(len, false).equals(own))
      throw bad('index checksum does not match its contents', f.offset - len);
  } finally {
    f.close();
  }
}

/** Ids: sorted, where the fanout says, merged with every old list (each old id is new or retained). */
function proveIdsComplete(
  f: ChunkedFile,
  n: number,
  len: number,
  fanout: Uint32Array,
  olds: OldIds[],
  retained: (id: Uint8Array, pos: number) => boolean,
  bad: Bad,
): void {
  const prev = Buffer.alloc(len);
  const cursor = olds.map(() => 0);
  const missing = (o: { ids: Buffer; what: string }, c: number): GitError =>
    new GitError(
      'verify-failed',
      `object ${toHex(o.ids, c * len, len)} of ${o.what} is missing from the new pack`,
    );
  f.records(n, len, (chunk, first, count) => {
    for (let i = 0; i < count; i++) {
      const r = first + i;
      const p = i * len;
      if (r > 0 && prev.compare(chunk, p, p + len) >= 0)
        throw bad('object ids out of order', f.offset - chunk.length + p);
      const b = chunk[p]!;
      if (r >= fanout[b]! || (b > 0 && r < fanout[b - 1]!))
        throw bad('an id outside its fanout bucket', f.offset - chunk.length + p);
      chunk.copy(prev, 0, p, p + len);
    }
    for (let k = 0; k < olds.length; k++) {
      const o = olds[k]!;
      let c = cursor[k]!;
      // One old pack rewritten whole: the same ids, a chunk at a time.
      if (
        o.ids.length >= (c + count) * len &&
        chunk.equals(o.ids.subarray(c * len, (c + count) * len))
      ) {
        cursor[k] = c + count;
        continue;
      }
      const m = o.ids.length / len;
      for (let i = 0; i < count; i++) {
        const p = i * len;
        let cmp = -1;
        while (c < m && (cmp = o.ids.compare(chunk, p, p + len, c * len, (c + 1) * len)) < 0) {
          if (!retained(o.ids, c * len)) throw missing(o, c);
          c++;
        }
        if (cmp === 0) c++;
      }
      cursor[k] = c;
    }
  });
  for (let k = 0; k < olds.length; k++) {
    const o = olds[k]!;
    for (let c = cursor[k]!; c < o.ids.length / len; c++)
      if (!retained(o.ids, c * len)) throw missing(o, c);
  }
}

/** CRC32s and offsets (32-bit, and the 64-bit table): the ones the writing thread read back. */
function proveCrcsAndOffsets(
  f: ChunkedFile,
  n: number,
  readBack: ReadBackTables,
  dataEnd: number,
  large: number,
  body: number,
  len: number,
  bad: Bad,
): void {
  f.records(n, 4, (chunk, first, count) => {
    for (let i = 0; i < count; i++) {
      if (chunk.readUInt32BE(i * 4) !== readBack.crcAt(first + i))
        throw bad('a CRC32 that is not the one read back', f.offset - chunk.length + i * 4);
    }
  });
  const largeRank: number[] = [];
  let lowest = Infinity;
  f.records(n, 4, (chunk, first, count) => {
    for (let i = 0; i < count; i++) {
      const r = first + i;
      const want = readBack.offsetAt(r);
      if (want < lowest) lowest = want;
      if (want >= dataEnd)
        throw bad(`an offset past the pack's data (${want})`, f.offset - chunk.length + i * 4);
      const o = chunk.readUInt32BE(i * 4);
      if (o & 0x80000000) {
        if ((o & 0x7fffffff) !== largeRank.length)
          throw bad('a 64-bit offset out of sequence', f.offset - chunk.length + i * 4);
        largeRank.push(r);
      } else if (o !== want)
        throw bad(`offset ${o}, the entry was written at ${want}`, f.offset - chunk.length + i * 4);
    }
  });
  if (n > 0 && lowest !== 12)
    throw bad(`first entry at offset ${lowest}, not 12`, 8 + FANOUT_BYTES + n * (len + 4));
  if (largeRank.length !== large)
    throw bad(`${large} 64-bit offsets, ${largeRank.length} referenced`, body);
  f.records(large, 8, (chunk, first, count) => {
    for (let i = 0; i < count; i++) {
      const v = chunk.readUInt32BE(i * 8) * 0x100000000 + chunk.readUInt32BE(i * 8 + 4);
      if (v !== readBack.offsetAt(largeRank[first + i]!))
        throw bad(`64-bit offset ${v} is not the one written`, f.offset - chunk.length + i * 8);
    }
  });
}

/** The `.rev`: signature, version, hash id, entries in strictly increasing offset order, both checksums. */
function proveRevStreamed(
  revPath: string,
  w: Written,
  algo: HashAlgo,
  readBack: ReadBackTables,
): void {
  const len = algo.len;
  const n = w.count;
  if (revPath === undefined) return;
  const rv = new ChunkedFile(revPath, algo);
  try {
    const bad = (what: string, at: number): GitError =>
      corrupt('verify-failed', revPath, at, what, 'new reverse index');
    const head = rv.take(REV_HEADER);
    if (
      head.readUInt32BE(0) !== RIDX_SIGNATURE ||
      head.readUInt32BE(4) !== 1 ||
      head.readUInt32BE(8) !== algo.revId
    )
      throw bad('bad header', 0);
    if (rv.size !== REV_HEADER + n * 4 + 2 * len)
      throw bad(`size ${rv.size} does not fit ${n} objects`, 0);
    let last = -1;
    rv.records(n, 4, (chunk, _first, count) => {
      for (let i = 0; i < count; i++) {
        const r = chunk.readUInt32BE(i * 4);
        const off = r < n ? readBack.offsetAt(r) : -1;
        if (off <= last) throw bad('entries not in pack order', rv.offset - chunk.length + i * 4);
        last = off;
      }
    });
    if (!rv.take(len).equals(w.checksum))
      throw bad('pack checksum is not the new pack', rv.offset - len);
    const own = rv.hash.digest();
    if (!rv.take(len, false).equals(own))
      throw bad('checksum does not match its contents', rv.offset - len);
  } finally {
    rv.close();
  }
}
