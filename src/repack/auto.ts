import { BLOCK_FIXED, BLOCK_STORED } from '../format/zlib-stored.js';
import { FIXED_HUFFMAN } from './levels.js';

/**
 * The `auto` level: store an object uncompressed only where deflate buys little — small
 * entries (whose inflate costs more than the bytes it saves) and poorly compressible ones —
 * and compress the rest at `fallback`. The thresholds are chosen by measurement
 * (`git repack-ts bench`, docs/benchmarks-bench.md).
 *
 * The rule must be stable: an entry it stored must be stored again on the next run (its packed
 * length is then the stored length, above any ratio), and one it compressed must stay compressed.
 */
export interface AutoRule {
  /** Entries whose data inflates to fewer bytes than this are stored. */
  smallBytes: number;
  /** Entries whose compressed data is larger than this share of the inflated size are stored. */
  maxRatio: number;
  /**
   * The rest is deflated with fixed Huffman codes (FIXED_HUFFMAN) instead of at the fallback
   * level. An entry already written so keeps that encoding (its ratio under fixed codes is no
   * longer the one the rule judged), so a second run changes nothing.
   */
  fixed?: boolean | undefined;
}

/**
 * Chosen with `git repack-ts bench` on git.git, nginx and express (docs/benchmarks-bench.md):
 * commits and trees under 1 KiB, or that deflate shrinks by less than a fifth, are stored. On
 * git.git that costs half of what storing every commit and tree costs (+8.6 % against +17.1 %)
 * for about two thirds of its walk speed-up; tree deltas and small commits are where an inflate
 * costs most per byte it saves.
 */
export const DEFAULT_AUTO_RULE: Readonly<AutoRule> = Object.freeze({ smallBytes: 1024, maxRatio: 0.8 });

/** The rule `autoLevel` applies when none is passed: the default, or one set by `withAutoRule`. */
let activeRule: Readonly<AutoRule> = DEFAULT_AUTO_RULE;

/**
 * Runs `fn` with `rule` as the `auto` rule (the bench's `auto:<bytes>:<ratio>` scenarios use it
 * to compare candidate rules with the real rewriter); the previous rule comes back afterwards.
 */
export function withAutoRule<T>(rule: AutoRule, fn: () => T): T {
  const saved = activeRule;
  activeRule = Object.freeze({ ...rule });
  try {
    return fn();
  } finally {
    activeRule = saved;
  }
}

/** `withAutoRule` for an asynchronous rewrite: the rule stays in force until `fn` settles. */
export async function withAutoRuleAsync<T>(rule: AutoRule, fn: () => Promise<T>): Promise<T> {
  const saved = activeRule;
  activeRule = Object.freeze({ ...rule });
  try {
    return await fn();
  } finally {
    activeRule = saved;
  }
}

export function currentAutoRule(): Readonly<AutoRule> {
  return activeRule;
}

/**
 * Level for one entry under `auto`. `size` is what the entry's data inflates to (a delta's own
 * size for deltas); `packedLen` its current compressed length, when known; `block` the scan's
 * code for its first deflate block (PackScan.stored).
 */
export function autoLevel(size: number, packedLen: number | undefined, fallback: number, rule: AutoRule = activeRule, block = 0): number {
  if (size < rule.smallBytes) return 0;
  // Under `fixed`, an entry already written with fixed codes keeps them, and one whose stream
  // starts with a stored block (what zlib's Z_FIXED writes when codes would not shrink it) stays
  // stored: either way a second run changes nothing.
  if (rule.fixed === true && block === BLOCK_FIXED) return FIXED_HUFFMAN;
  if (rule.fixed === true && block === BLOCK_STORED) return 0;
  if (packedLen !== undefined && packedLen > rule.maxRatio * size) return 0;
  return rule.fixed === true ? FIXED_HUFFMAN : fallback;
}

/**
 * Under `auto`, the longest stream an entry compressed at the fallback level may keep: a longer
 * one is stored instead. The next run judges the ratio on the stream written now, so an entry
 * first packed at another level (and re-encoded here) would otherwise be stored one run later.
 */
export function autoMaxLength(size: number, rule: AutoRule = activeRule): number {
  return rule.maxRatio * size;
}
