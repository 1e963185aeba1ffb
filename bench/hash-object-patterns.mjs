/**
 * The patterns of bench/hash-object.mjs --patterns (see there): each pattern's commands are
 * interleaved with stock git in a rotating order after one warm-up pass; medians of wall time,
 * CPU time (user + sys) and peak RSS; every id checked against git's. Prints markdown.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

function uptime() {
  return execFileSync('uptime', { encoding: 'utf8' }).trim();
}

/** `openssl speed -evp sha1`: the 16384-byte column, in GB/s. */
function opensslSha1() {
  const out = spawnSync('openssl', ['speed', '-evp', 'sha1', '-seconds', '2'], {
    encoding: 'utf8',
  }).stdout;
  const line = out.split('\n').find((l) => /^sha1\s/.test(l));
  if (!line) return undefined;
  const cols = line.trim().split(/\s+/);
  return (Number(cols[cols.length - 1].replace(/k$/, '')) * 1000) / 1e9;
}

function listFiles(dir) {
  const out = [];
  const walk = (rel) => {
    for (const e of fs.readdirSync(path.join(dir, rel), { withFileTypes: true })) {
      const r = rel ? `${rel}/${e.name}` : e.name;
      if (e.name === '.git' && !rel) continue;
      if (e.isDirectory()) walk(r);
      else if (e.isFile()) out.push(r);
    }
  };
  walk('');
  return out.sort();
}

export async function runPatterns({
  opts,
  env,
  tmp,
  BIN,
  timed,
  median,
  cleanObjects,
  makeRandomFile,
  sh,
}) {
  const runs = Number(opts.runs ?? 7);
  const runsBig = Number(opts['runs-big'] ?? 3);
  const tree = opts.tree ? path.resolve(opts.tree) : undefined;
  const started = new Date();
  const loadBefore = uptime();
  const sha1 = opensslSha1();
  const ours = (args) => ({ cmd: BIN, args: ['hash-object', ...args] });
  const git = (args) => ({ cmd: 'git', args: ['hash-object', ...args] });
  const patterns = [];

  const fresh = path.join(tmp, 'fresh');
  sh('git', ['init', '-q', '--template=', fresh]);
  const small = path.join(fresh, 'small.txt');
  fs.writeFileSync(small, 'a small file\n'.repeat(40));
  patterns.push({
    name: 'one small file (start-up)',
    cwd: fresh,
    args: ['small.txt'],
    runs,
    extra: [{ name: 'node -e 0', cmd: process.execPath, args: ['-e', '0'] }],
  });

  if (tree) {
    if (!fs.existsSync(path.join(tree, '.git'))) sh('git', ['init', '-q', '--template=', tree]);
    const files = listFiles(tree);
    const list = path.join(tmp, 'paths.txt');
    fs.writeFileSync(list, files.join('\n') + '\n');
    patterns.push({
      name: `--stdin-paths, ${files.length} files of the tree`,
      cwd: tree,
      args: ['--stdin-paths'],
      stdin: list,
      runs,
    });
    const text = path.join(fresh, 'text15.txt');
    const fd = fs.openSync(text, 'w');
    let n = 0;
    for (const f of files) {
      if (!/\.(c|h|sh|txt|adoc|perl|pl|py)$/.test(f)) continue;
      const b = fs.readFileSync(path.join(tree, f));
      const take = Math.min(b.length, 15_000_000 - n);
      fs.writeSync(fd, b, 0, take);
      n += take;
      if (n >= 15_000_000) break;
    }
    fs.closeSync(fd);
    patterns.push({
      name: `-w of a ${(n / 1e6).toFixed(0)} MB text file (the tree's sources), fresh repository`,
      cwd: fresh,
      args: ['-w', 'text15.txt'],
      write: true,
      runs,
    });
  }
  for (const [label, bytes, write, r] of [
    ['64 MiB random, no -w', 64 << 20, false, runs],
    ['-w of 64 MiB random, fresh repository', 64 << 20, true, runs],
    ['-w of 200 MiB random, fresh repository', 200 << 20, true, runsBig],
    ['1 GiB random, no -w', 1 << 30, false, runsBig],
  ]) {
    if (opts.skip && new RegExp(opts.skip).test(label)) continue;
    // The SHA-1 limit for the 1 GiB row: the same file through sha1sum and openssl, in the same rotation.
    const file = `random-${bytes}`;
    const extra =
      bytes === 1 << 30 && !write
        ? [
            { name: 'sha1sum', cmd: 'sha1sum', args: [file] },
            { name: 'openssl sha1', cmd: 'openssl', args: ['sha1', file] },
          ]
        : undefined;
    patterns.push({
      name: label,
      cwd: fresh,
      bytes,
      args: [...(write ? ['-w'] : []), file],
      write,
      runs: r,
      ...(extra ? { extra } : {}),
    });
  }

  const rows = [];
  for (const p of patterns) {
    if (p.bytes && !fs.existsSync(path.join(fresh, `random-${p.bytes}`)))
      makeRandomFile(path.join(fresh, `random-${p.bytes}`), p.bytes);
    const cmds = [
      { name: 'git', ...git(p.args) },
      { name: 'ours', ...ours(p.args) },
      ...(p.extra ?? []),
    ];
    const samples = cmds.map(() => []);
    let expected;
    for (let pass = -1; pass < p.runs; pass++) {
      for (let k = 0; k < cmds.length; k++) {
        const i = (k + Math.max(0, pass)) % cmds.length;
        const c = cmds[i];
        if (p.write) cleanObjects(p.cwd);
        const r = timedWithStdin(timed, c, p);
        if (i < 2) {
          expected ??= r.full;
          if (r.full !== expected)
            throw new Error(`${p.name}: ${c.name} printed other ids than git`);
        }
        if (pass >= 0) samples[i].push(r);
      }
      process.stderr.write(`${p.name}: pass ${pass + 1}/${p.runs}\n`);
    }
    if (p.write) cleanObjects(p.cwd);
    const m = (i, k) => median(samples[i].map((s) => s[k]));
    rows.push({
      name: p.name,
      command: `${p.stdin ? `< paths ` : ''}hash-object ${p.args.join(' ')}`,
      git: m(0, 'wall'),
      ours: m(1, 'wall'),
      gitCpu: m(0, 'cpu'),
      oursCpu: m(1, 'cpu'),
      gitRss: m(0, 'rss'),
      oursRss: m(1, 'rss'),
      min: [Math.min(...samples[0].map((s) => s.wall)), Math.min(...samples[1].map((s) => s.wall))],
      extra: (p.extra ?? []).map((e, j) => `${e.name} ${fmt(m(2 + j, 'wall'))}`).join(', '),
      runs: p.runs,
      bytes: p.bytes,
    });
  }
  const loadAfter = uptime();
  print({ rows, started, loadBefore, loadAfter, sha1 });
}

/** `timed` with the pattern's standard input (a regular file) and the full output kept. */
function timedWithStdin(timed, c, p) {
  if (!p.stdin) {
    const r = timed(c.cmd, c.args, p.cwd);
    return { ...r, full: r.out };
  }
  // Through sh so that the list is a regular file on stdin, as `cmd < list` in a script.
  const q = (s) => `'${s.replace(/'/g, `'\\''`)}'`;
  const line = `${[c.cmd, ...c.args].map(q).join(' ')} < ${q(p.stdin)} | sha1sum`;
  const r = timed('sh', ['-c', line], p.cwd);
  return { ...r, full: r.out };
}

const fmt = (ms) => (ms >= 1000 ? `${(ms / 1000).toFixed(2)} s` : `${ms.toFixed(0)} ms`);
const mib = (kb) => (Number.isNaN(kb) ? '–' : `${(kb / 1024).toFixed(0)} MiB`);

function print({ rows, started, loadBefore, loadAfter, sha1 }) {
  const version = (c, a) => spawnSync(c, a, { encoding: 'utf8' }).stdout.trim().split('\n')[0];
  const L = [];
  L.push(
    `Run ${started.toISOString()} on ${os.cpus()[0]?.model ?? '?'} × ${os.availableParallelism()}, ${version('git', ['--version'])}, node ${process.version}.`,
  );
  L.push(
    `\`openssl speed -evp sha1\` (16 KiB blocks): ${sha1 ? sha1.toFixed(2) + ' GB/s' : 'n/a'}.`,
  );
  L.push(`Load before: \`${loadBefore}\`; after: \`${loadAfter}\`.`);
  L.push('');
  L.push(
    '| pattern | git (median) | ours (median) | ours / git | best git / ours | CPU git / ours | peak RSS git / ours | runs |',
  );
  L.push('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
  for (const r of rows) {
    L.push(
      `| ${r.name}${r.extra ? ` (${r.extra})` : ''} | ${fmt(r.git)} | ${fmt(r.ours)} | ${(r.ours / r.git).toFixed(2)}× | ${fmt(r.min[0])} / ${fmt(r.min[1])} | ${fmt(r.gitCpu)} / ${fmt(r.oursCpu)} | ${mib(r.gitRss)} / ${mib(r.oursRss)} | ${r.runs} |`,
    );
  }
  const big = rows.find((r) => r.bytes === 1 << 30 && !/-w/.test(r.name));
  if (big && sha1) {
    const limit = ((1 << 30) / (sha1 * 1e9)) * 1000;
    L.push('');
    L.push(
      `1 GiB at the OpenSSL SHA-1 rate: ${fmt(limit)}; ours ${fmt(big.ours)} = ${(big.ours / limit).toFixed(2)}× that limit (best run ${(big.min[1] / limit).toFixed(2)}×).`,
    );
  }
  process.stdout.write(L.join('\n') + '\n');
}
