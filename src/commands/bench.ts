import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GitError } from '../errors.js';
import { makePrivateCopy, dirBytes } from '../bench/copy.js';
import { coldSupport, evict, probeColdRead } from '../bench/cold.js';
import { benchGitEnv, childrenCpuSeconds, gitVersion, runGit, warmFiles } from '../bench/timing.js';
import type { Scenario } from '../bench/scenarios.js';
import type {
  BenchCommand,
  BenchResult,
  Cell,
  CommitGraphState,
  ScenarioResult,
} from '../bench/types.js';
import {
  benchCommands,
  commandLine,
  gitArgs,
  parseCommandId,
  STATE_TEXT,
} from '../bench/commands.js';
import { assertBloomUsed, bloomStatistics, writeBloomGraph } from '../bench/bloom.js';
import { prepareColumns } from './bench-columns.js';
import { runReaderExperiments, type ReaderExperimentName } from './bench-reader.js';
import { removeOnSignal } from '../cleanup.js';
import { discoverRepository, type Repository } from '../store/repo.js';
import { listPacks, type PackInfo } from '../store/packdir.js';
import { listLoose } from '../store/loose.js';
import { Pack } from '../store/pack.js';
import { withExt } from '../store/fs-path.js';
import { repack, type RepackResult } from './repack.js';
import { filesToWarmAndEvict, timePhase, type Counter, type ScenarioCopy } from './bench-timing.js';

export type { BenchCommand, BenchResult, Cell, ScenarioResult } from '../bench/types.js';
export {
  benchCommands,
  commandLine,
  COMMAND_IDS,
  COMMAND_PRESETS,
  resolveCommandIds,
} from '../bench/commands.js';
export { cellOf, MIN_RUN_SECONDS } from './bench-timing.js';

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
