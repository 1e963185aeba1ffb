#!/usr/bin/env node
// Issue 32's targets, measured as a user runs the commands: `git repack-ts` through git (our bin/
// first on PATH), the user's environment, a fresh full copy (cp -a) of a prepared repository for
// every timed run, git and ours interleaved round by round, medians of wall time and peak RSS.
//
//   node bench/maintenance.mjs <repository> [rounds] [commits]
//
// Prepared once from <repository> (never modified): a full copy with a config as a partial clone
// has one (extensions.partialClone, a promisor remote, no lazy fetch), pack.graphCompression=0,
// rewritten once by us (the state after a first run). Then, each round, on fresh copies:
//   noop       git repack-ts            against git repack -d   (nothing new: both at rest)
//   auto       git repack-ts --auto     (nothing to do)
//   new-pack   git repack-ts after <commits> commits arrived as a pack (git fast-import), against
//              git repack -d packing the same objects from loose (fast-import unpacked them)
//   loose      git repack-ts packing those objects from loose, against git repack -d on the same
// Printed: a table of medians and ratios; the load (uptime) before and after.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { timed as timedRun } from './timed.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const BIN_DIR = path.resolve(HERE, '../bin');
const [repoArg, roundsArg, commitsArg] = process.argv.slice(2);
if (!repoArg) {
  console.error('usage: node bench/maintenance.mjs <repository> [rounds] [commits]');
  process.exit(129);
}
const rounds = Number(roundsArg ?? 5);
const commits = Number(commitsArg ?? 200);
const src = path.resolve(repoArg);
const env = { ...process.env, PATH: `${BIN_DIR}:${process.env.PATH}`, GIT_NO_LAZY_FETCH: '1' };
const work = fs.mkdtempSync(path.join(process.env.BENCH_TMPDIR ?? os.tmpdir(), 'rts-maint-'));
const gitDirOf = (r) => (fs.existsSync(path.join(r, '.git')) ? path.join(r, '.git') : r);

function sh(cmd, args, cwd, input) {
  return execFileSync(cmd, args, {
    cwd,
    env,
    input,
    encoding: 'utf8',
    maxBuffer: 1 << 30,
    stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
  });
}

function copy(from, name) {
  const to = path.join(work, name);
  fs.rmSync(to, { recursive: true, force: true });
  sh('cp', ['-a', from, to]);
  return to;
}

/** A fast-import stream of `n` commits on HEAD's branch: three files of each commit changed. */
function commitStream(repo, n) {
  const ref = sh('git', ['symbolic-ref', 'HEAD'], repo).trim();
  const parent = sh('git', ['rev-parse', 'HEAD'], repo).trim();
  const out = [`reset ${ref}`, `from ${parent}`];
  for (let i = 0; i < n; i++) {
    const msg = `bench commit ${i}`;
    out.push(
      `commit ${ref}`,
      `committer Bench <bench@example.com> ${1_800_000_000 + i * 60} +0000`,
      `data ${Buffer.byteLength(msg)}`,
      msg,
    );
    for (let f = 0; f < 3; f++) {
      const body =
        `bench file ${f} of commit ${i}\n` +
        'a line that repeats in every version of the file\n'.repeat(40 + (i % 13));
      out.push(
        `M 100644 inline bench/d${(i + f) % 9}/f${f}.txt`,
        `data ${Buffer.byteLength(body)}`,
        body,
      );
    }
    out.push('');
  }
  return out.join('\n') + '\n';
}

const timed = (argv, cwd) => timedRun(argv, { cwd, env });

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

// The prepared repository: config as a partial clone has, level 0 after our first run.
const base = copy(src, 'base');
const gd = gitDirOf(base);
const promisor = fs.readdirSync(path.join(gd, 'objects/pack')).some((f) => f.endsWith('.promisor'));
if (promisor && !fs.existsSync(path.join(gd, 'config'))) {
  fs.writeFileSync(
    path.join(gd, 'config'),
    '[core]\n\trepositoryformatversion = 1\n\tbare = true\n[extensions]\n\tpartialClone = origin\n[remote "origin"]\n\turl = https://example.invalid/repo.git\n\tpromisor = true\n',
  );
}
sh('git', ['config', 'pack.graphCompression', '0'], base);
sh('git', ['config', 'gc.auto', '0'], base);
sh('git', ['repack-ts', '-q'], base);
const stream = commitStream(base, commits);
// The same commits as a pack (what a fetch brings) and loose (what git repack -d packs).
const withPack = copy(base, 'with-pack');
sh('git', ['-c', 'fastimport.unpackLimit=0', 'fast-import', '--quiet'], withPack, stream);
const withLoose = copy(base, 'with-loose');
sh('git', ['-c', `fastimport.unpackLimit=${1 << 30}`, 'fast-import', '--quiet'], withLoose, stream);
const loose = Number(/^count: (\d+)$/m.exec(sh('git', ['count-objects', '-v'], withLoose))[1]);

const cases = [
  {
    name: 'noop',
    from: base,
    ours: ['git', 'repack-ts', '-q'],
    git: ['git', 'repack', '-d', '-q'],
  },
  {
    name: 'auto',
    from: base,
    ours: ['git', 'repack-ts', '--auto'],
    git: ['git', 'repack', '-d', '-q'],
  },
  {
    name: 'new-pack',
    from: withPack,
    ours: ['git', 'repack-ts', '-q'],
    gitFrom: withLoose,
    git: ['git', 'repack', '-d', '-q'],
  },
  {
    name: 'loose',
    from: withLoose,
    ours: ['git', 'repack-ts', '-q'],
    git: ['git', 'repack', '-d', '-q'],
  },
];
const results = new Map(cases.map((c) => [c.name, { ours: [], git: [] }]));
const load = () =>
  os
    .loadavg()
    .map((x) => x.toFixed(2))
    .join(' ');
const loadBefore = load();
for (let r = 0; r < rounds; r++) {
  for (const c of cases) {
    for (const who of r % 2 === 0 ? ['git', 'ours'] : ['ours', 'git']) {
      const dir = copy(who === 'git' ? (c.gitFrom ?? c.from) : c.from, `run-${who}`);
      results.get(c.name)[who].push(timed(c[who], dir));
    }
  }
}
const loadAfter = load();
console.log(
  `${path.basename(path.dirname(src))}/${path.basename(src)}: ${rounds} rounds, ${commits} commits (${loose} objects loose); load ${loadBefore} -> ${loadAfter}; node ${process.version}, ${sh('git', ['--version'], work).trim()}`,
);
console.log('| case | git repack -d | git repack-ts | ratio | peak git | peak ours |');
console.log('|---|---|---|---|---|---|');
for (const c of cases) {
  const { ours, git } = results.get(c.name);
  const o = median(ours.map((x) => x.secs));
  const g = median(git.map((x) => x.secs));
  console.log(
    `| ${c.name} | ${g.toFixed(2)} s | ${o.toFixed(2)} s | ${(o / g).toFixed(2)}x | ${median(git.map((x) => x.mib)).toFixed(0)} MiB | ${median(ours.map((x) => x.mib)).toFixed(0)} MiB |`,
  );
}
fs.rmSync(work, { recursive: true, force: true });
