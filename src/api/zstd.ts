import { resolve } from 'node:path';
import { DEFAULT_ZSTD_LEVEL, exportZpack, type ExportResult } from '../commands/zstd.js';
import { importZpack, type ImportResult } from '../commands/zstd-import.js';
import { DEFAULT_DICT_SIZE } from '../codec/dict.js';
import { GitRepackError } from '../errors.js';
import { parseFsck, parseLevels, resolveLevelOptions } from '../commands/options.js';
import { LEVEL_KEYS, resolveLevels } from '../repack/levels.js';
import type { Repository } from '../store/repo.js';
import { apiCall, checkOptions, repositoryAt, type ProgressCallback } from './common.js';
import type { LevelOptions } from './repack.js';

/** `git repack-ts --zstd[=<level>] -o <out>`'s options. Levels of 0 (flags, then config) store that type plain. */
export interface ZstdExportOptions extends LevelOptions {
  /** `--zstd=<level>`: 1…22 (default 10). */
  level?: number | undefined;
  /** `--dict-size=<bytes>` (1024…16 MiB, default 112640), or false for `--no-dict`. */
  dictSize?: number | false | undefined;
  /** `--dict-trainer`: 'auto' (zstd's, default) or 'js'. */
  dictTrainer?: 'auto' | 'js' | undefined;
  onProgress?: ProgressCallback | undefined;
  signal?: AbortSignal | undefined;
}

/** `git repack-ts zstd-import <file>`'s options. */
export interface ZstdImportOptions extends LevelOptions {
  /** `--fsck=full` (default: git fsck, which hashes every object), `--fsck=connectivity`, or `--no-fsck` (false); objects are hashed in every mode. */
  fsck?: 'full' | 'connectivity' | false | undefined;
  /** `--force`: replace refs that differ from the zpack's (as `git fetch --force`). */
  force?: boolean | undefined;
  onProgress?: ProgressCallback | undefined;
  onWarning?: ((message: string) => void) | undefined;
  signal?: AbortSignal | undefined;
}

const EXPORT_KNOWN = [...LEVEL_KEYS, 'level', 'dictSize', 'dictTrainer', 'onProgress', 'signal'];
const IMPORT_KNOWN = [...LEVEL_KEYS, 'fsck', 'force', 'onProgress', 'onWarning', 'signal'];

function exportSettings(o: ZstdExportOptions): {
  level: number;
  dictSize: number;
  dictMethod: 'auto' | 'js';
} {
  const level = o.level ?? DEFAULT_ZSTD_LEVEL;
  if (!Number.isInteger(level) || level < 1 || level > 22)
    throw new GitRepackError(
      'usage',
      `--zstd expects a level from 1 to 22, not '${String(o.level)}'`,
    );
  const dictSize = o.dictSize === false ? 0 : (o.dictSize ?? DEFAULT_DICT_SIZE);
  if (dictSize !== 0 && (!Number.isInteger(dictSize) || dictSize < 1024 || dictSize > 1 << 24)) {
    throw new GitRepackError(
      'usage',
      `--dict-size expects a number of bytes from 1024 to 16777216, not '${String(o.dictSize)}'`,
    );
  }
  const dictMethod = o.dictTrainer ?? 'auto';
  if (dictMethod !== 'auto' && dictMethod !== 'js')
    throw new GitRepackError(
      'usage',
      `--dict-trainer expects 'auto' or 'js', not '${String(o.dictTrainer)}'`,
    );
  return { level, dictSize, dictMethod };
}

/** The export of an opened repository (the CLI's): `out` absolute or relative to the process's directory. */
export async function zstdExportRepo(
  repo: Repository,
  out: string,
  o: ZstdExportOptions,
): Promise<ExportResult> {
  const settings = exportSettings(o);
  if (typeof out !== 'string' || out === '')
    throw new GitRepackError('usage', '--zstd needs -o <file>');
  // A type whose level (flags, then config) is 0 is stored plain; the zstd level covers the rest.
  const levels = resolveLevels(parseLevels(o, 'option'), repo.config);
  const plainTypes = new Set(([1, 2, 3, 4] as const).filter((t) => levels[t] === 0));
  return exportZpack(repo, {
    out: resolve(out),
    ...settings,
    plainTypes,
    onProgress: o.onProgress,
    signal: o.signal,
  });
}

/** The import into an opened repository (the CLI's). */
export async function zstdImportRepo(
  repo: Repository,
  file: string,
  o: ZstdImportOptions,
): Promise<ImportResult> {
  if (typeof file !== 'string' || file === '') throw new GitRepackError('usage', 'no file given');
  const flags = parseLevels(o, 'option');
  const fsck = parseFsck(o.fsck, 'option', 'zstd-import');
  return importZpack(repo, resolve(file), {
    ...resolveLevelOptions(flags, repo.config),
    fsck,
    force: o.force === true,
    onProgress: o.onProgress,
    onWarning: o.onWarning,
    signal: o.signal,
  });
}

/**
 * `git repack-ts --zstd -o <out>`: every object of the repository at or above `repoPath` into one
 * zstd pack `out` (never inside any repository's object directory), with the refs and HEAD.
 */
export async function zstdExport(
  repoPath: string,
  out: string,
  options: ZstdExportOptions = {},
): Promise<ExportResult> {
  return apiCall(options?.signal, () => {
    checkOptions(options, EXPORT_KNOWN, 'zstdExport');
    return zstdExportRepo(repositoryAt(repoPath), out, options);
  });
}

/**
 * `git repack-ts zstd-import <file>`: a zstd pack into the repository at or above `repoPath` as a
 * normal pack, every object hashed first, then its refs (and HEAD, in a repository with no
 * commit yet) as `git fetch`/`git clone` from a bundle would set them. A ref the zpack and the
 * repository disagree on is left alone and reported (`status: 'rejected'`) unless `force`.
 */
export async function zstdImport(
  repoPath: string,
  file: string,
  options: ZstdImportOptions = {},
): Promise<ImportResult> {
  return apiCall(options?.signal, () => {
    checkOptions(options, IMPORT_KNOWN, 'zstdImport');
    return zstdImportRepo(repositoryAt(repoPath), file, options);
  });
}
