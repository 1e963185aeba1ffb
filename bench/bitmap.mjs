#!/usr/bin/env node
// What carrying a pack bitmap over costs (issue 30, item 7), in the same run, interleaved:
//   node bench/bitmap.mjs <bare repository with one pack and its .bitmap> [runs=5]
// 1. The whole rewrite (bin/git-repack-ts --graph-compression=0, validated by git as users run
//    it) on a copy with the .bitmap and on a copy without it; stock git's `repack -a -d` with
//    and without `-b` beside them (what writing a bitmap from scratch costs git).
// 2. The bitmap step alone, in process (dist/commands/repack-bitmap.js's carryBitmap: read and
//    check the old file, map the objects, write and re-read the new one), median of `runs * 4`.
// Wall and CPU seconds, median and min-max, and the load (uptime) before and after.
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { copyRepo } from './copy-repo.mjs';
import { timed as timedRun } from './timed.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const BIN = path.join(ROOT, 'bin/git-repack-ts');
const [repoArg, runsArg] = process.argv.slice(2);
if (!repoArg) {
  console.error('usage: node bench/bitmap.mjs <bare repository> [runs]');
  process.exit(129);
}
const repo = path.resolve(repoArg);
const runs = Number(runsArg ?? 5);
const env = { ...process.env, GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null', LANG: 'C' };
const packDir = (r) => path.join(r, 'objects/pack');
const bitmaps = fs.readdirSync(packDir(repo)).filter((f) => f.endsWith('.bitmap'));
if (bitmaps.length !== 1)
  throw new Error(`${repo}: expected one pack .bitmap, found ${bitmaps.length}`);
const load = () =>
  execFileSync('uptime', { encoding: 'utf8' })
    .trim()
    .replace(/.*load/, 'load');

/** Wall seconds, and CPU seconds (user + system, children included: what load distorts least). */
const timed = (argv, cwd) => timedRun(argv, { cwd, env });

const cases = [
  {
    name: 'git repack-ts --graph-compression=0, with the .bitmap (carried over)',
    argv: [BIN, '-q', '--graph-compression=0'],
    bitmap: true,
  },
  {
    name: 'git repack-ts --graph-compression=0, the .bitmap removed first',
    argv: [BIN, '-q', '--graph-compression=0'],
    bitmap: false,
  },
  {
    name: 'git repack -a -d -b (git writes a bitmap from scratch)',
    argv: ['git', '-c', 'pack.threads=1', 'repack', '-q', '-a', '-d', '-b'],
    bitmap: true,
  },
  {
    name: 'git repack -a -d --no-write-bitmap-index',
    argv: ['git', '-c', 'pack.threads=1', 'repack', '-q', '-a', '-d', '--no-write-bitmap-index'],
    bitmap: false,
  },
];
console.log(`${repo}: ${load()}`);
const times = cases.map(() => []);
const cpus = cases.map(() => []);
let rewritten;
for (let i = 0; i < runs; i++) {
  cases.forEach((c, k) => {
    const copy = copyRepo(repo);
    if (!c.bitmap) for (const f of bitmaps) fs.rmSync(path.join(packDir(copy), f));
    const t = timed(c.argv, copy);
    times[k].push(t.secs);
    cpus[k].push(t.cpu);
    if (k === 0 && rewritten === undefined) rewritten = copy;
    else fs.rmSync(copy, { recursive: true, force: true });
  });
}
const stat = (t) => {
  const s = [...t].sort((a, b) => a - b);
  return `${s[s.length >> 1].toFixed(3)} (${s[0].toFixed(3)}-${s[s.length - 1].toFixed(3)})`;
};
console.log('| run | wall s, median (min-max) | CPU s, median (min-max) |\n|---|---|---|');
cases.forEach((c, k) => console.log(`| ${c.name} | ${stat(times[k])} | ${stat(cpus[k])} |`));

// The step alone: the old pack and bitmap against the new pack of the first rewritten copy.
const { carryBitmap } = await import(path.join(ROOT, 'dist/commands/repack-bitmap.js'));
const { Pack } = await import(path.join(ROOT, 'dist/store/pack.js'));
const { hashAlgoByName } = await import(path.join(ROOT, 'dist/hash/algo.js'));
const format =
  spawnSync('git', ['--git-dir', repo, 'rev-parse', '--show-object-format'], {
    env,
    encoding: 'utf8',
  }).stdout.trim() || 'sha1';
const algo = hashAlgoByName(format);
const oldPack = path.join(packDir(repo), bitmaps[0].replace(/\.bitmap$/, '.pack'));
const newPack = path.join(
  packDir(rewritten),
  fs.readdirSync(packDir(rewritten)).find((f) => f.endsWith('.pack')),
);
const step = [];
const stepCpu = [];
let info;
for (let i = 0; i < runs * 4; i++) {
  const src = Pack.open(oldPack, algo);
  const dst = Pack.open(newPack, algo);
  const t0 = process.hrtime.bigint();
  const c0 = process.cpuUsage();
  const r = carryBitmap(src, oldPack.replace(/\.pack$/, '.bitmap'), dst);
  const c = process.cpuUsage(c0);
  step.push(Number(process.hrtime.bigint() - t0) / 1e9);
  stepCpu.push((c.user + c.system) / 1e6);
  info ??= `${src.count} objects, ${r.commits} bitmapped commits, ${r.bytes.length} bytes, permuted ${r.permuted}`;
  src.close();
  dst.close();
}
console.log(`| the bitmap step alone, in process (${info}) | ${stat(step)} | ${stat(stepCpu)} |`);
fs.rmSync(rewritten, { recursive: true, force: true });
console.log(`after: ${load()}`);
