import {
  accessSync,
  constants,
  lstatSync,
  readFileSync,
  readlinkSync,
  realpathSync,
  statSync,
} from 'node:fs';
import { basename, dirname, resolve } from 'node:path';
import { GitError, systemError } from '../errors.js';

/**
 * The file-system questions setup.c asks, with paths kept as git keeps them: strings joined with
 * '/', relative ones resolved by the system from the directory git is in at that moment (we never
 * chdir, so the directory is given: `within`).
 */

/** `p` as the system resolves it from `cwd`: the string unchanged when absolute. */
export function within(cwd: string, p: string): string {
  if (p.startsWith('/')) return p;
  return cwd.endsWith('/') ? cwd + p : `${cwd}/${p}`;
}

/** strbuf_complete(…, '/') then `name`, as git builds `<dir>/HEAD`. */
export function child(dir: string, name: string): string {
  return dir === '' || dir.endsWith('/') ? dir + name : `${dir}/${name}`;
}

/** git's `access(p, X_OK) == 0`. */
export function searchable(p: string): boolean {
  try {
    accessSync(p, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

export function isDirectory(p: string): boolean {
  return statSync(p, { throwIfNoEntry: false })?.isDirectory() ?? false;
}

/**
 * git's `strbuf_realpath(…, die_on_error)`: symlinks resolved, `..` taken physically, the last
 * component allowed to be missing. undefined where git would fail.
 */
export function realPath(p: string): string | undefined {
  try {
    return realpathSync(p);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') return undefined;
    try {
      return resolve(realpathSync(dirname(p)), basename(p));
    } catch {
      return undefined;
    }
  }
}

/** An absolute path as the system resolves it, spelled lexically unless `..` could cross a symlink. */
export function osPath(p: string): string {
  if (!/(^|\/)\.\.(\/|$)/.test(p)) return resolve(p);
  return realPath(p) ?? resolve(p);
}

/** git's `validate_headref` (path.c): a `refs/…` symlink, `ref: refs/…`, or an object id. */
export function validHeadRef(path: string): boolean {
  let st;
  try {
    st = lstatSync(path);
  } catch {
    return false;
  }
  if (st.isSymbolicLink()) {
    try {
      return readlinkSync(path, { encoding: 'buffer' })
        .subarray(0, 255)
        .toString('latin1')
        .startsWith('refs/');
    } catch {
      return false;
    }
  }
  let text: string;
  try {
    text = readFileSync(path).subarray(0, 255).toString('latin1');
  } catch {
    return false;
  }
  // git's isspace: space, tab, LF, CR.
  if (
    text.startsWith('ref:') &&
    text
      .slice(4)
      .replace(/^[ \t\n\r]*/, '')
      .startsWith('refs/')
  )
    return true;
  // get_oid_hex with the default (SHA-1) algorithm: 40 hex digits, whatever follows.
  return /^[0-9a-fA-F]{40}/.test(text);
}

/** `get_common_dir` (setup.c): GIT_COMMON_DIR as given, else `<gitdir>/commondir`, else gitdir. */
export function commonDirOf(
  gitDir: string,
  cwd: string,
  env: NodeJS.ProcessEnv,
): { dir: string; shared: boolean } {
  const fromEnv = env.GIT_COMMON_DIR;
  if (fromEnv !== undefined) return { dir: fromEnv, shared: true };
  const file = within(cwd, child(gitDir, 'commondir'));
  if (statSync(file, { throwIfNoEntry: false }) === undefined)
    return { dir: gitDir, shared: false };
  let data: string;
  try {
    data = readFileSync(file, 'latin1');
  } catch {
    data = '';
  }
  if (data === '') throw new GitError('not-a-repository', `failed to read ${file}`, { file });
  data = data.replace(/[\r\n]+$/, '');
  const real = realPath(within(cwd, data.startsWith('/') ? data : `${gitDir}/${data}`));
  if (real === undefined)
    throw new GitError('not-a-repository', `Invalid path '${data}'`, { file });
  return { dir: real, shared: true };
}

/** git's `is_git_directory` (setup.c), asked from `cwd`. */
export function isGitDirectory(suspect: string, cwd: string, env: NodeJS.ProcessEnv): boolean {
  if (!validHeadRef(within(cwd, child(suspect, 'HEAD')))) return false;
  const common = commonDirOf(suspect, cwd, env).dir;
  const objects = env.GIT_OBJECT_DIRECTORY ?? `${common}/objects`;
  return searchable(within(cwd, objects)) && searchable(within(cwd, `${common}/refs`));
}

/** What `read_gitfile_gently` found at a path: a git dir, or why not. */
export type GitFile = { gitDir: string } | { error: 'stat' | 'not-a-file' };

/**
 * git's `read_gitfile` (setup.c): `gitdir: <path>` in a regular file, relative to the file's
 * directory; the target must be a git directory. Errors other than "no such file" and "not a
 * file" are fatal, in git's words.
 */
export function readGitFile(path: string, cwd: string, env: NodeJS.ProcessEnv): GitFile {
  const full = within(cwd, path);
  const st = statSync(full, { throwIfNoEntry: false });
  if (st === undefined) return { error: 'stat' };
  if (!st.isFile()) return { error: 'not-a-file' };
  if (st.size > 1 << 20)
    throw new GitError('not-a-repository', `too large to be a .git file: '${path}'`, {
      file: full,
    });
  let buf: Buffer;
  try {
    buf = readFileSync(full);
  } catch (e) {
    throw systemError('not-a-repository', 'error opening', e, path, full);
  }
  let text = buf.toString('latin1');
  if (!text.startsWith('gitdir: '))
    throw new GitError('not-a-repository', `invalid gitfile format: ${path}`, { file: full });
  text = text.replace(/[\r\n]+$/, '');
  if (text.length < 9)
    throw new GitError('not-a-repository', `no path in gitfile: ${path}`, { file: full });
  let dir = Buffer.from(text.slice(8), 'latin1').toString('utf8');
  const slash = path.lastIndexOf('/');
  if (!dir.startsWith('/') && slash >= 0) dir = path.slice(0, slash + 1) + dir;
  if (!isGitDirectory(dir, cwd, env))
    throw new GitError('not-a-repository', `not a git repository: ${dir}`, { file: full });
  return { gitDir: realPath(within(cwd, dir)) ?? resolve(cwd, dir) };
}

/** git's `dir_inside_of`: is `sub` `dir` or below it? (Both physical, absolute.) */
export function insideOf(sub: string, dir: string): boolean {
  if (sub === dir) return true;
  return sub.startsWith(dir.endsWith('/') ? dir : `${dir}/`);
}

/** The device of a directory, for GIT_DISCOVERY_ACROSS_FILESYSTEM (git's get_device_or_die). */
export function deviceOf(dir: string): number {
  try {
    return statSync(dir).dev;
  } catch (e) {
    throw systemError('io', 'failed to stat', e, dir);
  }
}
