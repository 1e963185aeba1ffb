#!/usr/bin/env node
// The README's first command: builds a small demo repository with real git (or uses the one
// named on the command line), then runs git-repack-ts on it: inspect, a dry run, the rewrite
// with commits and trees at zlib level 0, verify, and git's own fsck of the result.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const bin = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../bin/git-repack-ts.js');
const env = {
  ...process.env,
  GIT_CONFIG_NOSYSTEM: '1',
  GIT_CONFIG_GLOBAL: '/dev/null',
  GIT_AUTHOR_NAME: 'Demo',
  GIT_AUTHOR_EMAIL: 'demo@example.com',
  GIT_COMMITTER_NAME: 'Demo',
  GIT_COMMITTER_EMAIL: 'demo@example.com',
};

function run(cmd, args, cwd, extra = {}) {
  const r = spawnSync(cmd, args, {
    cwd,
    env: { ...env, ...extra },
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  if (r.status !== 0) {
    process.stderr.write(`${cmd} ${args.join(' ')} failed:\n${r.stderr}`);
    process.exit(1);
  }
  return r.stdout;
}

function makeDemo(dir) {
  fs.rmSync(dir, { recursive: true, force: true });
  run('git', ['init', '-q', '-b', 'main', dir], os.tmpdir());
  let seed = 42;
  const rnd = () => (seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32;
  const words = [
    'pack',
    'delta',
    'tree',
    'commit',
    'blob',
    'zlib',
    'index',
    'object',
    'ref',
    'graph',
  ];
  fs.mkdirSync(path.join(dir, 'src'), { recursive: true });
  for (let i = 0; i < 400; i++) {
    const f = path.join(dir, 'src', `file${i % 12}.txt`);
    const line = Array.from({ length: 8 }, () => words[Math.floor(rnd() * words.length)]).join(' ');
    fs.appendFileSync(f, `${i}: ${line}\n`);
    const date = `${1700000000 + i * 3600} +0000`;
    run('git', ['add', '-A'], dir);
    run('git', ['commit', '-q', '-m', `change ${i}: ${line}`], dir, {
      GIT_AUTHOR_DATE: date,
      GIT_COMMITTER_DATE: date,
    });
    if (i % 100 === 99) run('git', ['tag', `v${(i + 1) / 100}`], dir);
  }
  run('git', ['repack', '-adq'], dir);
}

const given = process.argv[2];
// A private directory of its own (never a fixed name in /tmp that another user could own), removed
// at the end unless GIT_REPACK_TS_KEEP_DEMO=1.
const top = given ? undefined : fs.mkdtempSync(path.join(os.tmpdir(), 'git-repack-ts-demo-'));
const repo = given ? path.resolve(given) : path.join(top, 'repo');
if (top !== undefined && process.env.GIT_REPACK_TS_KEEP_DEMO !== '1') {
  process.on('exit', () => fs.rmSync(top, { recursive: true, force: true }));
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'])
    process.on(sig, () => process.exit(128 + os.constants.signals[sig]));
}
if (!given) {
  console.log(`Building a demo repository in ${repo} (400 commits, packed by git)...`);
  makeDemo(repo);
}
for (const args of [
  ['inspect'],
  ['--graph-compression=0', '--dry-run'],
  ['--graph-compression=0'],
  ['verify', '--json'],
  ['inspect'],
]) {
  console.log(`\n$ git repack-ts ${args.join(' ')}`);
  const r = spawnSync(process.execPath, [bin, ...args], { cwd: repo, env, stdio: 'inherit' });
  if (r.status !== 0) process.exit(r.status ?? 1);
}
console.log('\n$ git fsck --strict');
run('git', ['fsck', '--strict', '--no-dangling'], repo);
console.log('ok: git fsck --strict finds nothing wrong');
