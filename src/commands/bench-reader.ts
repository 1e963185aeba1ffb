import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { GitError } from '../errors.js';
import type { HashAlgo } from '../hash/algo.js';
import type { Repository } from '../store/repo.js';
import { listPackFiles } from '../store/odb.js';
import { Pack } from '../store/pack.js';
import { CACHE_VARIANTS, makeCache, type CacheVariant } from '../bench/base-cache.js';
import { lookupBench } from '../bench/lookup.js';
import { BenchReader, logWalk, resolveHead } from '../bench/walk.js';
import { zstdBench } from './bench-zstd.js';
import type { CacheResult, CacheRow, ReaderResults } from '../bench/types.js';

export type { CacheResult, CacheRow, ReaderResults } from '../bench/types.js';
import { selfCpuSeconds } from '../bench/timing.js';

export const READER_EXPERIMENTS = ['cache', 'lookup', 'zstd'] as const;
export type ReaderExperimentName = (typeof READER_EXPERIMENTS)[number];

/** The seed's MAX_DELTA_CACHE values. */
export const CACHE_CAPS = [256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536];
/** core.deltaBaseCacheLimit's default, as in the seed's runs. */
export const CACHE_BYTES = 96 * 1024 * 1024;

function readText(f: string): string | undefined {
  try {
    return readFileSync(f, 'utf8');
  } catch {
    return undefined;
  }
}

/**
 * The delta base cache experiment: our reader walks `git log --raw` and `git log -S --raw` shapes
 * of the newest `commits` commits with each cache variant at each entry cap. Variants are
 * interleaved within a cap; each cell is the best of `rounds`.
 */
export function cacheExperiment(
  gitDir: string,
  algo: HashAlgo,
  opts: {
    commits: number;
    rounds: number;
    caps?: number[];
    maxBytes?: number | undefined;
    signal?: AbortSignal | undefined;
    onProgress?: ((phase: string, done: number, total: number) => void) | undefined;
  },
): CacheResult {
  const head = resolveHead(gitDir, algo, readText);
  if (head === undefined) throw new GitError('missing-object', `cannot resolve HEAD in ${gitDir}`);
  const caps = opts.caps ?? CACHE_CAPS;
  const maxBytes = opts.maxBytes ?? CACHE_BYTES;
  const rows: CacheRow[] = [];
  const reader = new BenchReader(
    join(gitDir, 'objects'),
    algo,
    makeCache('single-lru', 256, maxBytes),
  );
  const total = 2 * caps.length * CACHE_VARIANTS.length * opts.rounds;
  let done = 0;
  try {
    for (const workload of ['log-raw', 'log-S'] as const) {
      for (const cap of caps) {
        const best = new Map<CacheVariant, CacheRow>();
        for (let r = 0; r < opts.rounds; r++) {
          for (const variant of CACHE_VARIANTS) {
            opts.signal?.throwIfAborted();
            reader.cache = makeCache(variant, cap, maxBytes);
            reader.inflated = 0;
            const t0 = selfCpuSeconds();
            const walk = logWalk(reader, head, opts.commits, workload === 'log-S');
            const seconds = selfCpuSeconds() - t0;
            const c = reader.cache;
            const row: CacheRow = {
              workload,
              variant,
              maxEntries: cap,
              seconds,
              hitRate: c.hits / Math.max(1, c.hits + c.misses),
              inflated: reader.inflated,
              evictionSteps: c.evictionSteps,
              walk,
            };
            const prev = best.get(variant);
            if (prev === undefined || seconds < prev.seconds) best.set(variant, row);
            opts.onProgress?.('delta base cache experiment', ++done, total);
          }
        }
        for (const v of CACHE_VARIANTS) rows.push(best.get(v)!);
      }
    }
  } finally {
    reader.close();
  }
  return { commits: opts.commits, maxBytes, rounds: opts.rounds, rows };
}

export async function runReaderExperiments(
  repo: Repository,
  opts: {
    experiments: ReaderExperimentName[];
    commits: number;
    rounds: number;
    cacheBytes?: number | undefined;
    signal?: AbortSignal | undefined;
    onProgress?: ((phase: string, done: number, total: number) => void) | undefined;
  },
): Promise<ReaderResults> {
  const out: ReaderResults = {};
  const { gitDir, algo, objectsDir } = repo;
  if (opts.experiments.includes('lookup')) {
    const packs = listPackFiles(objectsDir);
    const largest = packs.map((f) => Pack.open(f, algo)).sort((a, b) => b.count - a.count);
    const p = largest[0];
    if (p !== undefined) out.lookup = lookupBench(p.idx, p.idxPath, algo.len, 5, opts.signal);
    for (const q of largest) q.close();
  }
  if (opts.experiments.includes('cache'))
    out.cache = cacheExperiment(gitDir, algo, {
      commits: opts.commits,
      rounds: opts.rounds,
      maxBytes: opts.cacheBytes,
      signal: opts.signal,
      onProgress: opts.onProgress,
    });
  if (opts.experiments.includes('zstd')) out.zstd = await zstdBench(repo, Math.max(opts.rounds, 3));
  return out;
}
