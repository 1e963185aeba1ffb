/**
 * The reliability harness: runs the CLI with a fault plan (`GIT_REPACK_TS_FAULT`, see
 * src/store/files.ts and docs/reliability.md), kills it at random moments, stops it to let git
 * write into the repository meanwhile, and says what an interrupted run left behind.
 *
 * No shell anywhere: every process is spawned with an argument vector.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { fsckStrict, git, gitEnv, gitOk, objectSet } from './git.js';
import { BIN, type ToolResult } from './tool.js';

/**
 * The CLI under test: the project's bin, or the snapshot of the build the long script runs
 * against (`REPACK_TS_BIN`), so that a rebuild during an hour-long run changes nothing.
 */
export const CLI_BIN: string = process.env.REPACK_TS_BIN ?? BIN;

/** Long runs (`npm run reliability`) set this; the test suite runs the fast subset. */
export const LONG = process.env.REPACK_TS_RELIABILITY === 'long';

/** Scales a count for the long run. */
export function scaled(fast: number, long: number): number {
  return LONG ? long : fast;
}

/**
 * Figures for docs/reliability.md: each test adds what it tried and what held; the long script
 * sums them (one JSON object per line in `REPACK_TS_RELIABILITY_REPORT`).
 */
export function record(figure: string, tried: number, held: number, notes: string[] = []): void {
  const file = process.env.REPACK_TS_RELIABILITY_REPORT;
  if (!file) return;
  fs.appendFileSync(file, JSON.stringify({ figure, tried, held, notes }) + '\n');
}

export interface FaultRun extends ToolResult {
  /** Killed by SIGKILL (our own fault, or the harness's timer). */
  killed: boolean;
}

/** Runs the CLI to completion with a fault plan (or none). */
export function toolFault(
  args: string[],
  cwd: string,
  fault: string | undefined,
  env: Record<string, string | undefined> = {},
): FaultRun {
  const r = spawnSync(process.execPath, [CLI_BIN, ...args], {
    cwd,
    env: gitEnv({ ...env, GIT_REPACK_TS_FAULT: fault }),
    encoding: 'utf8',
    maxBuffer: 1 << 28,
    timeout: 120_000,
  });
  if (r.error && (r.error as NodeJS.ErrnoException).code !== 'ETIMEDOUT') throw r.error;
  return {
    status: r.status ?? -1,
    stdout: r.stdout,
    stderr: r.stderr,
    signal: r.signal,
    killed: r.signal === 'SIGKILL',
  };
}

export interface Point {
  point: string;
  detail: string;
}

/** Every fault point a clean run reaches, in order (the run happens: use a copy). */
export function tracePoints(
  args: string[],
  cwd: string,
  env: Record<string, string | undefined> = {},
): Point[] {
  const trace = path.join(fs.mkdtempSync(path.join(path.dirname(cwd), 'trace-')), 'points');
  fs.writeFileSync(trace, '');
  const r = toolFault(args, cwd, undefined, { ...env, GIT_REPACK_TS_FAULT_TRACE: trace });
  if (r.status !== 0) throw new Error(`traced run failed (${r.status}): ${r.stderr}`);
  const points = fs
    .readFileSync(trace, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => {
      const sp = l.indexOf(' ');
      return { point: l.slice(0, sp), detail: l.slice(sp + 1) };
    });
  fs.rmSync(path.dirname(trace), { recursive: true, force: true });
  return points;
}

/** Spawns the CLI in its own process group, so that a kill takes git's children with it. */
export function spawnTool(
  args: string[],
  cwd: string,
  env: Record<string, string | undefined> = {},
): { child: ChildProcess; done: Promise<FaultRun> } {
  const child = spawn(process.execPath, [CLI_BIN, ...args], {
    cwd,
    env: gitEnv(env),
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout!.setEncoding('utf8').on('data', (d: string) => (stdout += d));
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  const done = new Promise<FaultRun>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code, signal) =>
      resolve({ status: code ?? -1, stdout, stderr, signal, killed: signal === 'SIGKILL' }),
    );
  });
  return { child, done };
}

/** Kills the CLI's whole process group `delayMs` after it starts (a crash at a random moment). */
export async function killAfter(args: string[], cwd: string, delayMs: number): Promise<FaultRun> {
  const { child, done } = spawnTool(args, cwd);
  const timer = setTimeout(() => {
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {
      // already gone
    }
  }, delayMs);
  const r = await done;
  clearTimeout(timer);
  return r;
}

/** Process state letter from /proc (`T` when stopped), or undefined once it is gone. */
export function procState(pid: number): string | undefined {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
  } catch {
    return undefined;
  }
}

export interface StoppedRun {
  /** True when the run stopped at the point; false when it ended without reaching it. */
  stopped: boolean;
  /** The CLI's pid (for a test to signal it while stopped). */
  pid: number;
  resume(): void;
  /** Kills the run's process group (a test that gives up must not leave a stopped process). */
  kill(): void;
  done: Promise<FaultRun>;
}

/**
 * Starts the CLI with `<point>:<n>:stop` and waits until it has stopped itself there (SIGSTOP),
 * so that a test can run git against the repository at that exact moment, then `resume()`.
 */
export async function runUntil(
  args: string[],
  cwd: string,
  point: string,
  env: Record<string, string | undefined> = {},
): Promise<StoppedRun> {
  const { child, done } = spawnTool(args, cwd, { ...env, GIT_REPACK_TS_FAULT: `${point}:stop` });
  let ended = false;
  void done.then(() => (ended = true));
  const kill = (): void => {
    if (ended) return;
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {
      // gone already
    }
  };
  const deadline = Date.now() + 60_000;
  while (!ended && Date.now() < deadline) {
    if (procState(child.pid!) === 'T')
      return {
        stopped: true,
        pid: child.pid!,
        resume: () => process.kill(child.pid!, 'SIGCONT'),
        kill,
        done,
      };
    await new Promise((r) => setTimeout(r, 5));
  }
  kill();
  return { stopped: false, pid: child.pid!, resume: () => undefined, kill, done };
}

/** The repository's object directory (absolute). */
export function objectsDirOf(repo: string): string {
  return path.resolve(repo, gitOk(['rev-parse', '--git-path', 'objects'], { cwd: repo }).trim());
}

/**
 * What our runs may leave behind and a finished run must not: temporary files, journal, lock, the
 * lock's takeover markers (`maintenance.lock.<key>`), an index renamed aside by a removal.
 */
export function leftovers(repo: string): string[] {
  const objects = objectsDirOf(repo);
  const out: string[] = [];
  for (const dir of [objects, path.join(objects, 'pack')]) {
    for (const n of fs.existsSync(dir) ? fs.readdirSync(dir) : []) {
      if (
        /^tmp_.*rts/.test(n) ||
        n.startsWith('repack-ts.journal') ||
        n.startsWith('maintenance.lock') ||
        n.endsWith('.idx.removing')
      )
        out.push(path.relative(objects, path.join(dir, n)));
    }
  }
  // The journal's first home, in case an old build left one.
  const common = path.resolve(repo, gitOk(['rev-parse', '--git-common-dir'], { cwd: repo }).trim());
  for (const n of fs.readdirSync(common)) if (n.startsWith('repack-ts.journal')) out.push(n);
  return out.sort();
}

/**
 * The shape of objects/pack after a run, independent of pack names: for each pack the set of
 * its files' extensions (and `.keep`), the multi-pack-index and its bitmaps, stray files, and
 * how many loose objects remain.
 */
export function packShape(repo: string): string[] {
  const objects = objectsDirOf(repo);
  const dir = path.join(objects, 'pack');
  const names = fs.existsSync(dir) ? fs.readdirSync(dir) : [];
  const out: string[] = [];
  const bases = new Map<string, string[]>();
  for (const n of names) {
    const m = /^(pack-[0-9a-f]+)\.(\w+)$/.exec(n);
    if (m) bases.set(m[1]!, [...(bases.get(m[1]!) ?? []), m[2]!]);
    else if (n === 'multi-pack-index') out.push('midx');
    else if (/^multi-pack-index-[0-9a-f]+\.(bitmap|rev)$/.test(n))
      out.push('midx.' + n.split('.').pop());
    else out.push('stray ' + n);
  }
  for (const exts of bases.values()) out.push('pack ' + exts.sort().join(','));
  let loose = 0;
  for (const d of fs.readdirSync(objects))
    if (/^[0-9a-f]{2}$/.test(d)) loose += fs.readdirSync(path.join(objects, d)).length;
  out.push(`loose ${loose}`);
  return out.sort();
}

/** Problems with the repository's objects: git fsck --strict, and every object of `before` still there. */
export function integrityProblems(repo: string, before: string[]): string[] {
  const problems: string[] = [];
  const f = fsckStrict(repo);
  if (f.status !== 0)
    problems.push(`git fsck --strict failed (${f.status}): ${f.output.slice(0, 2000)}`);
  let after: string[] = [];
  try {
    after = objectSet(repo);
  } catch (e) {
    problems.push(`cat-file failed: ${(e as Error).message.slice(0, 2000)}`);
  }
  if (after.length > 0 || before.length === 0) {
    const have = new Set(after);
    const lost = before.filter((o) => !have.has(o));
    if (lost.length > 0)
      problems.push(`${lost.length} objects lost, e.g. ${lost.slice(0, 3).join('; ')}`);
  }
  return problems;
}

/** A content hash of every file under `dir` (relative path, mode, bytes): "untouched" means equal. */
export function treeDigest(
  dir: string,
  skip: (rel: string) => boolean = () => false,
): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (d: string): void => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      const rel = path.relative(dir, p);
      if (skip(rel)) continue;
      const st = fs.lstatSync(p);
      if (e.isDirectory()) {
        out.set(rel + '/', `dir ${st.mode.toString(8)}`);
        walk(p);
      } else if (e.isSymbolicLink()) out.set(rel, `link ${fs.readlinkSync(p)}`);
      else out.set(rel, `${st.mode.toString(8)} ${st.size} ${hashFile(p)}`);
    }
  };
  walk(dir);
  return out;
}

function hashFile(p: string): string {
  return createHash('sha1').update(fs.readFileSync(p)).digest('hex');
}

/** Differences between two digests, as readable lines. */
export function digestDiff(a: Map<string, string>, b: Map<string, string>): string[] {
  const out: string[] = [];
  for (const [k, v] of a) if (b.get(k) !== v) out.push(`${k}: ${v} -> ${b.get(k) ?? 'gone'}`);
  for (const [k, v] of b) if (!a.has(k)) out.push(`${k}: new ${v}`);
  return out;
}

/** Can this process mount, change attributes and switch users (root with the capabilities)? */
export function isRoot(): boolean {
  return typeof process.getuid === 'function' && process.getuid() === 0;
}

/** Runs git in a repository and says whether it succeeded. */
export function gitStatus(
  args: string[],
  cwd: string,
  env?: Record<string, string | undefined>,
): number {
  return git(args, env ? { cwd, env } : { cwd }).status;
}

/** Where scratch copies go: /dev/shm when it is a writable tmpfs (fsync is free), else the temp dir. */
const SCRATCH_ROOT: string = (() => {
  try {
    const d = fs.mkdtempSync('/dev/shm/git-repack-ts-rel-');
    fs.rmSync(d, { recursive: true });
    return '/dev/shm';
  } catch {
    return fs.realpathSync(os.tmpdir());
  }
})();

/**
 * A scratch copy of a pristine fixture without a linked worktree (kill trials make hundreds:
 * on tmpfs the fsyncs of each run cost nothing, and a process kill does not depend on them).
 * Returns the repository path; `dropScratch` removes it.
 */
export function scratchCopy(pristineRepo: string, name: string): string {
  const top = fs.mkdtempSync(path.join(SCRATCH_ROOT, `git-repack-ts-rel-${name}-`));
  const dest = path.join(top, 'fx');
  fs.cpSync(path.dirname(pristineRepo), dest, {
    recursive: true,
    preserveTimestamps: true,
    verbatimSymlinks: true,
  });
  return path.join(dest, path.basename(pristineRepo));
}

/** A scratch copy of only the git directory of a pristine fixture (commands run inside it). */
export function scratchGitDir(pristineRepo: string, gitDir: string, name: string): string {
  const top = fs.mkdtempSync(path.join(SCRATCH_ROOT, `git-repack-ts-rel-${name}-`));
  const dest = path.join(top, 'git');
  fs.cpSync(path.resolve(pristineRepo, gitDir), dest, {
    recursive: true,
    preserveTimestamps: true,
    verbatimSymlinks: true,
  });
  return dest;
}

export function dropScratch(repo: string): void {
  const top = [path.dirname(repo), path.dirname(path.dirname(repo))].find((d) =>
    path.basename(d).startsWith('git-repack-ts-rel-'),
  );
  if (top === undefined) throw new Error(`${repo} is not a scratch copy`);
  fs.rmSync(top, { recursive: true, force: true });
}
