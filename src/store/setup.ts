import { resolve } from 'node:path';
import { GitError } from '../errors.js';
import { configBool, envBool, type GitConfig } from './config.js';
import { loadConfigFile, loadProtectedConfig } from './config-files.js';
import {
  dubiousOwnership,
  ensureImplicitBareAllowed,
  ensureValidOwnership,
  type OwnedPaths,
} from './ownership.js';
import {
  commonDirOf,
  deviceOf,
  insideOf,
  isDirectory,
  isGitDirectory,
  osPath,
  readGitFile,
  realPath,
  within,
} from './setup-paths.js';

/**
 * git 2.39's setup.c: which repository a command acts on, and where git stands once it has found
 * it. `--git-dir`/GIT_DIR name the git directory (trusted, as git trusts them); otherwise it is
 * looked for from the working directory upwards (`.git` file, `.git` directory, bare), stopping at
 * GIT_CEILING_DIRECTORIES and file-system boundaries, and refused when another user owns it
 * (safe.directory) or when it is bare and safe.bareRepository says explicit. Then git moves to the
 * top of the work tree if it is inside one: GIT_COMMON_DIR, GIT_OBJECT_DIRECTORY, GIT_CONFIG_GLOBAL
 * and the like, when relative, name paths from there.
 */

export interface SetupOptions {
  /** The directory the command runs in (after -C). */
  cwd: string;
  /** `--git-dir`, which git puts in GIT_DIR. */
  gitDir?: string | undefined;
  env: NodeJS.ProcessEnv;
  /** geteuid(): a repository found by walking up must be this user's (or named by safe.directory). */
  euid: number;
}

/** `check_repository_format_gently`'s reading of `<commondir>/config`. */
export interface RepositoryFormat {
  /** core.repositoryformatversion; -1 without one (then nothing else of the file applies). */
  version: number;
  hashAlgo: 'sha1' | 'sha256';
  worktreeConfig: boolean;
}

export interface GitSetup {
  /** Absolute paths, as git resolves them from where it stands after setup. */
  gitDir: string;
  commonDir: string;
  objectsDir: string;
  workTree: string | undefined;
  /** Where git stands after setup (the top of the work tree when it started inside it). */
  cwd: string;
  format: RepositoryFormat;
}

/** What setup.c keeps in globals while it works: the environment it sets, core.bare, core.worktree. */
interface State {
  env: NodeJS.ProcessEnv;
  bareCfg: boolean | undefined;
  workTreeCfg: string | undefined;
  format: RepositoryFormat;
  protectedConfig: () => GitConfig;
  euid: number;
}

/** Where git stands and what it named, before the paths are made absolute (setup_git_env). */
interface Found {
  gitDir: string;
  workTree: string | undefined;
  cwd: string;
}

/** git's `setup_git_directory` (setup.c). */
export function setupGitDirectory(opts: SetupOptions): GitSetup {
  const start = realPath(resolve(opts.cwd)) ?? resolve(opts.cwd);
  const env: NodeJS.ProcessEnv = { ...opts.env };
  if (opts.gitDir !== undefined) env.GIT_DIR = opts.gitDir;
  let prot: GitConfig | undefined;
  const st: State = {
    env,
    bareCfg: undefined,
    workTreeCfg: undefined,
    format: { version: -1, hashAlgo: 'sha1', worktreeConfig: false },
    protectedConfig: () => (prot ??= loadProtectedConfig(start, opts.env)),
    euid: opts.euid,
  };
  // An empty GIT_DIR is still set: git looks for "HEAD" and "/objects" and says it is no repository.
  const found =
    env.GIT_DIR !== undefined ? explicitGitDir(env.GIT_DIR, start, st) : discover(start, st);
  const common = commonDirOf(found.gitDir, found.cwd, env).dir;
  const objects = env.GIT_OBJECT_DIRECTORY ?? `${common}/objects`;
  return {
    gitDir: found.gitDir,
    commonDir: osPath(within(found.cwd, common)),
    objectsDir: osPath(within(found.cwd, objects)),
    workTree: found.workTree,
    cwd: found.cwd,
    format: st.format,
  };
}

/** git's `setup_explicit_git_dir`: `gitdirenv` named by GIT_DIR (or reached from discovery with a work tree set). */
function explicitGitDir(named: string, cwd: string, st: State): Found {
  let gitdirenv = named;
  const gitfile = readGitFile(gitdirenv, cwd, st.env);
  if ('gitDir' in gitfile) gitdirenv = gitfile.gitDir;
  if (!isGitDirectory(gitdirenv, cwd, st.env))
    throw new GitError('not-a-repository', `not a git repository: '${gitdirenv}'`);
  checkRepositoryFormat(gitdirenv, cwd, st);
  const workTree = explicitWorkTree(gitdirenv, cwd, st);
  const here = osPath(within(cwd, gitdirenv));
  if (workTree === undefined || workTree === cwd || !insideOf(cwd, workTree))
    return { gitDir: here, workTree, cwd };
  // Inside the work tree: git moves to its top (set_git_dir(…, 1), then chdir).
  return { gitDir: realPath(here) ?? here, workTree, cwd: workTree };
}

/** The work tree of setup_explicit_git_dir: GIT_WORK_TREE, none if bare, core.worktree, or the cwd. */
function explicitWorkTree(gitdirenv: string, cwd: string, st: State): string | undefined {
  const fromEnv = st.env.GIT_WORK_TREE;
  if (fromEnv !== undefined) return workTreePath(within(cwd, fromEnv), fromEnv);
  if (st.bareCfg === true) return undefined;
  const cfg = st.workTreeCfg;
  if (cfg !== undefined) {
    // chdir(gitdir), chdir(core.worktree), getcwd(): relative to the git directory, physical.
    const real = realPath(within(within(cwd, gitdirenv), cfg));
    if (real === undefined || !isDirectory(real))
      throw new GitError('not-a-repository', `cannot chdir to '${cfg}': No such file or directory`);
    return real;
  }
  if (!envBool(st.env, 'GIT_IMPLICIT_WORK_TREE', true)) return undefined;
  return cwd;
}

/** `set_git_work_tree`: real_pathdup(…, die_on_error), the last component allowed to be missing. */
function workTreePath(p: string, given: string): string {
  if (given === '') throw new GitError('not-a-repository', 'The empty string is not a valid path');
  const real = realPath(p);
  if (real === undefined)
    throw new GitError('not-a-repository', `Invalid path '${given}': No such file or directory`);
  return real;
}

/** git's `setup_git_directory_gently_1` walk, then setup_discovered_git_dir or setup_bare_git_dir. */
function discover(start: string, st: State): Found {
  const ceiling = ceilingOffset(start, st.env.GIT_CEILING_DIRECTORIES);
  const oneFilesystem = !envBool(st.env, 'GIT_DISCOVERY_ACROSS_FILESYSTEM', false);
  const device = oneFilesystem ? deviceOf(start) : 0;
  let dir = start;
  for (;;) {
    const candidate = dir === '/' ? '/.git' : `${dir}/.git`;
    const gitfile = readGitFile(candidate, start, st.env);
    let gitdir: string | undefined;
    if ('gitDir' in gitfile) gitdir = gitfile.gitDir;
    else if (isGitDirectory(candidate, start, st.env)) gitdir = '.git';
    if (gitdir !== undefined) {
      owned(
        {
          gitfile: 'gitDir' in gitfile ? candidate : undefined,
          worktree: dir,
          gitdir: gitdir === '.git' ? candidate : gitdir,
        },
        dir,
        st,
      );
      return discoveredGitDir(gitdir, dir, start, st);
    }
    if (isGitDirectory(dir, start, st.env)) {
      ensureImplicitBareAllowed(dir, st.protectedConfig);
      owned({ gitdir: dir }, dir, st);
      return bareGitDir(dir, start, st);
    }
    const up = parentWithin(dir, ceiling);
    if (up === undefined)
      throw new GitError(
        'not-a-repository',
        'not a git repository (or any of the parent directories): .git',
      );
    dir = up;
    if (oneFilesystem && deviceOf(dir) !== device) {
      throw new GitError(
        'not-a-repository',
        `not a git repository (or any parent up to mount point ${dir})\nStopping at filesystem boundary (GIT_DISCOVERY_ACROSS_FILESYSTEM not set).`,
      );
    }
  }
}

/** The directory above `dir`, or undefined at the root or at a ceiling (setup_git_directory_gently_1). */
function parentWithin(dir: string, ceilOffset: number): string | undefined {
  let offset = dir.length;
  if (offset <= 1) return undefined;
  while (--offset > ceilOffset && dir[offset] !== '/');
  if (offset <= ceilOffset) return undefined;
  return dir.slice(0, Math.max(offset, 1));
}

/**
 * GIT_CEILING_DIRECTORIES as setup.c reads it (canonicalize_ceiling_entry, then
 * longest_ancestor_length): absolute entries only, made real until an empty entry; the length of
 * the longest that is a proper ancestor of `start`, -1 for none.
 */
export function ceilingOffset(start: string, value: string | undefined): number {
  if (value === undefined || start === '/') return -1;
  let verbatim = false;
  let max = -1;
  for (const entry of value.split(':')) {
    if (entry === '') {
      verbatim = true;
      continue;
    }
    if (!entry.startsWith('/')) continue;
    const ceil = verbatim ? entry : realPath(entry);
    if (ceil === undefined) continue;
    const len = ceil.endsWith('/') ? ceil.length - 1 : ceil.length;
    if (start.startsWith(ceil.slice(0, len)) && start[len] === '/' && start.length > len + 1)
      max = Math.max(max, len);
  }
  return max;
}

/** `ensure_valid_ownership`, dying as setup_git_directory does when it fails. */
function owned(paths: OwnedPaths, dir: string, st: State): void {
  if (
    !ensureValidOwnership(paths, {
      euid: st.euid,
      env: st.env,
      protectedConfig: st.protectedConfig,
    })
  )
    throw dubiousOwnership(dir);
}

/** git's `setup_discovered_git_dir`: `gitdir` ('.git' or a .git file's target) found in `dir`. */
function discoveredGitDir(gitdir: string, dir: string, start: string, st: State): Found {
  checkRepositoryFormat(gitdir, dir, st);
  if (st.env.GIT_WORK_TREE !== undefined || st.workTreeCfg !== undefined) {
    const named =
      dir !== start && !gitdir.startsWith('/')
        ? (realPath(within(dir, gitdir)) ?? within(dir, gitdir))
        : gitdir;
    return explicitGitDir(named, start, st);
  }
  const here = osPath(within(dir, gitdir));
  if (st.bareCfg === true)
    return {
      gitDir: dir !== start ? (realPath(here) ?? here) : here,
      workTree: undefined,
      cwd: start,
    };
  return { gitDir: here, workTree: dir, cwd: dir };
}

/** git's `setup_bare_git_dir`: `dir` itself is the git directory; no work tree unless one is set. */
function bareGitDir(dir: string, start: string, st: State): Found {
  checkRepositoryFormat('.', dir, st);
  st.env.GIT_IMPLICIT_WORK_TREE = '0';
  if (st.env.GIT_WORK_TREE !== undefined || st.workTreeCfg !== undefined)
    return explicitGitDir(dir === start ? '.' : dir, start, st);
  return { gitDir: dir, workTree: undefined, cwd: start };
}

/**
 * git's `check_repository_format_gently`: `<commondir>/config` read from `cwd` (no includes),
 * refused as verify_repository_format refuses it; core.bare and core.worktree apply only to a
 * repository without a common dir elsewhere (or from config.worktree).
 */
function checkRepositoryFormat(gitDir: string, cwd: string, st: State): void {
  const common = commonDirOf(gitDir, cwd, st.env);
  const file = within(cwd, `${common.dir}/config`);
  const config = loadConfigFile(file, st.env);
  const format = readFormat(config, file);
  let layout = layoutOf(config, file);
  if (format.version < 0) return;
  st.format = format;
  if (format.worktreeConfig) {
    const wtFile = within(cwd, `${gitDir}/config.worktree`);
    const own = layoutOf(loadConfigFile(wtFile, st.env), wtFile);
    layout = { bare: own.bare ?? layout.bare, workTree: own.workTree ?? layout.workTree };
  } else if (common.shared) return;
  if (layout.bare !== undefined) st.bareCfg = layout.bare;
  if (layout.workTree !== undefined) st.workTreeCfg = layout.workTree;
}

/** `read_worktree_config`: core.bare (a boolean, or fatal) and core.worktree (a value, or fatal). */
function layoutOf(
  config: GitConfig,
  file: string,
): { bare: boolean | undefined; workTree: string | undefined } {
  const workTree = config.getRaw('core.worktree');
  if (workTree.includes(null))
    throw new GitError('bad-config', `missing value for 'core.worktree'`, { file });
  return {
    bare: config.getBool('core.bare'),
    workTree: workTree.length > 0 ? workTree[workTree.length - 1]! : undefined,
  };
}

/** `check_repo_format` and `verify_repository_format` over one file's entries. */
function readFormat(config: GitConfig, file: string): RepositoryFormat {
  const version = config.getInt('core.repositoryformatversion') ?? -1;
  const format: RepositoryFormat = { version, hashAlgo: 'sha1', worktreeConfig: false };
  if (version === -1) return format;
  const unknown: string[] = [];
  const v1Only: string[] = [];
  for (const key of config.keys()) {
    if (!key.startsWith('extensions.')) continue;
    const ext = key.slice('extensions.'.length);
    for (const value of config.getRaw(key)) {
      if (ext === 'noop' || ext === 'partialclone') continue;
      if (ext === 'preciousobjects') configBool(key, value);
      else if (ext === 'worktreeconfig') format.worktreeConfig = configBool(key, value);
      else if (ext === 'objectformat') format.hashAlgo = objectFormat(value, file);
      if (ext === 'noop-v1' || ext === 'objectformat') v1Only.push(ext);
      else if (!['preciousobjects', 'worktreeconfig'].includes(ext)) unknown.push(ext);
    }
  }
  verifyRepositoryFormat(version, unknown, v1Only);
  return format;
}

function objectFormat(value: string | null, file: string): 'sha1' | 'sha256' {
  if (value === 'sha1' || value === 'sha256') return value;
  if (value === null)
    throw new GitError('bad-config', `missing value for 'extensions.objectformat'`, { file });
  throw new GitError('bad-config', `invalid value for 'extensions.objectformat': '${value}'`, {
    file,
  });
}

/** git's `verify_repository_format`, with its messages. */
function verifyRepositoryFormat(version: number, unknown: string[], v1Only: string[]): void {
  const list = (names: string[]): string => names.map((n) => `\n\t${n}`).join('');
  if (version > 1)
    throw new GitError('not-a-repository', `Expected git repo version <= 1, found ${version}`);
  if (version >= 1 && unknown.length > 0) {
    throw new GitError(
      'not-a-repository',
      `unknown repository extension${unknown.length > 1 ? 's' : ''} found:${list(unknown)}`,
    );
  }
  if (version === 0 && v1Only.length > 0) {
    throw new GitError(
      'not-a-repository',
      `repo version is 0, but v1-only extension${v1Only.length > 1 ? 's' : ''} found:${list(v1Only)}`,
    );
  }
}
