import { GitError } from '../errors.js';
import { toHex } from '../hash/algo.js';
import { MAX_ENTRY_HEADER } from '../format/pack.js';
import { deflateBound, storedZlibLength } from '../format/zlib-stored.js';
import { looseFileSize, loosePath } from '../store/loose.js';
import type { EntryEncoding } from './encoding.js';
import { isDirect, type Plan } from './plan.js';

/** What the new pack of a plan may take on disk: its bound (for the idx's offsets) and the free-space estimate. */

/**
 * The largest pack entry the rewrite holds whole: a delta it re-encodes (or a copy from a pack
 * with no CRC32s, an idx v1); one read is at most 2 GiB - 1 bytes. Copies and whole objects
 * re-encoded are streamed and have no bound (issues 20 and 21, docs/benchmarks.md §8).
 */
export const MAX_HELD_ENTRY = 2 ** 31 - 1;

/** The largest pack the entries could make: each at its raw length or its largest re-encoding. */
export function outputBound(plan: Plan): number {
  let bound = 12 + plan.len;
  for (let s = 0; s < plan.n; s++) {
    if (isDirect(plan, s)) return Infinity;
    const pi = plan.srcPack[s]!;
    const j = plan.srcIdx[s]!;
    const size = plan.scans[pi]!.size[j]!;
    bound +=
      MAX_ENTRY_HEADER +
      Math.max(plan.entryLen[pi]![j]!, storedZlibLength(size), deflateBound(size));
  }
  return bound;
}

/**
 * About the size of the pack and its index, for the free-space check: an entry copied or
 * deflated anew at its length (a level other than 0 changes it little), one stored anew (level
 * 0) at its stored length, a loose object at its file's, a delta written whole at its length.
 * `changed` (by slot) gets a 1 for each entry that may be written with new bytes.
 */
export function outputEstimate(
  plan: Plan,
  classify: (s: number) => EntryEncoding,
  outType: Uint8Array,
  maxHeld = MAX_HELD_ENTRY,
  reencodeStreams: (s: number) => boolean = () => false,
  changed?: Uint8Array,
): number {
  let bytes = 12 + plan.len + plan.n * (plan.len + 16) + 4096;
  for (let k = 0; k < plan.n; k++) {
    const s = plan.outOrder[k]!;
    const pi = plan.srcPack[s]!;
    const j = plan.srcIdx[s]!;
    if (pi === plan.looseMark) {
      if (changed !== undefined) changed[s] = 1;
      bytes +=
        MAX_ENTRY_HEADER + looseFileSize(loosePath(plan.input.looseDir, plan.input.loose[j]!));
      continue;
    }
    const len = plan.entryLen[pi]![j]!;
    const b = plan.base[s]!;
    // The type of an entry whose chain goes through an object written directly is not known yet.
    if (isDirect(plan, s) || (b >= 0 && outType[b] === 0)) {
      if (len > maxHeld) refuseLarge(plan, pi, j, len, maxHeld);
      outType[s] = 0;
      if (changed !== undefined) changed[s] = 1; // (written whole, or re-encoded once its type is known: taken either way)
      bytes += MAX_ENTRY_HEADER + len;
      continue;
    }
    const { copy, level } = classify(s);
    if (changed !== undefined && !copy) changed[s] = 1;
    if (
      len > maxHeld &&
      !(copy && plan.input.packs[pi]!.idx.hasCrcs) &&
      (copy || !reencodeStreams(s))
    )
      refuseLarge(plan, pi, j, len, maxHeld);
    bytes +=
      copy || level !== 0 ? len : MAX_ENTRY_HEADER + storedZlibLength(plan.scans[pi]!.size[j]!);
  }
  return bytes;
}

function refuseLarge(plan: Plan, pi: number, j: number, len: number, maxHeld: number): never {
  const pack = plan.input.packs[pi]!;
  const off = pack.idx.offsets[j]!;
  const id = toHex(pack.idx.idAt(j));
  throw new GitError(
    'unsupported',
    `${pack.packPath}: object ${id} at offset ${off} takes ${len} bytes in the pack; the rewrite holds such an entry whole to re-encode it, and refuses one over ${maxHeld} bytes`,
    { file: pack.packPath, offset: off, objectId: id },
  );
}
