import type { Level } from '../repack/levels.js';
import type { CacheVariant } from './base-cache.js';
import type { LookupResult } from './lookup.js';
import type { WalkStats } from './walk.js';

/** The bench's result types (what `bench --json` prints), below the command that fills them. */

/**
 * The commit-graph a column is timed with: none (`off`), one without Bloom filters (`cg`, the
 * seed's `+cg`), one with changed-path Bloom filters (`bloom`), or the writing of the latter
 * (`write`).
 */
export type CommitGraphState = 'off' | 'cg' | 'bloom' | 'write';

/** One timed git command (a column of the table). */
export interface BenchCommand {
  id: string;
  /** Column heading. */
  label: string;
  /** git's arguments after `--git-dir` and the `-c` settings. */
  args: string[];
  /** Whether git may read a commit-graph (every state but `off`). */
  commitGraph: boolean;
  state: CommitGraphState;
  /** `seed`: the seed's walks (a table with a row per scenario); `user`: the commands users run. */
  group: 'seed' | 'user';
  /** Reads blob contents: skipped where the blobs it reads are missing (partial clones). */
  needsBlobs: boolean;
}

/** A column that was not timed, and why. */
export interface SkippedCommand {
  id: string;
  label: string;
  line: string;
  reason: string;
}

/** git's own count of how it used the changed-path Bloom filters (trace2, revision.c and blame.c). */
export interface BloomCheck {
  scenario: string;
  /** The command traced. */
  line: string;
  /** revision.c's statistics: commits whose filter said "definitely not", "maybe", or that had none. */
  definitelyNot: number;
  maybe: number;
  filterNotPresent: number;
  falsePositive: number;
  /** blame.c's `bloom/queries` and `bloom/response-no`, when blame was traced. */
  blameQueries?: number | undefined;
  blameNo?: number | undefined;
}

/** The files of the path-limited columns and how they were chosen. */
export interface PathChoice {
  /** `repository`: by the rule below; `option`: given with --paths. */
  source: 'repository' | 'option';
  rule: string;
  oneline?: string | undefined;
  log?: string | undefined;
  blame?: string | undefined;
  /** Commits among those scanned that change each chosen file. */
  changes: Record<string, number>;
  commitsScanned: number;
}

export interface Cell {
  /** Median of the runs, seconds, on the result's clock. */
  median: number;
  runs: number[];
  /** Both clocks of every run (wall-clock and git's user + system CPU seconds; null where unreadable). */
  wall: number[];
  cpu: (number | null)[];
  /**
   * Median over rounds of (this / none in the same round) − 1; 0 for none itself; null ("n/a")
   * when none measured 0 in a round (a command shorter than the clock's tick, e.g. --min-time=0).
   */
  vsNone: number | null;
  /** (max − min) / median of the runs. */
  spread: number;
}

export interface ScenarioResult {
  name: string;
  description: string;
  levels: { commit: Level; tree: Level; blob: Level; tag: Level };
  /** Sum of the `.pack` files after the rewrite. */
  packBytes: number;
  /** Everything under objects/ but the commit-graph. */
  objectDirBytes: number;
  commitGraphBytes: number;
  packs: { name: string; bytes: number; objects: number }[];
  reencoded: { commit: number; tree: number; blob: number; tag: number };
  setupSeconds: number;
  /** The commit-graph with Bloom filters written before the user columns (untimed). */
  bloomGraphBytes?: number | undefined;
  bloomGraphSeconds?: number | undefined;
  /** For auto scenarios: a second rewrite with the same settings would re-encode this many entries (must be 0). */
  rerunReencodes?: number | undefined;
  warm: Record<string, Cell>;
  cold: Record<string, Cell>;
  copy?: string | undefined;
}

export interface BenchResult {
  repository: string;
  gitVersion: string;
  objects: number;
  promisor: boolean;
  runs: number;
  clock: 'wall' | 'cpu';
  logN: number;
  /** Per command: invocations per warm run (short commands are batched; cold runs are single). */
  commands: (BenchCommand & { line: string; repeat: number })[];
  /** Columns asked for but not timed, with the reason (blobs missing in a partial clone, no path). */
  skipped: SkippedCommand[];
  /** What each state of the columns means (the report's and the chart's legend). */
  states: Partial<Record<CommitGraphState, string>>;
  paths?: PathChoice | undefined;
  /** Per scenario: that git used the Bloom filters of the `+bloom` columns (checked before timing them). */
  bloom: BloomCheck[];
  cold: { requested: boolean; available: boolean; reason: string; rereadMBps?: number | undefined };
  scenarios: ScenarioResult[];
  reader?: ReaderResults | undefined;
  workDir: string;
  kept: boolean;
  seconds: number;
}

/** The zstd sub-benchmark's result (commands/bench-zstd.ts). */
export type ZstdResult =
  | { available: false; reason: string }
  | {
      available: true;
      reader: string;
      objects: number;
      zstdBytes: number;
      zlibBytes: number;
      zstdSeconds: number;
      zlibSeconds: number;
      rounds: number;
    };

export interface CacheRow {
  workload: 'log-raw' | 'log-S';
  variant: CacheVariant;
  maxEntries: number;
  /** Best of the rounds, CPU seconds of this process (the seed quoted best-of-3). */
  seconds: number;
  hitRate: number;
  inflated: number;
  evictionSteps: number;
  walk: WalkStats;
}

export interface CacheResult {
  commits: number;
  maxBytes: number;
  rounds: number;
  rows: CacheRow[];
}

export interface ReaderResults {
  cache?: CacheResult | undefined;
  lookup?: LookupResult | undefined;
  zstd?: ZstdResult | undefined;
}
