import { spawnSync } from 'node:child_process';
import { lstatSync } from 'node:fs';
import { GitError } from '../errors.js';
import { envBool, type GitConfig } from './config.js';

/**
 * git 2.39's safe.directory protection (CVE-2022-24765): a repository found by walking up from
 * the working directory is used only when its work tree, git directory and `.git` file belong to
 * the effective user, or when `safe.directory` (system, global or command-line config only)
 * names it. Mirrors `ensure_valid_ownership` and `safe_directory_cb` in setup.c and
 * `is_path_owned_by_current_uid` in git-compat-util.h, as of v2.39.5.
 */
export interface OwnershipContext {
  /** The effective uid (`geteuid()`), given by cli/ and api/. */
  euid: number;
  env: NodeJS.ProcessEnv;
  /** git_protected_config (system, global, command line), read once and only when needed. */
  protectedConfig: () => GitConfig;
}

/** What discovery found: `gitfile` is the `.git` file, if the git dir was reached through one. */
export interface OwnedPaths {
  gitfile?: string | undefined;
  worktree?: string | undefined;
  gitdir: string;
}

/** git's `extract_id_from_env`: strtoul(…, 10) that must consume everything, stored in a uid_t. */
export function uidFromEnv(value: string | undefined): number | undefined {
  if (value === undefined || value === '') return undefined;
  const m = /^[ \t\n\v\f\r]*([+-]?)(\d+)$/.exec(value);
  if (!m) return undefined;
  const max = (1n << 64n) - 1n;
  let n = BigInt(m[2]!);
  if (n > max) return undefined; // ERANGE
  if (m[1] === '-') n = (max + 1n - n) & max; // strtoul negates in unsigned long
  return Number(n & 0xffffffffn); // uid_t is 32 bits
}

/** git's `is_path_owned_by_current_uid`: lstat's owner against the euid (or SUDO_UID for root). */
export function isPathOwnedByCurrentUser(path: string, ctx: OwnershipContext): boolean {
  let uid: number;
  try {
    uid = lstatSync(path).uid;
  } catch {
    return false;
  }
  let euid = ctx.euid;
  if (euid === 0) {
    if (uid === 0) return true;
    euid = uidFromEnv(ctx.env.SUDO_UID) ?? euid;
  }
  return uid === euid;
}

/** git's `ensure_valid_ownership`. */
export function ensureValidOwnership(paths: OwnedPaths, ctx: OwnershipContext): boolean {
  const assumeOther = envBool(ctx.env, 'GIT_TEST_ASSUME_DIFFERENT_OWNER', false);
  if (
    !assumeOther &&
    (paths.gitfile === undefined || isPathOwnedByCurrentUser(paths.gitfile, ctx)) &&
    (paths.worktree === undefined || isPathOwnedByCurrentUser(paths.worktree, ctx)) &&
    isPathOwnedByCurrentUser(paths.gitdir, ctx)
  ) {
    return true;
  }
  return safeDirectoryAllows(paths.worktree ?? paths.gitdir, ctx.protectedConfig(), ctx.env);
}

/** git's `safe_directory_cb` over every `safe.directory` value in order: '' resets, '*' allows all. */
export function safeDirectoryAllows(
  path: string,
  config: GitConfig,
  env: NodeJS.ProcessEnv,
): boolean {
  let safe = false;
  for (const value of config.getAll('safe.directory')) {
    if (value === '') safe = false;
    else if (value === '*') safe = true;
    else if (interpolatePath(value, env) === path) safe = true;
  }
  return safe;
}

/**
 * git's `git_config_pathname` (`~/`, `~user/`, `%(prefix)/`), done by git itself: `--default`
 * goes through the same conversion, and with no configuration at all the default is what prints.
 */
function interpolatePath(value: string, env: NodeJS.ProcessEnv): string {
  if (!value.startsWith('~') && !value.startsWith('%(prefix)/')) return value;
  const bare: NodeJS.ProcessEnv = {
    ...env,
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_CONFIG_GLOBAL: '/dev/null',
    GIT_CONFIG_SYSTEM: '/dev/null',
    GIT_CEILING_DIRECTORIES: '/',
  };
  for (const k of ['GIT_DIR', 'GIT_CONFIG', 'GIT_CONFIG_PARAMETERS', 'GIT_CONFIG_COUNT'])
    delete bare[k];
  const r = spawnSync(
    'git',
    ['config', '--type=path', '--default', value, '--get', 'safe.directory'],
    { env: bare, cwd: '/', encoding: 'utf8' },
  );
  if (r.status !== 0)
    throw new GitError(
      'bad-config',
      r.stderr.trim().replace(/^fatal: /, '') || `failed to expand user dir in: '${value}'`,
    );
  return r.stdout.replace(/\n$/, '');
}

/** git's `sq_quote_buf_pretty` (quote.c): bare when every byte is alphanumeric or `+,-./:=@_^`. */
export function sqQuotePretty(s: string): string {
  if (s === '') return "''";
  if (/^[A-Za-z0-9+,\-./:=@_^]+$/.test(s)) return s;
  return `'${s.replace(/['!]/g, (c) => `'\\${c}'`)}'`;
}

/** The error git's setup_git_directory dies with (setup.c, GIT_DIR_INVALID_OWNERSHIP). */
export function dubiousOwnership(dir: string): GitError {
  return new GitError(
    'dubious-ownership',
    `detected dubious ownership in repository at '${dir}'\nTo add an exception for this directory, call:\n\n\tgit config --global --add safe.directory ${sqQuotePretty(dir)}`,
    { file: dir },
  );
}

/**
 * git's `get_allowed_bare_repo` (setup.c, 2.38+): may a bare repository be used when it was
 * found by walking up from the cwd (not named by --git-dir or GIT_DIR)? `safe.bareRepository`
 * from protected config only, the last value wins; `all` (the default) or `explicit`, exactly.
 * Throws git's error otherwise.
 */
export function ensureImplicitBareAllowed(dir: string, protectedConfig: () => GitConfig): void {
  let allowed = true;
  for (const v of protectedConfig().getAll('safe.bareRepository')) {
    if (v === 'explicit') allowed = false;
    else if (v === 'all') allowed = true;
    else throw new GitError('bad-config', `unable to parse 'safe.barerepository' from config`);
  }
  if (!allowed)
    throw new GitError(
      'not-a-repository',
      `cannot use bare repository '${dir}' (safe.bareRepository is 'explicit')`,
      { file: dir },
    );
}
