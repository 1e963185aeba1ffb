import { GitError } from '../errors.js';
import {
  fallbackLevel,
  LEVEL_KEYS,
  parseLevel,
  resolveLevels,
  type LevelFlags,
  type LevelKey,
  type Levels,
} from '../repack/levels.js';
import type { GitConfig } from '../store/config.js';
import type { FsckMode } from '../store/fsck.js';
import type { RepackOptions } from './repack.js';

/**
 * The one resolver of the rewrite's and the zstd import's options (issue 33): the command line's
 * flags and the library's options arrive in one shape, keyed by the library's names, and become
 * the plain options commands/ run with. Checking comes first (`parse…`: usage errors, before any
 * repository is opened), then the configuration (`resolve…`). A usage error names what its
 * caller wrote (issue 34): the option (`graphCompression`) or the flag (`--graph-compression`).
 */
export type Naming = 'option' | 'flag';

/** Flags whose name is not the option's in kebab-case. */
const FLAG_NAMES: Record<string, string> = { keepPacks: 'keep-pack' };

/** `key` (a library option's name) as the caller wrote it. */
export function nameOf(key: string, naming: Naming): string {
  if (naming === 'option') return key;
  return `--${FLAG_NAMES[key] ?? key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;
}

function usage(message: string): GitError {
  return new GitError('usage', message);
}

/** The level flags or options, as given (strings from argv, numbers or strings from a caller). */
export type LevelInputs = { readonly [K in LevelKey]?: unknown };

export function parseLevels(raw: LevelInputs, naming: Naming): LevelFlags {
  const flags: LevelFlags = {};
  for (const key of LEVEL_KEYS)
    if (raw[key] !== undefined) flags[key] = parseLevel(nameOf(key, naming), raw[key]);
  if (flags.compression === 'auto')
    throw usage(
      `auto is a level for one type or for ${nameOf('graphCompression', naming)}, not for every type (${nameOf('compression', naming)})`,
    );
  return flags;
}

/** The levels per type and the level of what is compressed anew, from the flags and configuration. */
export function resolveLevelOptions(
  flags: LevelFlags,
  config: GitConfig,
): { levels: Levels; autoFallback: number } {
  return { levels: resolveLevels(flags, config), autoFallback: fallbackLevel(flags, config) };
}

/** The modes each command takes, its default first. */
const FSCK_MODES = {
  repack: ['changed', 'full', 'connectivity'],
  'zstd-import': ['full', 'connectivity'],
} as const;

function either(words: readonly string[]): string {
  const q = words.map((w) => `'${w}'`);
  return q.length > 1 ? `${q.slice(0, -1).join(', ')} or ${q[q.length - 1]}` : q.join('');
}

/**
 * The fsck mode: one of the command's modes, or `none` for `--no-fsck` (the option false). The
 * command line's bare `--fsck` is `full`, and so is its `--fsck=changed` for an import, whose
 * every entry is written anew.
 */
export function parseFsck(v: unknown, naming: Naming, command: keyof typeof FSCK_MODES): FsckMode {
  const modes: readonly string[] = FSCK_MODES[command];
  if (v === undefined) return FSCK_MODES[command][0];
  if (v === false) return 'none';
  if (naming === 'flag' && v === true) return 'full';
  if (naming === 'flag' && v === 'changed') return command === 'repack' ? 'changed' : 'full';
  if (typeof v === 'string' && modes.includes(v)) return v as FsckMode;
  const off = naming === 'option' ? ' (or false)' : '';
  throw usage(`${nameOf('fsck', naming)} expects ${either(modes)}${off}, not '${String(v)}'`);
}

/** The rewrite's flags or options as given; api/repack.ts documents each. */
export interface RepackInputs extends LevelInputs {
  dryRun?: unknown;
  fsck?: unknown;
  keepPacks?: unknown;
  all?: unknown;
  auto?: unknown;
  writeBitmapIndex?: unknown;
  onProgress?: RepackOptions['onProgress'];
  onWarning?: RepackOptions['onWarning'];
  signal?: AbortSignal | undefined;
}

/** The rewrite's options, checked, before the configuration gives the levels. */
export type RepackRequest = Omit<RepackOptions, 'levels' | 'autoFallback'> & {
  levelFlags: LevelFlags;
};

export function parseRepackOptions(raw: RepackInputs, naming: Naming): RepackRequest {
  const levelFlags = parseLevels(raw, naming);
  const fsck = parseFsck(raw.fsck, naming, 'repack');
  const keepPacks = raw.keepPacks ?? [];
  if (!Array.isArray(keepPacks) || keepPacks.some((k) => typeof k !== 'string'))
    throw usage(`${nameOf('keepPacks', naming)} expects pack names`);
  const writeBitmap = raw.writeBitmapIndex;
  if (writeBitmap !== undefined && typeof writeBitmap !== 'boolean')
    throw usage(`${nameOf('writeBitmapIndex', naming)} expects true or false`);
  return {
    levelFlags,
    dryRun: raw.dryRun === true,
    fsck,
    keepPacks: [...(keepPacks as string[])],
    all: raw.all === true,
    auto: raw.auto === true,
    writeBitmap,
    onProgress: raw.onProgress,
    onWarning: raw.onWarning,
    signal: raw.signal,
  };
}

/** The plain options commands/repack.ts runs with: the request's levels resolved against `config`. */
export function resolveRepackOptions(request: RepackRequest, config: GitConfig): RepackOptions {
  const { levelFlags, ...rest } = request;
  return { ...rest, ...resolveLevelOptions(levelFlags, config) };
}
