import { NO_PARENT, type PackScan } from './pack-scan.js';

/**
 * Real type (the type at the bottom of the chain) and delta depth of every entry, from the parent
 * links of a scan: an explicit walk up each chain with memoisation, never recursion. Entries whose
 * chain does not reach a non-delta base (external or broken) get type 0.
 */
export function resolveChains(
  scan: PackScan,
  order: Uint32Array,
  maxDepth = 1 << 16,
): { realType: Uint8Array; depth: Uint16Array } {
  const n = scan.parent.length;
  const realType = new Uint8Array(n);
  const depth = new Uint16Array(n);
  const state = new Uint8Array(n); // 0 unknown, 1 known
  const path: number[] = [];
  for (let i = 0; i < n; i++) {
    const start = order[i]!;
    if (state[start]) continue;
    let j = start;
    path.length = 0;
    let t = 0;
    let d = 0;
    for (;;) {
      if (state[j]) {
        t = realType[j]!;
        d = depth[j]!;
        break;
      }
      const p = scan.parent[j]!;
      if (p === NO_PARENT) {
        t = scan.type[j]!;
        d = 0;
        state[j] = 1;
        realType[j] = t;
        break;
      }
      path.push(j);
      if (p < 0 || path.length > maxDepth) {
        t = 0;
        d = 0;
        break;
      }
      j = p;
    }
    for (let k = path.length - 1; k >= 0; k--) {
      const x = path[k]!;
      d = t === 0 ? 0 : Math.min(d + 1, 0xffff);
      realType[x] = t;
      depth[x] = d;
      state[x] = 1;
    }
  }
  return { realType, depth };
}
