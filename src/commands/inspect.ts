import { existsSync } from 'node:fs';
import type { HashAlgo } from '../hash/algo.js';
import { OBJ_BLOB, OBJ_COMMIT, OBJ_TAG, OBJ_TREE, typeName } from '../format/object-type.js';
import { BLOCK_STORED, storedZlibLength } from '../format/zlib-stored.js';
import { listLoose } from '../store/loose.js';
import { Pack } from '../store/pack.js';
import { swapExt, withExt, type FsPath } from '../store/fs-path.js';
import { resolveChains } from '../store/chain.js';
import { NO_PARENT, scanPack } from '../store/pack-scan.js';
import { corrupt } from '../errors.js';

export interface TypeCensus {
  type: string;
  entries: number;
  deltas: number;
  /** depthHistogram[d] = entries at delta depth d (0 = not a delta). */
  depthHistogram: number[];
  /** Entry bytes in the pack: header plus compressed data. */
  packedBytes: number;
  /** What the entries' data inflates to (for deltas, the delta itself). */
  inflatedBytes: number;
  /** Entries whose data is stored uncompressed (zlib level 0). */
  stored: number;
  /** zlib FLEVEL of the entries' streams: [0-1, 2-5, 6, 7-9]. */
  zlibLevels: number[];
  /** Packed bytes if this type's entries were stored at level 0. */
  packedBytesAtLevel0: number;
}

export interface PackCensus {
  pack: string;
  objects: number;
  size: number;
  promisor: boolean;
  keep: boolean;
  types: TypeCensus[];
}

export interface InspectResult {
  packs: PackCensus[];
  loose: number;
  total: {
    objects: number;
    packBytes: number;
    /** Pack bytes with commits and trees stored at level 0 (everything else as it is). */
    packBytesGraphLevel0: number;
    types: TypeCensus[];
  };
}

const TYPES = [OBJ_COMMIT, OBJ_TREE, OBJ_BLOB, OBJ_TAG];

function emptyCensus(t: number): TypeCensus {
  return {
    type: typeName(t),
    entries: 0,
    deltas: 0,
    depthHistogram: [],
    packedBytes: 0,
    inflatedBytes: 0,
    stored: 0,
    zlibLevels: [0, 0, 0, 0],
    packedBytesAtLevel0: 0,
  };
}

function add(into: TypeCensus, from: TypeCensus): void {
  into.entries += from.entries;
  into.deltas += from.deltas;
  from.depthHistogram.forEach(
    (c, d) => (into.depthHistogram[d] = (into.depthHistogram[d] ?? 0) + c),
  );
  into.packedBytes += from.packedBytes;
  into.inflatedBytes += from.inflatedBytes;
  into.stored += from.stored;
  from.zlibLevels.forEach((c, l) => (into.zlibLevels[l]! += c));
  into.packedBytesAtLevel0 += from.packedBytesAtLevel0;
}

/** The census of one pack, from a header scan only: nothing is inflated. */
export function censusOfPack(pack: Pack): PackCensus {
  const scan = scanPack(pack, {
    checkCrc: false,
    headsOnly: true,
    onProblem: (p) => {
      throw corrupt('bad-pack', p.file, p.offset, p.message);
    },
  });
  const { realType, depth } = resolveChains(scan, pack.order);
  const byType = new Map<number, TypeCensus>(TYPES.map((t) => [t, emptyCensus(t)]));
  const offs = pack.idx.offsets;
  for (let j = 0; j < pack.count; j++) {
    const t = realType[j]!;
    let c = byType.get(t);
    if (c === undefined) {
      c = emptyCensus(t);
      byType.set(t, c);
    }
    const entryLen = pack.end(j) - offs[j]!;
    const dataLen = entryLen - scan.headerLen[j]!;
    c.entries++;
    if (scan.parent[j] !== NO_PARENT) c.deltas++;
    const d = depth[j]!;
    c.depthHistogram[d] = (c.depthHistogram[d] ?? 0) + 1;
    c.packedBytes += entryLen;
    c.inflatedBytes += scan.size[j]!;
    if (scan.block[j] === BLOCK_STORED) c.stored++;
    c.zlibLevels[scan.flevel[j]!]!++;
    c.packedBytesAtLevel0 += entryLen - dataLen + storedZlibLength(scan.size[j]!);
  }
  for (const c of byType.values())
    for (let d = 0; d < c.depthHistogram.length; d++) c.depthHistogram[d] ??= 0;
  const beside = (ext: string): FsPath => withExt(swapExt(pack.files.pack, '.pack', ''), ext);
  return {
    pack: pack.packPath,
    objects: pack.count,
    size: pack.size,
    promisor: existsSync(beside('.promisor')),
    keep: existsSync(beside('.keep')),
    types: [...byType.values()],
  };
}

export function inspectRepository(
  packPaths: FsPath[],
  objectsDir: string,
  algo: HashAlgo,
  opts: {
    onProgress?: ((phase: string, done: number, total: number) => void) | undefined;
    signal?: AbortSignal | undefined;
  } = {},
): InspectResult {
  const packs: PackCensus[] = [];
  for (const path of packPaths) {
    opts.signal?.throwIfAborted();
    opts.onProgress?.('inspecting packs', packs.length, packPaths.length);
    const pack = Pack.open(path, algo);
    try {
      packs.push(censusOfPack(pack));
    } finally {
      pack.close();
    }
  }
  const totals = new Map<string, TypeCensus>(TYPES.map((t) => [typeName(t), emptyCensus(t)]));
  let packBytes = 0;
  let objects = 0;
  let graph0 = 0;
  for (const p of packs) {
    packBytes += p.size;
    objects += p.objects;
    graph0 += p.size;
    for (const c of p.types) {
      let t = totals.get(c.type);
      if (!t) totals.set(c.type, (t = { ...emptyCensus(0), type: c.type }));
      add(t, c);
      if (c.type === 'commit' || c.type === 'tree') graph0 += c.packedBytesAtLevel0 - c.packedBytes;
    }
  }
  if (packs.length > 0) opts.onProgress?.('inspecting packs', packs.length, packPaths.length);
  const loose = listLoose(objectsDir, algo).length;
  return {
    packs,
    loose,
    total: { objects, packBytes, packBytesGraphLevel0: graph0, types: [...totals.values()] },
  };
}
