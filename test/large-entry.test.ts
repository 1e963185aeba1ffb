/**
 * Large pack entries (issue 20): a pack entry larger than the scan's 1 MiB chunk is read a chunk
 * at a time, and no command holds an incompressible blob whole: verify hashes it as it streams
 * (whatever core.bigFileThreshold says), inspect reads only its header, `walk --read-blobs`
 * inflates it a chunk at a time. Its CRC32 still covers every byte. A base or a delta larger
 * than a chunk is inflated as it is read, and verified against git.
 */
import crypto from 'node:crypto';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { censusOfPack } from '../src/commands/inspect.js';
import { SHA1 } from '../src/hash/algo.js';
import { Pack } from '../src/store/pack.js';
import { gitEnv, gitOk, listPacks } from './helpers/git.js';
import { flipByte } from './helpers/pack-bytes.js';
import { BIN, tool } from './helpers/tool.js';

const MiB = 1 << 20;
const BLOB = 32 * MiB;
const SMALL_THRESHOLD = { GIT_CONFIG_PARAMETERS: "'core.bigfilethreshold'='1m'" };

/** Peak RSS (KiB), exit status and stderr of one command of ours. */
function measured(
  args: string[],
  cwd: string,
  env: Record<string, string> = {},
): { status: number | null; kib: number; stdout: string; stderr: string } {
  const r = spawnSync('/usr/bin/time', ['-f', '%M', process.execPath, BIN, ...args], {
    cwd,
    encoding: 'utf8',
    env: gitEnv(env),
    maxBuffer: 1 << 26,
  });
  const lines = r.stderr.trim().split('\n');
  return { status: r.status, kib: Number(lines.pop()), stdout: r.stdout, stderr: lines.join('\n') };
}

/** A repository with one commit of `files` (name → content), in one pack written by `git repack -adf`. */
function packedRepo(prefix: string, files: Record<string, Buffer>, packConfig: string[]): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  gitOk(['init', '-q', dir], { cwd: os.tmpdir() });
  for (const [name, data] of Object.entries(files)) fs.writeFileSync(path.join(dir, name), data);
  gitOk(['-c', 'core.compression=0', 'add', '.'], { cwd: dir });
  gitOk(['commit', '-qm', 'big'], { cwd: dir });
  gitOk([...packConfig, 'repack', '-adfq'], { cwd: dir });
  for (const name of Object.keys(files)) fs.rmSync(path.join(dir, name));
  return dir;
}

/** `git verify-pack -v` lines as fields: id, type, size, size in pack, offset[, depth, base]. */
function verifyPackFields(dir: string, pack: string): string[][] {
  return gitOk(['verify-pack', '-v', pack.replace(/\.pack$/, '.idx')], { cwd: dir })
    .split('\n')
    .map((l) => l.split(/\s+/))
    .filter((f) => /^[0-9a-f]{40}$/.test(f[0]!));
}

describe('an incompressible 32 MiB blob (one 32 MiB pack entry)', () => {
  let dir = '';
  let pack = '';
  beforeAll(() => {
    dir = packedRepo('rts-large-entry-', { noise: crypto.randomBytes(BLOB) }, [
      '-c',
      'pack.compression=0',
    ]);
    pack = listPacks(dir)[0]!;
    expect(fs.statSync(pack).size).toBeGreaterThan(BLOB);
  });
  afterAll(() => {
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  // Node and the tables take ~50 MiB; held whole (raw entry and object), the blob made verify
  // and walk --read-blobs 111 MiB with git's default core.bigFileThreshold.
  it('verify and walk --read-blobs stay far under the entry size with the default core.bigFileThreshold', () => {
    const v = measured(['verify'], dir);
    expect({ status: v.status, stderr: v.stderr }).toEqual({ status: 0, stderr: '' });
    expect(v.kib).toBeLessThan(75 * 1024);
    const w = measured(['walk', '--read-blobs', '--json'], dir);
    expect({ status: w.status, stderr: w.stderr }).toEqual({ status: 0, stderr: '' });
    expect(w.kib).toBeLessThan(75 * 1024);
    // What it read: the blob and the commit and tree, as git sizes them.
    const sizes = gitOk(['cat-file', '--batch-all-objects', '--batch-check=%(objectsize)'], {
      cwd: dir,
    })
      .trim()
      .split('\n')
      .map(Number);
    expect(JSON.parse(w.stdout)).toMatchObject({
      commits: 1,
      trees: 1,
      blobs: 1,
      bytesRead: sizes.reduce((a, b) => a + b, 0),
    });
  }, 60_000);

  it('inspect reads the headers only, not the 32 MiB entry', () => {
    const r = measured(['inspect', '--json'], dir, SMALL_THRESHOLD);
    expect({ status: r.status, stderr: r.stderr }).toEqual({ status: 0, stderr: '' });
    expect(r.kib).toBeLessThan(75 * 1024);
    const p = Pack.open(pack, SHA1);
    try {
      let bytes = 0;
      const read = p.read.bind(p);
      p.read = (pos, len, into) => {
        bytes += len;
        return read(pos, len, into);
      };
      const census = censusOfPack(p);
      expect(census.types.find((t) => t.type === 'blob')).toMatchObject({
        entries: 1,
        inflatedBytes: BLOB,
      });
      // The commit and tree (a chunk from the first entry on), and the blob's head.
      expect(bytes).toBeLessThan(MiB + 4096);
    } finally {
      p.close();
    }
  });

  it('a flipped byte 20 MiB into it is still a CRC32 mismatch, and a corrupt object', () => {
    const line = verifyPackFields(dir, pack).find((f) => f[1] === 'blob' && Number(f[2]) === BLOB)!;
    flipByte(pack, Number(line[4]) + 20 * MiB);
    for (const env of [{}, SMALL_THRESHOLD]) {
      const d = measured(['verify'], dir, env);
      expect(d.status).toBe(1);
      expect(d.stderr).toContain(`CRC32 mismatch for entry (index`);
      expect(d.stderr).toContain(`at offset ${line[4]}`);
      // Stored blocks carry no check of their own but the stream's Adler-32.
      expect(d.stderr).toMatch(/corrupt object data \(zlib: incorrect data check\)|hashes to/);
    }
  }, 60_000);
});

describe('a base and a delta larger than a chunk (two 5.5 MiB blobs of noise, 4 MiB of it shared)', () => {
  let dir = '';
  let pack = '';
  let fields: string[][] = [];
  beforeAll(() => {
    // Whichever git takes for the base, the delta has 1.5 MiB of noise to insert.
    const shared = crypto.randomBytes(4 * MiB);
    const grown = (): Buffer =>
      Buffer.concat([
        shared.subarray(0, 2 * MiB),
        crypto.randomBytes(1.5 * MiB),
        shared.subarray(2 * MiB),
      ]);
    dir = packedRepo('rts-large-delta-', { a: grown(), b: grown() }, []);
    pack = listPacks(dir)[0]!;
    fields = verifyPackFields(dir, pack);
  });
  afterAll(() => {
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  it('git made one a delta of the other, both entries over 1 MiB', () => {
    const delta = fields.find((f) => f[5] === '1')!;
    const baseLine = fields.find((f) => f[0] === delta[6])!;
    expect(Number(delta[3])).toBeGreaterThan(MiB);
    expect(Number(baseLine[3])).toBeGreaterThan(MiB);
  });

  it('verify -v, inspect and walk --read-blobs agree with git', () => {
    const idx = pack.replace(/\.pack$/, '.idx');
    for (const env of [{}, SMALL_THRESHOLD]) {
      const ours = tool(['verify', '-v', idx], { cwd: dir, env });
      expect({ status: ours.status, stderr: ours.stderr }).toEqual({ status: 0, stderr: '' });
      expect(ours.stdout).toBe(gitOk(['verify-pack', '-v', idx], { cwd: dir }));
    }
    const census = JSON.parse(tool(['inspect', '--json'], { cwd: dir }).stdout);
    const blobs = fields.filter((f) => f[1] === 'blob');
    expect(census.total.types.find((t: { type: string }) => t.type === 'blob')).toMatchObject({
      entries: 2,
      deltas: 1,
      depthHistogram: [1, 1],
      packedBytes: blobs.reduce((a, f) => a + Number(f[3]), 0),
      inflatedBytes: blobs.reduce((a, f) => a + Number(f[2]), 0),
    });
    const sizes = gitOk(['cat-file', '--batch-all-objects', '--batch-check=%(objectsize)'], {
      cwd: dir,
    })
      .trim()
      .split('\n')
      .map(Number);
    expect(JSON.parse(tool(['walk', '--read-blobs', '--json'], { cwd: dir }).stdout)).toMatchObject(
      { blobs: 2, bytesRead: sizes.reduce((a, b) => a + b, 0) },
    );
  });

  it('a byte flipped past the first MiB of the base is found, and so is one in the delta', () => {
    const delta = fields.find((f) => f[5] === '1')!;
    const baseLine = fields.find((f) => f[0] === delta[6])!;
    for (const [entry, at] of [
      [baseLine, Number(baseLine[4]) + 3 * MiB],
      [delta, Number(delta[4]) + MiB + 4096],
    ] as const) {
      flipByte(pack, at);
      const r = tool(['verify'], { cwd: dir });
      expect(r.status).toBe(1);
      expect(r.stderr).toContain(`CRC32 mismatch for entry (index`);
      expect(r.stderr).toMatch(
        new RegExp(`(corrupt object data|hashes to).* at offset ${entry[4]}\n`),
      );
      flipByte(pack, at);
      expect(tool(['verify'], { cwd: dir }).status).toBe(0);
    }
  });
});
