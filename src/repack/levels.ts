import { GitError } from '../errors.js';
import { badNumber, compressionLevel, parseConfigInt, type GitConfig } from '../store/config.js';
import { OBJ_BLOB, OBJ_COMMIT, OBJ_TAG, OBJ_TREE } from '../format/object-type.js';

/**
 * A zlib level as git takes it: -1 (zlib's default, 6) or 0..9; `auto` (see encoding.ts); or `keep`:
 * entries stay as they are, whatever their level (what a type gets when no flag or config key
 * sets one: a rewrite changes only what was asked for, like `git repack` reusing entries).
 */
export type Level = number | 'auto' | 'keep';

export interface LevelFlags {
  compression?: Level | undefined;
  graph?: Level | undefined;
  commit?: Level | undefined;
  tree?: Level | undefined;
  blob?: Level | undefined;
  tag?: Level | undefined;
}

/** Target level per base type, indexed by OBJ_COMMIT..OBJ_TAG. */
export type Levels = Record<1 | 2 | 3 | 4, Level>;

export function isLevel(n: number): boolean {
  return Number.isInteger(n) && n >= -1 && n <= 9;
}

/** Parses a level given on the command line; anything else is a usage error. */
export function parseLevelFlag(name: string, v: string): Level {
  if (v.trim() === 'auto') return 'auto';
  if (v.trim() === 'keep') return 'keep';
  const n = /^-?\d+$/.test(v.trim()) ? Number(v) : NaN;
  if (!isLevel(n))
    throw new GitError(
      'usage',
      `--${name} expects a zlib level from -1 to 9 (or auto, or keep), not '${v}'`,
    );
  return n;
}

/**
 * A level from the configuration, every value read in turn as git's callbacks read them: git's own
 * keys (pack.compression, core.compression) by git's rules and messages (store/config.ts), ours
 * likewise plus `auto`. The last value counts.
 */
function configLevel(config: GitConfig, key: string): Level | undefined {
  const gitKey = GIT_LEVEL_KEYS[key.toLowerCase()];
  if (gitKey !== undefined) return compressionLevel(config, key, gitKey);
  let level: Level | undefined;
  for (const v of config.getRaw(key)) {
    if (v === 'auto') {
      level = 'auto';
      continue;
    }
    const n = parseConfigInt(v ?? '');
    if (typeof n !== 'number') throw badNumber(key, v ?? '', n);
    if (!isLevel(n)) throw new GitError('bad-config', `bad ${key} level ${n}`);
    level = n;
  }
  return level;
}

/** The level keys git itself reads, with the word of its message ("bad pack compression level"). */
const GIT_LEVEL_KEYS: Record<string, 'pack' | 'zlib'> = {
  'pack.compression': 'pack',
  'core.compression': 'zlib',
};

/** pack-objects' level: pack.compression, else core.compression; git checks both whichever applies. */
function packLevel(config: GitConfig): Level | undefined {
  const core = configLevel(config, 'core.compression');
  return configLevel(config, 'pack.compression') ?? core;
}

/**
 * Per-type levels. Precedence: the type's flag, `--graph-compression` (commits and trees),
 * `--compression`, then the type's config key, `pack.graphCompression`, `pack.compression`,
 * `core.compression`; with none of them the type's entries are kept as they are (`keep`).
 */
export function resolveLevels(flags: LevelFlags, config: GitConfig): Levels {
  const packDefault = packLevel(config);
  if (flags.compression === 'auto') {
    throw new GitError(
      'usage',
      'auto is a level for one type or for --graph-compression, not for every type',
    );
  }
  const graphKey = configLevel(config, 'pack.graphCompression');
  const pick = (
    typeFlag: Level | undefined,
    graphFlag: Level | undefined,
    key: string,
    graph: boolean,
  ): Level =>
    typeFlag ??
    graphFlag ??
    flags.compression ??
    configLevel(config, key) ??
    (graph ? graphKey : undefined) ??
    packDefault ??
    'keep';
  return {
    [OBJ_COMMIT]: pick(flags.commit, flags.graph, 'pack.commitCompression', true),
    [OBJ_TREE]: pick(flags.tree, flags.graph, 'pack.treeCompression', true),
    [OBJ_BLOB]: pick(flags.blob, undefined, 'pack.blobCompression', false),
    [OBJ_TAG]: pick(flags.tag, undefined, 'pack.tagCompression', false),
  } as Levels;
}

/**
 * An encoding, not a level a user gives: zlib level 6 with fixed Huffman codes (`Z_FIXED`), which
 * inflate decodes without building code tables first. Only `auto` chooses it (encoding.ts).
 */
export const FIXED_HUFFMAN = 10;

/** zlib's FLEVEL header class for a level (deflate.c: 0-1 → 0, 2-5 → 1, 6 → 2, 7-9 → 3). */
export function flevelOf(level: number): number {
  if (level === FIXED_HUFFMAN) return 0; // deflate.c: any strategy from Z_HUFFMAN_ONLY up says FLEVEL 0
  const l = level === -1 ? 6 : level;
  if (l < 2) return 0;
  if (l < 6) return 1;
  if (l === 6) return 2;
  return 3;
}

/**
 * The level of what must be compressed anew (loose objects, deltas written whole, entries
 * `auto` compresses, entries of a type at `keep` read from a zstd pack): `--compression`,
 * `pack.compression`, `core.compression`, or -1.
 */
export function fallbackLevel(flags: LevelFlags, config: GitConfig): number {
  const v = flags.compression ?? packLevel(config) ?? -1;
  return typeof v === 'number' ? v : -1;
}
