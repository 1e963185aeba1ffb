import { writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { bench, resolveCommandIds } from '../commands/bench.js';
import { parseScenarioList } from '../bench/scenarios.js';
import { READER_EXPERIMENTS, type ReaderExperimentName } from '../commands/bench-reader.js';
import { formatReport, shareOfBoth } from '../bench/report.js';
import { renderSvg } from '../bench/svg.js';
import { childrenCpuSeconds } from '../bench/timing.js';
import { GitError } from '../errors.js';
import { parseArgs, positionals } from './args.js';
import { UsageError } from './io.js';
import type { CliContext } from './main.js';
import { lineReporter, phaseReporter, wantProgress, warn } from './progress.js';
import { openRepository } from './repo.js';

export const BENCH_USAGE = `usage: git repack-ts bench [<options>]

Times stock git on private copies of this repository rewritten by git repack-ts, one copy per
scenario (the original is only read): by default the commands users run, without a commit-graph
and with one holding changed-path Bloom filters; with --commands=seed the seed's walks.

    --scenarios <list>    none,commit,tree,both,auto (default), or candidate rules:
                          auto:<bytes>[:<ratio>][+fixed][@commit|@tree]
    --runs <n>            timed runs per cell, median reported (default 5)
    --cold                also time with the copies' files evicted from the page cache
    --clock <cpu|wall>    warm timings as git's user+system CPU time (default on Linux) or wall-clock
    --commands <list>     presets and columns (default: user):
                          user = subjects, shortlog, path-oneline, path-log, log-raw, blame,
                                 log-p, count (each also <id>-bloom), cg-write
                          seed = revs,revs-cg,objects,objects-cg,log,log-cg; all = both
    --paths <p>[,<p2>]    the files of log --oneline -- <p>, log -- <p2> and blame HEAD -- <p>
                          (default: chosen from the repository, printed in the report)
    --log-n <n>           commits for the seed's git log --raw -n (default 20000)
    --min-time <seconds>  shorter commands run back to back to last this long per run (default 0.5)
    --reader[=<list>]     also run the reader experiments: cache,lookup,zstd (default: all)
    --reader-commits <n>  commits walked by the delta base cache experiment (default 2000)
    --reader-rounds <n>   best of how many rounds in that experiment (default 3)
    --reader-cache-mib <n> byte cap of that experiment's caches (default 96, like core.deltaBaseCacheLimit)
    --json                print the result as JSON
    --svg <file>          draw the table as a bar chart
    --tmpdir <dir>        where the copies are made (default: the system's temporary directory)
    --keep                keep the copies (their paths are in --json)
    -q, --quiet           no progress
    --progress            force progress on stderr
`;

function positiveInt(name: string, v: unknown, dflt: number): number {
  if (v === undefined) return dflt;
  const last = String(Array.isArray(v) ? v[v.length - 1] : v).trim();
  if (!/^\d+$/.test(last) || Number(last) < 1)
    throw new UsageError(`--${name} expects a positive integer, not '${last}'`, BENCH_USAGE);
  return Number(last);
}

function listArg<T extends string>(
  name: string,
  v: unknown,
  known: readonly T[],
  dflt: readonly T[],
): T[] {
  if (v === undefined) return [...dflt];
  const s = String(Array.isArray(v) ? v[v.length - 1] : v).trim();
  if (s === '') return [...dflt];
  const items = s
    .split(',')
    .map((x) => x.trim())
    .filter((x) => x !== '');
  for (const i of items)
    if (!known.includes(i as T))
      throw new UsageError(
        `--${name}: unknown value '${i}' (known: ${known.join(', ')})`,
        BENCH_USAGE,
      );
  return [...new Set(items)] as T[];
}

export async function runBench(args: string[], ctx: CliContext): Promise<number> {
  const o = await parseArgs(args, BENCH_USAGE, (y) =>
    y
      .option('scenarios', { type: 'string' })
      .option('runs', { type: 'string' })
      .option('cold', { type: 'boolean', default: false })
      .option('clock', { type: 'string' })
      .option('commands', { type: 'string' })
      .option('paths', { type: 'string' })
      .option('log-n', { type: 'string' })
      .option('min-time', { type: 'string' })
      .option('reader', { type: 'string', optionalValue: true })
      .option('reader-commits', { type: 'string' })
      .option('reader-rounds', { type: 'string' })
      .option('reader-cache-mib', { type: 'string' })
      .option('json', { type: 'boolean', default: false })
      .option('svg', { type: 'string' })
      .option('tmpdir', { type: 'string' })
      .option('keep', { type: 'boolean', default: false })
      .option('quiet', { alias: 'q', type: 'boolean' })
      .option('progress', { type: 'boolean' }),
  );
  const extra = positionals(o);
  if (extra.length > 0) throw new UsageError(`unexpected argument '${extra[0]}'`, BENCH_USAGE);
  let scenarios;
  try {
    scenarios = parseScenarioList(o.scenarios === undefined ? undefined : String(o.scenarios));
  } catch (e) {
    if (e instanceof GitError) throw new UsageError(e.message, BENCH_USAGE);
    throw e;
  }
  const runs = positiveInt('runs', o.runs, 5);
  const logN = positiveInt('log-n', o['log-n'], 20000);
  const readerCommits = positiveInt('reader-commits', o['reader-commits'], 2000);
  const readerRounds = positiveInt('reader-rounds', o['reader-rounds'], 3);
  const readerCacheMiB = positiveInt('reader-cache-mib', o['reader-cache-mib'], 96);
  let commands: string[];
  try {
    commands = resolveCommandIds(
      o.commands === undefined
        ? undefined
        : String(Array.isArray(o.commands) ? o.commands[o.commands.length - 1] : o.commands),
    );
  } catch (e) {
    if (e instanceof GitError) throw new UsageError(`--commands: ${e.message}`, BENCH_USAGE);
    throw e;
  }
  const paths =
    o.paths === undefined
      ? undefined
      : String(o.paths)
          .split(',')
          .map((p) => p.trim())
          .filter((p) => p !== '');
  if (paths !== undefined && (paths.length === 0 || paths.length > 2))
    throw new UsageError('--paths expects one or two files, separated by a comma', BENCH_USAGE);
  const reader: ReaderExperimentName[] =
    o.reader === undefined
      ? []
      : listArg('reader', o.reader, READER_EXPERIMENTS, READER_EXPERIMENTS);
  if (o.svg !== undefined && String(o.svg).trim() === '')
    throw new UsageError('--svg needs a file name', BENCH_USAGE);
  // CPU time by default where /proc tells it: on a shared machine it moves far less than
  // wall-clock (measured 2–8 % against 20–70 % run to run on git.git); warm runs are CPU-bound.
  const minTimeText = o['min-time'] === undefined ? undefined : String(o['min-time']).trim();
  if (minTimeText !== undefined && !/^(\d+\.?\d*|\.\d+)$/.test(minTimeText))
    throw new UsageError(`--min-time expects seconds, not '${minTimeText}'`, BENCH_USAGE);
  const clock =
    o.clock === undefined ? (childrenCpuSeconds() !== undefined ? 'cpu' : 'wall') : String(o.clock);
  if (clock !== 'wall' && clock !== 'cpu')
    throw new UsageError(`--clock expects 'wall' or 'cpu', not '${clock}'`, BENCH_USAGE);
  const { io } = ctx;
  const repo = openRepository(ctx);
  // No terminal: one line per finished scenario rather than 95 s of silence (unless -q/--no-progress).
  const progress =
    phaseReporter(io, wantProgress(io, { quiet: o.quiet, progress: o.progress })) ??
    (o.quiet || o.progress === false || o.json ? undefined : lineReporter(io));
  const ac = new AbortController();
  const onSigint = (): void => ac.abort();
  process.once('SIGINT', onSigint);
  try {
    const r = await bench(repo, {
      scenarios,
      runs,
      cold: o.cold,
      clock,
      logN,
      commands,
      paths,
      minRunSeconds: minTimeText === undefined ? undefined : Number(minTimeText),
      reader,
      readerCommits,
      readerRounds,
      readerCacheBytes: readerCacheMiB * 1024 * 1024,
      workDir: o.tmpdir === undefined ? undefined : resolve(ctx.cwd, String(o.tmpdir)),
      keep: o.keep,
      env: io.env,
      onProgress: progress,
      onWarning: (m) => warn(io, m),
      signal: ac.signal,
    });
    if (o.svg !== undefined) writeFileSync(resolve(ctx.cwd, String(o.svg)), renderSvg(r));
    io.out(
      o.json ? JSON.stringify({ ...r, vsBoth: shareOfBoth(r) }, null, 2) + '\n' : formatReport(r),
    );
    return 0;
  } finally {
    process.removeListener('SIGINT', onSigint);
  }
}
