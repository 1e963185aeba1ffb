import type { Options } from './args.js';
import { parseLevelFlag, type Level, type LevelFlags } from '../repack/levels.js';
import type { FsckMode } from '../store/fsck.js';
import { UsageError } from './io.js';
import type { LevelOptions } from '../api/repack.js';

/** The per-type level options shared by the rewrite and zstd-import. */
export function withLevelOptions<T>(y: Options<T>) {
  return y
    .option('graph-compression', { type: 'string' })
    .option('commit-compression', { type: 'string' })
    .option('tree-compression', { type: 'string' })
    .option('blob-compression', { type: 'string' })
    .option('tag-compression', { type: 'string' })
    .option('compression', { type: 'string' })
    .option('fsck', { type: 'string', negatable: true });
}

function level(name: string, v: unknown, usage: string): Level | undefined {
  if (v === undefined) return undefined;
  try {
    return parseLevelFlag(name, String(v));
  } catch (e) {
    throw new UsageError((e as Error).message, usage);
  }
}

/** The flags as the library's options (api/repack.ts `LevelOptions`). */
export function levelOptionsOf(f: LevelFlags): LevelOptions {
  return {
    graphCompression: f.graph,
    commitCompression: f.commit,
    treeCompression: f.tree,
    blobCompression: f.blob,
    tagCompression: f.tag,
    compression: f.compression,
  };
}

export function levelFlagsFrom(o: Record<string, unknown>, usage: string): LevelFlags {
  return {
    graph: level('graph-compression', o['graph-compression'], usage),
    commit: level('commit-compression', o['commit-compression'], usage),
    tree: level('tree-compression', o['tree-compression'], usage),
    blob: level('blob-compression', o['blob-compression'], usage),
    tag: level('tag-compression', o['tag-compression'], usage),
    compression: level('compression', o.compression, usage),
  };
}

/** `--fsck=changed|full|connectivity`, `--no-fsck` (false), default changed; a bare `--fsck` is full. */
export function fsckModeFrom(o: Record<string, unknown>, usage: string): FsckMode {
  const f = o.fsck;
  if (f === false) return 'none';
  if (f === undefined || f === 'changed') return 'changed';
  if (f === true || f === 'full') return 'full';
  if (f === 'connectivity') return 'connectivity';
  throw new UsageError(
    `--fsck expects 'changed', 'full' or 'connectivity', not '${String(f)}'`,
    usage,
  );
}
