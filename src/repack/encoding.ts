import {
  BLOCK_FIXED,
  BLOCK_NOT_ZLIB,
  BLOCK_STORED,
  storedZlibLength,
} from '../format/zlib-stored.js';
import { FIXED_HUFFMAN, flevelOf, type Levels } from './levels.js';

/**
 * The encoding rule: what an entry of the new pack becomes, in one place (docs/decisions.md,
 * "Levels mean what they say"). The main thread decides from what the scan saw of the entry's
 * stream (its zlib FLEVEL, its first block and whether it is stored whole); where that cannot
 * tell, the entry is re-encoded and the re-encoding thread keeps the old stream when the new one
 * has the same encoding (`sameEncoding`). The decision depends on the object and the target
 * only, never on how the entry happens to be encoded today: the same command converges on the
 * same pack from any starting pack.
 */

/**
 * The `auto` level: store an object uncompressed only where deflate buys little — small
 * entries (whose inflate costs more than the bytes it saves) and poorly compressible ones —
 * and compress the rest at the fallback level. The thresholds are chosen by measurement
 * (`git repack-ts bench`, docs/benchmarks-bench.md).
 */
export interface AutoRule {
  /** Entries whose data inflates to fewer bytes than this are stored. */
  smallBytes: number;
  /**
   * Entries that deflate at the fallback level (at fixed codes under `fixed`) shrinks to more
   * than this share of their inflated size are stored.
   */
  maxRatio: number;
  /** The rest is deflated with fixed Huffman codes (FIXED_HUFFMAN) instead of at the fallback level. */
  fixed?: boolean | undefined;
}

/**
 * Chosen with `git repack-ts bench` on git.git, nginx and express (docs/benchmarks-bench.md):
 * commits and trees under 1 KiB, or that deflate shrinks by less than a fifth, are stored. On
 * git.git that costs half of what storing every commit and tree costs (+8.6 % against +17.1 %)
 * for about two thirds of its walk speed-up; tree deltas and small commits are where an inflate
 * costs most per byte it saves.
 */
export const DEFAULT_AUTO_RULE: Readonly<AutoRule> = Object.freeze({
  smallBytes: 1024,
  maxRatio: 0.8,
});

/**
 * Under `auto`, a stream already at the fallback level's FLEVEL is trusted to be what deflate at
 * that level gives when it is this far under the ratio; nearer the line the data is deflated
 * again to decide. zlib builds (git's system zlib, node's) differ by well under this on the same
 * data at the same level, so the shortcut never decides otherwise than deflating would.
 */
export const AUTO_TRUST_MARGIN = 0.05;

/** What the scan saw of a pack entry's data: zlib FLEVEL, first-block code, length, declared size. */
export interface EntryStream {
  flevel: number;
  block: number;
  dataLen: number;
  size: number;
}

/**
 * Whether an entry's stream already has `level`, as far as its header tells:
 * - level 0: a stream of stored blocks only (FLEVEL 0, stored first block, stored length);
 * - FIXED_HUFFMAN: FLEVEL 0 and fixed codes first (what zlib writes for Z_FIXED);
 * - levels 1..9 and -1: the level's FLEVEL class (deflate.c: 0-1, 2-5, 6, 7-9), but never a
 *   level-0 stream, which shares FLEVEL 0 with level 1: that one is re-encoded, and kept only if
 *   deflate at the level stores it too (incompressible data; see sameEncoding).
 * A stream that is not zlib (a zstd pack's) never has a zlib level.
 */
export function hasLevel(level: number, s: EntryStream): boolean {
  if (s.block === BLOCK_NOT_ZLIB) return false;
  if (level === 0) return s.block === BLOCK_STORED;
  if (level === FIXED_HUFFMAN) return s.flevel === 0 && s.block === BLOCK_FIXED;
  if (s.block === BLOCK_STORED) return false;
  return s.flevel === flevelOf(level);
}

/** How one entry is written: at `level`, copied when `copy`, else re-encoded with streams over `maxLen` stored. */
export interface EntryEncoding {
  level: number;
  copy: boolean;
  maxLen: number;
}

/**
 * `auto` for a pack entry: stored under `smallBytes`; otherwise deflated at `fallback` (fixed
 * codes under `fixed`) and stored instead when that is longer than `maxRatio` of the size. Only a
 * stream at the fallback's FLEVEL well under the ratio is copied without deflating again.
 */
export function autoEncoding(rule: AutoRule, fallback: number, s: EntryStream): EntryEncoding {
  if (s.size < rule.smallBytes) return { level: 0, copy: hasLevel(0, s), maxLen: Infinity };
  const level = rule.fixed === true ? FIXED_HUFFMAN : fallback;
  const maxLen = rule.maxRatio * s.size;
  const trusted =
    rule.fixed !== true && hasLevel(level, s) && s.dataLen <= maxLen * (1 - AUTO_TRUST_MARGIN);
  return { level, copy: trusted, maxLen };
}

/** `auto` for an object that is compressed anew whatever it was (a loose object, a delta written whole). */
export function autoDirect(rule: AutoRule, fallback: number, size: number): EntryEncoding {
  if (size < rule.smallBytes) return { level: 0, copy: false, maxLen: Infinity };
  return {
    level: rule.fixed === true ? FIXED_HUFFMAN : fallback,
    copy: false,
    maxLen: rule.maxRatio * size,
  };
}

/**
 * The encoding class of a zlib stream of `size` inflated bytes, as the rule tells encodings apart:
 * its FLEVEL, and whether it is stored blocks only; in FLEVEL 0 also fixed codes (Z_FIXED's
 * output is not level 1's).
 */
function encodingClass(z: Uint8Array, size: number): number {
  const flevel = z[1]! >> 6;
  const btype = (z[2]! >> 1) & 3;
  const kind =
    btype === 0 && z.length >= storedZlibLength(size) ? 1 : flevel === 0 && btype === 1 ? 2 : 0;
  return flevel * 4 + kind;
}

/**
 * Whether a re-encoded zlib stream `next` has the encoding the old stream `old` already had (both
 * inflating to `size` bytes), so that the old bytes are kept: a stored stream that deflate at the
 * target level stores too, a stream at the level's FLEVEL that `auto` re-checked.
 */
export function sameEncoding(old: Uint8Array, next: Uint8Array, size: number): boolean {
  if (old.length < 3 || next.length < 3) return false;
  return encodingClass(old, size) === encodingClass(next, size);
}

/** What a rewrite asks for: a level per base type, the auto rule and fallback, zstd output or not. */
export interface Targets {
  levels: Levels;
  rule: AutoRule;
  /** The level of what `auto` compresses and of what a type at `keep` must compress anew. */
  fallback: number;
  /** A zstd pack is written: nothing is copied as it is, and there is no length rule. */
  zstd: boolean;
}

/** The encoding of a pack entry whose (base) type is `type` and whose stream the scan saw as `s`. */
export function encodingFor(t: Targets, type: number, s: EntryStream): EntryEncoding {
  const l = t.levels[type as 1 | 2 | 3 | 4];
  const enc: EntryEncoding =
    l === 'auto'
      ? autoEncoding(t.rule, t.fallback, s)
      : l === 'keep'
        ? { level: t.fallback, copy: s.block !== BLOCK_NOT_ZLIB, maxLen: Infinity }
        : { level: l, copy: hasLevel(l, s), maxLen: Infinity };
  if (t.zstd) {
    enc.copy = false;
    enc.maxLen = Infinity;
  }
  return enc;
}

/** The encoding of an object compressed anew whatever it was (a loose object, a delta written whole). */
export function directEncoding(t: Targets, type: number, size: number): EntryEncoding {
  const l = t.levels[type as 1 | 2 | 3 | 4];
  if (l === 'auto') return autoDirect(t.rule, t.fallback, size);
  return { level: l === 'keep' ? t.fallback : l, copy: false, maxLen: Infinity };
}

/**
 * Whether an entry the rule re-encodes may still come out with the encoding it has, and be kept
 * (sameEncoding): its stream is at the FLEVEL the new one will have, or it is stored and the
 * length rule may store it again. A rewrite whose every other entry is copied tries these first
 * and writes nothing when all are kept.
 */
export function mayKeep(enc: EntryEncoding, s: EntryStream): boolean {
  if (enc.copy || s.block === BLOCK_NOT_ZLIB) return false;
  return s.flevel === flevelOf(enc.level) || (s.block === BLOCK_STORED && enc.maxLen !== Infinity);
}

/**
 * The targets as a word (`c=0,t=0,b=keep,g=keep`, then `,rule=…,f=…` when a type is `auto`): what
 * store/proven.ts records a pack as proven at. A pack at a word's levels is at another's when each
 * type the other sets (not `keep`) has the same level, and `auto` the same rule and fallback.
 */
export function targetsKey(t: Omit<Targets, 'zstd'>): string {
  const l = t.levels;
  const key = `c=${l[1]},t=${l[2]},b=${l[3]},g=${l[4]}`;
  if (![l[1], l[2], l[3], l[4]].includes('auto')) return key;
  return `${key},rule=${t.rule.smallBytes}:${t.rule.maxRatio}${t.rule.fixed === true ? ':fixed' : ''},f=${t.fallback}`;
}

/** Does a pack proven at the targets `had` (a `targetsKey`) already have the targets `want`? */
export function targetsCover(had: string, want: string): boolean {
  const parse = (k: string): Map<string, string> =>
    new Map(k.split(',').map((p) => p.split('=') as [string, string]));
  const h = parse(had);
  const w = parse(want);
  let auto = false;
  for (const type of ['c', 't', 'b', 'g']) {
    const lw = w.get(type);
    if (lw === undefined || h.get(type) === undefined) return false;
    if (lw === 'keep') continue;
    if (h.get(type) !== lw) return false;
    if (lw === 'auto') auto = true;
  }
  return !auto || (h.get('rule') === w.get('rule') && h.get('f') === w.get('f'));
}
