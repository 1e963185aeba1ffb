import { GitError } from '../errors.js';
import type { BenchCommand, CommitGraphState } from './types.js';

/**
 * The bench's columns: the seed's walks (`seed`) and the commands users run (`user`, issue 32),
 * each timed in a commit-graph state. An id is `<base>` (no commit-graph), `<base>-cg` (a
 * commit-graph without Bloom filters: the seed's `+cg`) or `<base>-bloom` (a commit-graph with
 * changed-path Bloom filters); `cg-write` times the writing of that commit-graph itself.
 */
export const SEED_COMMAND_IDS = [
  'revs',
  'revs-cg',
  'objects',
  'objects-cg',
  'log',
  'log-cg',
] as const;

const USER_BASES = [
  'subjects',
  'shortlog',
  'path-oneline',
  'path-log',
  'log-raw',
  'blame',
  'log-p',
  'count',
] as const;
export const USER_COMMAND_IDS = [
  ...USER_BASES.flatMap((b) => [b, `${b}-bloom`]),
  'cg-write',
] as const;

export const COMMAND_IDS: readonly string[] = [
  ...new Set<string>([...SEED_COMMAND_IDS, ...USER_COMMAND_IDS]),
];

/** `--commands` presets; `user` is the default (issue 32: the gain as users have it). */
export const COMMAND_PRESETS: Record<string, readonly string[]> = {
  seed: SEED_COMMAND_IDS,
  user: USER_COMMAND_IDS,
  all: COMMAND_IDS,
};
export const DEFAULT_COMMANDS = 'user';

/** Commits of `git log --raw -n` and `git log -p -n` in the user columns (the figures). */
export const USER_LOG_RAW_N = 5000;
export const USER_LOG_P_N = 300;

/** What each state means, for the report, the chart and `--json`. */
export const STATE_TEXT: Record<CommitGraphState, string> = {
  off: 'no commit-graph (-c core.commitGraph=false)',
  cg: 'with a commit-graph without Bloom filters (git commit-graph write --reachable, untimed)',
  bloom:
    'with a commit-graph holding changed-path Bloom filters (git commit-graph write --reachable --changed-paths, untimed; git log -- <path> and git blame read them)',
  write:
    'the commit-graph with Bloom filters written from nothing (the previous one removed, untimed, before each invocation)',
};

/** Column-heading suffix of each state (the seed's `+cg`, and `+bloom`). */
export const STATE_MARK: Record<CommitGraphState, string> = {
  off: '',
  cg: ' +cg',
  bloom: ' +bloom',
  write: '',
};

/** Expands presets, checks ids, keeps the first occurrence of each. */
export function resolveCommandIds(spec: string | undefined): string[] {
  const items = (spec === undefined || spec.trim() === '' ? DEFAULT_COMMANDS : spec)
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  const out: string[] = [];
  for (const i of items) {
    const ids = COMMAND_PRESETS[i] ?? (COMMAND_IDS.includes(i) ? [i] : undefined);
    if (ids === undefined)
      throw new GitError(
        'usage',
        `unknown value '${i}' (known: ${Object.keys(COMMAND_PRESETS).join(', ')}, ${COMMAND_IDS.join(', ')})`,
      );
    out.push(...ids);
  }
  return [...new Set(out)];
}

/** The files of the path-limited commands: `log --oneline`/`log` each take one, `blame` its own. */
export interface CommandPaths {
  oneline?: string | undefined;
  log?: string | undefined;
  blame?: string | undefined;
}

interface Base {
  label: string;
  args: string[];
  group: 'seed' | 'user';
  /** Reads blob contents (skipped where they are missing). */
  needsBlobs?: boolean;
}

function bases(opts: {
  logN: number;
  promisor: boolean;
  paths: CommandPaths;
}): Record<string, Base | undefined> {
  const missing = opts.promisor ? ['--missing=allow-any'] : [];
  const p = opts.paths;
  const withPath = (
    label: string,
    args: string[],
    path: string | undefined,
    needsBlobs = false,
  ): Base | undefined =>
    path === undefined
      ? undefined
      : { label: `${label} ${path}`, args: [...args, path], group: 'user', needsBlobs };
  return {
    revs: { label: 'revs', args: ['rev-list', '--count', '--all'], group: 'seed' },
    objects: {
      label: 'objects',
      args: ['rev-list', '--objects', '--all', ...missing],
      group: 'seed',
    },
    log: { label: 'log', args: ['log', '--raw', '-n', String(opts.logN)], group: 'seed' },
    subjects: {
      label: 'log --format=%s --all',
      args: ['log', '--format=%s', '--all'],
      group: 'user',
    },
    shortlog: { label: 'shortlog -s HEAD', args: ['shortlog', '-s', 'HEAD'], group: 'user' },
    'path-oneline': withPath('log --oneline --', ['log', '--oneline', '--'], p.oneline),
    'path-log': withPath('log --', ['log', '--'], p.log),
    'log-raw': {
      label: `log --raw -n ${USER_LOG_RAW_N}`,
      args: ['log', '--raw', '-n', String(USER_LOG_RAW_N)],
      group: 'user',
    },
    blame: withPath('blame HEAD --', ['blame', 'HEAD', '--'], p.blame, true),
    'log-p': {
      label: `log -p -n ${USER_LOG_P_N}`,
      args: ['log', '-p', '-n', String(USER_LOG_P_N)],
      group: 'user',
      needsBlobs: true,
    },
    count: {
      label: 'rev-list --count --all',
      args: ['rev-list', '--count', '--all'],
      group: 'user',
    },
    'cg-write': {
      label: 'commit-graph write --reachable --changed-paths',
      args: ['commit-graph', 'write', '--reachable', '--changed-paths', '--no-progress'],
      group: 'user',
    },
  };
}

/** Splits an id into its command and its state. */
export function parseCommandId(id: string): { base: string; state: CommitGraphState } {
  if (id === 'cg-write') return { base: id, state: 'write' };
  if (id.endsWith('-cg')) return { base: id.slice(0, -3), state: 'cg' };
  if (id.endsWith('-bloom')) return { base: id.slice(0, -6), state: 'bloom' };
  return { base: id, state: 'off' };
}

/**
 * The columns to time, in the order given. A path-limited command whose path could not be
 * chosen is not returned (the caller says why). `count` is the seed's `revs` again, in the
 * user table (with `--commands=all` both are timed: two measurements of one command).
 */
export function benchCommands(
  ids: readonly string[],
  opts: { logN: number; promisor: boolean; paths?: CommandPaths | undefined },
): BenchCommand[] {
  const table = bases({ ...opts, paths: opts.paths ?? {} });
  const out: BenchCommand[] = [];
  for (const id of ids) {
    const { base, state } = parseCommandId(id);
    if (!(base in table) || !COMMAND_IDS.includes(id))
      throw new GitError('usage', `unknown command '${id}' (known: ${COMMAND_IDS.join(', ')})`);
    const b = table[base];
    if (b === undefined) continue;
    out.push({
      id,
      label: `${b.label}${STATE_MARK[state]}`,
      args: b.args,
      commitGraph: state !== 'off',
      state,
      group: b.group,
      needsBlobs: b.needsBlobs === true,
    });
  }
  return out;
}

/** The `-c` settings of a state: what makes git use (or ignore) the commit-graph and its filters. */
export function stateConfig(state: CommitGraphState): string[] {
  if (state === 'off') return ['-c', 'core.commitGraph=false'];
  if (state === 'bloom')
    return ['-c', 'core.commitGraph=true', '-c', 'commitGraph.readChangedPaths=true'];
  return ['-c', 'core.commitGraph=true'];
}

/** git's arguments for a column (after `--git-dir`). */
export function gitArgs(c: BenchCommand): string[] {
  return [...stateConfig(c.state), ...c.args];
}

/** git's command line for a column, as the report prints it. */
export function commandLine(c: BenchCommand): string {
  return `git ${gitArgs(c).join(' ')}`;
}
