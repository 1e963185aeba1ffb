import { toHex } from '../hash/algo.js';
import { OidTable } from '../hash/oid-table.js';
import type { PackIndex } from '../format/idx.js';
import { median, selfCpuSeconds } from './timing.js';

/**
 * Object lookup (the journal's patch 1/2, "obj_hash: convert to a critbit tree"): our
 * open-addressing table over id bytes vs fanout + binary search over the .idx vs a Map keyed by
 * hex strings (isomorphic-git's habit) vs a critbit tree. Every id of one .idx, looked up in a
 * shuffled order, half of them misses. Times are this process's CPU time (steady on a busy machine).
 */
export interface LookupRow {
  structure: string;
  buildMs: number;
  lookupMs: number;
  nsPerLookup: number;
  vsOurs: number;
  hits: number;
}

export interface LookupResult {
  idx: string;
  ids: number;
  rounds: number;
  rows: LookupRow[];
}

/** A critbit tree over ids held in one buffer (internal nodes: byte, mask, left, right; leaves negative). */
export class Critbit {
  private readonly nodes: number[][] = [];
  private root = 0;
  private empty = true;
  constructor(
    private readonly ids: Buffer,
    private readonly len: number,
  ) {}

  private static dir(buf: Uint8Array, pos: number, byte: number, mask: number): number {
    return (1 + (mask | buf[pos + byte]!)) >> 8;
  }

  find(buf: Uint8Array, pos: number): number {
    if (this.empty) return -1;
    let p = this.root;
    while (p >= 0) {
      const nd = this.nodes[p]!;
      p = Critbit.dir(buf, pos, nd[0]!, nd[1]!) ? nd[3]! : nd[2]!;
    }
    const i = -p - 1;
    return this.ids.compare(buf, pos, pos + this.len, i * this.len, (i + 1) * this.len) === 0
      ? i
      : -1;
  }

  insert(i: number): void {
    const { ids, len } = this;
    const pos = i * len;
    if (this.empty) {
      this.root = -(i + 1);
      this.empty = false;
      return;
    }
    let p = this.root;
    while (p >= 0) {
      const nd = this.nodes[p]!;
      p = Critbit.dir(ids, pos, nd[0]!, nd[1]!) ? nd[3]! : nd[2]!;
    }
    const other = (-p - 1) * len;
    let byte = 0;
    while (byte < len && ids[other + byte] === ids[pos + byte]) byte++;
    if (byte === len) return;
    let diff = ids[other + byte]! ^ ids[pos + byte]!;
    diff |= diff >> 1;
    diff |= diff >> 2;
    diff |= diff >> 4;
    const mask = (diff & ~(diff >> 1)) ^ 255;
    const newdir = Critbit.dir(ids, pos, byte, mask);
    const node = [byte, mask, 0, 0];
    const ni = this.nodes.push(node) - 1;
    let parent: number[] | undefined;
    let side = 0;
    p = this.root;
    while (p >= 0) {
      const nd = this.nodes[p]!;
      if (nd[0]! > byte || (nd[0] === byte && nd[1]! > mask)) break;
      parent = nd;
      side = Critbit.dir(ids, pos, nd[0]!, nd[1]!) ? 3 : 2;
      p = nd[side]!;
    }
    node[newdir ? 2 : 3] = p;
    node[newdir ? 3 : 2] = -(i + 1);
    if (parent) parent[side] = ni;
    else this.root = ni;
  }
}

type Find = (buf: Uint8Array, pos: number) => number;

export function lookupBench(
  idx: PackIndex,
  idxName: string,
  len: number,
  rounds: number,
  signal?: AbortSignal,
): LookupResult {
  const n = idx.count;
  // Probes in a shuffled order (a walk does not visit ids sorted); every other one a miss.
  const probes = Buffer.alloc(n * len);
  let seed = 1;
  const perm = new Uint32Array(n);
  for (let i = 0; i < n; i++) perm[i] = i;
  for (let i = n - 1; i > 0; i--) {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
    const j = seed % (i + 1);
    const t = perm[i]!;
    perm[i] = perm[j]!;
    perm[j] = t;
  }
  for (let i = 0; i < n; i++) {
    idx.ids.copy(probes, i * len, perm[i]! * len, perm[i]! * len + len);
    if (i & 1) probes[i * len + len - 1]! ^= 0x5a;
  }
  const contenders: [string, () => Find][] = [
    [
      'open-addressing table (ours)',
      () => {
        const t = new OidTable(len, n);
        for (let i = 0; i < n; i++) t.insert(idx.ids, i * len);
        return (b, p) => t.lookup(b, p);
      },
    ],
    ['fanout + binary search (.idx)', () => (b, p) => idx.find(b, p)],
    [
      'Map keyed by hex',
      () => {
        const m = new Map<string, number>();
        for (let i = 0; i < n; i++) m.set(toHex(idx.ids, i * len, len), i);
        return (b, p) => m.get(toHex(b, p, len)) ?? -1;
      },
    ],
    [
      'critbit tree',
      () => {
        const c = new Critbit(idx.ids, len);
        for (let i = 0; i < n; i++) c.insert(i);
        return (b, p) => c.find(b, p);
      },
    ],
  ];
  const acc = new Map<string, { build: number[]; lookup: number[]; hits: number }>();
  for (let r = 0; r < rounds; r++) {
    for (const [name, make] of contenders) {
      signal?.throwIfAborted();
      const t0 = selfCpuSeconds();
      const find = make();
      const t1 = selfCpuSeconds();
      let hits = 0;
      for (let i = 0; i < n; i++) if (find(probes, i * len) >= 0) hits++;
      const t2 = selfCpuSeconds();
      const a = acc.get(name) ?? { build: [], lookup: [], hits };
      a.build.push((t1 - t0) * 1e3);
      a.lookup.push((t2 - t1) * 1e3);
      acc.set(name, a);
    }
  }
  const base = median(acc.get(contenders[0]![0])!.lookup);
  const rows: LookupRow[] = [...acc].map(([structure, v]) => {
    const l = median(v.lookup);
    return {
      structure,
      buildMs: median(v.build),
      lookupMs: l,
      nsPerLookup: (l * 1e6) / Math.max(n, 1),
      vsOurs: l / base,
      hits: v.hits,
    };
  });
  return { idx: idxName, ids: n, rounds, rows };
}
