#!/usr/bin/env node
// Object lookup micro-benchmark (issue 2; the journal's critbit experiment, patch 1/2):
// our open-addressing table over id bytes vs fanout + binary search over the .idx vs a Map
// keyed by hex strings (isomorphic-git's habit) vs a critbit tree. Usage:
//   node bench/lookup.mjs [<.idx file>] [rounds]
// Without an idx it uses the largest pack of the current repository.
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { SHA1, toHex } from '../dist/hash/algo.js';
import { parseIdx } from '../dist/format/idx.js';
import { OidTable } from '../dist/hash/oid-table.js';

let idxPath = process.argv[2];
if (!idxPath) {
  const dir = execFileSync('git', ['rev-parse', '--git-path', 'objects/pack'], { encoding: 'utf8' }).trim();
  idxPath = fs.readdirSync(dir).filter((f) => f.endsWith('.idx')).map((f) => path.join(dir, f)).sort((a, b) => fs.statSync(b).size - fs.statSync(a).size)[0];
}
const rounds = Number(process.argv[3] ?? 5);
const idx = parseIdx(fs.readFileSync(idxPath), SHA1, idxPath);
const n = idx.count;
const len = 20;
// Look-ups in a shuffled order (a walk does not visit ids in sorted order); half hits, half misses.
const probes = Buffer.alloc(n * len);
let seed = 1;
const perm = Array.from({ length: n }, (_, i) => i);
for (let i = n - 1; i > 0; i--) {
  seed = (seed * 1103515245 + 12345) >>> 0;
  const j = seed % (i + 1);
  [perm[i], perm[j]] = [perm[j], perm[i]];
}
perm.forEach((p, i) => {
  idx.ids.copy(probes, i * len, p * len, p * len + len);
  if (i & 1) probes[i * len + 19] ^= 0x5a; // a miss (almost surely)
});

class Critbit {
  // Internal nodes: [crit byte, mask, left, right]; leaves are negative (-(i+1)) into ids.
  constructor(ids) { this.ids = ids; this.nodes = []; this.root = 0; this.empty = true; }
  leafId(v) { return -v - 1; }
  dir(buf, pos, byte, mask) { return (1 + (mask | buf[pos + byte])) >> 8; }
  find(buf, pos) {
    if (this.empty) return -1;
    let p = this.root;
    while (p >= 0) { const nd = this.nodes[p]; p = this.dir(buf, pos, nd[0], nd[1]) ? nd[3] : nd[2]; }
    const i = this.leafId(p);
    return this.ids.compare(buf, pos, pos + len, i * len, i * len + len) === 0 ? i : -1;
  }
  insert(i) {
    const ids = this.ids; const pos = i * len;
    if (this.empty) { this.root = -(i + 1); this.empty = false; return; }
    let p = this.root;
    while (p >= 0) { const nd = this.nodes[p]; p = this.dir(ids, pos, nd[0], nd[1]) ? nd[3] : nd[2]; }
    const other = this.leafId(p) * len;
    let byte = 0; while (byte < len && ids[other + byte] === ids[pos + byte]) byte++;
    if (byte === len) return;
    let diff = ids[other + byte] ^ ids[pos + byte];
    diff |= diff >> 1; diff |= diff >> 2; diff |= diff >> 4; const mask = (diff & ~(diff >> 1)) ^ 255;
    const newdir = this.dir(ids, pos, byte, mask);
    const node = [byte, mask, 0, 0];
    const ni = this.nodes.push(node) - 1;
    let parent = null; let side = 0; p = this.root;
    while (p >= 0) {
      const nd = this.nodes[p];
      if (nd[0] > byte || (nd[0] === byte && nd[1] > mask)) break;
      parent = nd; side = this.dir(ids, pos, nd[0], nd[1]) ? 3 : 2; p = nd[side];
    }
    node[newdir ? 2 : 3] = p; node[newdir ? 3 : 2] = -(i + 1);
    if (parent) parent[side] = ni; else this.root = ni;
  }
}

const contenders = {
  'open-addressing table (ours)': () => {
    const t = new OidTable(len, n);
    for (let i = 0; i < n; i++) t.insert(idx.ids, i * len);
    return (buf, pos) => t.lookup(buf, pos);
  },
  'fanout + binary search (.idx)': () => (buf, pos) => idx.find(buf, pos),
  'Map keyed by hex': () => {
    const m = new Map();
    for (let i = 0; i < n; i++) m.set(toHex(idx.ids, i * len, len), i);
    return (buf, pos) => m.get(toHex(buf, pos, len)) ?? -1;
  },
  'critbit tree': () => {
    const c = new Critbit(idx.ids);
    for (let i = 0; i < n; i++) c.insert(i);
    return (buf, pos) => c.find(buf, pos);
  },
};

const results = {};
for (let r = 0; r < rounds; r++) {
  for (const [name, make] of Object.entries(contenders)) {
    const t0 = process.hrtime.bigint();
    const find = make();
    const t1 = process.hrtime.bigint();
    let hits = 0;
    for (let i = 0; i < n; i++) if (find(probes, i * len) >= 0) hits++;
    const t2 = process.hrtime.bigint();
    (results[name] ??= { build: [], lookup: [], hits }).build.push(Number(t1 - t0) / 1e6);
    results[name].lookup.push(Number(t2 - t1) / 1e6);
  }
}
const median = (a) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];
const base = median(results['open-addressing table (ours)'].lookup);
console.log(`${n} ids from ${idxPath}; ${n} look-ups (half misses), median of ${rounds} rounds\n`);
console.log('| structure | build ms | lookups ms | ns/lookup | vs ours |');
console.log('|---|---|---|---|---|');
for (const [name, v] of Object.entries(results)) {
  const l = median(v.lookup);
  console.log(`| ${name} | ${median(v.build).toFixed(0)} | ${l.toFixed(0)} | ${((l * 1e6) / n).toFixed(0)} | ${(l / base).toFixed(2)}× |`);
}
