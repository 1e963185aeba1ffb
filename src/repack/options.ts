import type { HashAlgo } from '../hash/algo.js';
import type { ObjectDatabase } from '../store/odb.js';
import type { ChangedDestination } from './changed-pack.js';
import type { CopyProof, WholePackHasher } from './duplicates.js';
import type { AutoRule } from './encoding.js';
import type { Levels } from './levels.js';
import type { WrittenPack, ZpackOutput } from './sink.js';
import type { RewriteStats } from './stats.js';

/** What `rewritePartition` (rewrite.ts) is asked to do, and what it gives back. */
export interface RewriteOptions {
  zpack?: ZpackOutput | undefined;
  algo: HashAlgo;
  levels: Levels;
  /** Level of entries that `auto` decides to compress, and of what `keep` must compress anew. */
  autoFallback?: number | undefined;
  /** The `auto` rule (DEFAULT_AUTO_RULE unless a benchmark tries another). */
  autoRule?: AutoRule | undefined;
  /** Reads objects from any pack or loose file (for deltas whose base is not in the output). */
  odb: ObjectDatabase;
  /** Objects that stay elsewhere (kept or cruft packs): not packed again. */
  excluded: (id: Uint8Array, pos: number) => boolean;
  /** Hashes the copy of an excluded object that stays (plan.ts `proveExcluded`). */
  proveExcluded?: ((id: Uint8Array, pos: number) => CopyProof) | undefined;
  /** Hashes a whole pack base first (commands/ gives verify's): for a pack most of whose objects are held twice. */
  hashWholePack?: WholePackHasher | undefined;
  dryRun: boolean;
  /** Temporary file names for the pack, idx and rev (in objects/pack). */
  tmp: { pack: string; idx: string; rev: string };
  writeRev: boolean;
  onProgress?: ((phase: string, done: number, total: number) => void) | undefined;
  signal?: AbortSignal | undefined;
  /**
   * Write nothing when the result would be the one source pack byte for byte (the caller
   * knows its other files, such as the `.rev`, need nothing either); `unchanged` says so.
   */
  skipIfUnchanged?: boolean | undefined;
  threads?: number | undefined; // forced worker threads (`forcedThreads`); else as the work deserves
  /** Where the entries written anew go for git to read back as they are written (changed-pack.ts). */
  changedCheck?: (() => ChangedDestination) | undefined;
  /** The largest entry held whole (MAX_HELD_ENTRY unless a test lowers it). */
  maxHeldEntry?: number | undefined;
  /**
   * Objects of a zstd pack larger than this (core.bigFileThreshold, for zstd-import) are
   * decompressed, hashed and deflated a chunk at a time, never held.
   */
  streamAbove?: number | undefined;
}

export interface RewriteResult {
  stats: RewriteStats;
  written: WrittenPack | undefined;
  unchanged?: boolean;
}
