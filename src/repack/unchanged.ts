import { OBJ_OFS_DELTA } from '../format/object-type.js';
import { encodeEntryHeader, encodeOfsDistance, MAX_ENTRY_HEADER } from '../format/pack.js';
import { entryEnd, headerLenOf, isDirect, type Plan } from './plan.js';

/**
 * Whether the pack written would be the one source pack byte for byte: every entry copied, in
 * the same order, at the same offset, with the same header. Then nothing is written at all.
 * 'if-kept': so, if the entries to re-encode all come out as they are (allKept).
 */
export function sameAsSource(
  plan: Plan,
  classify: (s: number) => { type: number; copy: boolean; mayKeep: boolean },
): boolean | 'if-kept' {
  const hdr = Buffer.allocUnsafe(MAX_ENTRY_HEADER);
  const pack = plan.input.packs[0]!;
  if (
    plan.input.packs.length !== 1 ||
    plan.input.loose.length > 0 ||
    plan.excluded > 0 ||
    plan.duplicatesDropped > 0
  )
    return false;
  if (pack.isZpack || plan.n !== pack.count) return false;
  const scan = plan.scans[0]!;
  let off = 12;
  let trial = false;
  for (let k = 0; k < plan.n; k++) {
    const s = plan.outOrder[k]!;
    if (isDirect(plan, s)) return false;
    const j = plan.srcIdx[s]!;
    if (pack.idx.offsets[j] !== off) return false;
    const b = plan.base[s]!;
    const { type, copy, mayKeep: may } = classify(s);
    if (!copy && !may) return false;
    if (!copy) trial = true;
    let hl = encodeEntryHeader(b >= 0 ? OBJ_OFS_DELTA : type, scan.size[j]!, hdr, 0);
    if (b >= 0) hl += encodeOfsDistance(off - pack.idx.offsets[plan.srcIdx[b]!]!, hdr, hl);
    if (hl !== headerLenOf(plan, 0, j)) return false;
    off = entryEnd(plan, 0, j);
  }
  if (off !== pack.dataEnd) return false;
  return trial ? 'if-kept' : true;
}
