import { spawnSync } from 'node:child_process';
import { readFileSync, realpathSync, statSync } from 'node:fs';
import { delimiter, dirname, join } from 'node:path';
import { GitError, systemError } from '../errors.js';
import { GitConfig, addRecord, envBool, forEachRecord } from './config.js';
import { within } from './setup-paths.js';

/**
 * Which configuration git reads, and reading it: without a `git config` process when every file
 * is plain enough to read exactly (saves ~10 ms a run), else from git itself. Either way the
 * answer is what git's `do_git_config_sequence` gives a command run in the same place: system,
 * global (XDG, then ~/.gitconfig, or GIT_CONFIG_GLOBAL), the repository's, config.worktree, then
 * the command line (GIT_CONFIG_PARAMETERS, GIT_CONFIG_COUNT). GIT_CONFIG means nothing to any
 * command but `git config` (builtin/config.c alone reads it), so it is never passed on to one.
 */

/** Where git reads configuration from: its directory at that moment and its repository. */
export interface ConfigSource {
  /** The directory git is in when it reads: relative GIT_CONFIG_GLOBAL, HOME… resolve from it. */
  cwd: string;
  /** The repository (absolute paths), absent outside one (then only the protected scopes). */
  repo?: { gitDir: string; commonDir: string; worktreeConfig: boolean } | undefined;
  env: NodeJS.ProcessEnv;
}

/** The configuration git gives a command run from `source`. */
export function loadConfig(source: ConfigSource): GitConfig {
  return readPlainConfig(source) ?? readConfigFromGit(source);
}

/**
 * git's protected configuration (system, global, command line: never the repository's), read
 * as setup.c reads it while looking for the repository: from the directory the command started in.
 */
export function loadProtectedConfig(cwd: string, env: NodeJS.ProcessEnv): GitConfig {
  return loadConfig({ cwd, env });
}

/**
 * The files of `do_git_config_sequence`, in order, or undefined when they cannot be known
 * without git: the command line adds to them, or a system file may exist at a place git was
 * built with (git 2.39 cannot print it).
 */
export function configFiles(source: ConfigSource): string[] | undefined {
  const env = source.env;
  if (env.GIT_CONFIG_PARAMETERS || env.GIT_CONFIG_COUNT) return undefined;
  const files: string[] = [];
  if (!envBool(env, 'GIT_CONFIG_NOSYSTEM', false)) {
    const system = env.GIT_CONFIG_SYSTEM;
    if (system === undefined) {
      const file = systemFile(env, 'gitconfig');
      if (file === undefined) return undefined;
      if (file !== null) files.push(file);
    } else if (system !== '') files.push(system);
  }
  const global = env.GIT_CONFIG_GLOBAL;
  if (global !== undefined) {
    if (global !== '') files.push(global);
  } else {
    // git_global_config: xdg_config_home("config"), then interpolate_path("~/.gitconfig").
    const home = env.HOME;
    if (env.XDG_CONFIG_HOME) files.push(`${env.XDG_CONFIG_HOME}/git/config`);
    else if (home !== undefined) files.push(`${home}/.config/git/config`);
    if (home !== undefined) files.push(`${home}/.gitconfig`);
  }
  if (source.repo !== undefined) {
    files.push(`${source.repo.commonDir}/config`);
    if (source.repo.worktreeConfig) files.push(`${source.repo.gitDir}/config.worktree`);
  }
  return files.map((f) => within(source.cwd, f));
}

/** `git config --list` for `source` without running git, or undefined when git must be asked. */
export function readPlainConfig(source: ConfigSource): GitConfig | undefined {
  const files = configFiles(source);
  if (files === undefined) return undefined;
  const entries = new Map<string, (string | null)[]>();
  for (const f of files) {
    const text = readConfigFile(f);
    if (text === undefined || !parsePlainConfig(text, entries)) return undefined;
  }
  return new GitConfig(entries);
}

/** The environment a `git config` child reads `source` with, from `source.cwd`. */
function configEnv(source: ConfigSource): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...source.env };
  // What would make the child look at another repository or object directory, or read one file only.
  for (const k of [
    'GIT_CONFIG',
    'GIT_WORK_TREE',
    'GIT_OBJECT_DIRECTORY',
    'GIT_ALTERNATE_OBJECT_DIRECTORIES',
    'GIT_COMMON_DIR',
  ])
    delete env[k];
  if (source.repo !== undefined) {
    env.GIT_DIR = source.repo.gitDir;
    env.GIT_COMMON_DIR = source.repo.commonDir;
    // Reading configuration never opens an object; '/' passes the child's is_git_directory.
    env.GIT_OBJECT_DIRECTORY = '/';
  } else {
    // No git directory there: `git config` reads the protected scopes only, from this cwd.
    env.GIT_DIR = '/dev/null';
  }
  return env;
}

/** `git config --list -z` run where git would read it, with git's own precedence and includes. */
export function readConfigFromGit(source: ConfigSource, args: string[] = ['--list']): GitConfig {
  const r = spawnSync('git', ['config', '-z', ...args], {
    env: configEnv(source),
    cwd: source.cwd,
    encoding: 'buffer',
    maxBuffer: 1 << 28,
  });
  if (r.error) throw systemError('bad-config', 'cannot run git config', r.error);
  if (r.status !== 0) {
    const msg = r.stderr.toString().trim();
    // No configuration at all (e.g. a snapshot without a config file) is an empty one.
    if (r.stdout.length === 0 && msg === '') return GitConfig.empty();
    throw new GitError('bad-config', msg.replace(/^(fatal|error): /gm, '') || 'git config failed');
  }
  const entries = new Map<string, (string | null)[]>();
  forEachRecord(r.stdout, (_, rec) => addRecord(entries, rec));
  return new GitConfig(entries);
}

/**
 * One file as `git_config_from_file` reads it (no includes followed: the repository format of
 * setup.c). Plain files are read here; others by `git config --file`.
 */
export function loadConfigFile(path: string, env: NodeJS.ProcessEnv): GitConfig {
  const text = readConfigFile(path);
  const entries = new Map<string, (string | null)[]>();
  if (text !== undefined && parsePlainConfig(text, entries, { includes: 'literal' }))
    return new GitConfig(entries);
  return readConfigFromGit({ cwd: '/', env }, ['--file', path, '--list']);
}

// ---------------------------------------------------------------------------------------------
// The plain subset of git's config syntax (config.c: git_parse_source, get_value, parse_value).

/** git's isspace: space, tab, LF and CR, not VT or FF. */
const BLANKS = /^[ \t\r]+/;
/** A section header git reads the same way whatever else it allows: `[name]` or `[name "sub"]`. */
const SECTION = /^\[([A-Za-z0-9-]+)(?:[ \t\r]+"([^"\\\n]*)")?\][ \t\r]*$/;
/** `name = value` or a bare `name`, the value without quotes, escapes or comments. */
const ENTRY = /^([A-Za-z][A-Za-z0-9-]*)[ \t]*(?:=([^"\\#;]*))?$/;

/**
 * One config file as `git config --list` shows it (parse_value for the plain case: leading and
 * trailing blanks dropped, each blank between words read as a space), or false when the file holds
 * anything else (quotes, escapes, comments after a value, continuation lines, a header and an entry
 * on one line, includes unless `includes: 'literal'`…): then git reads it.
 */
export function parsePlainConfig(
  text: string,
  out: Map<string, (string | null)[]>,
  opts: { includes?: 'refuse' | 'literal' } = {},
): boolean {
  let section: string | undefined;
  // get_next_char reads CR LF as LF.
  for (const raw of text.split('\n')) {
    const line = raw.replace(/\r$/, '').replace(BLANKS, '');
    if (line === '' || line[0] === '#' || line[0] === ';') continue;
    if (line[0] === '[') {
      const m = SECTION.exec(line);
      if (!m) return false;
      const name = m[1]!.toLowerCase();
      if (opts.includes !== 'literal' && (name === 'include' || name === 'includeif')) return false;
      section = m[2] === undefined ? name : `${name}.${m[2]}`;
      continue;
    }
    const m = ENTRY.exec(line);
    if (!m || section === undefined) return false;
    const key = `${section}.${m[1]!.toLowerCase()}`;
    const value =
      m[2] === undefined ? null : m[2].replace(/^[ \t\r]+|[ \t\r]+$/g, '').replace(/[ \t\r]/g, ' ');
    const list = out.get(key);
    if (list) list.push(value);
    else out.set(key, [value]);
  }
  return true;
}

/** A file's text, '' when it does not exist, undefined when it cannot be read as plain text. */
function readConfigFile(path: string): string | undefined {
  let buf: Buffer;
  try {
    buf = readFileSync(path);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    return code === 'ENOENT' || code === 'ENOTDIR' ? '' : undefined;
  }
  // A byte order mark or a NUL: git's own reading.
  if (buf.includes(0) || (buf[0] === 0xef && buf[1] === 0xbb && buf[2] === 0xbf)) return undefined;
  return buf.toString('utf8');
}

export function fileExists(p: string): boolean {
  return statSync(p, { throwIfNoEntry: false })?.isFile() ?? false;
}

/**
 * The system file git reads (`ETC_GITCONFIG`, `ETC_GITATTRIBUTES`), when it can be known without
 * git: a git installed by a distribution's package (/usr/bin/git, links resolved) reads
 * /etc/<name> (git's Makefile: sysconfdir is /etc for prefix /usr, and every distribution keeps
 * it), and it is read here when no other place another build would look holds one. Null: none
 * exists anywhere; undefined: git is asked (another git, an exec path outside /usr, or a file
 * where another build would look).
 */
export function systemFile(env: NodeJS.ProcessEnv, name: string): string | null | undefined {
  const there = systemFileCandidates(env, name).filter(fileExists);
  if (there.length === 0) return null;
  const want = join('/etc', name);
  if (there.length !== 1 || there[0] !== want || gitPrefix(env) !== '/usr') return undefined;
  // Run as `git repack-ts`, git has put its exec path in the environment (and first on PATH):
  // the distribution's own, /usr/lib/git-core or /usr/libexec/git-core, is the same build.
  if (env.GIT_EXEC_PATH && execDirPrefix(realOrSelf(env.GIT_EXEC_PATH)) !== '/usr')
    return undefined;
  return want;
}

/**
 * <prefix> of the git on PATH, links resolved: <prefix>/bin/git, or <prefix>/lib/git-core/git
 * (<prefix>/libexec/git-core/git), the copy in git's exec path that git puts first on PATH for
 * the commands it runs.
 */
function gitPrefix(env: NodeJS.ProcessEnv): string | undefined {
  for (const d of (env.PATH ?? '').split(delimiter)) {
    if (d === '') continue;
    const g = join(d, 'git');
    if (!fileExists(g)) continue;
    const dir = dirname(realOrSelf(g));
    return execDirPrefix(dir) ?? dirname(dir);
  }
  return undefined;
}

/** <prefix> when `dir` is <prefix>/lib/git-core or <prefix>/libexec/git-core, else undefined. */
function execDirPrefix(dir: string): string | undefined {
  const m = /^(.*)\/(?:lib|libexec)\/git-core\/?$/.exec(dir);
  return m ? m[1] || '/' : undefined;
}

function realOrSelf(p: string): string {
  try {
    return realpathSync(p);
  } catch {
    return p;
  }
}

/**
 * Places git reads a system-wide file (`gitconfig`, `gitattributes`) from, `$(sysconfdir)/<name>`:
 * /etc for a /usr install, else `<prefix>/etc`, the prefix taken from where `git` is on PATH.
 * git 2.39 has no way to print these paths; they are only consulted where git cannot be asked.
 */
export function systemFileCandidates(env: NodeJS.ProcessEnv, name: string): string[] {
  const out = new Set<string>([join('/etc', name), join('/usr/local/etc', name)]);
  for (const d of (env.PATH ?? '').split(delimiter)) {
    if (d === '') continue;
    const g = join(d, 'git');
    if (!fileExists(g)) continue;
    try {
      out.add(join(dirname(dirname(realpathSync(g))), 'etc', name));
    } catch {
      // unreadable link: the fixed candidates still apply
    }
    break;
  }
  if (env.GIT_EXEC_PATH) out.add(join(dirname(dirname(env.GIT_EXEC_PATH)), 'etc', name));
  return [...out];
}
