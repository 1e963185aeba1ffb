import { chmodSync, mkdirSync, statSync } from 'node:fs';
import { HashObjectError } from '../hash/hash-object.js';
import { configBool, type GitConfig } from './config.js';

/**
 * `core.sharedRepository`, as git's `git_config_perm`, `calc_shared_perm` and `adjust_shared_perm`
 * (path.c) apply it to every file and directory git creates in a repository: 0 leaves the umask
 * alone, a positive value widens, a negative one (an octal mode) sets the permissions.
 */
export const PERM_UMASK = 0;
export const PERM_GROUP = 0o660;
export const PERM_EVERYBODY = 0o664;

/** git's `git_config_perm` for `core.sharedRepository` (a bare key means true). */
export function parseSharedRepository(value: string | undefined | null): number {
  if (value === undefined) return PERM_UMASK;
  if (value === null) return PERM_GROUP;
  if (value === 'umask') return PERM_UMASK;
  if (value === 'group') return PERM_GROUP;
  if (value === 'all' || value === 'world' || value === 'everybody') return PERM_EVERYBODY;
  // strtol(value, &end, 8): blanks, a sign, octal digits; anything left over makes it a boolean.
  const m = /^[ \t\n\v\f\r]*([+-]?)([0-7]*)$/.exec(value);
  if (!m || (m[2] === '' && value !== ''))
    return configBool('core.sharedrepository', value) ? PERM_GROUP : PERM_UMASK;
  const i = (m[1] === '-' ? -1 : 1) * parseInt(m[2] || '0', 8);
  if (i === 0) return PERM_UMASK;
  if (i === 1) return PERM_GROUP;
  if (i === 2) return PERM_EVERYBODY;
  if ((i & 0o600) !== 0o600) {
    throw new HashObjectError(
      'bad-config',
      `problem with core.sharedRepository filemode value (0${(i & 0o777).toString(8).padStart(3, '0')}).\nThe owner of files must always have read and write permissions.`,
    );
  }
  return -(i & 0o666);
}

/** The repository's `core.sharedRepository` (a bare key reads as true, like git's). */
export function sharedRepositoryOf(config: GitConfig): number {
  const all = config.getRaw('core.sharedrepository');
  return all.length === 0 ? PERM_UMASK : parseSharedRepository(all[all.length - 1]!);
}

/** git's `calc_shared_perm`. */
function calcSharedPerm(mode: number, shared: number): number {
  let tweak = shared < 0 ? -shared : shared;
  if (!(mode & 0o200)) tweak &= ~0o222;
  if (mode & 0o100) tweak |= (tweak & 0o444) >> 2;
  return shared < 0 ? (mode & ~0o777) | tweak : mode | tweak;
}

/** The mode `adjust_shared_perm` gives a file or directory whose mode is `old`. */
function sharedMode(old: number, isDir: boolean, shared: number): number {
  let mode = calcSharedPerm(old, shared) & 0o7777;
  // Directories: read bits copied to execute bits, and setgid (FORCE_DIR_SET_GID).
  if (isDir) mode |= ((mode & 0o444) >> 2) | 0o2000;
  return mode;
}

/** git's `adjust_shared_perm`: widen (or, with a mode, set) permissions; directories get setgid. */
export function adjustSharedPerm(path: string, shared: number): void {
  if (shared === 0) return;
  const st = statSync(path);
  const old = st.mode & 0o7777;
  const mode = sharedMode(old, st.isDirectory(), shared);
  if (mode !== old) chmodSync(path, mode);
}

/** A directory created as git's `safe_create_leading_directories` does: 0777 less the umask, then shared. */
export function mkdirShared(dir: string, shared: number): boolean {
  try {
    mkdirSync(dir, 0o777);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw e;
  }
  adjustSharedPerm(dir, shared);
  return true;
}
