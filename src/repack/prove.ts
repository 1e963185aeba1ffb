import { crc32 } from 'node:zlib';
import { GitError } from '../errors.js';
import { toHex } from '../hash/algo.js';
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
 *   with what was written. The file is therefore what the writer hashed: no second SHA pass;
 *   When the writing thread has already read the pack back against the CRC32s it computed
 *   (`readBack`), the index on disk is held against those same offsets and CRC32s instead;
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
  readBack?: { offsetAt(rank: number): number; crcAt(rank: number): number },
): void {
  const algo = np.algo;
  const len = algo.len;
  const idx = np.idx;
  const n = np.count;
  onProgress?.('validating', 0, n);
  if (n > 0 && np.offsetAtRank(0) !== 12) throw new GitError('verify-failed', `new pack ${np.packPath}: first entry not at offset 12`);
  if (!np.read(0, 12).equals(written.header)) throw new GitError('verify-failed', `new pack ${np.packPath}: header does not read back as written`);
  if (!np.read(np.dataEnd, len).equals(written.checksum) || !idx.packChecksum.equals(written.checksum)) {
    throw new GitError('verify-failed', `new pack ${np.packPath}: trailer does not read back as written`);
  }
  let done = 0;
  if (readBack !== undefined) {
    for (let r = 0; r < n; r++) {
      if (idx.offsets[r] !== readBack.offsetAt(r) || idx.crc(r) !== readBack.crcAt(r)) {
        throw new GitError('verify-failed', `new pack ${np.packPath}: its index does not match the entries read back at offset ${readBack.offsetAt(r)}`);
      }
    }
    done = n;
  } else np.scan(
    (j, off, raw) => {
      if (crc32(raw) !== idx.crc(j)) throw new GitError('verify-failed', `new pack ${np.packPath} does not read back as written at offset ${off}`);
      parseEntryHeader(raw, 0, Math.min(raw.length, MAX_ENTRY_HEADER), len, np.packPath, off);
      if ((++done & 0xffff) === 0) onProgress?.('validating', done, n);
    },
  );
  if (done !== n) throw new GitError('verify-failed', `new pack ${np.packPath}: ${done} entries read back, ${n} written`);
  for (const p of oldPacks) {
    // The common case, one pack rewritten whole: the same sorted ids, one comparison.
    if (p.idx.ids.equals(idx.ids)) continue;
    const missing = firstMissing(p.idx.ids, idx.ids, len, retained);
    if (missing !== undefined) throw new GitError('verify-failed', `object ${missing} of ${p.packPath} is missing from the new pack`);
  }
  if (looseIds.length > 0) {
    const all = Buffer.concat(looseIds);
    const sorted = Buffer.allocUnsafe(all.length);
    sortIds(all, looseIds.length, len).forEach((i, r) => all.copy(sorted, r * len, i * len, (i + 1) * len));
    const missing = firstMissing(sorted, idx.ids, len, retained);
    if (missing !== undefined) throw new GitError('verify-failed', `loose object ${missing} is missing from the new pack`);
  }
  onProgress?.('validating', n, n);
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
  const np = Pack.open(w.packPath, algo, w.idxPath, w.revPath);
  try {
    await w.readBack?.done;
    proveWritten(np, { header: encodePackHeader(w.count), checksum: w.checksum }, oldPacks, looseIds, retained, onProgress, w.readBack);
    await w.durable;
  } finally {
    np.close();
  }
}

/** The first id of sorted `want` that is neither in sorted `have` nor `elsewhere`, as hex. */
export function firstMissing(want: Buffer, have: Buffer, len: number, elsewhere: (id: Uint8Array, pos: number) => boolean): string | undefined {
  const n = want.length / len;
  const m = have.length / len;
  let k = 0;
  for (let i = 0; i < n; i++) {
    let c = 1;
    while (k < m && (c = have.compare(want, i * len, (i + 1) * len, k * len, (k + 1) * len)) < 0) k++;
    if (k < m && c === 0) continue;
    if (!elsewhere(want, i * len)) return toHex(want, i * len, len);
  }
  return undefined;
}
