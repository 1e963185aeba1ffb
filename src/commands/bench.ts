import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GitError } from '../errors.js';
import { makePrivateCopy, dirBytes } from '../bench/copy.js';
import { coldSupport, evict, probeColdRead } from '../bench/cold.js';
import { benchGitEnv, childrenCpuSeconds, gitVersion, median, repeatFor, runGit, spread, timeGit, warmFiles, type RunTime } from '../bench/timing.js';
import type { Scenario } from '../bench/scenarios.js';
import type { BenchCommand, BenchResult, Cell, ScenarioResult } from '../bench/types.js';
import { runReaderExperiments, type ReaderExperimentName } from './bench-reader.js';
import { removeOnSignal } from '../cleanup.js';
import { discoverRepository, type Repository } from '../store/repo.js';
import { listPacks, type PackInfo } from '../store/packdir.js';
import { listLoose } from '../store/loose.js';
import { Pack } from '../store/pack.js';
import { withExt } from '../store/fs-path.js';
import { repack, type RepackResult } from './repack.js';

export type { BenchCommand, BenchResult, Cell, ScenarioResult } from '../bench/types.js';

/** A warm run shorter than this is repeated back to back and timed as one (then divided). */
export const MIN_RUN_SECONDS = 0.5;

export const COMMAND_IDS = ['revs', 'revs-cg', 'objects', 'objects-cg', 'log', 'log-cg'] as const;
export type CommandId = (typeof COMMAND_IDS)[number];

/** The seed's walks, each with and without a commit-graph. `--missing=allow-any` for partial clones. */
export function benchCommands(ids: readonly string[], opts: { logN: number; promisor: boolean }): BenchCommand[] {
  const missing = opts.promisor ? ['--missing=allow-any'] : [];
  const base: Record<string, { label: string; args: string[] }> = {
    revs: { label: 'revs', args: ['rev-list', '--count', '--all'] },
    objects: { label: 'objects', args: ['rev-list', '--objects', '--all', ...missing] },
    log: { label: 'log', args: ['log', '--raw', '-n', String(opts.logN)] },
  };
  return ids.map((id) => {
    const cg = id.endsWith('-cg');
    const b = base[cg ? id.slice(0, -3) : id];
    if (b === undefined) throw new GitError('usage', `unknown command '${id}' (known: ${COMMAND_IDS.join(', ')})`);
    return { id, label: cg ? `${b.label} +cg` : b.label, args: b.args, commitGraph: cg };
  });
}

/** git's command line for a column, as the report prints it. */
export function commandLine(c: BenchCommand): string {
  return `git -c core.commitGraph=${c.commitGraph} ${c.args.join(' ')}`;
}

export interface BenchOptions {
  scenarios: Scenario[];
  runs: number;
  cold: boolean;
  /** What the cells report: wall-clock (the seed's) or git's CPU time (steadier on a busy machine). */
  clock: 'wall' | 'cpu';
  logN: number;
  commands: string[];
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

function cellOf(times: RunTime[], none: RunTime[] | undefined, clock: 'wall' | 'cpu'): Cell {
  const runs = times.map((t) => t[clock]);
  const ratios = none === undefined ? [] : runs.map((t, k) => t / none[k]![clock]);
  return { median: median(runs), runs, wall: times.map((t) => t.wall), cpu: times.map((t) => t.cpu), vsNone: ratios.length ? median(ratios) - 1 : 0, spread: spread(runs) };
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
async function buildScenario(repo: Repository, sc: Scenario, workDir: string, env: NodeJS.ProcessEnv, opts: BenchOptions): Promise<{ row: ScenarioResult; copy: ScenarioCopy }> {
  const t0 = performance.now();
  const copy = makePrivateCopy(repo, join(workDir, sc.name.replace(/[^a-z0-9.-]/gi, '_')));
  const copyRepo = discoverRepository({ cwd: copy.gitDir, gitDir: copy.gitDir, env });
  const run = (dryRun: boolean): Promise<RepackResult> =>
    repack(copyRepo, { levels: sc.levels, autoFallback: -1, autoRule: sc.autoRule, dryRun, fsck: 'none', keepPacks: [], signal: opts.signal, onWarning: opts.onWarning });
  const r = await run(false);
  let rerun: number | undefined;
  if (Object.values(sc.levels).includes('auto')) {
    // The rule must be stable: the same settings again re-encode nothing.
    const again = await run(true);
    rerun = again.partitions.reduce((a, p) => a + p.stats.reencoded.commit + p.stats.reencoded.tree + p.stats.reencoded.blob + p.stats.reencoded.tag, 0);
  }
  runGit(copy.gitDir, ['-c', 'core.commitGraph=true', 'commit-graph', 'write', '--reachable', '--no-progress'], env);
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
  for (const p of r.partitions) for (const k of ['commit', 'tree', 'blob', 'tag'] as const) reencoded[k] += p.stats.reencoded[k];
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
  return { row, copy: { gitDir: copy.gitDir, files: filesToWarmAndEvict(copy.gitDir), repo: copyRepo } };
}

/** Cold runs happen only when page-cache eviction can be done and checked on this copy. */
function coldAvailable(copy: ScenarioCopy): BenchResult['cold'] {
  const s = coldSupport();
  if (!s.available) return { requested: true, available: false, reason: s.reason };
  const probe = evict(copy.files);
  if (probe.failed.length > 0) return { requested: true, available: false, reason: `page-cache eviction did not work (pages stayed resident in ${probe.failed[0]})` };
  return { requested: true, available: true, reason: s.reason, rereadMBps: probeColdRead(copy.files, warmFiles) };
}

/**
 * Timing, interleaved: for each round, for each command, every scenario in turn. Short commands
 * are first calibrated (untimed, also a warm-up) and batched so that a run outlasts the clock's
 * resolution. Fills each scenario's warm (and cold) cells.
 */
function timeScenarios(result: BenchResult, commands: BenchCommand[], copies: ScenarioCopy[], coldOn: boolean, env: NodeJS.ProcessEnv, opts: BenchOptions): void {
  const nS = copies.length;
  const gitArgs = (c: BenchCommand): string[] => ['-c', `core.commitGraph=${c.commitGraph}`, ...c.args];
  warmFiles(copies.flatMap((c) => c.files));
  const repeats = commands.map((c, ci) => {
    const once = timeGit(copies[0]!.gitDir, gitArgs(c), env);
    const k = repeatFor(opts.clock === 'cpu' && once.cpu > 0.05 ? once.cpu : once.wall, opts.minRunSeconds ?? MIN_RUN_SECONDS);
    result.commands[ci]!.repeat = k;
    return k;
  });
  const warmRuns = commands.map(() => copies.map(() => [] as RunTime[]));
  const coldRuns = commands.map(() => copies.map(() => [] as RunTime[]));
  const totalRuns = opts.runs * commands.length * nS * (coldOn ? 2 : 1);
  let done = 0;
  const each = (f: (c: BenchCommand, ci: number, si: number) => void): void => {
    for (const [ci, c] of commands.entries()) {
      for (let si = 0; si < nS; si++) {
        opts.signal?.throwIfAborted();
        f(c, ci, si);
        opts.onProgress?.('timing', ++done, totalRuns);
      }
    }
  };
  for (let round = 0; round < opts.runs; round++) {
    if (coldOn) {
      each((c, ci, si) => {
        const ev = evict(copies[si]!.files);
        if (ev.failed.length > 0) throw new GitError('io', `page-cache eviction stopped working (pages stayed resident in ${ev.failed[0]}); cold numbers would be warm ones`);
        coldRuns[ci]![si]!.push(timeGit(copies[si]!.gitDir, gitArgs(c), env));
      });
      warmFiles(copies.flatMap((c) => c.files));
    }
    each((c, ci, si) => warmRuns[ci]![si]!.push(timeGit(copies[si]!.gitDir, gitArgs(c), env, repeats[ci])));
  }
  for (const [ci, c] of commands.entries()) {
    for (let si = 0; si < nS; si++) {
      const sr = result.scenarios[si]!;
      sr.warm[c.id] = cellOf(warmRuns[ci]![si]!, si === 0 ? undefined : warmRuns[ci]![0]!, opts.clock);
      // Cold runs are about waiting for the disk: wall-clock, whatever the clock of the warm ones.
      if (coldOn) sr.cold[c.id] = cellOf(coldRuns[ci]![si]!, si === 0 ? undefined : coldRuns[ci]![0]!, 'wall');
    }
  }
}

/**
 * `git repack-ts bench`: builds each scenario in a private copy of the repository with our
 * rewriter, then times stock git's walks on every copy, interleaved (round by round, each command
 * on every scenario in turn) so that drift on a shared machine hits every scenario alike. Setup
 * (copy, rewrite, commit-graph, warming) is never inside a timed run. The original repository is
 * only read.
 */
export async function bench(repo: Repository, opts: BenchOptions): Promise<BenchResult> {
  const started = performance.now();
  const env = benchGitEnv(opts.env);
  const progress = opts.onProgress;
  const infos = listPacks(repo.objectsDir);
  const promisor = infos.some((p) => p.promisor);
  const objects = countObjects(repo, infos);
  if (objects === 0) throw new GitError('missing-object', `nothing to benchmark: ${repo.gitDir} has no objects`);
  const commands = benchCommands(opts.commands, { logN: opts.logN, promisor });
  if (opts.clock === 'cpu' && childrenCpuSeconds() === undefined) throw new GitError('unsupported', '--clock=cpu needs /proc/self/stat (Linux)');
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
    commands: commands.map((c) => ({ ...c, line: commandLine(c), repeat: 1 })),
    cold: { requested: opts.cold, available: false, reason: opts.cold ? '' : 'not requested (--cold)' },
    scenarios: [],
    workDir,
    kept: opts.keep,
    seconds: 0,
  };
  try {
    const copies: ScenarioCopy[] = [];
    for (const [i, sc] of opts.scenarios.entries()) {
      opts.signal?.throwIfAborted();
      progress?.('building scenarios', i, opts.scenarios.length);
      const { row, copy } = await buildScenario(repo, sc, workDir, env, opts);
      result.scenarios.push(row);
      copies.push(copy);
    }
    progress?.('building scenarios', opts.scenarios.length, opts.scenarios.length);
    if (opts.cold) {
      result.cold = coldAvailable(copies[0]!);
      if (!result.cold.available) opts.onWarning?.(`cold numbers are unavailable: ${result.cold.reason}`);
    }
    timeScenarios(result, commands, copies, result.cold.available, env, opts);
    if (opts.reader.length > 0) {
      progress?.('reader experiments', 0, 1);
      result.reader = await runReaderExperiments(copies[0]!.repo, { experiments: opts.reader, commits: opts.readerCommits, rounds: opts.readerRounds ?? 3, cacheBytes: opts.readerCacheBytes, signal: opts.signal, onProgress: progress });
      progress?.('reader experiments', 1, 1);
    }
  } finally {
    if (!opts.keep) rmSync(workDir, { recursive: true, force: true });
  }
  result.seconds = seconds(started);
  return result;
}
