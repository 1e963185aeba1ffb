import { GitError } from '../errors.js';
import { sortIds } from '../hash/sort.js';
import type { IdxSource, Offsets } from '../format/idx.js';
import { releaseNow } from '../release.js';
import type { NewIndex } from './sink.js';
import type { Plan } from './plan.js';

/**
 * The index of the pack a plan wrote: its objects in id order, merged from the sources' indexes
 * and the loose ids, with the offsets and CRC32s the writing recorded.
 */

/** Where selected object `s`'s id is: sets `ref.buf` and `ref.pos`. */
export function idOf(p: Plan, s: number, ref: { buf: Uint8Array; pos: number }): void {
  const pi = p.srcPack[s]!;
  if (pi === p.looseMark) {
    ref.buf = p.input.loose[p.srcIdx[s]!]!;
    ref.pos = 0;
  } else {
    ref.buf = p.input.packs[pi]!.idx.ids;
    ref.pos = p.srcIdx[s]! * p.len;
  }
}

/**
 * The selected objects in id order: a merge of the source indexes (each already sorted) and of
 * the sorted loose ids, keeping only the selected copy of each object. Many sources fall back
 * to sorting a gathered copy of the ids.
 */
export function sortedSelection(plan: Plan): Uint32Array {
  const { packs, loose } = plan.input;
  const { srcPack, srcIdx, n, len, looseMark } = plan;
  const out = new Uint32Array(n);
  if (packs.length > 32) {
    const ids = Buffer.allocUnsafe(n * len);
    for (let s = 0; s < n; s++) {
      const pi = srcPack[s]!;
      if (pi === looseMark) loose[srcIdx[s]!]!.copy(ids, s * len);
      else packs[pi]!.idx.ids.copy(ids, s * len, srcIdx[s]! * len, (srcIdx[s]! + 1) * len);
    }
    out.set(sortIds(ids, n, len));
    return out;
  }
  const selOf = packs.map((p) => new Int32Array(p.count).fill(-1));
  const looseSel: number[] = [];
  for (let s = 0; s < n; s++) {
    const pi = srcPack[s]!;
    if (pi === looseMark) looseSel.push(s);
    else selOf[pi]![srcIdx[s]!] = s;
  }
  if (looseSel.length === 0 && packs.length === 1) {
    // One source: its idx is in id order already (newIndex checks the order all the same).
    let r = 0;
    for (const s of selOf[0]!) if (s >= 0) out[r++] = s;
    if (r !== n)
      throw new GitError(
        'verify-failed',
        'fewer objects than selected while sorting the new index',
      );
    return out;
  }
  const looseIds = Buffer.allocUnsafe(looseSel.length * len);
  looseSel.forEach((s, i) => loose[srcIdx[s]!]!.copy(looseIds, i * len));
  const looseOrder = sortIds(looseIds, looseSel.length, len);
  // Heads: the next selected position of each source.
  const k = packs.length + 1;
  const head = new Int32Array(k);
  const advance = (src: number): void => {
    if (src < packs.length) {
      const sel = selOf[src]!;
      let j = head[src]!;
      while (j < sel.length && sel[j]! < 0) j++;
      head[src] = j;
    }
  };
  for (let src = 0; src < k; src++) advance(src);
  const limit = (src: number): number =>
    src < packs.length ? selOf[src]!.length : looseSel.length;
  const idAt = (src: number): [Uint8Array, number] =>
    src < packs.length
      ? [packs[src]!.idx.ids, head[src]! * len]
      : [looseIds, looseOrder[head[src]!]! * len];
  for (let r = 0; r < n; r++) {
    let best = -1;
    let bb: Uint8Array = looseIds;
    let bp = 0;
    for (let src = 0; src < k; src++) {
      if (head[src]! >= limit(src)) continue;
      const [b, p] = idAt(src);
      if (best < 0 || Buffer.compare(b.subarray(p, p + len), bb.subarray(bp, bp + len)) < 0) {
        best = src;
        bb = b;
        bp = p;
      }
    }
    if (best < 0)
      throw new GitError(
        'verify-failed',
        'fewer objects than selected while sorting the new index',
      );
    out[r] = best < packs.length ? selOf[best]![head[best]!]! : looseSel[looseOrder[head[best]!]!]!;
    head[best]!++;
    advance(best);
  }
  releaseNow(...selOf);
  return out;
}

/** Is the id at `a[ap]` below the one at `b[bp]`? (Bytes compared here: no view made of either.) */
function idBelow(a: Uint8Array, ap: number, b: Uint8Array, bp: number, len: number): boolean {
  for (let i = 0; i < len; i++) {
    const d = a[ap + i]! - b[bp + i]!;
    if (d !== 0) return d < 0;
  }
  return false;
}

/**
 * The new index: ids sorted (merged from the already sorted source indexes), with the offsets
 * and CRCs just written; the ids are copied from where they are, straight into the idx.
 */
export function newIndex(plan: Plan, outOffset: Offsets, outCrc: Uint32Array): NewIndex {
  const { n, len } = plan;
  const sorted = sortedSelection(plan);
  const ref = { buf: new Uint8Array(0), pos: 0 };
  // Each id against the one before it (strictly ascending), counting first bytes for the fanout.
  const fanout = new Uint32Array(256);
  let a = new Uint8Array(0);
  let ap = 0;
  for (let r = 0; r < n; r++) {
    idOf(plan, sorted[r]!, ref);
    fanout[ref.buf[ref.pos]!]!++;
    if (r > 0 && !idBelow(a, ap, ref.buf, ref.pos, len)) {
      throw new GitError(
        'verify-failed',
        `object ids out of order or duplicated in the new index at ${r}`,
      );
    }
    a = ref.buf;
    ap = ref.pos;
  }
  const source: IdxSource = {
    count: n,
    copyId: (r, out, pos) => {
      idOf(plan, sorted[r]!, ref);
      const { buf, pos: at } = ref;
      for (let i = 0; i < len; i++) out[pos + i] = buf[at + i]!; // (no view of each id)
    },
    offset: (r) => outOffset[sorted[r]!]!,
    crc: (r) => outCrc[sorted[r]!]!,
    fanout,
  };
  return { count: n, source, sorted, outOrder: plan.outOrder, outOffset, outCrc };
}
