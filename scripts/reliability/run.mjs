#!/usr/bin/env node
// `npm run reliability`: the long runs of the reliability harness (docs/reliability.md). The same
// test files as the suite, with REPACK_TS_RELIABILITY=long: SIGKILL at every fault point of six
// fixtures and at many random moments, ENOSPC/EIO at every write of four, a real full tmpfs, the
// whole hostile corpus in-process and through the CLI (peak RSS and time measured), tens of
// thousands of fuzz cases, concurrency at every moment, forged and restored journals and many
// runs taking over one stale lock together, zstd-import killed at each of its fault points and
// fed damaged and forged zstd packs. It runs against a snapshot of the build
// (a rebuild meanwhile changes nothing), prints the figures and, with --write, puts them in
// docs/reliability.md between the figures markers.
//
//   npm run reliability                       everything (8 to 16 minutes on 2 cores)
//   npm run reliability -- --only=kills       one group: kills, hostile, fuzz, concurrency, env, journal, zstd
//   npm run reliability -- --write            and update docs/reliability.md
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, '../..');
const GROUPS = {
  kills: ['test/reliability.test.ts'],
  concurrency: ['test/reliability-concurrency.test.ts'],
  env: ['test/reliability-env.test.ts'],
  hostile: ['test/hostile.test.ts'],
  fuzz: ['test/fuzz.test.ts'],
  journal: ['test/reliability-journal.test.ts'],
  zstd: ['test/reliability-zstd.test.ts'],
};

const args = process.argv.slice(2);
const only = args
  .find((a) => a.startsWith('--only='))
  ?.slice(7)
  .split(',');
const write = args.includes('--write');
for (const g of only ?? []) {
  if (!(g in GROUPS)) {
    console.error(`unknown group ${g} (known: ${Object.keys(GROUPS).join(', ')})`);
    process.exit(129);
  }
}
const files = Object.entries(GROUPS)
  .filter(([g]) => !only || only.includes(g))
  .flatMap(([, f]) => f);

// A snapshot of the build: bin/ and dist/ as they are now.
const snap = fs.mkdtempSync(path.join(os.tmpdir(), 'git-repack-ts-reliability-build-'));
fs.chmodSync(snap, 0o755); // readable by the unprivileged user of the read-only case
fs.cpSync(path.join(ROOT, 'dist'), path.join(snap, 'dist'), { recursive: true });
fs.cpSync(path.join(ROOT, 'bin'), path.join(snap, 'bin'), { recursive: true });
fs.copyFileSync(path.join(ROOT, 'package.json'), path.join(snap, 'package.json'));
fs.symlinkSync(path.join(ROOT, 'node_modules'), path.join(snap, 'node_modules'));
const report = path.join(snap, 'figures.jsonl');
fs.writeFileSync(report, '');

const started = Date.now();
const vitest = path.join(ROOT, 'node_modules', 'vitest', 'vitest.mjs');
const r = spawnSync(process.execPath, [vitest, 'run', ...files, '--maxWorkers=2'], {
  cwd: ROOT,
  stdio: 'inherit',
  env: {
    ...process.env,
    REPACK_TS_RELIABILITY: 'long',
    REPACK_TS_RELIABILITY_REPORT: report,
    REPACK_TS_BIN: path.join(snap, 'bin', 'git-repack-ts.js'),
    REPACK_TS_DIST: path.join(snap, 'dist'),
  },
});
const minutes = ((Date.now() - started) / 60000).toFixed(1);

const rows = fs
  .readFileSync(report, 'utf8')
  .split('\n')
  .filter(Boolean)
  .map((l) => JSON.parse(l));
const group = (re) => rows.filter((x) => re.test(x.figure));
const sum = (xs) =>
  xs.reduce((a, x) => ({ tried: a.tried + x.tried, held: a.held + x.held }), { tried: 0, held: 0 });
const kills = sum(group(/kills/));
const damaged = sum(group(/^damaged inputs/));
const fuzzed = sum(group(/^fuzz cases/));
const journal = sum(group(/journal|lock takeover|takeover markers|\.idx and its \.pack/));
const version = (cmd, a) => (spawnSync(cmd, a, { encoding: 'utf8' }).stdout || '').trim();

const lines = [];
lines.push(
  `Run of ${new Date().toISOString().slice(0, 10)}: \`npm run reliability${args.length ? ' -- ' + args.join(' ') : ''}\`, ${minutes} min on ${os.cpus().length} cores, node ${process.version}, ${version('git', ['--version'])}; vitest exit ${r.status}.`,
);
lines.push('');
lines.push('| summary | tried | held |');
lines.push('|---|---|---|');
lines.push(
  `| kills survived / kills tried (fault points and random moments) | ${kills.tried} | ${kills.held} |`,
);
lines.push(
  `| damaged inputs handled cleanly / tried (in-process and CLI runs) | ${damaged.tried} | ${damaged.held} |`,
);
lines.push(`| fuzz cases without a finding / run | ${fuzzed.tried} | ${fuzzed.held} |`);
lines.push(
  `| journal and lock cases held / tried (forged journals, lock takeovers) | ${journal.tried} | ${journal.held} |`,
);
lines.push('');
lines.push('| figure | tried | held | notes |');
lines.push('|---|---|---|---|');
for (const x of rows)
  lines.push(
    `| ${x.figure} | ${x.tried} | ${x.held} | ${x.notes.join('; ').replace(/\|/g, '\\|')} |`,
  );
const table = lines.join('\n');
console.log('\n' + table + '\n');

if (write) {
  const doc = path.join(ROOT, 'docs', 'reliability.md');
  const text = fs.readFileSync(doc, 'utf8');
  const a = '<!-- figures:start -->';
  const b = '<!-- figures:end -->';
  const i = text.indexOf(a);
  const j = text.indexOf(b);
  if (i < 0 || j < i) console.error(`${doc} has no ${a} … ${b} markers; figures not written`);
  else fs.writeFileSync(doc, text.slice(0, i + a.length) + '\n' + table + '\n' + text.slice(j));
}
fs.rmSync(snap, { recursive: true, force: true });
process.exit(r.status ?? 1);
