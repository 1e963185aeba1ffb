/**
 * The zstd export never holds an entry over the 1 MiB chunk whole (issue 20): a whole object or
 * a delta is inflated, hashed and compressed into its frame as it streams (or written plain when
 * zstd does not make it smaller). Checked by git on the import (the object set, fsck --strict,
 * verify-pack), by the export's peak memory on a 48 MiB blob, and by damage found part-way
 * through a streamed entry.
 */
import crypto from 'node:crypto';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import {
  dateEnv,
  fsckStrict,
  gitEnv,
  gitOk,
  listPacks,
  objectSet,
  verifyPack,
} from './helpers/git.js';
import { flipByte } from './helpers/pack-bytes.js';
import { BIN, tool } from './helpers/tool.js';

const MiB = 1 << 20;

/** Deterministic incompressible bytes. */
function noise(label: string, size: number): Buffer {
  const key = crypto.createHash('sha256').update(label).digest().subarray(0, 16);
  return crypto.createCipheriv('aes-128-ctr', key, Buffer.alloc(16)).update(Buffer.alloc(size));
}

/** Deterministic bytes zstd about halves (hex digits of noise). */
function text(label: string, size: number): Buffer {
  return Buffer.from(noise(label, size / 2).toString('hex'));
}

function tmpDir(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rts-zstd-stream-'));
  onTestFinished(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/**
 * A bare repository whose pack (zlib level `compression`) holds the given blobs, committed one
 * after the other (so that git may store one as a delta of another).
 */
function makeRepo(blobs: Buffer[], compression: number): string {
  const dir = tmpDir();
  const run = (args: string[], tick = 1, input?: string): string =>
    gitOk(args, { cwd: dir, env: dateEnv(tick), input });
  run(['init', '-q', '--bare', '.']);
  run(['symbolic-ref', 'HEAD', 'refs/heads/main']);
  const file = path.join(dir, 'in.bin');
  let parent: string[] = [];
  blobs.forEach((b, i) => {
    fs.writeFileSync(file, b);
    const id = run(['hash-object', '-w', file]).trim();
    const tree = run(['mktree'], 1, `100644 blob ${id}\tf${i}.bin\n`).trim();
    const c = run(['commit-tree', '-m', `blob ${i}`, ...parent, tree], i + 1).trim();
    parent = ['-p', c];
    run(['update-ref', 'refs/heads/main', c]);
  });
  fs.rmSync(file);
  run(['-c', `pack.compression=${compression}`, 'repack', '-adfq', '--window=10', '--depth=10']);
  return dir;
}

describe('the zstd export of entries over 1 MiB', () => {
  it('an 8 MiB text blob, a delta of it with 2 MiB of new text, a 3 MiB incompressible blob: streamed, and the import gives git the same objects', () => {
    // git makes the smaller of two similar blobs the delta: 5 MiB shared, then 3 MiB or 2 MiB of their own.
    const shared = text('shared', 5 * MiB);
    const base = Buffer.concat([shared, text('own', 3 * MiB)]);
    const near = Buffer.concat([shared, text('inserted', 2 * MiB)]);
    const src = makeRepo([base, near, noise('plain', 3 * MiB)], 6);
    // What is streamed: git stored a delta with over 1 MiB of data (beside the whole blobs).
    const entries = verifyPack(src, listPacks(src)[0]!).entries;
    expect(entries.filter((e) => e.depth > 0 && e.size > MiB).length).toBe(1);
    expect(entries.filter((e) => e.depth === 0 && e.size > MiB).length).toBe(2);
    const zpack = path.join(tmpDir(), 'out.zpack');
    const r = tool(['--zstd', '--graph-compression=0', '-q', '-o', zpack], { cwd: src });
    expect({ status: r.status, stderr: r.stderr }).toEqual({ status: 0, stderr: '' });
    // The text framed (about halved: 4 + 1 MiB), the noise plain (3 MiB).
    expect(fs.statSync(zpack).size).toBeLessThan(9 * MiB);
    expect(tool(['verify', zpack], { cwd: src }).status).toBe(0);
    const target = tmpDir();
    gitOk(['init', '-q', '--bare', '.'], { cwd: target });
    const i = tool(['zstd-import', '-q', zpack], { cwd: target });
    expect({ status: i.status, stderr: i.stderr }).toEqual({ status: 0, stderr: '' });
    expect(objectSet(target)).toEqual(objectSet(src));
    expect(fsckStrict(target)).toEqual({ status: 0, output: '' }); // (the zpack's refs and HEAD set: nothing to note)
    gitOk(['verify-pack', listPacks(target)[0]!], { cwd: target });
    for (const [n, blob] of [base, near].entries()) {
      const id = gitOk(['hash-object', '--stdin'], { cwd: target, input: blob }).trim();
      expect(gitOk(['cat-file', '-s', id], { cwd: target }).trim()).toBe(String(blob.length));
      expect(
        spawnSync('git', ['cat-file', 'blob', id], {
          cwd: target,
          env: gitEnv(),
          maxBuffer: 64 * MiB,
        }).stdout.equals(blob),
        `blob ${n}`,
      ).toBe(true);
    }
  }, 60_000);

  it('a 48 MiB blob: the export stays under a multiple of it (the round trip: the test above)', () => {
    const src = makeRepo([text('big', 48 * MiB)], 1);
    const zpack = path.join(tmpDir(), 'out.zpack');
    const r = spawnSync(
      '/usr/bin/time',
      ['-f', '%M', process.execPath, BIN, '--zstd', '--graph-compression=0', '-q', '-o', zpack],
      { cwd: src, encoding: 'utf8', env: gitEnv() },
    );
    const lines = r.stderr.trim().split('\n');
    const kib = Number(lines.pop());
    expect({ status: r.status, stderr: lines.join('\n') }).toEqual({ status: 0, stderr: '' });
    expect(fs.statSync(zpack).size).toBeLessThan(36 * MiB);
    // Node, its tables and zstd's level-10 context take ~90 MiB. Held whole, the export took about
    // 4 times the blob more; with the writing streamed, the read-back (verify) still held the
    // object twice (its frame and its bytes); now both stream (docs/benchmarks.md §8).
    expect(kib).toBeLessThan(90 * 1024 + 24 * 1024);
    // verify reads the big entry a chunk at a time too; a byte flipped 20 MiB into its frame is
    // named with the entry's offset (the frame no longer decodes; its CRC32 no longer matches).
    const v = spawnSync('/usr/bin/time', ['-f', '%M', process.execPath, BIN, 'verify', zpack], {
      cwd: src,
      encoding: 'utf8',
      env: gitEnv(),
    });
    expect(v.status).toBe(0);
    expect(Number(v.stderr.trim().split('\n').pop())).toBeLessThan(90 * 1024);
    flipByte(zpack, 20 * MiB, 0x55);
    const bad = tool(['verify', zpack], { cwd: src });
    expect(bad.status).toBe(1);
    expect(bad.stderr).toContain(`${zpack}: CRC32 mismatch for entry`);
    expect(bad.stderr).toMatch(/out\.zpack: zstd: [^\n]+ at offset \d+\n/);
  }, 60_000);

  it('a byte flipped 4 MiB into the streamed entry: fatal, 128, no zstd pack, nothing left behind', () => {
    const src = makeRepo([text('base', 6 * MiB)], 0);
    const pack = listPacks(src)[0]!;
    const big = verifyPack(src, pack).entries.find((e) => e.type === 'blob')!;
    flipByte(pack, big.offset + 4 * MiB, 0x55);
    const out = tmpDir();
    const zpack = path.join(out, 'out.zpack');
    const r = tool(['--zstd', '--graph-compression=0', '-q', '-o', zpack], { cwd: src });
    expect(r.status).toBe(128);
    expect(r.stderr).toBe(
      `fatal: packed object ${big.oid} (stored in ${pack}) is corrupt: corrupt object data (zlib: incorrect data check) at offset ${big.offset} (blob entry)\n`,
    );
    expect(fs.readdirSync(out)).toEqual([]);
  }, 60_000);
});
