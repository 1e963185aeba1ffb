import { spawnSync } from 'node:child_process';
import { closeSync, openSync, readFileSync, readSync } from 'node:fs';
import { GitError, systemError } from '../errors.js';

/**
 * The environment stock git is timed under: none of the caller's GIT_* variables (GIT_DIR and
 * friends would point git elsewhere), no system or global configuration (so two machines, or two
 * users, time the same thing), C locale, no pager.
 */
export function benchGitEnv(base: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(base)) {
    if (v === undefined) continue;
    if (k.startsWith('GIT_') && k !== 'GIT_EXEC_PATH') continue;
    env[k] = v;
  }
  env.GIT_CONFIG_NOSYSTEM = '1';
  env.GIT_CONFIG_GLOBAL = '/dev/null';
  env.GIT_TERMINAL_PROMPT = '0';
  env.GIT_PAGER = 'cat';
  env.LC_ALL = 'C';
  return env;
}

/** `git --version`, as the header of every table shows it. */
export function gitVersion(env: NodeJS.ProcessEnv): string {
  const r = spawnSync('git', ['--version'], { env, encoding: 'utf8' });
  if (r.error) throw systemError('io', 'cannot run git --version', r.error);
  if (r.status !== 0) throw new GitError('io', `cannot run git --version: ${r.stderr}`);
  return r.stdout.trim().replace(/^git version /, '');
}

let clockTicks: number | undefined;

/** Clock ticks per second of /proc's times (`getconf CLK_TCK`, 100 on Linux nearly everywhere). */
function ticksPerSecond(): number {
  if (clockTicks === undefined) {
    const r = spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' });
    const n = Number(r.stdout?.trim());
    clockTicks = r.status === 0 && Number.isInteger(n) && n > 0 ? n : 100;
  }
  return clockTicks;
}

/**
 * CPU seconds (user + system) used so far by this process's waited-for children: fields
 * cutime and cstime of /proc/self/stat. Undefined where there is no /proc (not Linux).
 */
export function childrenCpuSeconds(): number | undefined {
  let text: string;
  try {
    text = readFileSync('/proc/self/stat', 'latin1');
  } catch {
    return undefined;
  }
  const f = text.slice(text.lastIndexOf(')') + 2).split(' ');
  // f[0] is field 3 (state); cutime and cstime are fields 16 and 17.
  const cu = Number(f[13]);
  const cs = Number(f[14]);
  if (!Number.isFinite(cu) || !Number.isFinite(cs)) return undefined;
  return (cu + cs) / ticksPerSecond();
}

export interface RunTime {
  /** Wall-clock seconds from spawn to exit. */
  wall: number;
  /** git's user + system CPU seconds (10 ms resolution), or NaN where it cannot be read. */
  cpu: number;
}

/**
 * Runs git `repeat` times back to back and returns the wall-clock and CPU time of one
 * invocation (the mean). No shell; stdout goes to /dev/null (`rev-list --objects` prints tens
 * of MB that nobody should buffer), stderr is kept for the error message. `before` runs ahead of
 * each invocation, outside the timed span (the commit-graph write removes the previous graph). A
 * non-zero exit is an error, never a timing.
 */
export function timeGit(
  gitDir: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  repeat = 1,
  before?: () => void,
): RunTime {
  const argv = [`--git-dir=${gitDir}`, ...args];
  let wall = 0;
  let cpu = 0;
  for (let i = 0; i < repeat; i++) {
    before?.();
    const c0 = childrenCpuSeconds();
    const t0 = performance.now();
    const r = spawnSync('git', argv, {
      env,
      cwd: gitDir,
      stdio: ['ignore', 'ignore', 'pipe'],
      maxBuffer: 1 << 24,
    });
    const t1 = performance.now();
    const c1 = childrenCpuSeconds();
    if (r.error) throw systemError('io', 'cannot run git', r.error);
    if (r.status !== 0) {
      throw new GitError(
        'io',
        `git ${args.join(' ')} failed in ${gitDir} (exit ${r.status ?? r.signal}): ${String(r.stderr ?? '').trim()}`,
      );
    }
    wall += (t1 - t0) / 1000;
    cpu += c0 === undefined || c1 === undefined ? NaN : c1 - c0;
  }
  return { wall: wall / repeat, cpu: cpu / repeat };
}

/**
 * How many back-to-back invocations make one timed run: enough for `minSeconds` (CPU time is
 * read in 10 ms ticks, so a 20 ms command timed alone would be ±50 %), at most 100.
 */
export function repeatFor(oneRunSeconds: number, minSeconds: number): number {
  if (!(oneRunSeconds > 0)) return 1;
  return Math.max(1, Math.min(100, Math.ceil(minSeconds / oneRunSeconds)));
}

/** Runs git (setup, untimed) and fails loudly; `input` goes to its stdin. */
export function runGit(
  gitDir: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  input?: string,
): string {
  const r = spawnSync('git', [`--git-dir=${gitDir}`, ...args], {
    env,
    cwd: gitDir,
    encoding: 'utf8',
    maxBuffer: 1 << 28,
    input,
  });
  if (r.error) throw systemError('io', 'cannot run git', r.error);
  if (r.status !== 0)
    throw new GitError('io', `git ${args.join(' ')} failed in ${gitDir}: ${r.stderr.trim()}`);
  return r.stdout;
}

export function median(xs: number[]): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

/** (max − min) / median: how much the runs of one cell disagree. */
export function spread(xs: number[]): number {
  if (xs.length < 2) return 0;
  const m = median(xs);
  return m > 0 ? (Math.max(...xs) - Math.min(...xs)) / m : 0;
}

/** Reads files through once so that a warm run finds them in the page cache. */
export function warmFiles(files: string[]): void {
  const buf = Buffer.allocUnsafe(8 << 20);
  for (const f of files) {
    let fd: number;
    try {
      fd = openSync(f, 'r');
    } catch {
      continue;
    }
    try {
      while (readSync(fd, buf, 0, buf.length, null) > 0) {
        // reading is the point
      }
    } finally {
      closeSync(fd);
    }
  }
}

/** This process's user + system CPU seconds (the reader experiments time themselves with it). */
export function selfCpuSeconds(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
}
