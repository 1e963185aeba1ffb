import { repack as repackCommand, type RepackResult } from '../commands/repack.js';
import { GitRepackError } from '../errors.js';
import {
  fallbackLevel,
  parseLevelFlag,
  resolveLevels,
  type Level,
  type LevelFlags,
} from '../repack/levels.js';
import type { FsckMode } from '../store/fsck.js';
import type { Repository } from '../store/repo.js';
import { apiCall, checkOptions, repositoryAt, type ProgressCallback } from './common.js';

/**
 * The rewrite's options: the CLI's flags in camelCase. A level left out comes from config as in
 * the CLI (pack.<type>Compression, pack.graphCompression, pack.compression, core.compression);
 * a type that none of them sets keeps its entries as they are.
 */
export interface RepackOptions {
  /** `--graph-compression`: commits and trees. */
  graphCompression?: Level | undefined;
  commitCompression?: Level | undefined;
  treeCompression?: Level | undefined;
  blobCompression?: Level | undefined;
  tagCompression?: Level | undefined;
  /** `--compression`: every type without a more specific setting (not `auto`). */
  compression?: Level | undefined;
  /** `--dry-run`: report what would change, touch nothing. */
  dryRun?: boolean | undefined;
  /** `--fsck=changed` (default: git reads back what was written anew), `full`, `connectivity`, or `--no-fsck` (false). */
  fsck?: 'changed' | 'full' | 'connectivity' | false | undefined;
  /** `--keep-pack`: packs to leave alone, like a `.keep` file (names with or without `.pack`). */
  keepPacks?: readonly string[] | undefined;
  /** `-a`: every pack into one (per partition), even those an earlier run proved at these levels. */
  all?: boolean | undefined;
  /** `--auto`: run only when enough objects are not yet at the levels (`repackTs.auto`, default 1000). */
  auto?: boolean | undefined;
  /**
   * git repack's `--write-bitmap-index` (true) or `--no-write-bitmap-index` (false); left out, a
   * reachability bitmap a source pack had is carried over to the new pack.
   */
  writeBitmapIndex?: boolean | undefined;
  onProgress?: ProgressCallback | undefined;
  /** What the CLI prints as `warning: …` (the run goes on). */
  onWarning?: ((message: string) => void) | undefined;
  signal?: AbortSignal | undefined;
}

const KNOWN = [
  'graphCompression',
  'commitCompression',
  'treeCompression',
  'blobCompression',
  'tagCompression',
  'compression',
  'dryRun',
  'fsck',
  'keepPacks',
  'all',
  'auto',
  'writeBitmapIndex',
  'onProgress',
  'onWarning',
  'signal',
] as const;

function level(name: string, v: unknown): Level | undefined {
  if (v === undefined) return undefined;
  if (typeof v !== 'number' && typeof v !== 'string')
    throw new GitRepackError(
      'usage',
      `--${name} expects a zlib level from -1 to 9 (or auto, or keep), not '${String(v)}'`,
    );
  return parseLevelFlag(name, String(v));
}

function fsckMode(v: unknown): FsckMode {
  if (v === undefined || v === 'changed') return 'changed';
  if (v === 'full') return 'full';
  if (v === 'connectivity') return 'connectivity';
  if (v === false) return 'none';
  throw new GitRepackError(
    'usage',
    `--fsck expects 'changed', 'full' or 'connectivity' (or false for --no-fsck), not '${String(v)}'`,
  );
}

/** The per-type level options (shared with the zstd export and import), as the CLI's flags. */
export type LevelOptions = Pick<
  RepackOptions,
  | 'graphCompression'
  | 'commitCompression'
  | 'treeCompression'
  | 'blobCompression'
  | 'tagCompression'
  | 'compression'
>;

export function levelFlagsOf(o: LevelOptions): LevelFlags {
  return {
    graph: level('graph-compression', o.graphCompression),
    commit: level('commit-compression', o.commitCompression),
    tree: level('tree-compression', o.treeCompression),
    blob: level('blob-compression', o.blobCompression),
    tag: level('tag-compression', o.tagCompression),
    compression: level('compression', o.compression),
  };
}

/** The rewrite of an opened repository (the CLI's, which found the repository itself). */
export async function repackRepo(repo: Repository, o: RepackOptions): Promise<RepackResult> {
  const flags = levelFlagsOf(o);
  const keepPacks = o.keepPacks ?? [];
  if (!Array.isArray(keepPacks) || keepPacks.some((k) => typeof k !== 'string'))
    throw new GitRepackError('usage', '--keep-pack expects pack names');
  if (o.writeBitmapIndex !== undefined && typeof o.writeBitmapIndex !== 'boolean')
    throw new GitRepackError('usage', 'writeBitmapIndex expects true or false');
  return repackCommand(repo, {
    levels: resolveLevels(flags, repo.config),
    autoFallback: fallbackLevel(flags, repo.config),
    dryRun: o.dryRun === true,
    fsck: fsckMode(o.fsck),
    keepPacks: [...keepPacks],
    all: o.all === true,
    auto: o.auto === true,
    writeBitmap: o.writeBitmapIndex,
    onProgress: o.onProgress,
    onWarning: o.onWarning,
    signal: o.signal,
  });
}

/**
 * `git repack-ts` on the repository at or above `repoPath`: every pack (but kept ones) and every
 * loose object rewritten with each type at its level, keeping every delta; proven equal and
 * checked by git fsck before the old files go. Resolves to what `--json` prints.
 */
export async function repack(repoPath: string, options: RepackOptions = {}): Promise<RepackResult> {
  return apiCall(options?.signal, () => {
    checkOptions(options, KNOWN, 'repack');
    return repackRepo(repositoryAt(repoPath), options);
  });
}
