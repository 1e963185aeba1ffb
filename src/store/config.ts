import { spawnSync } from 'node:child_process';
import { GitError } from '../errors.js';

/**
 * Git configuration as git itself resolves it (system, global, repository, worktree,
 * `include`/`includeIf`, `GIT_CONFIG_*` and `git -c`): we ask `git config --list -z`, so
 * every precedence rule is git's own. Keys are `section.name` or `section.subsection.name`
 * with section and name lower-cased, as git prints them; the last value wins.
 */
export class GitConfig {
  constructor(private readonly entries: Map<string, (string | null)[]>) {}

  static empty(): GitConfig {
    return new GitConfig(new Map());
  }

  /** Reads the configuration seen from `gitDir` (or, without one, the global and system files only). */
  static load(gitDir: string | undefined, env: NodeJS.ProcessEnv): GitConfig {
    const out = GitConfig.list(gitDir, env, []);
    return out === undefined ? GitConfig.empty() : new GitConfig(parseConfigList(out));
  }

  /**
   * The configuration seen from `gitDir`, and the part of it git calls protected (system, global
   * and command-line scopes: what `git config --list` outside any repository gives), from one
   * `git config --list --show-scope`: a bare repository found from the cwd needs both.
   */
  static loadScoped(gitDir: string, env: NodeJS.ProcessEnv): { all: GitConfig; protected: GitConfig } {
    const out = GitConfig.list(gitDir, env, ['--show-scope']);
    if (out === undefined) return { all: GitConfig.empty(), protected: GitConfig.empty() };
    const all = new Map<string, (string | null)[]>();
    const prot = new Map<string, (string | null)[]>();
    let scope = '';
    forEachRecord(out, (i, rec) => {
      if (i % 2 === 0) scope = rec;
      else {
        addRecord(all, rec);
        if (PROTECTED_SCOPES.has(scope)) addRecord(prot, rec);
      }
    });
    return { all: new GitConfig(all), protected: new GitConfig(prot) };
  }

  /** `git config --list -z` (and `extra`) from `gitDir`; undefined when there is no configuration at all. */
  private static list(gitDir: string | undefined, env: NodeJS.ProcessEnv, extra: string[]): Buffer | undefined {
    const childEnv: NodeJS.ProcessEnv = { ...env };
    delete childEnv.GIT_WORK_TREE;
    const args = ['config', '--list', '-z', ...extra];
    if (gitDir !== undefined) childEnv.GIT_DIR = gitDir;
    else {
      delete childEnv.GIT_DIR;
      // Outside a repository `git config --list` would still look for one from the cwd.
      childEnv.GIT_CEILING_DIRECTORIES = '/';
    }
    const r = spawnSync('git', args, { env: childEnv, encoding: 'buffer', cwd: gitDir ?? '/', maxBuffer: 1 << 28 });
    if (r.error) throw new GitError('bad-config', `cannot run git config: ${r.error.message}`);
    if (r.status !== 0) {
      const msg = r.stderr.toString().trim();
      // No configuration at all (e.g. a snapshot without a config file) is an empty one.
      if (r.stdout.length === 0 && msg === '') return undefined;
      throw new GitError('bad-config', msg.replace(/^fatal: /, '') || 'git config failed');
    }
    return r.stdout;
  }

  /** The last value; a key given without `= value` reads as the empty string (boolean true). */
  get(key: string): string | undefined {
    const v = this.entries.get(normalizeKey(key));
    return v === undefined ? undefined : (v[v.length - 1] ?? '');
  }

  getAll(key: string): string[] {
    return (this.entries.get(normalizeKey(key)) ?? []).map((v) => v ?? '');
  }

  keys(): string[] {
    return [...this.entries.keys()];
  }

  has(key: string): boolean {
    return this.entries.has(normalizeKey(key));
  }

  /** git's `git_config_int`: decimal with optional k/m/g suffix; a bad value is a fatal config error. */
  getInt(key: string): number | undefined {
    const v = this.get(key);
    if (v === undefined) return undefined;
    const n = parseConfigInt(v);
    if (n === undefined) throw new GitError('bad-config', `bad numeric config value '${v}' for '${key}'`);
    return n;
  }

  getBool(key: string): boolean | undefined {
    const all = this.entries.get(normalizeKey(key));
    if (all === undefined) return undefined;
    const v = all[all.length - 1] ?? null;
    // A bare `key` (no `=`) is true, as in git.
    const b = v === null ? true : parseConfigBool(v);
    if (b === undefined) throw new GitError('bad-config', `bad boolean config value '${v}' for '${key}'`);
    return b;
  }
}

function normalizeKey(key: string): string {
  const first = key.indexOf('.');
  const last = key.lastIndexOf('.');
  if (first < 0) return key.toLowerCase();
  return key.slice(0, first).toLowerCase() + key.slice(first, last) + key.slice(last).toLowerCase();
}

/** git's protected configuration: `git config --show-scope` names these scopes. */
const PROTECTED_SCOPES = new Set(['system', 'global', 'command']);

/** Each NUL-terminated record of `git config -z` output, numbered from 0. */
function forEachRecord(out: Buffer, each: (i: number, rec: string) => void): void {
  let start = 0;
  for (let i = 0; start < out.length; i++) {
    let end = out.indexOf(0, start);
    if (end < 0) end = out.length;
    each(i, out.toString('utf8', start, end));
    start = end + 1;
  }
}

/** One `key\nvalue` (or bare `key`) record into `map`. */
function addRecord(map: Map<string, (string | null)[]>, rec: string): void {
  const nl = rec.indexOf('\n');
  const key = nl < 0 ? rec : rec.slice(0, nl);
  const value = nl < 0 ? null : rec.slice(nl + 1);
  const list = map.get(key);
  if (list) list.push(value);
  else map.set(key, [value]);
}

/** `git config -z --list` output: `key\nvalue\0`, or `key\0` for a key without a value. */
export function parseConfigList(out: Buffer): Map<string, (string | null)[]> {
  const map = new Map<string, (string | null)[]>();
  forEachRecord(out, (_, rec) => addRecord(map, rec));
  return map;
}

export function parseConfigInt(v: string): number | undefined {
  const m = /^\s*([-+]?\d+)\s*([kKmMgG]?)\s*$/.exec(v);
  if (!m) return undefined;
  const mul = { '': 1, k: 1024, m: 1024 ** 2, g: 1024 ** 3 }[m[2]!.toLowerCase() as '' | 'k' | 'm' | 'g'];
  return Number(m[1]) * mul;
}

export function parseConfigBool(v: string): boolean | undefined {
  const s = v.toLowerCase();
  if (s === 'true' || s === 'yes' || s === 'on') return true;
  if (s === 'false' || s === 'no' || s === 'off' || s === '') return false;
  const n = parseConfigInt(v);
  return n === undefined ? undefined : n !== 0;
}
