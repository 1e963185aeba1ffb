/**
 * The timed part of the bench: calibration of each column, then the interleaved runs of a phase
 * (every command over every scenario's copy, warm and cold), and the cells made of them.
 */
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { GitError } from '../errors.js';
import { evict } from '../bench/cold.js';
import { median, repeatFor, spread, timeGit, warmFiles, type RunTime } from '../bench/timing.js';
import type { BenchCommand, BenchResult, Cell, SkippedCommand } from '../bench/types.js';
import { commandLine, gitArgs } from '../bench/commands.js';
import { removeCommitGraph } from '../bench/bloom.js';
import type { Repository } from '../store/repo.js';
import type { BenchOptions } from './bench.js';

/** A warm run shorter than this is repeated back to back and timed as one (then divided). */
export const MIN_RUN_SECONDS = 0.5;

/** Every file git reads in a walk of the copy (objects/ and packed-refs): what is warmed and evicted. */
export function filesToWarmAndEvict(gitDir: string): string[] {
  const out: string[] = [];
  const walk = (d: string): void => {
    let names: string[];
    try {
      names = readdirSync(d);
    } catch {
      return;
    }
    for (const n of names) {
      const p = join(d, n);
      const st = statSync(p);
      if (st.isDirectory()) walk(p);
      else if (st.isFile()) out.push(p);
    }
  };
  walk(join(gitDir, 'objects'));
  out.push(join(gitDir, 'packed-refs'));
  return out.filter((f) => {
    try {
      return statSync(f).isFile();
    } catch {
      return false;
    }
  });
}

/**
 * A cell: the median of the runs and the median of the same-round ratios to none. A round in
 * which none measured 0 (shorter than a CPU tick) or nothing has no ratio: the change is then
 * null ("n/a"), never Infinity or NaN.
 */
export function cellOf(times: RunTime[], none: RunTime[] | undefined, clock: 'wall' | 'cpu'): Cell {
  const runs = times.map((t) => t[clock]);
  const bases = none?.map((t) => t[clock]) ?? [];
  const measurable =
    bases.length === runs.length &&
    bases.every((b) => Number.isFinite(b) && b > 0) &&
    runs.every((t) => Number.isFinite(t));
  const vsNone =
    none === undefined ? 0 : measurable ? median(runs.map((t, k) => t / bases[k]!)) - 1 : null;
  const finite = (x: number): number | null => (Number.isFinite(x) ? x : null);
  return {
    median: median(runs),
    runs,
    wall: times.map((t) => t.wall),
    cpu: times.map((t) => finite(t.cpu)),
    vsNone,
    spread: spread(runs),
  };
}

/** A scenario's private copy: where it is, the files a walk reads, and the copy as a repository. */
export interface ScenarioCopy {
  gitDir: string;
  files: string[];
  repo: Repository;
}

/** Progress over every phase: a column set aside at calibration takes its runs off the total. */
export interface Counter {
  done: number;
  total: number;
}

/** Before each invocation of the commit-graph write: no graph, so that nothing is reused. */
function beforeRun(c: BenchCommand, gitDir: string): (() => void) | undefined {
  return c.state === 'write' ? () => removeCommitGraph(gitDir) : undefined;
}

/**
 * One untimed run per column on the first copy (also a warm-up) decides how many invocations
 * make a timed run. A user column that git cannot run in a partial clone (an object it needs is
 * missing) is set aside with git's message instead of stopping the bench; anything else fails.
 */
function calibrate(
  commands: BenchCommand[],
  copy: ScenarioCopy,
  env: NodeJS.ProcessEnv,
  opts: BenchOptions,
  promisor: boolean,
): { kept: BenchCommand[]; repeats: number[]; skipped: SkippedCommand[] } {
  const kept: BenchCommand[] = [];
  const repeats: number[] = [];
  const skipped: SkippedCommand[] = [];
  for (const c of commands) {
    let once: RunTime;
    try {
      once = timeGit(copy.gitDir, gitArgs(c), env, 1, beforeRun(c, copy.gitDir));
    } catch (e) {
      if (!(promisor && c.group === 'user' && e instanceof GitError)) throw e;
      skipped.push({
        id: c.id,
        label: c.label,
        line: commandLine(c),
        reason: `git failed in this partial clone (missing objects are not fetched): ${e.message.split('\n')[0]}`,
      });
      continue;
    }
    kept.push(c);
    repeats.push(
      repeatFor(
        opts.clock === 'cpu' && once.cpu > 0.05 ? once.cpu : once.wall,
        opts.minRunSeconds ?? MIN_RUN_SECONDS,
      ),
    );
  }
  return { kept, repeats, skipped };
}

/**
 * Timing of one phase (columns that share a commit-graph state of the copies), interleaved: for
 * each round, for each command, every scenario in turn. Short commands are batched so that a
 * run outlasts the clock's resolution. Fills each scenario's warm (and cold) cells.
 */
export function timePhase(
  result: BenchResult,
  phase: BenchCommand[],
  copies: ScenarioCopy[],
  coldOn: boolean,
  env: NodeJS.ProcessEnv,
  opts: BenchOptions,
  counter: Counter,
): void {
  if (phase.length === 0) return;
  const nS = copies.length;
  // The files as they are now: the setup between phases writes another commit-graph.
  for (const c of copies) c.files = filesToWarmAndEvict(c.gitDir);
  const perCommand = opts.runs * nS * (coldOn ? 2 : 1);
  warmFiles(copies.flatMap((c) => c.files));
  const {
    kept: commands,
    repeats,
    skipped,
  } = calibrate(phase, copies[0]!, env, opts, result.promisor);
  for (const s of skipped) {
    result.skipped.push(s);
    result.commands = result.commands.filter((c) => c.id !== s.id);
    counter.total -= perCommand;
  }
  commands.forEach((c, ci) => (result.commands.find((x) => x.id === c.id)!.repeat = repeats[ci]!));
  const warmRuns = commands.map(() => copies.map(() => [] as RunTime[]));
  const coldRuns = commands.map(() => copies.map(() => [] as RunTime[]));
  const each = (f: (c: BenchCommand, ci: number, si: number) => void): void => {
    for (const [ci, c] of commands.entries()) {
      for (let si = 0; si < nS; si++) {
        opts.signal?.throwIfAborted();
        f(c, ci, si);
        opts.onProgress?.('timing', ++counter.done, counter.total);
      }
    }
  };
  for (let round = 0; round < opts.runs; round++) {
    if (coldOn) {
      each((c, ci, si) => {
        const ev = evict(copies[si]!.files);
        if (ev.failed.length > 0)
          throw new GitError(
            'io',
            `page-cache eviction stopped working (pages stayed resident in ${ev.failed[0]}); cold numbers would be warm ones`,
          );
        coldRuns[ci]![si]!.push(
          timeGit(copies[si]!.gitDir, gitArgs(c), env, 1, beforeRun(c, copies[si]!.gitDir)),
        );
      });
      warmFiles(copies.flatMap((c) => c.files));
    }
    each((c, ci, si) =>
      warmRuns[ci]![si]!.push(
        timeGit(copies[si]!.gitDir, gitArgs(c), env, repeats[ci], beforeRun(c, copies[si]!.gitDir)),
      ),
    );
  }
  for (const [ci, c] of commands.entries()) {
    for (let si = 0; si < nS; si++) {
      const sr = result.scenarios[si]!;
      sr.warm[c.id] = cellOf(
        warmRuns[ci]![si]!,
        si === 0 ? undefined : warmRuns[ci]![0]!,
        opts.clock,
      );
      // Cold runs are about waiting for the disk: wall-clock, whatever the clock of the warm ones.
      if (coldOn)
        sr.cold[c.id] = cellOf(
          coldRuns[ci]![si]!,
          si === 0 ? undefined : coldRuns[ci]![0]!,
          'wall',
        );
    }
  }
}
