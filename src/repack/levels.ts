import { GitError } from '../errors.js';
import { badNumber, compressionLevel, parseConfigInt, type GitConfig } from '../store/config.js';
import { OBJ_BLOB, OBJ_COMMIT, OBJ_TAG, OBJ_TREE } from '../format/object-type.js';

/**
 * A zlib level as git takes it: -1 (zlib's default, 6) or 0..9; `auto` (see encoding.ts); or `keep`:
 * entries stay as they are, whatever their level (what a type gets when no flag or config key
 * sets one: a rewrite changes only what was asked for, like `git repack` reusing entries).
 */
export type Level = number | 'auto' | 'keep';

/**
 * The level settings, each by one name: the library's option; the command line's flag is its
 * kebab-case (`--graph-compression`), the configuration key `pack.` and the name.
 */
export const LEVEL_KEYS = [
  'graphCompression',
  'commitCompression',
  'treeCompression',
  'blobCompression',
  'tagCompression',
  'compression',
] as const;
export type LevelKey = (typeof LEVEL_KEYS)[number];

/** The levels given by flags or options (not configuration), checked. */
export type LevelFlags = { [K in LevelKey]?: Level | undefined };

/** Target level per base type, indexed by OBJ_COMMIT..OBJ_TAG. */
export type Levels = Record<1 | 2 | 3 | 4, Level>;

export function isLevel(n: number): boolean {
  return Number.isInteger(n) && n >= -1 && n <= 9;
}

/**
 * Parses a level a flag or an option gives (a string or a number); anything else is a usage error
 * naming it as the caller wrote it (`name`: `--graph-compression` or `graphCompression`).
 */
export function parseLevel(name: string, v: unknown): Level {
  const s = typeof v === 'string' || typeof v === 'number' ? String(v).trim() : '';
  if (s === 'auto') return 'auto';
  if (s === 'keep') return 'keep';
  const n = /^-?\d+$/.test(s) ? Number(s) : NaN;
  if (!isLevel(n))
    throw new GitError(
      'usage',
      `${name} expects a zlib level from -1 to 9 (or auto, or keep), not '${String(v)}'`,
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
  const graphKey = configLevel(config, 'pack.graphCompression');
  const pick = (key: LevelKey, graph: boolean): Level =>
    flags[key] ??
    (graph ? flags.graphCompression : undefined) ??
    flags.compression ??
    configLevel(config, `pack.${key}`) ??
    (graph ? graphKey : undefined) ??
    packDefault ??
    'keep';
  return {
    [OBJ_COMMIT]: pick('commitCompression', true),
    [OBJ_TREE]: pick('treeCompression', true),
    [OBJ_BLOB]: pick('blobCompression', false),
    [OBJ_TAG]: pick('tagCompression', false),
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
