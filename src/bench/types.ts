import type { Level } from '../repack/levels.js';
import type { CacheVariant } from './base-cache.js';
import type { LookupResult } from './lookup.js';
import type { WalkStats } from './walk.js';

/** The bench's result types (what `bench --json` prints), below the command that fills them. */

/** One timed git command (a column of the table). */
export interface BenchCommand {
  id: string;
  /** Column heading. */
  label: string;
  /** git's arguments after `--git-dir` and the `-c` settings. */
  args: string[];
  commitGraph: boolean;
}

export interface Cell {
  /** Median of the runs, seconds, on the result's clock. */
  median: number;
  runs: number[];
  /** Both clocks of every run (wall-clock and git's user + system CPU seconds). */
  wall: number[];
  cpu: number[];
  /** Median over rounds of (this / none in the same round) − 1; 0 for none itself. */
  vsNone: number;
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

