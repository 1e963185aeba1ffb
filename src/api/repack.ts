import { repack as repackCommand, type RepackResult } from '../commands/repack.js';
import { parseRepackOptions, resolveRepackOptions } from '../commands/options.js';
import { LEVEL_KEYS, type Level } from '../repack/levels.js';
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
  ...LEVEL_KEYS,
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

/**
 * `git repack-ts` on the repository at or above `repoPath`: every pack (but kept ones) and every
 * loose object rewritten with each type at its level, keeping every delta; proven equal and
 * checked by git fsck before the old files go. Resolves to what `--json` prints.
 */
export async function repack(repoPath: string, options: RepackOptions = {}): Promise<RepackResult> {
  return apiCall(options?.signal, () => {
    checkOptions(options, KNOWN, 'repack');
    const request = parseRepackOptions(options, 'option');
    const repo = repositoryAt(repoPath);
    return repackCommand(repo, resolveRepackOptions(request, repo.config));
  });
}
