import { existsSync, readFileSync, realpathSync, statSync } from 'node:fs';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { GitError } from '../errors.js';
import { SHA1, hashAlgoByName, type HashAlgo } from '../hash/algo.js';
import { GitConfig } from './config.js';
import { dubiousOwnership, ensureImplicitBareAllowed, ensureValidOwnership, isPathOwnedByCurrentUser } from './ownership.js';

/** A discovered repository: where its objects live and how they are named. */
export interface Repository {
  /** The (per-worktree) git directory. */
  gitDir: string;
  /** Shared by all worktrees (`commondir`); equal to gitDir outside linked worktrees. */
  commonDir: string;
  objectsDir: string;
  /** Other object directories read through `objects/info/alternates`; read-only for us. */
  alternates: string[];
  workTree: string | undefined;
  bare: boolean;
  algo: HashAlgo;
  config: GitConfig;
  /** The environment the repository was found with, and that the git we run gets. */
  env: NodeJS.ProcessEnv;
}

export interface DiscoverOptions {
  cwd: string;
  /** `--git-dir`, which wins over `GIT_DIR`. */
  gitDir?: string | undefined;
  /** The caller's environment (cli/ passes the process's): GIT_DIR, GIT_OBJECT_DIRECTORY… */
  env: NodeJS.ProcessEnv;
  /**
   * The effective uid: a repository found by walking up must belong to it or be named by
   * `safe.directory` (git's ensure_valid_ownership). cli/ always gives it; without it there is
   * no ownership check (callers that pass an explicit git dir, which git trusts too).
   */
  euid?: number | undefined;
  /**
   * Reads the configuration without `git config` when it can (undefined: git is asked): the
   * repository's with its common dir, the protected scopes alone without one.
   */
  readConfig?: (commonDir: string | undefined, env: NodeJS.ProcessEnv) => GitConfig | undefined;
}

function isDir(p: string): boolean {
  try {
    return statSync(p).isDirectory();
  } catch {
    return false;
  }
}

function physical(p: string): string {
  try {
    return realpathSync(p);
  } catch {
    return p;
  }
}

function isFile(p: string): boolean {
  try {
    return statSync(p).isFile();
  } catch {
    return false;
  }
}

/** Reads a `.git` file (`gitdir: <path>`), as git's `read_gitfile` does. */
function readGitFile(path: string): string {
  const text = readFileSync(path, 'utf8');
  const m = /^gitdir: (.*?)\s*$/m.exec(text);
  if (!m) throw new GitError('not-a-repository', `invalid gitfile format: ${path}`);
  return resolve(dirname(path), m[1]!);
}

function commonDirOf(gitDir: string): string {
  const f = join(gitDir, 'commondir');
  if (!isFile(f)) return gitDir;
  const rel = readFileSync(f, 'utf8').trim();
  return isAbsolute(rel) ? rel : resolve(gitDir, rel);
}

/** git's `is_git_directory`: HEAD, objects/ and refs/ (the latter two in the common dir). */
export function isGitDirectory(dir: string, env: NodeJS.ProcessEnv = {}): boolean {
  if (!existsSync(join(dir, 'HEAD'))) return false;
  const common = commonDirOf(dir);
  const objects = env.GIT_OBJECT_DIRECTORY ?? join(common, 'objects');
  return isDir(objects) && isDir(join(common, 'refs'));
}

function ceilings(env: NodeJS.ProcessEnv): string[] {
  return (env.GIT_CEILING_DIRECTORIES ?? '')
    .split(':')
    .filter((p) => p !== '' && isAbsolute(p))
    .map((p) => physical(resolve(p)));
}

function loadScoped(gitDir: string, env: NodeJS.ProcessEnv): { all: GitConfig; protected: GitConfig } | undefined {
  try {
    return GitConfig.loadScoped(gitDir, env);
  } catch {
    return undefined;
  }
}

/** Finds the repository like git's `setup_git_directory`: `--git-dir`, `GIT_DIR`, then walking up. */
export function discoverRepository(opts: DiscoverOptions): Repository {
  const env = opts.env;
  const explicit = opts.gitDir ?? env.GIT_DIR;
  let gitDir: string;
  let workTree: string | undefined;
  let scoped: { all: GitConfig; protected: GitConfig } | undefined;
  if (explicit !== undefined && explicit !== '') {
    let p = resolve(opts.cwd, explicit);
    if (isFile(p)) p = readGitFile(p);
    if (!isGitDirectory(p, env)) throw new GitError('not-a-repository', `not a git repository: '${explicit}'`);
    gitDir = p;
    workTree = env.GIT_WORK_TREE !== undefined ? resolve(opts.cwd, env.GIT_WORK_TREE) : undefined;
  } else {
    const stops = ceilings(env);
    // git starts from getcwd(), the physical path: safe.directory is compared against it.
    let d = physical(resolve(opts.cwd));
    const owned = (paths: { gitfile?: string; worktree?: string; gitdir: string }, dir: string): void => {
      if (opts.euid !== undefined && !ensureValidOwnership(paths, { euid: opts.euid, env })) throw dubiousOwnership(dir);
    };
    let found: string | undefined;
    for (;;) {
      const dotgit = join(d, '.git');
      if (isDir(dotgit) && isGitDirectory(dotgit, env)) {
        owned({ worktree: d, gitdir: dotgit }, d);
        found = dotgit;
        workTree = d;
        break;
      }
      if (isFile(dotgit)) {
        const target = readGitFile(dotgit);
        if (!isGitDirectory(target, env)) throw new GitError('not-a-repository', `not a git repository: ${target}`);
        owned({ gitfile: dotgit, worktree: d, gitdir: physical(target) }, d);
        found = target;
        workTree = d;
        break;
      }
      if (isGitDirectory(d, env)) {
        // The protected configuration read without git when it is plain, else one `git config`
        // for both it and the repository's own, when the directory is ours (git reads no
        // configuration of a repository it may refuse) and no GIT_CONFIG names a file that would
        // stand in for the scopes. (A configuration git cannot read is left to the two calls,
        // which say so in git's order.)
        const plainProtected = opts.readConfig?.(undefined, env);
        if (plainProtected === undefined && env.GIT_CONFIG === undefined && (opts.euid === undefined || isPathOwnedByCurrentUser(d, { euid: opts.euid, env }))) scoped = loadScoped(d, env);
        ensureImplicitBareAllowed(d, env, scoped?.protected ?? plainProtected);
        owned({ gitdir: d }, d);
        found = d;
        break;
      }
      const parent = dirname(d);
      if (parent === d || stops.includes(parent)) break;
      d = parent;
    }
    if (found === undefined) {
      throw new GitError('not-a-repository', 'not a git repository (or any of the parent directories): .git');
    }
    gitDir = found;
  }
  const commonDir = commonDirOf(gitDir);
  const config = scoped?.all ?? opts.readConfig?.(commonDir, env) ?? GitConfig.load(gitDir, env);
  const fmt = config.get('extensions.objectformat');
  const algo = fmt === undefined ? SHA1 : hashAlgoByName(fmt);
  if (algo === undefined) throw new GitError('unsupported', `unknown repository object format '${fmt}'`);
  const bare = config.getBool('core.bare') ?? workTree === undefined;
  const objectsDir = env.GIT_OBJECT_DIRECTORY !== undefined ? resolve(opts.cwd, env.GIT_OBJECT_DIRECTORY) : join(commonDir, 'objects');
  return {
    gitDir,
    commonDir,
    objectsDir,
    alternates: readAlternates(objectsDir, env),
    workTree: bare ? undefined : workTree,
    bare,
    algo,
    config,
    env,
  };
}

/** `objects/info/alternates` (recursively, at most 5 deep like git) and `GIT_ALTERNATE_OBJECT_DIRECTORIES`. */
export function readAlternates(objectsDir: string, env: NodeJS.ProcessEnv = {}): string[] {
  const out: string[] = [];
  const seen = new Set<string>([resolve(objectsDir)]);
  const visit = (dir: string, depth: number): void => {
    const f = join(dir, 'info', 'alternates');
    if (depth > 5 || !isFile(f)) return;
    for (const raw of readFileSync(f, 'utf8').split('\n')) {
      const line = raw.trim();
      if (line === '' || line.startsWith('#')) continue;
      const p = resolve(dir, line);
      if (seen.has(p) || !isDir(p)) continue;
      seen.add(p);
      out.push(p);
      visit(p, depth + 1);
    }
  };
  for (const p of (env.GIT_ALTERNATE_OBJECT_DIRECTORIES ?? '').split(':')) {
    if (p !== '' && isDir(p) && !seen.has(resolve(p))) {
      seen.add(resolve(p));
      out.push(resolve(p));
    }
  }
  visit(objectsDir, 0);
  return out;
}
