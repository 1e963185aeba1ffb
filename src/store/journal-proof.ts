import { closeSync, readdirSync, readSync, statSync } from 'node:fs';
import { basename, join } from 'node:path';
import { toHex, type HashAlgo } from '../hash/algo.js';
import { parseIdx, type PackIndex } from '../format/idx.js';
import { loosePath } from './loose.js';
import { PACK_NAME } from './packdir.js';
import { openRegular, readRegular } from './regular.js';

/**
 * What the recovery (store/journal.ts) may remove, proven from indexes. An old pack goes only when
 * every id of its `.idx` is in a pack that checked. A `.pack` without its `.idx` is invisible to
 * git, which never deletes one (it may hold the only copy of its objects: `git index-pack` makes
 * it readable again); ours goes only when an index that describes it says the same of it: the
 * `.idx` our removal renamed aside (`<pack>.idx.removing`, store/packdir.ts `removePack`), or the
 * temporary index of an install that did not finish.
 */

/**
 * The index at `idxFile` when it describes the pack at `base` and both files are regular: the
 * `.pack`'s trailer is the hash in its name and the checksum the index records, and the index has
 * the checksum `idxSum` (when one was recorded).
 */
export function checkedIdx(
  base: string,
  algo: HashAlgo,
  idxSum?: string,
  idxFile = base + '.idx',
): PackIndex | undefined {
  try {
    const idx = parseIdx(readRegular(idxFile), algo, idxFile);
    const want = PACK_NAME.exec(basename(base))?.[1];
    if (idxSum !== undefined && toHex(idx.idxChecksum) !== idxSum) return undefined;
    if (want === undefined || toHex(idx.packChecksum) !== want) return undefined;
    const fd = openRegular(base + '.pack');
    try {
      const size = statSync(base + '.pack').size;
      const trailer = Buffer.alloc(algo.len);
      if (size < algo.len || readSync(fd, trailer, 0, algo.len, size - algo.len) !== algo.len)
        return undefined;
      return trailer.equals(idx.packChecksum) ? idx : undefined;
    } finally {
      closeSync(fd);
    }
  } catch {
    return undefined;
  }
}

/** The index at `file`, or undefined when it cannot be read. */
export function readIdx(file: string, algo: HashAlgo): PackIndex | undefined {
  try {
    return parseIdx(readRegular(file), algo, file);
  } catch {
    return undefined;
  }
}

/** How many ids of `idx` no prover holds (nor, given `objectsDir`, a loose object). */
export function missingFrom(
  idx: PackIndex,
  algo: HashAlgo,
  provers: PackIndex[],
  objectsDir?: string,
): number {
  const ids = idx.ids;
  let missing = 0;
  for (let i = 0; i < idx.count; i++) {
    const pos = i * algo.len;
    if (provers.some((p) => p.find(ids, pos) >= 0)) continue;
    if (
      objectsDir !== undefined &&
      exists(loosePath(objectsDir, ids.subarray(pos, pos + algo.len)))
    )
      continue;
    missing++;
  }
  return missing;
}

/** Bases (paths without extension) of the packs in `packDir` that have a file with `ext`. */
export function packsWith(packDir: string, ext: string): string[] {
  let names: string[];
  try {
    names = readdirSync(packDir);
  } catch {
    return [];
  }
  return names
    .filter((n) => n.endsWith(ext) && PACK_NAME.test(n.slice(0, -ext.length)))
    .map((n) => join(packDir, n.slice(0, -ext.length)));
}

export function exists(p: string): boolean {
  return statSync(p, { throwIfNoEntry: false }) !== undefined;
}
