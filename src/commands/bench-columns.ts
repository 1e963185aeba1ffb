import { GitError } from '../errors.js';
import {
  benchCommands,
  commandLine,
  parseCommandId,
  USER_LOG_P_N,
  type CommandPaths,
} from '../bench/commands.js';
import { blameWalk, blobsOf, choosePaths, missingReason } from '../bench/paths.js';
import { runGit } from '../bench/timing.js';
import type { BenchCommand, PathChoice, SkippedCommand } from '../bench/types.js';

/** Bases that name a file. */
const PATH_BASES = new Set(['path-oneline', 'path-log', 'blame']);
/** The user columns that walk from HEAD. */
const HEAD_BASES = new Set(['shortlog', 'path-oneline', 'path-log', 'log-raw', 'blame', 'log-p']);

export interface Columns {
  commands: BenchCommand[];
  skipped: SkippedCommand[];
  paths?: PathChoice | undefined;
}

export interface ColumnOptions {
  logN: number;
  promisor: boolean;
  /** `--paths`: the files of the path-limited columns instead of the repository's choice. */
  paths?: string[] | undefined;
}

/** Placeholders for the lines of columns that could not get a path. */
const NO_PATHS: CommandPaths = { oneline: '<path>', log: '<path>', blame: '<path>' };

function skip(ids: string[], opts: ColumnOptions, reason: string): SkippedCommand[] {
  return benchCommands(ids, { ...opts, paths: NO_PATHS }).map((c) => ({
    id: c.id,
    label: c.label,
    line: commandLine(c),
    reason,
  }));
}

function headIsCommit(gitDir: string, env: NodeJS.ProcessEnv): boolean {
  try {
    runGit(gitDir, ['rev-parse', '--verify', '-q', 'HEAD^{commit}'], env);
    return true;
  } catch {
    return false;
  }
}

/** The first candidate whose every version is in the repository, or why there is none. */
function blamePath(
  gitDir: string,
  env: NodeJS.ProcessEnv,
  candidates: string[],
): { path?: string; reason: string } {
  let first = '';
  for (const c of candidates) {
    const m = blobsOf(gitDir, env, blameWalk(c));
    if (m.missing === 0) return { path: c, reason: '' };
    if (first === '') first = `${c}: ${missingReason(m)}`;
  }
  if (candidates.length === 0) return { reason: 'no file at HEAD to blame' };
  return {
    reason: `none of the ${candidates.length} most changed files has all its versions (${first})`,
  };
}

/**
 * The columns to time, set up in the `none` copy (untimed): the files of the path-limited
 * columns chosen, and the columns that cannot run here set aside with their reason (blobs
 * missing in a partial clone, HEAD not a commit) rather than failing or fetching.
 */
export function prepareColumns(
  ids: string[],
  gitDir: string,
  env: NodeJS.ProcessEnv,
  opts: ColumnOptions,
): Columns {
  const skipped: SkippedCommand[] = [];
  const want = (pred: (base: string) => boolean): string[] =>
    ids.filter((id) => !skipped.some((s) => s.id === id) && pred(parseCommandId(id).base));
  if (!headIsCommit(gitDir, env))
    skipped.push(
      ...skip(
        want((b) => HEAD_BASES.has(b)),
        opts,
        'HEAD does not name a commit',
      ),
    );
  let paths: PathChoice | undefined;
  const pathIds = want((b) => PATH_BASES.has(b));
  if (pathIds.length > 0) {
    try {
      const chosen = choosePaths(gitDir, env, opts.paths);
      paths = chosen.choice;
      const blameIds = want((b) => b === 'blame');
      if (blameIds.length > 0) {
        const b = blamePath(gitDir, env, chosen.blameCandidates);
        paths.blame = b.path;
        if (b.path === undefined) skipped.push(...skip(blameIds, opts, b.reason));
      }
      if (paths.oneline === undefined)
        skipped.push(
          ...skip(
            want((b) => b === 'path-oneline' || b === 'path-log'),
            opts,
            'no file at HEAD',
          ),
        );
    } catch (e) {
      if (e instanceof GitError && e.code === 'usage') throw e;
      skipped.push(
        ...skip(
          want((b) => PATH_BASES.has(b)),
          opts,
          `no path could be chosen: ${e instanceof Error ? e.message : String(e)}`,
        ),
      );
    }
  }
  const logP = want((b) => b === 'log-p');
  if (logP.length > 0) {
    const m = blobsOf(gitDir, env, ['-n', String(USER_LOG_P_N)]);
    if (m.missing > 0) skipped.push(...skip(logP, opts, missingReason(m)));
  }
  const commands = benchCommands(
    ids.filter((id) => !skipped.some((s) => s.id === id)),
    { ...opts, paths: { oneline: paths?.oneline, log: paths?.log, blame: paths?.blame } },
  );
  return { commands, skipped, paths };
}
