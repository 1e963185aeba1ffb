import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GitError } from '../errors.js';
import { makePrivateCopy, dirBytes } from '../bench/copy.js';
import { coldSupport, evict, probeColdRead } from '../bench/cold.js';
import {
  benchGitEnv,
  childrenCpuSeconds,
  gitVersion,
  median,
  repeatFor,
  runGit,
  spread,
  timeGit,
  warmFiles,
  type RunTime,
} from '../bench/timing.js';
import type { Scenario } from '../bench/scenarios.js';
import type {
  BenchCommand,
  BenchResult,
  Cell,
  CommitGraphState,
  ScenarioResult,
  SkippedCommand,
} from '../bench/types.js';
import {
  benchCommands,
  commandLine,
  gitArgs,
  parseCommandId,
  STATE_TEXT,
} from '../bench/commands.js';
import {
  assertBloomUsed,
  bloomStatistics,
  removeCommitGraph,
  writeBloomGraph,
} from '../bench/bloom.js';
import { prepareColumns } from './bench-columns.js';
import { runReaderExperiments, type ReaderExperimentName } from './bench-reader.js';
import { removeOnSignal } from '../cleanup.js';
import { discoverRepository, type Repository } from '../store/repo.js';
import { listPacks, type PackInfo } from '../store/packdir.js';
import { listLoose } from '../store/loose.js';
import { Pack } from '../store/pack.js';
import { withExt } from '../store/fs-path.js';
import { repack, type RepackResult } from './repack.js';

export type { BenchCommand, BenchResult, Cell, ScenarioResult } from '../bench/types.js';
export {
  benchCommands,
  commandLine,
  COMMAND_IDS,
  COMMAND_PRESETS,
  resolveCommandIds,
} from '../bench/commands.js';

/** A warm run shorter than this is repeated back to back and timed as one (then divided). */
export const MIN_RUN_SECONDS = 0.5;

export interface BenchOptions {
  scenarios: Scenario[];
  runs: number;
  cold: boolean;
  /** What the cells report: wall-clock (the seed's) or git's CPU time (steadier on a busy machine). */
  clock: 'wall' | 'cpu';
  logN: number;
  /** Column ids (presets already expanded: resolveCommandIds). */
  commands: string[];
  /** The files of the path-limited columns (`--paths`); by default chosen from the repository. */
  paths?: string[] | undefined;
  /** A warm run lasts at least this long: shorter commands run back to back (default MIN_RUN_SECONDS). */
  minRunSeconds?: number | undefined;
  reader: ReaderExperimentName[];
  readerCommits: number;
  /** Rounds of the delta base cache experiment (best of; default 3, as the seed). */
  readerRounds?: number | undefined;
  /** Byte cap of the cache experiment (default 96 MiB, core.deltaBaseCacheLimit). */
  readerCacheBytes?: number | undefined;
  /** Where the private copies are made (default: the system's temporary directory). */
  workDir?: string | undefined;
  /** Keep the copies (their paths are in the result). */
  keep: boolean;
  env: NodeJS.ProcessEnv;
  onProgress?: ((phase: string, done: number, total: number) => void) | undefined;
  onWarning?: ((message: string) => void) | undefined;
  signal?: AbortSignal | undefined;
}

/** Every file git reads in a walk of the copy (objects/ and packed-refs): what is warmed and evicted. */
function filesToWarmAndEvict(gitDir: string): string[] {
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

/** Objects in the repository: every pack's count and every loose object. */
function countObjects(repo: Repository, infos: PackInfo[]): number {
  let objects = listLoose(repo.objectsDir, repo.algo).length;
  for (const p of infos) {
    const pk = Pack.open(withExt(p.fsBase, '.pack'), repo.algo);
    objects += pk.count;
    pk.close();
  }
  return objects;
}

/** A scenario's private copy: where it is, the files a walk reads, and the copy as a repository. */
interface ScenarioCopy {
  gitDir: string;
  files: string[];
  repo: Repository;
}

function seconds(since: number): number {
  return (performance.now() - since) / 1000;
}

/** Setup of one scenario (never timed): a private copy, rewritten by us, with a commit-graph. */
async function buildScenario(
  repo: Repository,
  sc: Scenario,
  workDir: string,
  env: NodeJS.ProcessEnv,
  opts: BenchOptions,
): Promise<{ row: ScenarioResult; copy: ScenarioCopy }> {
  const t0 = performance.now();
  const copy = makePrivateCopy(repo, join(workDir, sc.name.replace(/[^a-z0-9.-]/gi, '_')));
  const copyRepo = discoverRepository({
    cwd: copy.gitDir,
    gitDir: copy.gitDir,
    env,
    euid: repo.euid,
  });
  const run = (dryRun: boolean): Promise<RepackResult> =>
    repack(copyRepo, {
      levels: sc.levels,
      autoFallback: -1,
      autoRule: sc.autoRule,
      dryRun,
      all: dryRun,
      fsck: 'none',
      keepPacks: [],
      signal: opts.signal,
      onWarning: opts.onWarning,
    });
  const r = await run(false);
  let rerun: number | undefined;
  if (Object.values(sc.levels).includes('auto')) {
    // The rule must be stable: the same settings again re-encode nothing.
    const again = await run(true);
    rerun = again.partitions.reduce(
      (a, p) =>
        a +
        p.stats.reencoded.commit +
        p.stats.reencoded.tree +
        p.stats.reencoded.blob +
        p.stats.reencoded.tag,
      0,
    );
  }
  // The seed's +cg state: a commit-graph without Bloom filters, written only where a column uses it.
  if (opts.commands.some((id) => parseCommandId(id).state === 'cg'))
    runGit(
      copy.gitDir,
      ['-c', 'core.commitGraph=true', 'commit-graph', 'write', '--reachable', '--no-progress'],
      env,
    );
  const setupSeconds = seconds(t0);
  const packs = listPacks(copyRepo.objectsDir).map((p) => {
    const pk = Pack.open(withExt(p.fsBase, '.pack'), repo.algo);
    const v = { name: p.name, bytes: pk.size, objects: pk.count };
    pk.close();
    return v;
  });
  let commitGraphBytes = 0;
  try {
    commitGraphBytes = statSync(join(copyRepo.objectsDir, 'info', 'commit-graph')).size;
  } catch {
    commitGraphBytes = 0;
  }
  const reencoded = { commit: 0, tree: 0, blob: 0, tag: 0 };
  for (const p of r.partitions)
    for (const k of ['commit', 'tree', 'blob', 'tag'] as const)
      reencoded[k] += p.stats.reencoded[k];
  const row: ScenarioResult = {
    name: sc.name,
    description: sc.description,
    levels: { commit: sc.levels[1], tree: sc.levels[2], blob: sc.levels[3], tag: sc.levels[4] },
    packBytes: packs.reduce((a, p) => a + p.bytes, 0),
    objectDirBytes: dirBytes(copyRepo.objectsDir) - commitGraphBytes,
    commitGraphBytes,
    packs,
    reencoded,
    setupSeconds,
    rerunReencodes: rerun,
    warm: {},
    cold: {},
    copy: opts.keep ? copy.gitDir : undefined,
  };
  return {
    row,
    copy: { gitDir: copy.gitDir, files: filesToWarmAndEvict(copy.gitDir), repo: copyRepo },
  };
}

/** Cold runs happen only when page-cache eviction can be done and checked on this copy. */
function coldAvailable(copy: ScenarioCopy): BenchResult['cold'] {
  const s = coldSupport();
  if (!s.available) return { requested: true, available: false, reason: s.reason };
  const probe = evict(copy.files);
  if (probe.failed.length > 0)
    return {
      requested: true,
      available: false,
      reason: `page-cache eviction did not work (pages stayed resident in ${probe.failed[0]})`,
    };
  return {
    requested: true,
    available: true,
    reason: s.reason,
    rereadMBps: probeColdRead(copy.files, warmFiles),
  };
}

/** Progress over every phase: a column set aside at calibration takes its runs off the total. */
interface Counter {
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
function timePhase(
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

/**
 * The `+bloom` state in every copy (untimed): a commit-graph with changed-path Bloom filters,
 * and git's trace2 statistics showing that it reads them, in every copy for `log -- <path>`
 * and once for blame. Fails when git ignores them.
 */
function setUpBloom(
  result: BenchResult,
  copies: ScenarioCopy[],
  env: NodeJS.ProcessEnv,
  opts: BenchOptions,
): void {
  const pathCol = result.commands.find(
    (c) => c.state === 'bloom' && (c.id === 'path-oneline-bloom' || c.id === 'path-log-bloom'),
  );
  const blameCol = result.commands.find((c) => c.id === 'blame-bloom');
  // Both columns exist only where HEAD is a commit (prepareColumns).
  const commits =
    (pathCol ?? blameCol)
      ? Number(runGit(copies[0]!.gitDir, ['rev-list', '--count', 'HEAD'], env).trim())
      : 0;
  for (const [si, copy] of copies.entries()) {
    opts.signal?.throwIfAborted();
    opts.onProgress?.('commit-graphs with Bloom filters', si, copies.length);
    const w = writeBloomGraph(copy.gitDir, env);
    const row = result.scenarios[si]!;
    row.bloomGraphBytes = w.bytes;
    row.bloomGraphSeconds = w.seconds;
    for (const c of si === 0 ? [pathCol, blameCol] : [pathCol]) {
      if (c === undefined) continue;
      const check = {
        scenario: row.name,
        line: commandLine(c),
        ...bloomStatistics(copy.gitDir, gitArgs(c), env),
      };
      if (c.id !== 'blame-bloom') check.blameQueries = check.blameNo = undefined;
      assertBloomUsed(check, commits, copy.gitDir);
      result.bloom.push(check);
    }
  }
  opts.onProgress?.('commit-graphs with Bloom filters', copies.length, copies.length);
}

/** The states whose meaning the report gives: those of the columns asked for. */
function statesOf(commands: BenchCommand[]): Partial<Record<CommitGraphState, string>> {
  const out: Partial<Record<CommitGraphState, string>> = {};
  for (const c of commands) out[c.state] = STATE_TEXT[c.state];
  return out;
}

/** Builds every scenario's copy; the columns are prepared in the first (`none`) copy, before the others are built. */
async function buildAll(
  repo: Repository,
  result: BenchResult,
  workDir: string,
  env: NodeJS.ProcessEnv,
  opts: BenchOptions,
): Promise<ScenarioCopy[]> {
  const copies: ScenarioCopy[] = [];
  for (const [i, sc] of opts.scenarios.entries()) {
    opts.signal?.throwIfAborted();
    opts.onProgress?.('building scenarios', i, opts.scenarios.length);
    const { row, copy } = await buildScenario(repo, sc, workDir, env, opts);
    result.scenarios.push(row);
    copies.push(copy);
    if (i > 0) continue;
    const cols = prepareColumns(opts.commands, copy.gitDir, env, {
      logN: opts.logN,
      promisor: result.promisor,
      paths: opts.paths,
    });
    result.commands = cols.commands.map((c) => ({ ...c, line: commandLine(c), repeat: 1 }));
    result.skipped = cols.skipped;
    result.paths = cols.paths;
    result.states = statesOf(cols.commands);
  }
  opts.onProgress?.('building scenarios', opts.scenarios.length, opts.scenarios.length);
  return copies;
}

/**
 * `git repack-ts bench`: builds each scenario in a private copy of the repository with our
 * rewriter, then times stock git's commands on every copy, interleaved (round by round, each
 * command on every scenario in turn) so that drift on a shared machine hits every scenario
 * alike. Phases by commit-graph state: the seed's columns (no graph, and a graph without Bloom
 * filters), then the user columns (no graph, and a graph with Bloom filters), then the writing
 * of that graph. Setup (copies, rewrites, commit-graphs, warming) is never inside a timed run.
 * The original repository is only read.
 */
export async function bench(repo: Repository, opts: BenchOptions): Promise<BenchResult> {
  const started = performance.now();
  const env = benchGitEnv(opts.env);
  const infos = listPacks(repo.objectsDir);
  const promisor = infos.some((p) => p.promisor);
  const objects = countObjects(repo, infos);
  if (objects === 0)
    throw new GitError('missing-object', `nothing to benchmark: ${repo.gitDir} has no objects`);
  benchCommands(opts.commands, { logN: opts.logN, promisor });
  if (opts.clock === 'cpu' && childrenCpuSeconds() === undefined)
    throw new GitError('unsupported', '--clock=cpu needs /proc/self/stat (Linux)');
  const workDir = mkdtempSync(join(opts.workDir ?? tmpdir(), 'git-repack-ts-bench-'));
  if (!opts.keep) removeOnSignal(workDir);
  const result: BenchResult = {
    repository: repo.gitDir,
    gitVersion: gitVersion(env),
    objects,
    promisor,
    runs: opts.runs,
    clock: opts.clock,
    logN: opts.logN,
    commands: [],
    skipped: [],
    states: {},
    bloom: [],
    cold: {
      requested: opts.cold,
      available: false,
      reason: opts.cold ? '' : 'not requested (--cold)',
    },
    scenarios: [],
    workDir,
    kept: opts.keep,
    seconds: 0,
  };
  try {
    const copies = await buildAll(repo, result, workDir, env, opts);
    if (opts.cold) {
      result.cold = coldAvailable(copies[0]!);
      if (!result.cold.available)
        opts.onWarning?.(`cold numbers are unavailable: ${result.cold.reason}`);
    }
    const coldOn = result.cold.available;
    const inPhase = (states: CommitGraphState[], group: 'seed' | 'user'): BenchCommand[] =>
      result.commands.filter((c) => c.group === group && states.includes(c.state));
    const counter: Counter = {
      done: 0,
      total: opts.runs * result.commands.length * copies.length * (coldOn ? 2 : 1),
    };
    timePhase(result, inPhase(['off', 'cg'], 'seed'), copies, coldOn, env, opts, counter);
    if (result.commands.some((c) => c.state === 'bloom')) setUpBloom(result, copies, env, opts);
    timePhase(result, inPhase(['off', 'bloom'], 'user'), copies, coldOn, env, opts, counter);
    timePhase(result, inPhase(['write'], 'user'), copies, coldOn, env, opts, counter);
    if (opts.reader.length > 0) {
      opts.onProgress?.('reader experiments', 0, 1);
      result.reader = await runReaderExperiments(copies[0]!.repo, {
        experiments: opts.reader,
        commits: opts.readerCommits,
        rounds: opts.readerRounds ?? 3,
        cacheBytes: opts.readerCacheBytes,
        signal: opts.signal,
        onProgress: opts.onProgress,
      });
      opts.onProgress?.('reader experiments', 1, 1);
    }
  } finally {
    if (!opts.keep) rmSync(workDir, { recursive: true, force: true });
  }
  result.seconds = seconds(started);
  return result;
}
