#!/usr/bin/env node
// Side-by-side timings against stock git, in the same run, interleaved (round robin), with
// setup outside the timed part: median wall time and median peak RSS (GNU time) per command,
// and the ratio to the first command of each group. Usage:
//   node bench/compare.mjs <suite> <repository> [runs]
// suites:
//   read     verify and inspect against git verify-pack / index-pack --verify / cat-file
//   rewrite  the rewrite against git repack -a -d (copies a fresh repository for each run)
//   everyday the first run as a user runs it (issue 35): `git repack-ts` through git (this
//            build's bin/ first on PATH), the user's own environment, a full fresh copy (cp -a)
//            of the repository for every run, git repack -a -d in the same conditions; the
//            default (validated by git: --fsck=changed) and --no-fsck; BEFORE=<bin directory of
//            another build> adds that build's two commands to the same rounds
// The repository is never modified. A partial clone without a config file (the public snapshots)
// gets, in the prepared copy both tools start from, the config a partial clone has.
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { copyRepo } from './copy-repo.mjs';
import { timed as timedRun } from './timed.mjs';

// The command as git runs it: the launcher (bin/git-repack-ts), which also fixes glibc's mmap threshold.
const BIN = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../bin/git-repack-ts');
const [suite, repoArg, runsArg] = process.argv.slice(2);
if (!suite || !repoArg) {
  console.error('usage: node bench/compare.mjs (read|rewrite|everyday) <repository> [runs]');
  process.exit(129);
}
const runs = Number(runsArg ?? 5);
const repo = path.resolve(repoArg);
const gitDir = fs.existsSync(path.join(repo, '.git')) ? path.join(repo, '.git') : repo;
const env = { ...process.env, GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null', LANG: 'C' };

const timed = (argv, cwd, runEnv = env) =>
  timedRun(argv, { cwd, env: runEnv, allowFail: argv.includes('--allow-fail') });

/** A full copy (cp -a: every file its own, as a user's repository is) under BENCH_TMPDIR. */
function fullCopy(from) {
  const to = fs.mkdtempSync(path.join(process.env.BENCH_TMPDIR ?? os.tmpdir(), 'rts-user-'));
  execFileSync('cp', ['-a', `${from}/.`, to]);
  // Written back before the timed run, as a user's files are: no writeback of the copy meanwhile.
  execFileSync('sync');
  return to;
}

/** The repository as a user has it: a snapshot without a config gets a partial clone's. */
function userCopy(from) {
  const to = fullCopy(from);
  const promisorPack = fs
    .readdirSync(path.join(to, 'objects/pack'))
    .some((f) => f.endsWith('.promisor'));
  if (promisorPack && !fs.existsSync(path.join(to, 'config'))) {
    fs.writeFileSync(
      path.join(to, 'config'),
      '[core]\n\trepositoryformatversion = 1\n\tbare = true\n[extensions]\n\tpartialClone = origin\n[remote "origin"]\n\turl = https://example.invalid/snapshot.git\n\tpromisor = true\n',
    );
  }
  return to;
}

const packs = fs.readdirSync(path.join(gitDir, 'objects/pack')).filter((f) => f.endsWith('.pack'));
// A partial clone copied without its config (as public snapshots are): git repack must be told
// there is a promisor remote, or it dies on the first missing blob (and must not fetch).
const promisor = fs
  .readdirSync(path.join(gitDir, 'objects/pack'))
  .some((f) => f.endsWith('.promisor'));
const hasRemote =
  spawnSync('git', ['--git-dir', gitDir, 'config', '--get-regexp', '^remote\\..*\\.promisor$'], {
    env,
    encoding: 'utf8',
  }).stdout.trim() !== '';
const gitPromisor =
  promisor && !hasRemote
    ? ['-c', 'remote.origin.promisor=true', '-c', 'extensions.partialClone=origin']
    : [];
env.GIT_NO_LAZY_FETCH = '1';
const idx = path.join(gitDir, 'objects/pack', packs[0].replace(/\.pack$/, '.idx'));
const pack = path.join(gitDir, 'objects/pack', packs[0]);
const count = Number(
  execFileSync('git', ['--git-dir', gitDir, 'count-objects', '-v'], {
    env,
    encoding: 'utf8',
  }).match(/in-pack: (\d+)/)[1],
);

let groups;
if (suite === 'read') {
  groups = [
    {
      name: 'verify',
      cmds: [
        ['git verify-pack', () => ({ argv: ['git', 'verify-pack', idx], cwd: gitDir })],
        [
          'git index-pack --verify',
          () => ({ argv: ['git', 'index-pack', '--verify', pack], cwd: gitDir }),
        ],
        ['git repack-ts verify', () => ({ argv: [BIN, 'verify'], cwd: gitDir })],
      ],
    },
    {
      name: 'census',
      cmds: [
        [
          'git cat-file --batch-all-objects --batch-check',
          () => ({
            argv: [
              'git',
              'cat-file',
              '--batch-all-objects',
              '--batch-check=%(objectname) %(objecttype) %(objectsize) %(objectsize:disk) %(deltabase)',
            ],
            cwd: gitDir,
          }),
        ],
        ['git repack-ts inspect', () => ({ argv: [BIN, 'inspect', '--json'], cwd: gitDir })],
      ],
    },
  ];
} else if (suite === 'rewrite') {
  // A level-0 result to time the second run on.
  const second = copyRepo(gitDir);
  execFileSync(BIN, ['-q', '--graph-compression=0', '--no-fsck'], { cwd: second, env });
  groups = [
    {
      name: 'rewrite',
      cmds: [
        [
          'git repack -a -d',
          () => ({
            argv: ['git', ...gitPromisor, 'repack', '-a', '-d', '-q'],
            cwd: copyRepo(gitDir),
            cleanup: true,
          }),
        ],
        [
          'git repack-ts --graph-compression=0 --no-fsck',
          () => ({
            argv: [BIN, '-q', '--graph-compression=0', '--no-fsck'],
            cwd: copyRepo(gitDir),
            cleanup: true,
          }),
        ],
        [
          '(second run) git repack-ts --graph-compression=0 --no-fsck',
          () => ({
            argv: [BIN, '-q', '--graph-compression=0', '--no-fsck'],
            cwd: copyRepo(second),
            cleanup: true,
          }),
        ],
        // A second run that must still write the pack: only the tags change level, every other
        // entry is copied (a new loose object would not do it: it goes to its own pack when the
        // big pack is a promisor pack).
        [
          '(second run, tags to level 9) git repack-ts --graph-compression=0 --tag-compression=9 --no-fsck',
          () => ({
            argv: [BIN, '-q', '--graph-compression=0', '--tag-compression=9', '--no-fsck'],
            cwd: copyRepo(second),
            cleanup: true,
          }),
        ],
      ],
    },
  ];
  process.on('exit', () => fs.rmSync(second, { recursive: true, force: true }));
} else if (suite === 'everyday') {
  // The user's environment, as they run the command: only PATH changes (this build's bin/ first,
  // so that git finds git-repack-ts), and GIT_NO_LAZY_FETCH (the snapshots' remote is not there).
  const userEnv = (binDir) => ({
    ...process.env,
    PATH: `${binDir}:${process.env.PATH}`,
    GIT_NO_LAZY_FETCH: '1',
  });
  const base = userCopy(gitDir);
  const run = (binDir, args) => () => ({
    argv: ['git', ...args],
    cwd: fullCopy(base),
    cleanup: true,
    env: userEnv(binDir),
  });
  const before = process.env.BEFORE;
  groups = [
    {
      name: 'rewrite',
      cmds: [
        ['git repack -a -d', run(path.dirname(BIN), ['repack', '-a', '-d', '-q'])],
        [
          'git repack-ts --graph-compression=0',
          run(path.dirname(BIN), ['repack-ts', '-q', '--graph-compression=0']),
        ],
        [
          'git repack-ts --graph-compression=0 --no-fsck',
          run(path.dirname(BIN), ['repack-ts', '-q', '--graph-compression=0', '--no-fsck']),
        ],
        ...(before
          ? [
              [
                '(before) git repack-ts --graph-compression=0',
                run(before, ['repack-ts', '-q', '--graph-compression=0']),
              ],
              [
                '(before) git repack-ts --graph-compression=0 --no-fsck',
                run(before, ['repack-ts', '-q', '--graph-compression=0', '--no-fsck']),
              ],
            ]
          : []),
      ],
    },
  ];
  process.on('exit', () => fs.rmSync(base, { recursive: true, force: true }));
} else {
  console.error(`unknown suite '${suite}'`);
  process.exit(129);
}

const load = () =>
  os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(', ');
const loadBefore = load();
const results = new Map();
for (let r = 0; r < runs; r++) {
  for (const g of groups) {
    for (const [label, setup] of g.cmds) {
      const s = setup();
      try {
        const t = timed(s.argv, s.cwd, s.env);
        if (!results.has(label)) results.set(label, []);
        results.get(label).push(t);
        process.stderr.write(
          `round ${r + 1}/${runs} ${label}: ${t.secs.toFixed(2)} s ${t.mib.toFixed(0)} MiB, CPU ${t.cpu.toFixed(2)} s\n`,
        );
      } finally {
        if (s.cleanup) fs.rmSync(s.cwd, { recursive: true, force: true });
      }
    }
  }
}
const median = (a) => {
  const s = [...a].sort((x, y) => x - y);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const git = execFileSync('git', ['--version'], { encoding: 'utf8' }).trim();
console.log(
  `${path.basename(repo)}: ${count} objects, ${(fs.statSync(pack).size / 1e6).toFixed(1)} MB pack; ${git}, node ${process.version}; ${os.availableParallelism()} cores (${os.cpus()[0]?.model.trim()}); median of ${runs} interleaved runs; load average ${loadBefore} before, ${load()} after\n`,
);
for (const g of groups) {
  console.log(
    `| ${g.name} | wall s (median) | min–max | ratio | CPU s (median) | CPU ratio | peak RSS MiB |`,
  );
  console.log('|---|---|---|---|---|---|---|');
  const ref = median(results.get(g.cmds[0][0]).map((t) => t.secs));
  const refCpu = median(results.get(g.cmds[0][0]).map((t) => t.cpu));
  for (const [label] of g.cmds) {
    const ts = results.get(label);
    const secs = ts.map((t) => t.secs);
    const cpu = median(ts.map((t) => t.cpu));
    console.log(
      `| ${label} | ${median(secs).toFixed(2)} | ${Math.min(...secs).toFixed(2)}–${Math.max(...secs).toFixed(2)} | ${(median(secs) / ref).toFixed(2)}× | ${cpu.toFixed(2)} | ${(cpu / refCpu).toFixed(2)}× | ${median(ts.map((t) => t.mib)).toFixed(0)} |`,
    );
  }
  console.log('');
}
