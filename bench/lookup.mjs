#!/usr/bin/env node
// Object lookup micro-benchmark (issue 2; the journal's critbit experiment, patch 1/2):
// our open-addressing table over id bytes vs fanout + binary search over the .idx vs a Map
// keyed by hex strings (isomorphic-git's habit) vs a critbit tree. The contenders live in
// src/bench/lookup.ts (also run by `git repack-ts bench --reader=lookup`). Usage:
//   node bench/lookup.mjs [<.idx file>] [rounds]
// Without an idx it uses the largest pack of the current repository. Needs `npm run build`.
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { SHA1 } from '../dist/hash/algo.js';
import { parseIdx } from '../dist/format/idx.js';
import { lookupBench } from '../dist/bench/lookup.js';

let idxPath = process.argv[2];
if (!idxPath) {
  const dir = execFileSync('git', ['rev-parse', '--git-path', 'objects/pack'], {
    encoding: 'utf8',
  }).trim();
  idxPath = fs
    .readdirSync(dir)
    .filter((f) => f.endsWith('.idx'))
    .map((f) => path.join(dir, f))
    .sort((a, b) => fs.statSync(b).size - fs.statSync(a).size)[0];
}
const rounds = Number(process.argv[3] ?? 5);
const idx = parseIdx(fs.readFileSync(idxPath), SHA1, idxPath);
const r = lookupBench(idx, idxPath, SHA1.len, rounds);
console.log(
  `${r.ids} ids from ${idxPath}; ${r.ids} look-ups (half misses), median of ${rounds} rounds\n`,
);
console.log('| structure | build ms | lookups ms | ns/lookup | vs ours |');
console.log('|---|---|---|---|---|');
for (const x of r.rows)
  console.log(
    `| ${x.structure} | ${x.buildMs.toFixed(0)} | ${x.lookupMs.toFixed(0)} | ${x.nsPerLookup.toFixed(0)} | ${x.vsOurs.toFixed(2)}× |`,
  );
