#!/usr/bin/env node
// zstd packs against zlib packs on a real repository, same run (issue 5):
//   size, write time, and full-walk time (our reader: `git repack-ts walk`, i.e. rev-list
//   --objects over every commit and tree; with --read-blobs every object) of
//   - the zlib pack as it is (default levels) and with commits and trees at level 0,
//   - zstd packs at levels 1, 3, 5, 10, 19, with and without per-kind dictionaries, and with
//     dictionaries and commits, trees or both stored plain (--<type>-compression=0).
// Usage: node bench/zstd.mjs <repository> [runs] [levels, e.g. 1,3,5,10,19] [variants, e.g. plain,d,dg]
// Walks are interleaved round robin across all packs; medians quoted. The repository is not
// modified: the level-0 zlib pack is built in a hard-linked copy.
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const BIN = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../bin/git-repack-ts.js');
const [repoArg, runsArg, levelsArg, variantsArg] = process.argv.slice(2);
if (!repoArg) {
  console.error('usage: node bench/zstd.mjs <repository> [runs] [levels]');
  process.exit(129);
}
const runs = Number(runsArg ?? 5);
const levels = (levelsArg ?? '1,3,5,10,19').split(',').map(Number);
const repo = path.resolve(repoArg);
const env = { ...process.env, GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null' };
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'rts-zbench-'));
process.on('exit', () => fs.rmSync(work, { recursive: true, force: true }));

function timed(argv, cwd) {
  const t0 = process.hrtime.bigint();
  const r = spawnSync(argv[0], argv.slice(1), { cwd, env, encoding: 'utf8', maxBuffer: 1 << 28 });
  const secs = Number(process.hrtime.bigint() - t0) / 1e9;
  if (r.status !== 0) throw new Error(`${argv.join(' ')}: ${r.stderr}`);
  return { secs, stdout: r.stdout };
}
const median = (a) => {
  const s = [...a].sort((x, y) => x - y);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

// The zlib packs: as they are, and at graph level 0 (in a hard-linked copy).
const gitDir = fs.existsSync(path.join(repo, '.git')) ? path.join(repo, '.git') : repo;
const packOf = (dir) =>
  path.join(
    dir,
    'objects/pack',
    fs.readdirSync(path.join(dir, 'objects/pack')).find((f) => f.endsWith('.pack')),
  );
const g0 = path.join(work, 'graph0');
execFileSync('cp', ['-al', gitDir, g0]);
for (const d of ['refs', 'packed-refs', 'HEAD']) {
  const p = path.join(g0, d);
  if (fs.existsSync(p)) {
    fs.rmSync(p, { recursive: true });
    execFileSync('cp', ['-a', path.join(gitDir, d), p]);
  }
}
const g0time = timed([process.execPath, BIN, '-q', '--graph-compression=0', '--no-fsck'], g0).secs;
const rows = [
  { name: 'zlib, default levels (as packed)', file: packOf(gitDir), write: NaN },
  { name: 'zlib, commits+trees level 0', file: packOf(g0), write: g0time },
];
// Without and with dictionaries; with dictionaries also with commits, trees, or both stored plain
// (level 0 for those types: a walk reads them without decompressing).
const variants = [
  { dict: false, plain: [], tag: '' },
  { dict: true, plain: [], tag: 'd' },
  { dict: true, plain: ['--graph-compression=0'], tag: 'dg', name: ', commits+trees plain' },
  { dict: true, plain: ['--commit-compression=0'], tag: 'dc', name: ', commits plain' },
  { dict: true, plain: ['--tree-compression=0'], tag: 'dt', name: ', trees plain' },
];
// Optional 4th argument: which variants, by tag (plain = no dictionaries, d, dg, dc, dt).
const wanted =
  variantsArg === undefined
    ? undefined
    : new Set(variantsArg.split(',').map((t) => (t === 'plain' ? '' : t)));
for (const v of variants.filter((x) => wanted === undefined || wanted.has(x.tag))) {
  for (const level of levels) {
    const file = path.join(work, `z${level}${v.tag}.zpack`);
    const args = [
      process.execPath,
      BIN,
      '-q',
      `--zstd=${level}`,
      '-o',
      file,
      ...(v.dict ? [] : ['--no-dict']),
      ...v.plain,
    ];
    const t = timed(args, gitDir);
    rows.push({
      name: `zstd ${level}${v.dict ? ' + dictionaries' : ''}${v.name ?? ''}`,
      file,
      write: t.secs,
    });
    process.stderr.write(`wrote ${path.basename(file)} in ${t.secs.toFixed(1)} s\n`);
  }
}
for (const r of rows) r.size = fs.statSync(r.file).size;
for (const r of rows) ((r.walk = []), (r.walkAll = []), (r.ownAll = []));
for (let i = 0; i < runs; i++) {
  for (const r of rows) {
    r.walk.push(timed([process.execPath, BIN, 'walk', r.file], gitDir).secs);
    // Wall time, and the walk's own time (its JSON `ms`: the walk without process start-up).
    const all = timed([process.execPath, BIN, 'walk', '--json', '--read-blobs', r.file], gitDir);
    r.walkAll.push(all.secs);
    r.ownAll.push(JSON.parse(all.stdout).ms / 1000);
  }
  process.stderr.write(`round ${i + 1}/${runs}\n`);
}
const base = rows[0];
const bw = median(base.walk);
const bwa = median(base.walkAll);
const boa = median(base.ownAll);
const pct = (a, b) => `${a >= b ? '+' : ''}${(((a - b) / b) * 100).toFixed(1)}%`;
const git = execFileSync('git', ['--version'], { encoding: 'utf8' }).trim();
console.log(
  `${path.basename(path.dirname(gitDir)) || path.basename(gitDir)}: ${git}, node ${process.version}, ${os.availableParallelism()} cores; walks: median of ${runs} interleaved runs (wall s, including ~0.14 s of start-up; "walk only" is the walk's own clock, from its --json)\n`,
);
console.log(
  '| pack | size MB | vs zlib | write s | walk s | vs zlib | walk + blobs s | vs zlib | same, walk only s | vs zlib |',
);
console.log('|---|---|---|---|---|---|---|---|---|---|');
for (const r of rows) {
  const w = median(r.walk);
  const wa = median(r.walkAll);
  const oa = median(r.ownAll);
  console.log(
    `| ${r.name} | ${(r.size / 1e6).toFixed(1)} | ${pct(r.size, base.size)} | ${Number.isNaN(r.write) ? '–' : r.write.toFixed(1)} | ${w.toFixed(2)} | ${pct(w, bw)} | ${wa.toFixed(2)} | ${pct(wa, bwa)} | ${oa.toFixed(2)} | ${pct(oa, boa)} |`,
  );
}
