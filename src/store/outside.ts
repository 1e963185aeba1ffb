import { realpathSync, statSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { GitError, systemError } from '../errors.js';

/**
 * Where a file that git must never see may be written (the zstd export): the real path, links
 * resolved, checked against every object directory and git directory it would land in. A path
 * compared as typed let `-o` through a link into `objects/pack` replace a live pack (issue 30).
 */

const isDir = (p: string): boolean =>
  statSync(p, { throwIfNoEntry: false })?.isDirectory() === true;
const isFile = (p: string): boolean => statSync(p, { throwIfNoEntry: false })?.isFile() === true;

/** git's `is_git_directory`, roughly: HEAD, objects/ and refs/ (a bare repository, a `.git`, a worktree's common dir). */
function isGitDir(d: string): boolean {
  return isFile(join(d, 'HEAD')) && isDir(join(d, 'objects')) && isDir(join(d, 'refs'));
}

/** An object directory of some repository: `objects` with `pack/` and `info/` (alternates live anywhere). */
function isObjectDir(d: string): boolean {
  return basename(d) === 'objects' && isDir(join(d, 'pack')) && isDir(join(d, 'info'));
}

/** The real path of `p`, or `p` itself when it does not exist (nothing can be written there through a link). */
function real(p: string): string {
  try {
    return realpathSync(p);
  } catch {
    return resolve(p);
  }
}

/**
 * The real path to write `given` at, refused (`usage`) inside this repository's object
 * directories (its own, its alternates), inside any git directory, or inside anything that is
 * an object directory; its directory must exist.
 */
export function outsideRepositories(given: string, objectDirs: string[]): string {
  const abs = resolve(given);
  let dir: string;
  try {
    dir = realpathSync(dirname(abs));
  } catch (e) {
    throw systemError('usage', 'cannot write', e, given, abs);
  }
  const own = new Set(objectDirs.map(real));
  for (let d = dir; ; d = dirname(d)) {
    if (own.has(d))
      throw new GitError(
        'usage',
        `a zstd pack must not be written inside the object directory (${objectDirs[[...own].indexOf(d)] ?? d})`,
      );
    if (isObjectDir(d))
      throw new GitError(
        'usage',
        `a zstd pack must not be written inside an object directory (${d})`,
      );
    if (isGitDir(d))
      throw new GitError('usage', `a zstd pack must not be written inside a git directory (${d})`);
    if (dirname(d) === d) break;
  }
  return join(dir, basename(abs));
}
