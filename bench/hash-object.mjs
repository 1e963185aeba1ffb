#!/usr/bin/env node
/**
 * hash-object benchmark in the shape of git's t/perf/p1007-hash-object.sh: random files of each
 * size, `sha1sum` for comparison, `git hash-object` (default, and with a low core.bigFileThreshold
 * so that it takes the bulk check-in path) and `git repack-ts hash-object`, without and with -w.
 * Setup (files, removing what the previous -w run wrote) is outside the timed part; the compared
 * commands are interleaved, in a rotating order, so that a shared machine's load falls on all of
 * them alike; medians of wall time, CPU time (user+sys) and peak RSS (`/usr/bin/time`), and ratios
 * to `git hash-object` from the same run. Prints markdown.
 *
 *   node bench/hash-object.mjs [--sizes=64m,1g] [--runs=5] [--runs-w=5] [--modes=plain,w] [--tmpdir=DIR] [--keep]
 *
 * With --patterns, the patterns scripts use instead (issue #17's table), each interleaved with
 * stock git: --stdin-paths over a source tree (--tree=DIR, a work tree with its own
 * .gitattributes; it is made a repository if it is not one), -w of a 15 MB text file made of that
 * tree's sources, 64 MiB random without -w, -w of 64 and 200 MiB random in a fresh repository,
 * 1 GiB without -w, and one small file (start-up); with the load (uptime) and `openssl speed -evp
 * sha1` from the same machine:
 *
 *   node bench/hash-object.mjs --patterns --tree=DIR [--runs=7] [--runs-big=3] [--tmpdir=DIR]
 *
 * Needs the compiled CLI (`npm run build`).
 */
import { spawnSync } from 'node:child_process';
import { randomFillSync } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
// The command as git runs it: the launcher (node with its malloc settings), not node on the JS entry.
const BIN = path.resolve(here, '..', 'bin', 'git-repack-ts');

const opts = Object.fromEntries(
  process.argv.slice(2).map((a) => {
    const m = /^--([^=]+)(?:=(.*))?$/.exec(a);
    if (!m) throw new Error(`bad argument ${a}`);
    return [m[1], m[2] ?? 'true'];
  }),
);
const unit = { k: 1024, m: 1024 ** 2, g: 1024 ** 3 };
const sizes = (opts.sizes ?? '64m,1g').split(',').map((s) => {
  const m = /^(\d+)([kmg]?)$/i.exec(s);
  if (!m) throw new Error(`bad size ${s}`);
  return {
    label: s.toUpperCase().replace(/([KMG])$/, ' $1iB'),
    bytes: Number(m[1]) * (unit[m[2].toLowerCase()] ?? 1),
  };
});
const runs = Number(opts.runs ?? 5);
const runsW = Number(opts['runs-w'] ?? runs);
const modes = (opts.modes ?? 'plain,w').split(',').map((m) => m === 'w');
const tmp = fs.mkdtempSync(path.join(opts.tmpdir ?? os.tmpdir(), 'hash-object-bench-'));
const timeBin = fs.existsSync('/usr/bin/time') ? '/usr/bin/time' : undefined;

// Pinned git environment: no system or global configuration.
const env = {
  ...process.env,
  GIT_CONFIG_NOSYSTEM: '1',
  GIT_CONFIG_GLOBAL: '/dev/null',
  GIT_ATTR_NOSYSTEM: '1',
  LC_ALL: 'C',
};
for (const k of Object.keys(env))
  if (/^GIT_(DIR|WORK_TREE|INDEX_FILE|OBJECT_DIRECTORY|CONFIG_PARAMETERS)/.test(k)) delete env[k];

function sh(cmd, args, o = {}) {
  const r = spawnSync(cmd, args, { env, encoding: 'utf8', maxBuffer: 1 << 26, ...o });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')}: ${r.stderr}`);
  return r.stdout.trim();
}

function makeRandomFile(file, bytes) {
  const fd = fs.openSync(file, 'w');
  const buf = Buffer.allocUnsafe(1 << 24);
  for (let done = 0; done < bytes;) {
    const n = Math.min(buf.length, bytes - done);
    randomFillSync(buf, 0, n);
    fs.writeSync(fd, buf, 0, n);
    done += n;
  }
  fs.closeSync(fd);
}

/** Empties the object directory (what the previous -w run wrote). */
function cleanObjects(repo) {
  const objects = path.join(repo, '.git', 'objects');
  for (const d of fs.readdirSync(objects)) {
    if (/^[0-9a-f]{2}$/.test(d)) fs.rmSync(path.join(objects, d), { recursive: true, force: true });
  }
  const pack = path.join(objects, 'pack');
  for (const f of fs.readdirSync(pack)) fs.rmSync(path.join(pack, f), { force: true });
}

/** One timed run: wall ms (ours), user+sys ms and peak RSS KiB (from /usr/bin/time). */
function timed(cmd, args, cwd, extraEnv = {}) {
  const stats = path.join(tmp, 'time.out');
  const argv = timeBin ? ['-f', '%U %S %M', '-o', stats, cmd, ...args] : args;
  const t0 = process.hrtime.bigint();
  const r = spawnSync(timeBin ?? cmd, argv, {
    cwd,
    env: { ...env, ...extraEnv },
    encoding: 'utf8',
    maxBuffer: 1 << 26,
  });
  const wall = Number(process.hrtime.bigint() - t0) / 1e6;
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} failed: ${r.stderr}`);
  let cpu = NaN;
  let rss = NaN;
  if (timeBin) {
    const last = fs.readFileSync(stats, 'utf8').trim().split('\n').pop().split(/\s+/).map(Number);
    cpu = (last[0] + last[1]) * 1000;
    rss = last[2];
  }
  return { wall, cpu, rss, out: r.stdout.trim().split(/\s+/)[0] };
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[s.length >> 1] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

function commands(file, write) {
  const w = write ? ['-w'] : [];
  const low = ['-c', 'core.bigFileThreshold=32m'];
  const list = [];
  if (!write) list.push({ name: 'sha1sum(1) <file>', cmd: 'sha1sum', args: [file] });
  list.push({
    name: `git hash-object${write ? ' -w' : ''} <file>`,
    cmd: 'git',
    args: ['hash-object', ...w, file],
    git: true,
  });
  list.push({
    name: `git hash-object${write ? ' -w' : ''} <file>, threshold=32M`,
    cmd: 'git',
    args: [...low, 'hash-object', ...w, file],
    git: true,
  });
  list.push({
    name: `repack-ts hash-object${write ? ' -w' : ''} <file>`,
    cmd: BIN,
    args: ['hash-object', ...w, file],
  });
  list.push({
    name: `repack-ts hash-object${write ? ' -w' : ''} <file>, threshold=32M`,
    cmd: BIN,
    args: ['hash-object', ...w, file],
    env: { GIT_CONFIG_PARAMETERS: "'core.bigfilethreshold'='32m'" },
  });
  return list;
}

if (opts.patterns === 'true') {
  await import('./hash-object-patterns.mjs').then((m) =>
    m.runPatterns({ opts, env, tmp, BIN, timed, median, cleanObjects, makeRandomFile, sh }),
  );
  fs.rmSync(tmp, { recursive: true, force: true });
  process.exit(0);
}

const results = [];
const started = new Date();
const loadBefore = os.loadavg();
try {
  for (const size of sizes) {
    const repo = path.join(tmp, `repo-${size.bytes}`);
    sh('git', ['init', '-q', '--template=', repo]);
    const file = path.join(tmp, `file-${size.bytes}.random`);
    makeRandomFile(file, size.bytes);
    const expected = sh('git', ['hash-object', file], { cwd: repo });
    for (const write of modes) {
      const cmds = commands(file, write);
      const samples = cmds.map(() => []);
      const n = write ? runsW : runs;
      // One warm-up pass (page cache, git's and node's own files), then interleaved timed passes.
      for (let pass = -1; pass < n; pass++) {
        for (let k = 0; k < cmds.length; k++) {
          const i = (k + Math.max(0, pass)) % cmds.length;
          const c = cmds[i];
          if (write) cleanObjects(repo);
          const r = timed(c.cmd, c.args, repo, c.env);
          if (c.cmd !== 'sha1sum' && r.out !== expected)
            throw new Error(`${c.name}: ${r.out} != ${expected}`);
          if (pass >= 0) samples[i].push(r);
        }
        process.stderr.write(`${size.label}${write ? ' -w' : ''}: pass ${pass + 1}/${n}\n`);
      }
      cmds.forEach((c, i) => {
        results.push({
          size: size.label,
          write,
          name: c.name,
          wall: median(samples[i].map((s) => s.wall)),
          cpu: median(samples[i].map((s) => s.cpu)),
          rss: median(samples[i].map((s) => s.rss)),
          runs: samples[i].length,
        });
      });
      cleanObjects(repo);
    }
    fs.rmSync(file);
  }
} finally {
  if (opts.keep !== 'true') fs.rmSync(tmp, { recursive: true, force: true });
}
const loadAfter = os.loadavg();

const fmtMs = (ms) => (ms >= 1000 ? `${(ms / 1000).toFixed(2)} s` : `${ms.toFixed(0)} ms`);
const fmtMiB = (kb) => (Number.isNaN(kb) ? '–' : `${(kb / 1024).toFixed(0)} MiB`);
const version = (c, a) => spawnSync(c, a, { encoding: 'utf8' }).stdout.trim().split('\n')[0];
const lines = [];
lines.push(
  `Run ${started.toISOString()} on ${os.cpus()[0]?.model ?? '?'} × ${os.availableParallelism()}, ${version('git', ['--version'])}, node ${process.version}, ${version('sha1sum', ['--version'])}.`,
);
lines.push(
  `Load average (1 min) ${loadBefore[0].toFixed(2)} before, ${loadAfter[0].toFixed(2)} after. Medians of ${runs} runs (${runsW} with -w), interleaved.`,
);
lines.push('');
const header = ['test'];
for (const s of sizes) header.push(`${s.label} wall`, 'vs git', 'CPU', 'peak RSS');
lines.push(`| ${header.join(' | ')} |`);
lines.push(`|${header.map((h, i) => (i === 0 ? ' --- ' : ' ---: ')).join('|')}|`);
for (const write of modes) {
  const names = [...new Set(results.filter((r) => r.write === write).map((r) => r.name))];
  for (const name of names) {
    const row = [name];
    for (const s of sizes) {
      const r = results.find((x) => x.size === s.label && x.write === write && x.name === name);
      const base = results.find(
        (x) =>
          x.size === s.label &&
          x.write === write &&
          x.name === `git hash-object${write ? ' -w' : ''} <file>`,
      );
      if (!r) {
        row.push('', '', '', '');
        continue;
      }
      row.push(
        fmtMs(r.wall),
        base ? `${(r.wall / base.wall).toFixed(2)}×` : '',
        fmtMs(r.cpu),
        fmtMiB(r.rss),
      );
    }
    lines.push(`| ${row.join(' | ')} |`);
  }
}
process.stdout.write(lines.join('\n') + '\n');
