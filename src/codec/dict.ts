import { spawnSync } from 'node:child_process';
import { forgetOnSignal, removeOnSignal } from '../cleanup.js';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { OBJ_BLOB, OBJ_COMMIT, OBJ_TAG, OBJ_TREE } from '../format/object-type.js';

/**
 * Dictionary kinds of a zstd pack: one per object type, and one for the deltas of trees and of
 * blobs (their data looks nothing like whole objects). Measured (docs/benchmarks.md §5): a 110 KiB
 * dictionary trained on a repository's own objects takes trees from 69.5 % (zlib) to ~31 %.
 */
export const DICT_KINDS = ['commit', 'tree', 'blob', 'tag', 'tree-delta', 'blob-delta'] as const;
export type DictKind = (typeof DICT_KINDS)[number];
export const NO_DICT = -1;

/** The object type each kind's entries resolve to (deltas: the type at the bottom of the chain). */
const KIND_TYPES = [OBJ_COMMIT, OBJ_TREE, OBJ_BLOB, OBJ_TAG, OBJ_TREE, OBJ_BLOB] as const;

export function typeOfKind(kind: number): number {
  return KIND_TYPES[kind]!;
}

/** Kind number (index in DICT_KINDS) for an entry of `realType`, a delta or not; -1 if none. */
export function kindOf(realType: number, isDelta: boolean): number {
  if (!isDelta) {
    if (realType === OBJ_COMMIT) return 0;
    if (realType === OBJ_TREE) return 1;
    if (realType === OBJ_BLOB) return 2;
    if (realType === OBJ_TAG) return 3;
    return NO_DICT;
  }
  if (realType === OBJ_TREE) return 4;
  if (realType === OBJ_BLOB) return 5;
  return NO_DICT;
}

export const DEFAULT_DICT_SIZE = 110 * 1024;

/**
 * Trains a dictionary from samples: zstd's own trainer (`zstd --train`, the Debian package) when
 * it is installed, else a raw-content dictionary built here (a simplified COVER: the segments
 * whose d-mers occur in the most samples, best last). Returns undefined when the samples are too
 * few to be worth a dictionary.
 */
export function trainDictionary(
  samples: Buffer[],
  size = DEFAULT_DICT_SIZE,
  prefer: 'auto' | 'js' = 'auto',
): { dict: Buffer; method: string } | undefined {
  let total = 0;
  for (const s of samples) total += s.length;
  if (samples.length < 16 || total < 4 * 1024) return undefined;
  const want = Math.min(size, Math.max(4096, Math.floor(total / 4)));
  if (prefer === 'auto') {
    const d = trainWithZstdCli(samples, want);
    if (d !== undefined) return { dict: d, method: 'zstd --train' };
  }
  const d = coverDict(samples, want);
  return d.length >= 256 ? { dict: d, method: 'raw cover (built-in)' } : undefined;
}

function trainWithZstdCli(samples: Buffer[], size: number): Buffer | undefined {
  const probe = spawnSync('zstd', ['--version'], { encoding: 'utf8' });
  if (probe.status !== 0) return undefined;
  const dir = removeOnSignal(mkdtempSync(join(tmpdir(), 'rts-dict-')));
  try {
    samples.forEach((s, i) => writeFileSync(join(dir, `s${i}`), s));
    const out = join(dir, 'dict');
    const r = spawnSync('zstd', ['--train', '-q', '-r', dir, '-o', out, `--maxdict=${size}`], {
      encoding: 'utf8',
      maxBuffer: 1 << 24,
    });
    if (r.status !== 0) return undefined;
    return readFileSync(out);
  } catch {
    return undefined;
  } finally {
    rmSync(dir, { recursive: true, force: true });
    forgetOnSignal(dir);
  }
}

/** Seeded selection of up to `n` samples (deterministic output for the same input). */
function pick(samples: Buffer[], n: number, seed: number): Buffer[] {
  const idx = samples.map((_, i) => i);
  let s = seed >>> 0;
  for (let i = idx.length - 1; i > 0; i--) {
    s = (Math.imul(s, 1103515245) + 12345) >>> 0;
    const j = s % (i + 1);
    [idx[i], idx[j]] = [idx[j]!, idx[i]!];
  }
  return idx.slice(0, n).map((i) => samples[i]!);
}

/**
 * A raw-content dictionary (zstd accepts any bytes as one): split the samples into epochs, pick
 * in each the k-byte segment whose d-mers occur in the most samples, never the same d-mers twice,
 * and lay the segments out best last (closest to the data, cheapest offsets).
 */
export function coverDict(
  samples: Buffer[],
  size: number,
  k = 256,
  d = 8,
  tableBits = 22,
  maxBytes = 64 << 20,
): Buffer {
  const used: Buffer[] = [];
  let tot = 0;
  for (const s of pick(samples, samples.length, 5)) {
    if (tot >= maxBytes) break;
    used.push(s);
    tot += s.length;
  }
  const mask = (1 << tableBits) - 1;
  const freq = new Uint32Array(1 << tableBits);
  const seen = new Uint32Array(1 << tableBits);
  const hashAt = (b: Uint8Array, i: number): number => {
    let h = 0x811c9dc5;
    for (let j = 0; j < d; j++) h = Math.imul(h ^ b[i + j]!, 0x01000193);
    return (h ^ (h >>> 15)) & mask;
  };
  let stamp = 0;
  for (const s of used) {
    stamp++;
    for (let i = 0; i + d <= s.length; i++) {
      const h = hashAt(s, i);
      if (seen[h] !== stamp) {
        seen[h] = stamp;
        freq[h]!++;
      }
    }
  }
  for (let i = 0; i < freq.length; i++) if (freq[i]! < 2) freq[i] = 0;
  const all = Buffer.concat(used);
  const epochs = Math.max(1, Math.floor(size / k));
  const epochLen = Math.floor(all.length / epochs);
  const segs: { score: number; buf: Buffer }[] = [];
  const inWin = new Uint32Array(1 << tableBits);
  const w = k - d + 1;
  for (let ep = 0; ep < epochs; ep++) {
    const start = ep * epochLen;
    const end = Math.min(all.length, start + epochLen);
    if (end - start < k) continue;
    const hs = new Int32Array(end - start);
    for (let i = start; i + d <= end; i++) hs[i - start] = hashAt(all, i);
    let score = 0;
    let best = -1;
    let bestAt = start;
    for (let i = start; i + d <= end; i++) {
      const h = hs[i - start]!;
      if (inWin[h]!++ === 0) score += freq[h]!;
      if (i - start >= w) {
        const o = hs[i - start - w]!;
        if (--inWin[o]! === 0) score -= freq[o]!;
      }
      if (i - start >= w - 1 && score > best) {
        best = score;
        bestAt = i - w + 1;
      }
    }
    for (let i = start; i + d <= end; i++) inWin[hs[i - start]!] = 0;
    if (best <= 0) continue;
    segs.push({ score: best, buf: Buffer.from(all.subarray(bestAt, bestAt + k)) });
    for (let i = bestAt; i + d <= bestAt + k; i++) freq[hashAt(all, i)] = 0;
  }
  segs.sort((a, b) => a.score - b.score);
  const out = Buffer.concat(segs.map((s) => s.buf));
  return out.length > size ? out.subarray(out.length - size) : out;
}
