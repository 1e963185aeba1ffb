/**
 * The `auto` level: store an object uncompressed only where deflate buys little — small
 * entries (whose inflate costs more than the bytes it saves) and poorly compressible ones —
 * and compress the rest at `fallback`. The thresholds are chosen by measurement
 * (`git repack-ts bench`, docs/benchmarks.md).
 *
 * The rule must be stable: an entry it stored must be stored again on the next run (its packed
 * length is then the stored length, above any ratio), and one it compressed must stay compressed.
 */
export interface AutoRule {
  /** Entries whose data inflates to fewer bytes than this are stored. */
  smallBytes: number;
  /** Entries whose compressed data is larger than this share of the inflated size are stored. */
  maxRatio: number;
}

export const DEFAULT_AUTO_RULE: AutoRule = { smallBytes: 4096, maxRatio: 0.85 };

/**
 * Level for one entry under `auto`. `size` is what the entry's data inflates to (a delta's own
 * size for deltas); `packedLen` its current compressed length, when known.
 */
export function autoLevel(size: number, packedLen: number | undefined, fallback: number, rule: AutoRule = DEFAULT_AUTO_RULE): number {
  if (size < rule.smallBytes) return 0;
  if (packedLen !== undefined && packedLen > rule.maxRatio * size) return 0;
  return fallback;
}
