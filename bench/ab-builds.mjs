// A/B of the rewrite between two builds (e.g. a worktree of the previous release against this one), interleaved
// with git repack -a -d, each run on a fresh hard-linked copy; --no-fsck so that the rewrite alone is compared.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { copyRepo } from './copy-repo.mjs';
import { timed as timedRun } from './timed.mjs';
// usage: node bench/ab-builds.mjs <git-dir> <rounds> <old launcher> <new launcher>
const [repoArg, runsArg, oldArg, newArg] = process.argv.slice(2);
const runs = Number(runsArg ?? 3);
const gitDir = repoArg;
const env = {
  ...process.env,
  GIT_CONFIG_NOSYSTEM: '1',
  GIT_CONFIG_GLOBAL: '/dev/null',
  LANG: 'C',
  GIT_NO_LAZY_FETCH: '1',
};
const OLD = oldArg,
  NEW = newArg;
const gitP = ['-c', 'remote.origin.promisor=true', '-c', 'extensions.partialClone=origin'];
const timed = (argv, cwd) => timedRun(argv, { cwd, env });
// second-run states, one per build
const secondOf = {};
for (const [name, bin] of [
  ['old', OLD],
  ['new', NEW],
]) {
  for (const lv of ['0', 'auto']) {
    const c = copyRepo(gitDir);
    execFileSync(bin, ['-q', `--graph-compression=${lv}`, '--no-fsck'], { cwd: c, env });
    secondOf[name + lv] = c;
  }
}
const cmds = [
  ['git repack -a -d', () => ['git', ...gitP, 'repack', '-a', '-d', '-q'], () => copyRepo(gitDir)],
  [
    'old =0 --no-fsck',
    () => [OLD, '-q', '--graph-compression=0', '--no-fsck'],
    () => copyRepo(gitDir),
  ],
  [
    'new =0 --no-fsck',
    () => [NEW, '-q', '--graph-compression=0', '--no-fsck'],
    () => copyRepo(gitDir),
  ],
  [
    'old =auto --no-fsck',
    () => [OLD, '-q', '--graph-compression=auto', '--no-fsck'],
    () => copyRepo(gitDir),
  ],
  [
    'new =auto --no-fsck',
    () => [NEW, '-q', '--graph-compression=auto', '--no-fsck'],
    () => copyRepo(gitDir),
  ],
  [
    'old second =0',
    () => [OLD, '-q', '--graph-compression=0', '--no-fsck'],
    () => copyRepo(secondOf.old0),
  ],
  [
    'new second =0',
    () => [NEW, '-q', '--graph-compression=0', '--no-fsck'],
    () => copyRepo(secondOf.new0),
  ],
  [
    'old second =auto',
    () => [OLD, '-q', '--graph-compression=auto', '--no-fsck'],
    () => copyRepo(secondOf.oldauto),
  ],
  [
    'new second =auto',
    () => [NEW, '-q', '--graph-compression=auto', '--no-fsck'],
    () => copyRepo(secondOf.newauto),
  ],
];
const res = new Map();
for (let r = 0; r < runs; r++)
  for (const [label, argv, mk] of cmds) {
    const cwd = mk();
    try {
      const t = timed(argv(), cwd);
      (res.get(label) ?? res.set(label, []).get(label)).push(t);
      process.stderr.write(`${r + 1} ${label} ${t.secs} s ${t.mib.toFixed(0)} MiB\n`);
    } finally {
      fs.rmSync(cwd, { recursive: true, force: true });
    }
  }
for (const c of Object.values(secondOf)) fs.rmSync(c, { recursive: true, force: true });
const med = (a) => {
  const s = [...a].sort((x, y) => x - y);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const ref = med(res.get('git repack -a -d').map((t) => t.secs));
console.log(
  `${path.basename(path.dirname(gitDir))}: median of ${runs} interleaved rounds; load ${fs.readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')}`,
);
console.log('| command | wall s | min–max | vs git | peak RSS MiB |\n|---|---|---|---|---|');
for (const [label] of cmds) {
  const ts = res.get(label);
  const s = ts.map((t) => t.secs);
  console.log(
    `| ${label} | ${med(s).toFixed(2)} | ${Math.min(...s).toFixed(2)}–${Math.max(...s).toFixed(2)} | ${(med(s) / ref).toFixed(2)}× | ${med(ts.map((t) => t.mib)).toFixed(0)} |`,
  );
}
