import { GitError } from '../errors.js';
import { runGit } from './timing.js';
import type { PathChoice } from './types.js';

/**
 * The files of the path-limited columns (`log --oneline -- <path>`, `log -- <path>`, `blame`),
 * chosen from the repository so that any repository gets the kind of command: the file
 * at the root changed by the most of the newest commits (git.git: Makefile), and the file below
 * the root changed by the most (a path of several components, whose leading directories are
 * Bloom keys too). Only files at HEAD, and only names that git takes literally as a pathspec
 * (no wildcard or magic: either would turn the Bloom filters off, revision.c
 * forbid_bloom_filters). Setup, never timed; run in a private copy (no remote, no lazy fetch).
 */
export const PATH_SCAN_COMMITS = 10000;

/** Names without pathspec magic, wildcards, spaces or quoting. */
const PLAIN_PATH = /^[A-Za-z0-9._+-]+(?:\/[A-Za-z0-9._+-]+)*$/;

/** At most this many files are tried for blame when the first has blobs missing. */
const BLAME_CANDIDATES = 20;

export const PATH_RULE = `the files at HEAD, at the root and below it, that the most of the newest ${PATH_SCAN_COMMITS} commits from HEAD change (git log --name-only --no-renames; ties by name); blame: the first of them, else the next most changed, whose every version is in the repository`;

/** Regular files (and their modes' blobs) at HEAD: `git ls-tree -r -z HEAD`. */
function filesAtHead(gitDir: string, env: NodeJS.ProcessEnv): string[] {
  const out: string[] = [];
  for (const e of runGit(gitDir, ['ls-tree', '-r', '-z', '--full-tree', 'HEAD'], env).split('\0')) {
    const m = /^(100644|100755) blob [0-9a-f]+\t(.*)$/s.exec(e);
    if (m) out.push(m[2]!);
  }
  return out;
}

/** How many of the newest `PATH_SCAN_COMMITS` commits change each path. */
function changeCounts(
  gitDir: string,
  env: NodeJS.ProcessEnv,
): { counts: Map<string, number>; commits: number } {
  const n = String(PATH_SCAN_COMMITS);
  const counts = new Map<string, number>();
  for (const p of runGit(
    gitDir,
    ['log', '--format=', '--name-only', '--no-renames', '-z', '-n', n, 'HEAD'],
    env,
  ).split('\0')) {
    if (p !== '') counts.set(p, (counts.get(p) ?? 0) + 1);
  }
  const commits = Number(runGit(gitDir, ['rev-list', '--count', '-n', n, 'HEAD'], env).trim());
  return { counts, commits };
}

/** Byte order, as git sorts paths. */
function byName(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a), Buffer.from(b));
}

export interface ChosenPaths {
  choice: PathChoice;
  /** Files to try for blame, in order (the chosen ones first). */
  blameCandidates: string[];
}

/** Chooses the two files by the rule above, or takes those of `--paths` (checked to be files at HEAD). */
export function choosePaths(
  gitDir: string,
  env: NodeJS.ProcessEnv,
  given: string[] | undefined,
): ChosenPaths {
  const files = filesAtHead(gitDir, env);
  const { counts, commits } = changeCounts(gitDir, env);
  const changes = (ps: (string | undefined)[]): Record<string, number> =>
    Object.fromEntries(
      ps.filter((p): p is string => p !== undefined).map((p) => [p, counts.get(p) ?? 0]),
    );
  if (given !== undefined) {
    const atHead = new Set(files);
    for (const p of given)
      if (!atHead.has(p)) throw new GitError('usage', `--paths: '${p}' is not a file in HEAD`);
    const [oneline, log = oneline] = given;
    return {
      choice: {
        source: 'option',
        rule: 'given with --paths',
        oneline,
        log,
        blame: oneline,
        changes: changes([oneline, log]),
        commitsScanned: commits,
      },
      blameCandidates: oneline === undefined ? [] : [oneline],
    };
  }
  const ranked = files
    .filter((f) => PLAIN_PATH.test(f))
    .sort((a, b) => (counts.get(b) ?? 0) - (counts.get(a) ?? 0) || byName(a, b));
  const oneline = ranked.find((f) => !f.includes('/')) ?? ranked[0];
  const log =
    ranked.find((f) => f.includes('/') && f !== oneline) ?? ranked.find((f) => f !== oneline);
  const first = [oneline, log].filter((p): p is string => p !== undefined);
  const blameCandidates = [
    ...first,
    ...ranked.filter((f) => !first.includes(f) && (counts.get(f) ?? 0) > 0),
  ].slice(0, BLAME_CANDIDATES);
  return {
    choice: {
      source: 'repository',
      rule: PATH_RULE,
      oneline,
      log,
      blame: undefined,
      changes: changes([oneline, log]),
      commitsScanned: commits,
    },
    blameCandidates,
  };
}

/** The blob ids on both sides of `git log --raw --no-abbrev` lines (files and symlinks; not gitlinks). */
export function rawBlobIds(raw: string): Set<string> {
  const ids = new Set<string>();
  for (const line of raw.split('\n')) {
    const m = /^:+((?:[0-7]{6} )+)((?:[0-9a-f]{40,64} )+)/.exec(line);
    if (!m) continue;
    const modes = m[1]!.trim().split(' ');
    const oids = m[2]!.trim().split(' ');
    oids.forEach((oid, i) => {
      if (/^0+$/.test(oid) || !/^(100644|100755|120000)$/.test(modes[i] ?? '')) return;
      ids.add(oid);
    });
  }
  return ids;
}

/** How many of `ids` the repository lacks: `git cat-file --batch-check` says "<id> missing". */
export function countMissing(gitDir: string, env: NodeJS.ProcessEnv, ids: Set<string>): number {
  if (ids.size === 0) return 0;
  const out = runGit(gitDir, ['cat-file', '--batch-check'], env, [...ids].join('\n') + '\n');
  return out.split('\n').filter((l) => / missing$/.test(l)).length;
}

/**
 * The blobs a blob-reading column reads, from git's own listing of the same walk with every
 * file change on its own line (`--no-renames`: a rename's two sides, which rename detection
 * reads, are listed as a deletion and an addition), and how many are missing.
 */
export function blobsOf(
  gitDir: string,
  env: NodeJS.ProcessEnv,
  walk: string[],
): { total: number; missing: number } {
  const ids = rawBlobIds(
    runGit(gitDir, ['log', '--format=', '--raw', '--no-abbrev', '--no-renames', ...walk], env),
  );
  return { total: ids.size, missing: countMissing(gitDir, env, ids) };
}

/** The blobs `git blame HEAD -- <path>` reads: every version of the path, merges' sides included. */
export function blameWalk(path: string): string[] {
  return ['-m', 'HEAD', '--', path];
}

export function missingReason(m: { total: number; missing: number }): string {
  return `${m.missing} of the ${m.total} blobs it reads are not in the repository (a partial clone); a lazy fetch would time the network, so it is not run`;
}
