#!/usr/bin/env node
// Every command of ours against stock git's equivalent on a scale fixture (issue 20; fixtures
// from bench/scale-fixtures.mjs), interleaved round by round: wall time, CPU time and peak RSS
// (GNU time), with every pack written checked by `git verify-pack`, the 64-bit offset table of a
// new .idx over 2 GiB looked for, and the object set compared with the original. Usage:
//   node bench/scale.mjs <repository> [runs=1] [group,...]
// groups: rewrite, verify, inspect, walk, zstd (default: all). The repository is never
// modified: each rewrite runs on a hard-linked copy under $TMPDIR (which needs room for a pack).
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { copyRepo } from './copy-repo.mjs';
import { timed as timedRun } from './timed.mjs';

const BIN = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../bin/git-repack-ts');
const [repoArg, runsArg, groupsArg] = process.argv.slice(2);
if (!repoArg) {
  console.error(
    'usage: node bench/scale.mjs <repository> [runs] [rewrite,verify,inspect,walk,zstd]',
  );
  process.exit(129);
}
const runs = Number(runsArg ?? 1);
const want = new Set((groupsArg ?? 'rewrite,verify,inspect,walk,zstd').split(','));
const repo = path.resolve(repoArg);
const gitDir = fs.existsSync(path.join(repo, '.git')) ? path.join(repo, '.git') : repo;
const env = {
  ...process.env,
  GIT_CONFIG_NOSYSTEM: '1',
  GIT_CONFIG_GLOBAL: '/dev/null',
  LANG: 'C',
  GIT_NO_LAZY_FETCH: '1',
};
const packDir = (d) => path.join(d, 'objects/pack');
const packsOf = (d) =>
  fs
    .readdirSync(packDir(d))
    .filter((f) => f.endsWith('.pack'))
    .map((f) => path.join(packDir(d), f));
const [pack] = packsOf(gitDir);
const idx = pack.replace(/\.pack$/, '.idx');

const timed = (argv, cwd) => timedRun(argv, { cwd, env });

/** The object set as a digest of the sorted ids (millions of ids: not kept as strings). */
function objectDigest(dir) {
  const out = execFileSync(
    'git',
    ['--git-dir', dir, 'cat-file', '--batch-all-objects', '--batch-check=%(objectname)'],
    { env, maxBuffer: 1 << 30 },
  );
  return { count: out.length / 41, digest: createHash('sha256').update(out).digest('hex') };
}

/** Does this .idx (version 2) hold 64-bit offsets? Its length says: 8 + 1024 + n (20 + 4 + 4) + 40, plus 8 per large offset. */
function largeOffsets(idxPath) {
  const b = Buffer.alloc(4);
  const fd = fs.openSync(idxPath, 'r');
  fs.readSync(fd, b, 0, 4, 1028);
  fs.closeSync(fd);
  const n = b.readUInt32BE(0);
  return (fs.statSync(idxPath).size - (1072 + n * 28)) / 8;
}

const original = objectDigest(gitDir);
const sourceLarge = largeOffsets(idx);
const checks = [];
/** Every pack a rewrite left: git verify-pack, its 64-bit table where it needs one, the same objects. */
function checkRewritten(label, dir) {
  for (const p of packsOf(dir)) {
    execFileSync('git', ['verify-pack', p.replace(/\.pack$/, '.idx')], {
      env,
      stdio: ['ignore', 'ignore', 'pipe'],
      maxBuffer: 1 << 30,
    });
    const size = fs.statSync(p).size;
    const large = largeOffsets(p.replace(/\.pack$/, '.idx'));
    if (size > 2 ** 31 && large === 0)
      throw new Error(`${label}: ${p} is ${size} bytes but its .idx has no 64-bit offsets`);
    checks.push(
      `${label}: ${path.basename(p)} ${(size / 2 ** 30).toFixed(3)} GiB, git verify-pack ok, ${large} 64-bit offsets`,
    );
  }
  const after = objectDigest(dir);
  if (after.digest !== original.digest)
    throw new Error(
      `${label}: the object set changed (${original.count} objects before, ${after.count} after)`,
    );
}

const groups = [];
if (want.has('rewrite')) {
  groups.push({
    name: 'rewrite',
    cmds: [
      ['git repack -a -d', { argv: ['git', 'repack', '-a', '-d', '-q'], copy: true }],
      [
        'git repack-ts --graph-compression=0',
        { argv: [BIN, '-q', '--graph-compression=0'], copy: true, check: true },
      ],
      [
        'git repack-ts --graph-compression=0 --no-fsck',
        { argv: [BIN, '-q', '--graph-compression=0', '--no-fsck'], copy: true, check: true },
      ],
    ],
  });
}
if (want.has('verify')) {
  groups.push({
    name: 'verify',
    cmds: [
      ['git verify-pack', { argv: ['git', 'verify-pack', idx] }],
      ['git repack-ts verify', { argv: [BIN, 'verify'] }],
      ['git fsck', { argv: ['git', 'fsck', '--no-progress'] }],
    ],
  });
}
if (want.has('inspect')) {
  groups.push({
    name: 'census',
    cmds: [
      [
        'git cat-file --batch-check --batch-all-objects',
        {
          argv: [
            'git',
            'cat-file',
            '--batch-all-objects',
            '--batch-check=%(objectname) %(objecttype) %(objectsize) %(objectsize:disk) %(deltabase)',
          ],
        },
      ],
      ['git repack-ts inspect', { argv: [BIN, 'inspect', '--json'] }],
    ],
  });
}
if (want.has('walk')) {
  groups.push({
    name: 'walk',
    cmds: [
      ['git rev-list --objects --all', { argv: ['git', 'rev-list', '--objects', '--all'] }],
      ['git repack-ts walk', { argv: [BIN, 'walk'] }],
    ],
  });
}
if (want.has('zstd')) {
  const out = path.join(os.tmpdir(), `rts-scale-${process.pid}.zpack`);
  groups.push({
    name: 'zstd export',
    cmds: [
      [
        'git repack-ts --zstd --graph-compression=0 -o <file>',
        {
          argv: [BIN, '-q', '--zstd', '--graph-compression=0', '-o', out],
          after: () => {
            checks.push(`zstd export: ${(fs.statSync(out).size / 2 ** 30).toFixed(3)} GiB zpack`);
            fs.rmSync(out, { force: true });
          },
        },
      ],
    ],
  });
}

const load = () =>
  os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(', ');
const loadBefore = load();
const t0 = new Date();
const results = new Map();
for (let r = 0; r < runs; r++) {
  for (const g of groups) {
    for (const [label, c] of g.cmds) {
      const cwd = c.copy ? copyRepo(gitDir) : gitDir;
      try {
        const t = timed(c.argv, cwd);
        if (c.check) checkRewritten(label, cwd);
        c.after?.();
        if (!results.has(label)) results.set(label, []);
        results.get(label).push(t);
        process.stderr.write(
          `round ${r + 1}/${runs} ${label}: ${t.secs.toFixed(2)} s, ${t.mib.toFixed(0)} MiB, CPU ${t.cpu.toFixed(2)} s (load ${load()})\n`,
        );
      } finally {
        if (c.copy) fs.rmSync(cwd, { recursive: true, force: true });
      }
    }
  }
}
const median = (a) => {
  const s = [...a].sort((x, y) => x - y);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const gitVersion = execFileSync('git', ['--version'], { encoding: 'utf8' }).trim();
const name =
  path.basename(repo) === 'repo' || path.basename(repo) === '.git'
    ? path.basename(path.dirname(repo))
    : path.basename(repo);
console.log(
  `${name}: ${original.count} objects, ${(fs.statSync(pack).size / 2 ** 30).toFixed(3)} GiB pack (${sourceLarge} 64-bit offsets in its .idx); ${gitVersion}, node ${process.version}; ${os.availableParallelism()} cores (${os.cpus()[0]?.model.trim()}); ${runs} interleaved round(s), ${t0.toISOString().slice(11, 16)}–${new Date().toISOString().slice(11, 16)} UTC; load average ${loadBefore} before, ${load()} after\n`,
);
for (const g of groups) {
  console.log(`| ${g.name} | wall s | ratio | CPU s | CPU ratio | peak RSS MiB | RSS ratio |`);
  console.log('|---|---|---|---|---|---|---|');
  const ref = results.get(g.cmds[0][0]);
  for (const [label] of g.cmds) {
    const ts = results.get(label);
    const [secs, cpu, mib] = ['secs', 'cpu', 'mib'].map((k) => median(ts.map((t) => t[k])));
    const [rs, rc, rm] = ['secs', 'cpu', 'mib'].map((k) => median(ref.map((t) => t[k])));
    console.log(
      `| ${label} | ${secs.toFixed(1)} | ${(secs / rs).toFixed(2)}× | ${cpu.toFixed(1)} | ${(cpu / rc).toFixed(2)}× | ${mib.toFixed(0)} | ${(mib / rm).toFixed(2)}× |`,
    );
  }
  console.log('');
}
console.log(
  `target (b) for ${original.count} objects: 64 MiB + 100 bytes per object = ${(64 + (100 * original.count) / 2 ** 20).toFixed(0)} MiB\n`,
);
for (const c of checks) console.log(`- ${c}`);
