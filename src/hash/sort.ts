/**
 * Sorts `n` ids (`len` bytes each, the i-th at `ids[i*len]`) and returns the permutation: a
 * counting pass over the first two bytes, then a small comparison sort inside each bucket.
 * Ids are uniformly distributed, so buckets hold a handful each: linear time in practice.
 */
export function sortIds(ids: Uint8Array, n: number, len: number): Uint32Array {
  const count = new Uint32Array(65537);
  for (let i = 0; i < n; i++) count[((ids[i * len]! << 8) | ids[i * len + 1]!) + 1]!++;
  for (let b = 0; b < 65536; b++) count[b + 1]! += count[b]!;
  const out = new Uint32Array(n);
  const fill = count.slice(0, 65536);
  for (let i = 0; i < n; i++) out[fill[(ids[i * len]! << 8) | ids[i * len + 1]!]!++] = i;
  const cmp = (a: number, b: number): number => {
    const pa = a * len;
    const pb = b * len;
    for (let k = 2; k < len; k++) {
      const d = ids[pa + k]! - ids[pb + k]!;
      if (d !== 0) return d;
    }
    return 0;
  };
  for (let b = 0; b < 65536; b++) {
    const lo = count[b]!;
    const hi = count[b + 1]!;
    if (hi - lo < 2) continue;
    if (hi - lo > 64) {
      // crafted ids could crowd one bucket: no quadratic sort for them
      out.subarray(lo, hi).sort(cmp);
      continue;
    }
    // insertion sort: buckets are tiny
    for (let i = lo + 1; i < hi; i++) {
      const v = out[i]!;
      let k = i - 1;
      while (k >= lo && cmp(out[k]!, v) > 0) {
        out[k + 1] = out[k]!;
        k--;
      }
      out[k + 1] = v;
    }
  }
  return out;
}
