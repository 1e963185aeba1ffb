/**
 * git's process contract (issue 31), each case beside git in the same setup: a standard output
 * that fails, a working directory that is gone, file names that are not UTF-8, /proc files,
 * signals while a read waits, memory when the input never ends, signals while git fsck runs.
 */
import { spawn, spawnSync, type SpawnSyncOptions } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixturePath } from './fixtures/index.js';
import { gitEnv } from './helpers/git.js';
import { BIN } from './helpers/tool.js';

let root: string;

beforeAll(() => {
  root = fs.mkdtempSync(path.join(fs.realpathSync(os.tmpdir()), 'repack-ts-process-'));
});

afterAll(() => {
  fs.rmSync(root, { recursive: true, force: true });
});

interface Outcome {
  status: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

function outcome(r: ReturnType<typeof spawnSync>): Outcome {
  if (r.error) throw r.error;
  return { status: r.status, signal: r.signal, stdout: String(r.stdout ?? ''), stderr: String(r.stderr ?? '') };
}

/** Ours (`git-repack-ts <args>`) and git (`git <gitArgs>`), each in the same setup. */
function both(args: (string | Buffer)[], gitArgs: (string | Buffer)[], opts: SpawnSyncOptions): { ours: Outcome; git: Outcome } {
  const o: SpawnSyncOptions = { env: gitEnv(), encoding: 'utf8', ...opts };
  return {
    ours: outcome(spawnSync(process.execPath, [BIN, ...(args as string[])], o)),
    git: outcome(spawnSync('git', gitArgs as string[], o)),
  };
}

/** `f` with /dev/full open for writing. */
function withDevFull<T>(f: (fd: number) => T): T {
  const full = fs.openSync('/dev/full', 'w');
  try {
    return f(full);
  } finally {
    fs.closeSync(full);
  }
}

describe('a standard output that fails (>/dev/full), as git', () => {
  const packDir = (): string => path.join(fixturePath('basic'), '.git/objects/pack');
  const idx = (): string => path.join(packDir(), fs.readdirSync(packDir()).find((n) => n.endsWith('.idx'))!);
  const cases: [string, () => string[], () => string[]][] = [
    ['hash-object <file>', () => ['hash-object', 'README.md'], () => ['hash-object', 'README.md']],
    ['verify -v', () => ['verify', '-v', idx().replace(/\.idx$/, '.pack')], () => ['verify-pack', '-v', idx()]],
    ['inspect (git count-objects -v)', () => ['inspect'], () => ['count-objects', '-v']],
    ['walk (its summary line; git count-objects -v for run_builtin\'s check)', () => ['walk'], () => ['count-objects', '-v']],
    ['--version', () => ['--version'], () => ['--version']],
    ['-n (git repack -n… prints nothing: git count-objects stands in)', () => ['-n', '--graph-compression=0', '-q'], () => ['count-objects']],
    ['hash-object -h: 129 and nothing said', () => ['hash-object', '-h'], () => ['hash-object', '-h']],
  ];
  it.each(cases)('%s: the same message and exit status', (_name, ours, theirs) => {
    const r = withDevFull((full) => both(ours(), theirs(), { cwd: fixturePath('basic'), stdio: ['ignore', full, 'pipe'] }));
    expect(r.git.stderr).toMatch(/^(fatal: write failure on (standard output|'hash to stdout'): No space left on device\n)?$/);
    expect({ status: r.ours.status, stderr: r.ours.stderr }).toEqual({ status: r.git.status, stderr: r.git.stderr });
  });

  it('hash-object --stdin-paths: fatal at the first id, as git', () => {
    const r = withDevFull((full) => both(['hash-object', '--stdin-paths'], ['hash-object', '--stdin-paths'], { cwd: fixturePath('basic'), stdio: ['pipe', full, 'pipe'], input: 'README.md\n' }));
    expect(r.git.status).toBe(128);
    expect({ status: r.ours.status, stderr: r.ours.stderr }).toEqual({ status: r.git.status, stderr: r.git.stderr });
  });

  it('a standard error that fails is ignored, as git ignores it', () => {
    for (const file of ['README.md', 'no-such-file']) {
      const r = withDevFull((full) => both(['hash-object', file], ['hash-object', file], { cwd: fixturePath('basic'), stdio: ['ignore', 'pipe', full] }));
      expect({ status: r.ours.status, stdout: r.ours.stdout }).toEqual({ status: r.git.status, stdout: r.git.stdout });
    }
  });
});

describe('a working directory that is gone, as git', () => {
  /** Runs `argv` from a directory removed just before (sh cds into it, removes it, then execs). */
  function inRemovedDir(argv: string[]): Outcome {
    const dir = fs.mkdtempSync(path.join(root, 'gone-'));
    return outcome(spawnSync('sh', ['-c', 'cd "$1" && rmdir "$1" && shift && exec "$@"', 'sh', dir, ...argv], { env: gitEnv(), encoding: 'utf8' }));
  }
  it.each([
    ['hash-object <abs file>', (f: string) => ['hash-object', f], (f: string) => ['hash-object', f]],
    ['inspect (git count-objects)', () => ['inspect'], () => ['count-objects']],
    ['walk (git count-objects)', () => ['walk'], () => ['count-objects']],
    ['-C <absolute dir>: works, as git -C', (f: string) => ['-C', path.dirname(f), 'hash-object', path.basename(f)], (f: string) => ['-C', path.dirname(f), 'hash-object', path.basename(f)]],
    ['-C <relative dir>', () => ['-C', 'sub', 'hash-object', 'x'], () => ['-C', 'sub', 'hash-object', 'x']],
  ])('%s: the same message, exit status and output', (_name, ours, theirs) => {
    const file = path.join(root, 'a-file');
    fs.writeFileSync(file, 'some content\n');
    const o = inRemovedDir([process.execPath, BIN, ...ours(file)]);
    const g = inRemovedDir(['git', ...theirs(file)]);
    expect(g.stderr).not.toMatch(/^usage/);
    expect(o).toEqual(g);
  });
});
