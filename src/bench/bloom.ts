import { spawnSync } from 'node:child_process';
import { readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { GitError, systemError } from '../errors.js';
import { runGit } from './timing.js';
import type { BloomCheck } from './types.js';

/** The commit-graph files of a copy: the single file and a split chain's directory. */
export function removeCommitGraph(gitDir: string): void {
  rmSync(join(gitDir, 'objects', 'info', 'commit-graph'), { force: true });
  rmSync(join(gitDir, 'objects', 'info', 'commit-graphs'), { recursive: true, force: true });
}

/** The arguments of the commit-graph with changed-path Bloom filters (the `+bloom` state). */
export const BLOOM_GRAPH_ARGS = [
  'commit-graph',
  'write',
  '--reachable',
  '--changed-paths',
  '--no-progress',
];

/**
 * Writes the `+bloom` state's commit-graph from nothing (untimed setup). The previous graph is
 * removed first: `write_commit_graph` would otherwise keep its data and copy filters it holds.
 */
export function writeBloomGraph(
  gitDir: string,
  env: NodeJS.ProcessEnv,
): { seconds: number; bytes: number } {
  const t0 = performance.now();
  removeCommitGraph(gitDir);
  runGit(gitDir, ['-c', 'core.commitGraph=true', ...BLOOM_GRAPH_ARGS], env);
  return {
    seconds: (performance.now() - t0) / 1000,
    bytes: statSync(join(gitDir, 'objects', 'info', 'commit-graph')).size,
  };
}

interface Trace2Event {
  event?: string;
  category?: string;
  key?: string;
  value?: unknown;
}

/** Runs git once with a trace2 event log (untimed) and returns its events. */
function traced(gitDir: string, args: string[], env: NodeJS.ProcessEnv): Trace2Event[] {
  const file = `${gitDir}.trace2.json`;
  rmSync(file, { force: true });
  try {
    const r = spawnSync('git', [`--git-dir=${gitDir}`, ...args], {
      env: { ...env, GIT_TRACE2_EVENT: file },
      cwd: gitDir,
      stdio: ['ignore', 'ignore', 'pipe'],
      encoding: 'utf8',
    });
    if (r.error) throw systemError('io', 'cannot run git', r.error);
    if (r.status !== 0)
      throw new GitError('io', `git ${args.join(' ')} failed in ${gitDir}: ${r.stderr.trim()}`);
    let text = '';
    try {
      text = readFileSync(file, 'utf8');
    } catch {
      text = '';
    }
    return text.split('\n').flatMap((l) => (l.trim() === '' ? [] : [JSON.parse(l) as Trace2Event]));
  } finally {
    rmSync(file, { force: true });
  }
}

/**
 * git's own account of the Bloom filters in a walk: revision.c's trace2 `bloom/statistics`
 * (trace2_bloom_filter_statistics_atexit) and blame.c's `bloom/queries` and `bloom/response-no`.
 */
export function bloomStatistics(
  gitDir: string,
  args: string[],
  env: NodeJS.ProcessEnv,
): Omit<BloomCheck, 'scenario' | 'line'> {
  const events = traced(gitDir, args, env);
  const stats = events.find(
    (e) => e.event === 'data_json' && e.category === 'bloom' && e.key === 'statistics',
  )?.value as Record<string, number> | undefined;
  const blameData = (key: string): number | undefined => {
    const e = events.find((x) => x.event === 'data' && x.category === 'blame' && x.key === key);
    return e === undefined ? undefined : Number(e.value);
  };
  return {
    definitelyNot: stats?.definitely_not ?? 0,
    maybe: stats?.maybe ?? 0,
    filterNotPresent: stats?.filter_not_present ?? 0,
    falsePositive: stats?.false_positive ?? 0,
    blameQueries: blameData('bloom/queries'),
    blameNo: blameData('bloom/response-no'),
  };
}

/**
 * The `+bloom` columns are worth their name only if git read the filters: on a history of two
 * commits or more, a path-limited log asks the filter of every commit it compares with its first
 * parent (revision.c rev_compare_tree), and blame asks it for every commit it passes through.
 */
export function assertBloomUsed(check: BloomCheck, commits: number, gitDir: string): void {
  if (commits < 2) return;
  const asked = check.blameQueries ?? check.definitelyNot + check.maybe;
  if (asked > 0) return;
  throw new GitError(
    'unsupported',
    `git did not read the changed-path Bloom filters in ${gitDir} (${check.line}: trace2 reports ${check.definitelyNot} "definitely not", ${check.maybe} "maybe", ${check.filterNotPresent} without a filter); the +bloom columns would not measure them`,
  );
}
