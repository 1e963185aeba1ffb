import { scanEntries } from './pack-entries.js';
import { crc32 } from 'node:zlib';
import { GitError } from '../errors.js';
import { parseEntryHeader, MAX_ENTRY_HEADER } from '../format/pack.js';
import { OBJ_OFS_DELTA, OBJ_REF_DELTA } from '../format/object-type.js';
import { BLOCK_NOT_ZLIB, firstBlockCode } from '../format/zlib-stored.js';
import type { Pack } from './pack.js';

/** Parent marks in `PackScan.parent`. */
export const NO_PARENT = -1;
/** REF_DELTA whose base is not in this pack. */
export const EXTERNAL_PARENT = -2;
/** The entry could not be parsed. */
export const BROKEN = -3;

/**
 * Everything a sequential pass over a pack's entries learns without inflating them: the
 * entry type, declared size, header length and base of each entry (by idx position). Memory is
 * a few typed arrays per object.
 */
export interface PackScan {
  type: Uint8Array;
  /** Declared sizes: 32-bit until a size needs more (then the array is widened once). */
  size: Uint32Array | Float64Array;
  headerLen: Uint8Array;
  /** Base entry's idx position, or NO_PARENT / EXTERNAL_PARENT / BROKEN. */
  parent: Int32Array;
  /** For EXTERNAL_PARENT entries: the base id, keyed by idx position. */
  externalBase: Map<number, Buffer>;
  /** What the entry's zlib stream is (firstBlockCode: BLOCK_STORED, BLOCK_FIXED, BLOCK_NOT_ZLIB, BLOCK_OTHER). */
  block: Uint8Array;
  /** zlib FLEVEL (0..3) from the stream header. */
  flevel: Uint8Array;
}

export interface ScanProblem {
  file: string;
  offset: number;
  message: string;
  /** An object whose content does not hash to its id: the id the index gives it (hex). */
  objectId?: string | undefined;
  /** ... and the id its content hashes to. */
  hashesTo?: string | undefined;
}

/**
 * One sequential pass (git's `parse_pack_objects` first half, minus the inflate): headers, bases,
 * CRC32 against the idx when `checkCrc`, and the zlib header of each entry's data.
 */
export function scanPack(
  pack: Pack,
  opts: {
    checkCrc: boolean;
    onProblem: (p: ScanProblem) => void;
    onProgress?: (done: number) => void;
    onBytes?: (bytes: Buffer) => void;
    /** Read only each entry's head where the rest is not needed (no CRC32 check, no `onBytes`). */
    headsOnly?: boolean;
    /**
     * Leave `headerLen`, `block` and `flevel` empty (zero-length): for a caller that needs only
     * types, sizes and bases (verify: 3 bytes an object, 7 MiB of 2.4 M objects).
     */
    lean?: boolean;
  },
): PackScan {
  const n = pack.count;
  const census = opts.lean === true ? 0 : n;
  const scan: PackScan = {
    type: new Uint8Array(n),
    size: new Uint32Array(n),
    headerLen: new Uint8Array(census),
    parent: new Int32Array(n).fill(BROKEN),
    externalBase: new Map(),
    block: new Uint8Array(census),
    flevel: new Uint8Array(census),
  };
  const idx = pack.idx;
  const checkCrc = opts.checkCrc && idx.hasCrcs;
  const file = pack.packPath;
  let done = 0;
  if (n > 0 && pack.offsetAtRank(0) !== pack.dataStart) {
    opts.onProblem({
      file,
      offset: pack.dataStart,
      message: `first entry does not start after the pack header (index says ${pack.offsetAtRank(0)})`,
    });
  }
  const zstd = pack.isZpack;
  scanEntries(
    pack,
    (j, off, buf, start, end, rank, whole) => {
      if (opts.onProgress && (++done & 0x3fff) === 0) opts.onProgress(done);
      if (checkCrc) {
        const c = whole?.crc ?? crc32(buf.subarray(start, end));
        const want = idx.crc(j);
        if (c !== want) {
          opts.onProblem({
            file,
            offset: off,
            message: `CRC32 mismatch for entry (index ${want.toString(16).padStart(8, '0')}, pack ${c.toString(16).padStart(8, '0')})`,
          });
        }
      }
      let h;
      try {
        h = parseEntryHeader(
          buf,
          start,
          Math.min(end, start + MAX_ENTRY_HEADER),
          pack.algo.len,
          file,
          off,
        );
      } catch (e) {
        if (!(e instanceof GitError)) throw e;
        opts.onProblem({ file, offset: off, message: e.detail });
        return;
      }
      // deflate cannot expand data more than 1032:1; a declared size beyond that is a lie, and is
      // refused before anyone allocates for it.
      const dataLen = (whole?.len ?? end - start) - h.headerLen;
      if (h.size > dataLen * (zstd ? 32768 : 1032) + 1024) {
        opts.onProblem({
          file,
          offset: off,
          message: `declared size ${h.size} cannot come from ${dataLen} bytes of ${zstd ? 'zstd' : 'zlib'} data`,
        });
        return;
      }
      scan.type[j] = h.type;
      if (h.size > 0xffffffff && scan.size instanceof Uint32Array)
        scan.size = Float64Array.from(scan.size);
      scan.size[j] = h.size;
      if (census > 0) zlibCensus(scan, j, buf, start, end, h.headerLen, dataLen, h.size, zstd);
      if (h.type === OBJ_OFS_DELTA) {
        const b = pack.positionOf(off - h.baseDistance, rank);
        if (b < 0) {
          opts.onProblem({
            file,
            offset: off,
            message: `delta base offset ${off - h.baseDistance} is not the start of an entry`,
          });
          return;
        }
        scan.parent[j] = b;
      } else if (h.type === OBJ_REF_DELTA) {
        const b = pack.idx.find(buf, h.baseIdPos);
        if (b >= 0) scan.parent[j] = b;
        else {
          scan.parent[j] = EXTERNAL_PARENT;
          scan.externalBase.set(
            j,
            Buffer.from(buf.subarray(h.baseIdPos, h.baseIdPos + pack.algo.len)),
          );
        }
      } else {
        scan.parent[j] = NO_PARENT;
      }
    },
    undefined,
    opts.onBytes,
    opts.headsOnly === true && !checkCrc && !opts.onBytes ? 'head' : 'stream',
  );
  return scan;
}

/** Entry `j`'s header length and what its zlib stream starts with (the rewrite's plan and inspect read them). */
function zlibCensus(
  scan: PackScan,
  j: number,
  buf: Buffer,
  start: number,
  end: number,
  headerLen: number,
  dataLen: number,
  size: number,
  zstd: boolean,
): void {
  scan.headerLen[j] = headerLen;
  const at = start + headerLen;
  const z0 = zstd || at >= end ? undefined : buf[at];
  const z1 = at + 1 < end ? buf[at + 1] : undefined;
  const z2 = at + 2 < end ? buf[at + 2] : undefined;
  if (z0 === undefined || z1 === undefined || (z0 & 0x0f) !== 8 || ((z0 << 8) | z1) % 31 !== 0) {
    scan.block[j] = BLOCK_NOT_ZLIB;
  } else {
    scan.flevel[j] = z1 >> 6;
    scan.block[j] = firstBlockCode(scan.flevel[j]!, z2, dataLen, size);
  }
}

/**
 * Children of each entry as CSR arrays (base → deltas), for a base-first walk with an explicit
 * stack; siblings are listed in `order` (pack order keeps reads sequential).
 */
export function childrenOf(
  parent: Int32Array,
  order: Uint32Array,
): { start: Int32Array; list: Int32Array } {
  const n = parent.length;
  const start = new Int32Array(n + 1);
  for (let j = 0; j < n; j++) {
    const p = parent[j]!;
    if (p >= 0) start[p + 1]!++;
  }
  for (let j = 0; j < n; j++) start[j + 1]! += start[j]!;
  const list = new Int32Array(start[n]!);
  // Filling advances start[p] to where p's list ends (the old start[p + 1]); shifting the array
  // back by one restores it, with no second n-sized array.
  for (let i = 0; i < n; i++) {
    const j = order[i]!;
    const p = parent[j]!;
    if (p >= 0) list[start[p]!++] = j;
  }
  for (let j = n; j > 0; j--) start[j] = start[j - 1]!;
  start[0] = 0;
  return { start, list };
}
