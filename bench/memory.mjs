#!/usr/bin/env node
// Where a rewrite's memory goes: runs `git repack-ts` (default `--graph-compression=0 --no-fsck`)
// on a private copy of a repository, samples its RSS every 50 ms with the progress phase it is
// in, and reads /proc/<pid>/smaps at the highest sample. Prints the peak of each phase and the
// peak's mappings by kind. Usage:
//   node bench/memory.mjs <repository> [repack-ts arguments...]
// The RSS samples can miss a short peak; GNU time's %M (bench/compare.mjs) is the figure to quote.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { copyRepo } from './copy-repo.mjs';

// The command as git runs it: the launcher (bin/git-repack-ts), which also fixes glibc's mmap threshold.
const BIN = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../bin/git-repack-ts');
const [repoArg, ...rest] = process.argv.slice(2);
if (!repoArg) {
  console.error('usage: node bench/memory.mjs <repository> [repack-ts arguments...]');
  process.exit(129);
}
const args = rest.length > 0 ? rest : ['--graph-compression=0', '--no-fsck'];
const repo = path.resolve(repoArg);
const gitDir = fs.existsSync(path.join(repo, '.git')) ? path.join(repo, '.git') : repo;
const copy = copyRepo(gitDir);

/** smaps as [kind, RSS KiB] per mapping. */
function smaps(pid) {
  const out = [];
  let cur;
  for (const line of fs.readFileSync(`/proc/${pid}/smaps`, 'utf8').split('\n')) {
    const m = /^([0-9a-f]+)-([0-9a-f]+) \S+ \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (m) {
      const kib = (parseInt(m[2], 16) - parseInt(m[1], 16)) / 1024;
      const name = m[3] ?? '';
      const kind = name.startsWith('/')
        ? `file ${path.basename(name)}`
        : name !== ''
          ? name
          : kib < 1024
            ? 'anonymous < 1 MiB (V8 pages, stacks)'
            : 'anonymous >= 1 MiB (malloc)';
      cur = [kind, 0];
      out.push(cur);
      continue;
    }
    const r = /^Rss:\s+(\d+)/.exec(line);
    if (r && cur) cur[1] = Number(r[1]);
  }
  return out;
}

const child = spawn(BIN, ['--progress', ...args], {
  cwd: copy,
  stdio: ['ignore', 'ignore', 'pipe'],
  env: { ...process.env, GIT_NO_LAZY_FETCH: '1' },
});
let phase = 'start';
let errTail = '';
child.stderr.on('data', (d) => {
  const text = d.toString();
  errTail = (errTail + text).slice(-2000);
  const parts = text.split(/[\r\n]/).filter((l) => l.trim() !== '');
  if (parts.length > 0) phase = parts[parts.length - 1].replace(/:.*/, '').trim();
});
const peakOf = new Map();
let peak = { kib: 0, phase: '', maps: [] };
const timer = setInterval(() => {
  try {
    const kib = Number(
      /VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${child.pid}/status`, 'utf8'))[1],
    );
    peakOf.set(phase, Math.max(peakOf.get(phase) ?? 0, kib));
    if (kib > peak.kib) peak = { kib, phase, maps: smaps(child.pid) };
  } catch {
    // the process ended between two samples
  }
}, 50);
child.on('exit', (code) => {
  clearInterval(timer);
  fs.rmSync(copy, { recursive: true, force: true });
  if (code !== 0) {
    console.error(`git repack-ts ${args.join(' ')} exited ${code}:\n${errTail}`);
    process.exit(1);
  }
  const mib = (k) => (k / 1024).toFixed(1);
  console.log(
    `git repack-ts ${args.join(' ')} on ${path.basename(repo) === 'repo' ? path.basename(path.dirname(repo)) : path.basename(repo)}: RSS sampled every 50 ms\n`,
  );
  console.log('| phase | peak RSS MiB |\n|---|---|');
  for (const [p, k] of peakOf) console.log(`| ${p} | ${mib(k)} |`);
  const byKind = new Map();
  for (const [kind, k] of peak.maps) byKind.set(kind, (byKind.get(kind) ?? 0) + k);
  console.log(
    `\nat the highest sample (${mib(peak.kib)} MiB, ${peak.phase}):\n\n| mappings | RSS MiB |\n|---|---|`,
  );
  for (const [kind, k] of [...byKind].sort((a, b) => b[1] - a[1]))
    if (k >= 512) console.log(`| ${kind} | ${mib(k)} |`);
});
