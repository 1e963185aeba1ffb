#!/usr/bin/env node
// Start-up on each supported Node.js line (scripts/node-lines.mjs), through the launcher as git
// runs it: `git repack-ts --version`, and a rewrite with nothing to do (a copy of <repository>
// already at --graph-compression=0), each with and without V8's compile cache (Node 22.1+: the
// launcher's own, in the build's dist/compile-cache/, or NODE_DISABLE_COMPILE_CACHE=1; its first
// run fills the cache and is not timed). Rounds are interleaved; the median
// wall time and the mean CPU time (user+sys from GNU time, whose 10 ms steps a mean over many
// rounds smooths) per row, with the load (uptime) before and after. Usage:
//   node bench/startup.mjs <repository> [rounds]
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { copyRepo } from './copy-repo.mjs';
import { NODE_LINES, nodeBinary } from '../scripts/node-lines.mjs';

const BIN = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../bin/git-repack-ts');
const [repoArg, roundsArg] = process.argv.slice(2);
if (!repoArg) {
  console.error('usage: node bench/startup.mjs <repository> [rounds]');
  process.exit(129);
}
const rounds = Number(roundsArg ?? 9);
const env = { ...process.env, GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null', LANG: 'C' };
delete env.NODE_COMPILE_CACHE;
const repo = copyRepo(path.resolve(repoArg));
execFileSync(BIN, ['-q', '--graph-compression=0'], { cwd: repo, env });

const rows = [];
for (const line of Object.keys(NODE_LINES).map(Number)) {
  const dir = path.dirname(nodeBinary(line));
  for (const cache of line >= 22 ? [false, true] : [false]) {
    const e = {
      ...env,
      PATH: `${dir}:${env.PATH}`,
      ...(cache ? {} : { NODE_DISABLE_COMPILE_CACHE: '1' }),
    };
    for (const [what, args] of [
      ['--version', ['--version']],
      ['no-op rewrite', ['-q', '--graph-compression=0']],
    ]) {
      execFileSync(BIN, args, { cwd: repo, env: e }); // untimed: fills the compile cache, warms the page cache
      rows.push({ line, cache, what, args, env: e, wall: [], cpu: [] });
    }
  }
}
const load = () =>
  os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');
const before = load();
for (let r = 0; r < rounds; r++) {
  for (const row of rows) {
    const t = spawnSync('/usr/bin/time', ['-f', '%e %U %S', BIN, ...row.args], {
      cwd: repo,
      env: row.env,
      encoding: 'utf8',
    });
    if (t.status !== 0) throw new Error(`${row.what} on ${row.line} failed: ${t.stderr}`);
    const [wall, user, sys] = t.stderr.trim().split('\n').pop().split(' ').map(Number);
    row.wall.push(wall);
    row.cpu.push(user + sys);
  }
}
const median = (a) => [...a].sort((x, y) => x - y)[a.length >> 1];
const mean = (a) => a.reduce((x, y) => x + y, 0) / a.length;
console.log(`load before ${before}, after ${load()}; ${rounds} interleaved rounds; ${repoArg}`);
console.log('| node | compile cache | command | wall s (median) | CPU s (mean) |');
console.log('|---|---|---|---|---|');
for (const r of rows)
  console.log(
    `| ${NODE_LINES[r.line]} | ${r.cache ? 'yes' : 'no'} | ${r.what} | ${median(r.wall).toFixed(3)} | ${mean(r.cpu).toFixed(3)} |`,
  );
fs.rmSync(repo, { recursive: true, force: true });
