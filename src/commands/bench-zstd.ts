import { removeOnSignal } from '../cleanup.js';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { zstdUnavailable } from '../codec/zstd.js';
import { DEFAULT_DICT_SIZE } from '../codec/dict.js';
import { exportZpack, DEFAULT_ZSTD_LEVEL } from './zstd.js';
import { walkObjects } from './walk.js';
import { listRefs } from '../store/refs.js';
import { ObjectDatabase, listPackFiles } from '../store/odb.js';
import type { ZstdResult } from '../bench/types.js';

export type { ZstdResult } from '../bench/types.js';
import { Pack } from '../store/pack.js';
import type { Repository } from '../store/repo.js';

/**
 * The zstd sub-benchmark (the journal's patch 2/2): every object reachable from the refs read by
 * our reader from a zstd pack of the repository (level 10, per-kind dictionaries) and from its
 * zlib packs, interleaved, the median of `rounds`. The zstd pack is written to a temporary
 * directory for the measurement and deleted afterwards.
 */
export async function zstdBench(repo: Repository, rounds: number): Promise<ZstdResult> {
  const algo = repo.algo;
  const why = zstdUnavailable();
  if (why !== undefined) return { available: false, reason: why };
  const dir = removeOnSignal(mkdtempSync(join(tmpdir(), 'rts-bench-zstd-')));
  try {
    const file = join(dir, 'repo.zpack');
    await exportZpack(repo, {
      out: file,
      level: DEFAULT_ZSTD_LEVEL,
      dictSize: DEFAULT_DICT_SIZE,
      dictMethod: 'auto',
    });
    const refs = listRefs(repo.gitDir, repo.env);
    const zlibPacks = listPackFiles(repo.objectsDir);
    let zlibBytes = 0;
    for (const p of zlibPacks) zlibBytes += statSync(p).size;
    const zs: number[] = [];
    const zl: number[] = [];
    let objects = 0;
    for (let r = 0; r < rounds; r++) {
      for (const kind of ['zstd', 'zlib'] as const) {
        const odb = new ObjectDatabase(algo, []);
        try {
          if (kind === 'zstd') odb.addPack(Pack.open(file, algo));
          else for (const p of zlibPacks) odb.addPack(Pack.open(p, algo));
          const w = walkObjects(odb, algo, refs, { readBlobs: true });
          objects = w.commits + w.trees + w.blobs + w.tags;
          (kind === 'zstd' ? zs : zl).push(w.ms / 1000);
        } finally {
          odb.close();
        }
      }
    }
    const median = (a: number[]): number => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)]!;
    return {
      available: true,
      reader: 'git repack-ts walk --read-blobs',
      objects,
      zstdBytes: statSync(file).size,
      zlibBytes,
      zstdSeconds: median(zs),
      zlibSeconds: median(zl),
      rounds,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
