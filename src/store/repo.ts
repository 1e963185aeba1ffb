import { readFileSync } from 'node:fs';
import { GitError } from '../errors.js';
import { hashAlgoByName, type HashAlgo } from '../hash/algo.js';
import type { GitConfig } from './config.js';
import { loadConfig, readConfigFromGit, type ConfigSource } from './config-files.js';
import { setupGitDirectory, type GitSetup } from './setup.js';
import { isDirectory, osPath, realPath, within } from './setup-paths.js';

/** A repository opened as git opens it: where its objects live and how they are named. */
export interface Repository {
  /** The (per-worktree) git directory. */
  gitDir: string;
  /** Shared by all worktrees (`commondir`, GIT_COMMON_DIR); equal to gitDir outside linked worktrees. */
  commonDir: string;
  /** The object directory (GIT_OBJECT_DIRECTORY, else `<commonDir>/objects`). */
  objectsDir: string;
  /** Other object directories read through GIT_ALTERNATE_OBJECT_DIRECTORIES and `info/alternates`; read-only for us. */
  alternates: string[];
  workTree: string | undefined;
  bare: boolean;
  algo: HashAlgo;
  config: GitConfig;
  /**
   * The environment the git we run gets: the caller's, with the paths setup resolved made absolute
   * (our children run from other directories) and without GIT_CONFIG (only `git config` reads it).
   */
  env: NodeJS.ProcessEnv;
  /** The effective uid it was opened for: a repository reopened from this one is checked for the same user. */
  euid: number;
}

export interface DiscoverOptions {
  /** The directory the command runs in (after -C). */
  cwd: string;
  /** `--git-dir`, which wins over `GIT_DIR`. */
  gitDir?: string | undefined;
  /** The caller's environment (cli/ passes the process's): GIT_DIR, GIT_OBJECT_DIRECTORY… */
  env: NodeJS.ProcessEnv;
  /**
   * geteuid(): a repository found by walking up must belong to this user or be named by
   * `safe.directory` (git's ensure_valid_ownership); one named by --git-dir or GIT_DIR is trusted,
   * as git trusts it. Required: no caller opens a repository without the check.
   */
  euid: number;
  /** Read the configuration with `git config` even when its files are plain (tests compare both ways). */
  configFromGit?: boolean;
}

/**
 * The one door to a repository: found and checked as git's setup_git_directory does (setup.ts),
 * its configuration read as git reads it from where git then stands (config-files.ts).
 */
export function discoverRepository(opts: DiscoverOptions): Repository {
  const setup = setupGitDirectory(opts);
  const source: ConfigSource = {
    cwd: setup.cwd,
    repo: {
      gitDir: setup.gitDir,
      commonDir: setup.commonDir,
      worktreeConfig: setup.format.worktreeConfig,
    },
    env: opts.env,
  };
  const config = opts.configFromGit === true ? readConfigFromGit(source) : loadConfig(source);
  const algo = hashAlgoByName(setup.format.hashAlgo);
  if (algo === undefined)
    throw new GitError(
      'unsupported',
      `unknown repository object format '${setup.format.hashAlgo}'`,
    );
  const env = repositoryEnv(setup, opts.env);
  return {
    gitDir: setup.gitDir,
    commonDir: setup.commonDir,
    objectsDir: setup.objectsDir,
    alternates: readAlternates(setup.objectsDir, env.GIT_ALTERNATE_OBJECT_DIRECTORIES, setup.cwd),
    workTree: setup.workTree,
    bare: setup.workTree === undefined,
    algo,
    config,
    env,
    euid: opts.euid,
  };
}

/** Variables naming a path that git resolves from where it stands after setup. */
const PATH_VARIABLES = ['GIT_CONFIG_GLOBAL', 'GIT_CONFIG_SYSTEM', 'HOME', 'XDG_CONFIG_HOME'];

/** The caller's environment with every path git would resolve made absolute (see Repository.env). */
function repositoryEnv(setup: GitSetup, callerEnv: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...callerEnv };
  delete env.GIT_CONFIG;
  if (env.GIT_DIR !== undefined) env.GIT_DIR = setup.gitDir;
  if (env.GIT_COMMON_DIR !== undefined) env.GIT_COMMON_DIR = setup.commonDir;
  if (env.GIT_OBJECT_DIRECTORY !== undefined) env.GIT_OBJECT_DIRECTORY = setup.objectsDir;
  if (env.GIT_WORK_TREE !== undefined && setup.workTree !== undefined)
    env.GIT_WORK_TREE = setup.workTree;
  for (const k of PATH_VARIABLES) {
    const v = env[k];
    if (v !== undefined && v !== '' && !v.startsWith('/')) env[k] = osPath(within(setup.cwd, v));
  }
  const alternates = env.GIT_ALTERNATE_OBJECT_DIRECTORIES;
  if (alternates !== undefined) {
    env.GIT_ALTERNATE_OBJECT_DIRECTORIES = alternates
      .split(':')
      .map((p) =>
        p === '' || p.startsWith('/') || p.startsWith('"') || p.startsWith('#')
          ? p
          : osPath(within(setup.cwd, p)),
      )
      .join(':');
  }
  return env;
}

/**
 * git's `prepare_alt_odb` (object-file.c): GIT_ALTERNATE_OBJECT_DIRECTORIES (':'-separated,
 * relative entries from `cwd`), then `<objects>/info/alternates` (one a line, relative to the
 * object directory, `#` comments); each alternate's own alternates right after it, at most 5 deep;
 * real paths, missing directories, duplicates and the object directory itself left out.
 */
export function readAlternates(
  objectsDir: string,
  fromEnv: string | undefined,
  cwd: string,
): string[] {
  const out: string[] = [];
  const own = realPath(objectsDir) ?? objectsDir;
  const seen = new Set<string>([own]);
  const link = (list: string, sep: string, base: string | undefined, depth: number): void => {
    if (list === '' || depth > 5) return;
    for (const entry of list.split(sep)) {
      if (entry === '' || entry.startsWith('#')) continue;
      const relativeTo = base !== undefined ? (realPath(base) ?? base) : cwd;
      const path = realPath(within(relativeTo, entry))?.replace(/\/+$/, '');
      if (path === undefined || !isDirectory(path) || seen.has(path)) continue;
      seen.add(path);
      out.push(path);
      link(readInfoAlternates(path), '\n', path, depth + 1);
    }
  };
  link(fromEnv ?? '', ':', undefined, 0);
  link(readInfoAlternates(objectsDir), '\n', objectsDir, 0);
  return out;
}

function readInfoAlternates(objectsDir: string): string {
  try {
    return readFileSync(`${objectsDir}/info/alternates`, 'utf8');
  } catch {
    return '';
  }
}
