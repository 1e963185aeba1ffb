/**
 * Running real git, deterministically. Git is the oracle of this project.
 *
 * Every git invocation made by the tests goes through `git()` / `gitOk()`,
 * which run the `git` binary directly (spawnSync, never a shell) with
 * PINNED_ENV: no system/global config, fixed identity and dates, C locale,
 * UTC, and none of the GIT_* variables of the calling environment (a test
 * run started from inside a git hook or `git rebase --exec` would otherwise
 * operate on the wrong repository).
 */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

/** A HOME for git that contains nothing (fixed path, so the env is stable). */
export const PINNED_HOME: string = path.join(
  fs.realpathSync(os.tmpdir()),
  `git-repack-ts-home-${process.getuid?.() ?? 0}`,
);
fs.mkdirSync(PINNED_HOME, { recursive: true });

/** Unix time of tick 0 of the pinned clock (2023-11-14T22:13:20Z). */
export const PINNED_EPOCH = 1_700_000_000;

/** Seconds between two ticks of the pinned clock. */
export const TICK_SECONDS = 60;

/** Git date (internal format) of tick `n` of the pinned clock. */
export function pinnedDate(tick: number): string {
  return `@${PINNED_EPOCH + tick * TICK_SECONDS} +0000`;
}

/** Author and committer (and tagger) dates for tick `n`. */
export function dateEnv(tick: number): Record<string, string> {
  const d = pinnedDate(tick);
  return { GIT_AUTHOR_DATE: d, GIT_COMMITTER_DATE: d };
}

/**
 * A counter-based clock: each `next()` returns the date env of the next tick,
 * so consecutive commits get strictly increasing, reproducible dates.
 */
export class PinnedClock {
  constructor(public tick = 0) {}
  /** Env of the current tick (does not advance). */
  env(): Record<string, string> {
    return dateEnv(this.tick);
  }
  /** Advance one tick and return its env. */
  next(): Record<string, string> {
    this.tick += 1;
    return dateEnv(this.tick);
  }
}

/** Inherited variables that must never reach git. */
function isStrippedVar(name: string): boolean {
  if (name === 'GIT_EXEC_PATH') return false; // where git's own helpers live: keep
  if (name.startsWith('GIT_')) return true; // GIT_DIR, GIT_WORK_TREE, GIT_INDEX_FILE, GIT_OBJECT_DIRECTORY,
  // GIT_ALTERNATE_OBJECT_DIRECTORIES, GIT_CONFIG_PARAMETERS, GIT_CONFIG_COUNT/KEY_n/VALUE_n,
  // GIT_TRACE*, GIT_DEFAULT_HASH, GIT_NAMESPACE, GIT_CEILING_DIRECTORIES, ...
  if (name.startsWith('LC_') || name === 'LANG' || name === 'LANGUAGE') return true;
  if (name === 'XDG_CONFIG_HOME' || name === 'HOME' || name === 'TZ') return true;
  if (name === 'EDITOR' || name === 'VISUAL' || name === 'PAGER' || name === 'LESS') return true;
  if (name === 'EMAIL') return true; // git falls back to $EMAIL for identities
  return false;
}

function buildPinnedEnv(): Readonly<Record<string, string>> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (v !== undefined && !isStrippedVar(k)) env[k] = v;
  }
  Object.assign(env, {
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_CONFIG_SYSTEM: '/dev/null',
    GIT_CONFIG_GLOBAL: '/dev/null',
    GIT_ATTR_NOSYSTEM: '1',
    HOME: PINNED_HOME,
    XDG_CONFIG_HOME: path.join(PINNED_HOME, '.config'),
    GIT_AUTHOR_NAME: 'Fixture Author',
    GIT_AUTHOR_EMAIL: 'author@example.com',
    GIT_COMMITTER_NAME: 'Fixture Committer',
    GIT_COMMITTER_EMAIL: 'committer@example.com',
    ...dateEnv(0),
    TZ: 'UTC',
    LANG: 'C',
    LC_ALL: 'C',
    GIT_TERMINAL_PROMPT: '0',
    GIT_EDITOR: 'true',
    GIT_PAGER: 'cat',
    GIT_MERGE_AUTOEDIT: 'no',
  });
  return Object.freeze(env);
}

/** The environment every git invocation of the tests runs with. */
export const PINNED_ENV: Readonly<Record<string, string>> = buildPinnedEnv();

export interface GitOptions {
  /** Working directory (default: process.cwd()). */
  cwd?: string;
  /** Data written to git's stdin (stdin is closed immediately otherwise). */
  input?: string | Buffer;
  /** Overrides merged over PINNED_ENV; a value of `undefined` removes the variable. */
  env?: Record<string, string | undefined>;
}

export interface GitResult {
  /** Exit status; -1 if git was killed by a signal. */
  status: number;
  stdout: Buffer;
  stderr: string;
  signal: NodeJS.Signals | null;
}

/** PINNED_ENV merged with per-call overrides. */
export function gitEnv(overrides?: Record<string, string | undefined>): Record<string, string> {
  const env: Record<string, string> = { ...PINNED_ENV };
  if (overrides) {
    for (const [k, v] of Object.entries(overrides)) {
      if (v === undefined) delete env[k];
      else env[k] = v;
    }
  }
  return env;
}

/** Run git (no shell). Never throws for a non-zero exit; throws if git cannot be started. */
export function git(args: string[], opts: GitOptions = {}): GitResult {
  const r = spawnSync('git', args, {
    cwd: opts.cwd,
    input: opts.input,
    env: gitEnv(opts.env),
    maxBuffer: 1 << 30,
    stdio: ['pipe', 'pipe', 'pipe'],
    windowsHide: true,
  });
  if (r.error) throw new Error(`cannot run git ${args.join(' ')}: ${r.error.message}`);
  return {
    status: r.status ?? -1,
    stdout: r.stdout,
    stderr: r.stderr.toString('utf8'),
    signal: r.signal,
  };
}

function describe(args: string[], opts: GitOptions, r: GitResult): string {
  return (
    `git ${args.join(' ')} failed (status ${r.status}${r.signal ? `, signal ${r.signal}` : ''})` +
    `${opts.cwd ? ` in ${opts.cwd}` : ''}\n--- stderr ---\n${r.stderr}` +
    (r.stdout.length ? `--- stdout ---\n${r.stdout.toString('utf8').slice(0, 4000)}` : '')
  );
}

/** Run git, throw (with stderr) unless it exits 0; returns stdout as a string. */
export function gitOk(args: string[], opts: GitOptions = {}): string {
  return gitOkBuffer(args, opts).toString('utf8');
}

/** Like gitOk but returns stdout as bytes (for cat-file and friends). */
export function gitOkBuffer(args: string[], opts: GitOptions = {}): Buffer {
  const r = git(args, opts);
  if (r.status !== 0) throw new Error(describe(args, opts, r));
  return r.stdout;
}

/** Non-empty lines of a git output. */
export function lines(out: string): string[] {
  return out.split('\n').filter((l) => l.length > 0);
}

/**
 * The object-set oracle: every object the repository can read locally (loose,
 * packed and through alternates), one "<oid> <type> <size>" line each,
 * deduplicated and sorted. Missing promisor objects are not listed.
 */
export function objectSet(repoDir: string): string[] {
  const out = gitOk(
    ['cat-file', '--batch-all-objects', '--batch-check=%(objectname) %(objecttype) %(objectsize)'],
    { cwd: repoDir },
  );
  return [...new Set(lines(out))].sort();
}

/**
 * `git fsck --strict --no-dangling` (full: object content, connectivity and
 * pack checksums). In a partial clone, objects missing behind a promisor pack
 * are accepted by git itself, so this works there too.
 */
export function fsckStrict(repoDir: string): { status: number; output: string } {
  const r = git(['fsck', '--strict', '--no-dangling', '--no-progress'], { cwd: repoDir });
  return { status: r.status, output: r.stdout.toString('utf8') + r.stderr };
}

/** Absolute path of the repository's git dir (per-worktree). */
export function gitDirOf(repoDir: string): string {
  return gitOk(['rev-parse', '--absolute-git-dir'], { cwd: repoDir }).trim();
}

/** Absolute path of the common git dir (the main .git of a linked worktree). */
export function commonDirOf(repoDir: string): string {
  return path.resolve(repoDir, gitOk(['rev-parse', '--git-common-dir'], { cwd: repoDir }).trim());
}

/** Absolute path of the repository's objects/pack directory. */
export function packDirOf(repoDir: string): string {
  return path.resolve(
    repoDir,
    gitOk(['rev-parse', '--git-path', 'objects/pack'], { cwd: repoDir }).trim(),
  );
}

/** Absolute paths of the .pack files of a repository, sorted. */
export function listPacks(repoDir: string): string[] {
  const dir = packDirOf(repoDir);
  if (!fs.existsSync(dir)) return [];
  return fs
    .readdirSync(dir)
    .filter((f) => f.startsWith('pack-') && f.endsWith('.pack'))
    .sort()
    .map((f) => path.join(dir, f));
}

export interface CountObjects {
  /** Loose objects. */
  count: number;
  size: number;
  inPack: number;
  packs: number;
  sizePack: number;
  prunePackable: number;
  garbage: number;
  sizeGarbage: number;
}

/** `git count-objects -v` (count = loose objects; alternates are not counted). */
export function countObjects(repoDir: string): CountObjects {
  const raw = new Map<string, number>();
  for (const l of lines(gitOk(['count-objects', '-v'], { cwd: repoDir }))) {
    const m = /^([\w-]+): (\d+)$/.exec(l);
    if (m) raw.set(m[1]!, Number(m[2]));
  }
  const get = (k: string): number => raw.get(k) ?? 0;
  return {
    count: get('count'),
    size: get('size'),
    inPack: get('in-pack'),
    packs: get('packs'),
    sizePack: get('size-pack'),
    prunePackable: get('prune-packable'),
    garbage: get('garbage'),
    sizeGarbage: get('size-garbage'),
  };
}

export interface VerifyPackEntry {
  oid: string;
  /** commit/tree/blob/tag: the type of the object (deltas show their final type). */
  type: string;
  size: number;
  sizeInPack: number;
  offset: number;
  /** Delta chain depth (0 for a non-delta entry). */
  depth: number;
  /** Base object id for delta entries. */
  base?: string;
}

export interface VerifyPackResult {
  entries: VerifyPackEntry[];
  /** chain length -> number of objects, from the "chain length = N: K objects" lines. */
  chains: Map<number, number>;
  nonDelta: number;
  maxChain: number;
}

/** Parse `git verify-pack -v <pack>` (run inside `repoDir`, so sha256 repos work). */
export function verifyPack(repoDir: string, packPath: string): VerifyPackResult {
  const out = gitOk(['verify-pack', '-v', packPath], { cwd: repoDir });
  const entries: VerifyPackEntry[] = [];
  const chains = new Map<number, number>();
  let nonDelta = 0;
  for (const l of lines(out)) {
    let m = /^([0-9a-f]{40,64}) (\w+) +(\d+) (\d+) (\d+)(?: (\d+) ([0-9a-f]{40,64}))?\s*$/.exec(l);
    if (m) {
      const e: VerifyPackEntry = {
        oid: m[1]!,
        type: m[2]!,
        size: Number(m[3]),
        sizeInPack: Number(m[4]),
        offset: Number(m[5]),
        depth: m[6] ? Number(m[6]) : 0,
      };
      if (m[7]) e.base = m[7];
      entries.push(e);
      continue;
    }
    m = /^chain length = (\d+): (\d+) objects?$/.exec(l);
    if (m) {
      chains.set(Number(m[1]), Number(m[2]));
      continue;
    }
    m = /^non delta: (\d+) objects?$/.exec(l);
    if (m) nonDelta = Number(m[1]);
  }
  const maxChain = Math.max(0, ...chains.keys());
  return { entries, chains, nonDelta, maxChain };
}
