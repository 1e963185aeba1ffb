/**
 * The rewrite never holds a large object whole (issue 21): a copied pack entry over the 1 MiB
 * chunk is read, CRC'd and written a chunk at a time, and a large loose object is inflated,
 * hashed and deflated into the pack as it streams. Checked by git (verify-pack, fsck, the object
 * set), by the bytes of the copied entry, by damage found part-way through a streamed entry,
 * and by the peak memory of a run on 32 MiB objects.
 */
import crypto from 'node:crypto';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { deflateSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import {
  countObjects,
  dateEnv,
  fsckStrict,
  gitEnv,
  gitOk,
  gitOkBuffer,
  listPacks,
  objectSet,
  verifyPack,
  type VerifyPackEntry,
} from './helpers/git.js';
import { entryZlibInfo, flipByte } from './helpers/pack-bytes.js';
import { leftovers } from './helpers/faults.js';
import { expectGitIndexes } from './helpers/git-indexes.js';
import { BIN, tool } from './helpers/tool.js';
import { repack } from '../src/commands/repack.js';
import { discoverRepository } from '../src/store/repo.js';
import { GitError } from '../src/errors.js';
import { reportError } from '../src/cli/io.js';
import type { Level } from '../src/repack/levels.js';

const MiB = 1 << 20;

/** Deterministic incompressible bytes. */
function noise(label: string, size: number): Buffer {
  const key = crypto.createHash('sha256').update(label).digest().subarray(0, 16);
  return crypto.createCipheriv('aes-128-ctr', key, Buffer.alloc(16)).update(Buffer.alloc(size));
}

/**
 * A repository with a packed incompressible blob of `packed` bytes stored (level 0), a delta of
 * it (the same bytes and a few more), and a loose incompressible blob of `loose` bytes.
 */
function makeRepo(packed: number, loose: number): { dir: string; looseId: string } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rts-large-rewrite-'));
  const run = (args: string[], tick = 1): string => gitOk(args, { cwd: dir, env: dateEnv(tick) });
  run(['init', '-q', '--bare', '.']);
  run(['symbolic-ref', 'HEAD', 'refs/heads/main']);
  const bigData = noise('packed', packed);
  const file = path.join(dir, 'in.bin');
  fs.writeFileSync(file, bigData);
  const bigId = run(['-c', 'core.compression=0', 'hash-object', '-w', file]).trim();
  fs.writeFileSync(file, Buffer.concat([bigData, Buffer.from('and a little more\n')]));
  const nearId = run(['-c', 'core.compression=0', 'hash-object', '-w', file]).trim();
  const tree1 = gitOk(['mktree'], { cwd: dir, input: `100644 blob ${bigId}\tbig.bin\n` }).trim();
  const c1 = run(['commit-tree', '-m', 'big', tree1], 1).trim();
  const tree2 = gitOk(['mktree'], { cwd: dir, input: `100644 blob ${nearId}\tbig.bin\n` }).trim();
  const c2 = run(['commit-tree', '-m', 'near', '-p', c1, tree2], 2).trim();
  run(['update-ref', 'refs/heads/main', c2]);
  run(['-c', 'pack.compression=0', 'repack', '-adq']);
  fs.writeFileSync(file, noise('loose', loose));
  const looseId = run(['-c', 'core.looseCompression=1', 'hash-object', '-w', file]).trim();
  const tree3 = gitOk(['mktree'], {
    cwd: dir,
    input: `100644 blob ${nearId}\tbig.bin\n100644 blob ${looseId}\tloose.bin\n`,
  }).trim();
  const c3 = run(['commit-tree', '-m', 'loose', '-p', c2, tree3], 3).trim();
  run(['update-ref', 'refs/heads/main', c3]);
  fs.rmSync(file);
  return { dir, looseId };
}

function looseFile(dir: string, id: string): string {
  return path.join(dir, 'objects', id.slice(0, 2), id.slice(2));
}

/** Every file under objects/ with its content digest (what "nothing changed" means). */
function snapshot(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string): void => {
    for (const n of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, n.name);
      if (n.isDirectory()) walk(p);
      else
        out.push(
          `${path.relative(dir, p)} ${crypto.createHash('sha1').update(fs.readFileSync(p)).digest('hex')}`,
        );
    }
  };
  walk(path.join(dir, 'objects'));
  return out.sort();
}

describe('a 6 MiB stored blob, a delta of it and a 3 MiB loose blob: streamed, not held', () => {
  let pristine: { dir: string; looseId: string };
  /** The stored blob's entry (git makes the other blob the delta). */
  const storedEntry = (dir: string, pack: string): VerifyPackEntry =>
    verifyPack(dir, pack).entries.find(
      (e) => e.type === 'blob' && e.depth === 0 && e.sizeInPack > 6 * MiB,
    )!;
  beforeAll(() => {
    pristine = makeRepo(6 * MiB, 3 * MiB);
  });
  afterAll(() => fs.rmSync(pristine.dir, { recursive: true, force: true }));
  const copy = (): string => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rts-large-rewrite-'));
    fs.cpSync(pristine.dir, dir, { recursive: true });
    return dir;
  };

  for (const threads of ['0', '1']) {
    it(`threads=${threads}: the big entry is copied byte for byte, the loose blob packed; git reads back the same objects`, () => {
      const dir = copy();
      onTestFinished(() => fs.rmSync(dir, { recursive: true, force: true }));
      const before = objectSet(dir);
      const oldPack = listPacks(dir)[0]!;
      const old = storedEntry(dir, oldPack);
      const a = fs.readFileSync(oldPack).subarray(old.offset, old.offset + old.sizeInPack);
      const r = tool(['--graph-compression=0'], {
        cwd: dir,
        env: { GIT_REPACK_TS_THREADS: threads },
      });
      expect({ status: r.status, stderr: r.stderr }).toEqual({ status: 0, stderr: '' });
      expect(r.stdout).toContain(
        'copied 6, re-encoded 0 (commits 0, trees 0, blobs 0, tags 0), written whole 0, from loose 3',
      );
      const packs = listPacks(dir);
      expect(packs).toHaveLength(1);
      const v = verifyPack(dir, packs[0]!);
      expect(objectSet(dir)).toEqual(before);
      expect(fsckStrict(dir)).toEqual({ status: 0, output: '' });
      expect(countObjects(dir).count).toBe(0);
      // The stored blob's entry: the same bytes after its header (copied, not re-encoded).
      const now = v.entries.find((e) => e.oid === old.oid)!;
      expect(now.sizeInPack).toBe(old.sizeInPack);
      const b = fs.readFileSync(packs[0]!).subarray(now.offset, now.offset + now.sizeInPack);
      expect(b.equals(a)).toBe(true);
      // The loose blob, deflated anew a chunk at a time at zlib's default level (blobs kept),
      // is what zlib gives for it in one piece.
      const lo = v.entries.find((e) => e.oid === pristine.looseId)!;
      const z = deflateSync(noise('loose', 3 * MiB));
      expect(
        fs
          .readFileSync(packs[0]!)
          .subarray(lo.offset + lo.sizeInPack - z.length, lo.offset + lo.sizeInPack)
          .equals(z),
      ).toBe(true);
      expect(leftovers(dir)).toEqual([]);
    });
  }

  it('--blob-compression=1: the 6 MiB stored blob is re-encoded as it streams, to what zlib gives for it at level 1', () => {
    const dir = copy();
    onTestFinished(() => fs.rmSync(dir, { recursive: true, force: true }));
    const before = objectSet(dir);
    const old = storedEntry(dir, listPacks(dir)[0]!);
    const r = tool(['--graph-compression=0', '--blob-compression=1'], { cwd: dir });
    expect({ status: r.status, stderr: r.stderr }).toEqual({ status: 0, stderr: '' });
    const pack = listPacks(dir)[0]!;
    const now = verifyPack(dir, pack).entries.find((e) => e.oid === old.oid)!;
    const z = deflateSync(gitOkBuffer(['cat-file', 'blob', old.oid], { cwd: dir }), { level: 1 });
    expect(
      fs
        .readFileSync(pack)
        .subarray(now.offset + now.sizeInPack - z.length, now.offset + now.sizeInPack)
        .equals(z),
    ).toBe(true);
    expect(objectSet(dir)).toEqual(before);
    expect(fsckStrict(dir)).toEqual({ status: 0, output: '' });
  });

  it('under auto, the incompressible loose blob is stored (its deflated length measured first)', () => {
    const dir = copy();
    onTestFinished(() => fs.rmSync(dir, { recursive: true, force: true }));
    const before = objectSet(dir);
    const r = tool(['--graph-compression=0', '--blob-compression=auto'], { cwd: dir });
    expect({ status: r.status, stderr: r.stderr }).toEqual({ status: 0, stderr: '' });
    const pack = listPacks(dir)[0]!;
    const lo = verifyPack(dir, pack).entries.find((e) => e.oid === pristine.looseId)!;
    expect(entryZlibInfo(fs.readFileSync(pack), lo.offset, 20)).toEqual({
      flevel: 0,
      stored: true,
    });
    expect(objectSet(dir)).toEqual(before);
    expect(fsckStrict(dir)).toEqual({ status: 0, output: '' });
  });

  for (const threads of ['0', '1']) {
    it(`threads=${threads}: a byte flipped 4 MiB into the streamed entry is a CRC32 mismatch: fatal, 128, nothing changed`, () => {
      const dir = copy();
      onTestFinished(() => fs.rmSync(dir, { recursive: true, force: true }));
      const pack = listPacks(dir)[0]!;
      const old = storedEntry(dir, pack);
      flipByte(pack, old.offset + 4 * MiB, 0x55);
      const before = snapshot(dir);
      const r = tool(['--graph-compression=0'], {
        cwd: dir,
        env: { GIT_REPACK_TS_THREADS: threads },
      });
      expect(r.status).toBe(128);
      expect(r.stderr).toBe(
        `fatal: packed object ${old.oid} (stored in ${pack}) is corrupt: entry does not match its CRC32 in the index at offset ${old.offset} (blob entry)\n`,
      );
      expect(snapshot(dir)).toEqual(before);
      expect(leftovers(dir)).toEqual([]);
    });
  }

  it('a large loose object damaged 2 MiB in, and one under another id: fatal, 128, nothing changed', () => {
    const dir = copy();
    onTestFinished(() => fs.rmSync(dir, { recursive: true, force: true }));
    const file = looseFile(dir, pristine.looseId);
    flipByte(file, 2 * MiB, 0x55);
    let before = snapshot(dir);
    let r = tool(['--graph-compression=0'], { cwd: dir });
    expect(r.status).toBe(128);
    expect(r.stderr).toMatch(
      new RegExp(
        `^fatal: loose object ${pristine.looseId} \\(stored in ${file}\\) is corrupt: corrupt loose object \\(zlib: .*\\)\n$`,
      ),
    );
    expect(snapshot(dir)).toEqual(before);
    expect(leftovers(dir)).toEqual([]);
    // The intact object under the id of another (a blob of the same size that is not there).
    fs.rmSync(file, { force: true });
    const other = gitOk(['hash-object', '--stdin'], {
      cwd: dir,
      input: noise('other', 3 * MiB),
    }).trim();
    const misplaced = looseFile(dir, other);
    fs.mkdirSync(path.dirname(misplaced), { recursive: true });
    fs.copyFileSync(looseFile(pristine.dir, pristine.looseId), misplaced);
    before = snapshot(dir);
    r = tool(['--graph-compression=0'], { cwd: dir });
    expect(r.status).toBe(128);
    // (as a loose object held whole was named: the file, offset 0)
    expect(r.stderr).toBe(
      `fatal: ${misplaced}: object hashes to ${pristine.looseId}, expected ${other} at offset 0\n`,
    );
    expect(snapshot(dir)).toEqual(before);
    expect(leftovers(dir)).toEqual([]);
  });
});

describe('a 32 MiB packed blob and a 32 MiB loose one', () => {
  it('the rewrite stays far under their size (held, they took 2 and 4 times it)', () => {
    const { dir } = makeRepo(32 * MiB, 32 * MiB);
    try {
      const before = objectSet(dir);
      const r = spawnSync(
        '/usr/bin/time',
        ['-f', '%M', process.execPath, BIN, '--graph-compression=0', '--no-fsck'],
        { cwd: dir, encoding: 'utf8', env: gitEnv() },
      );
      const lines = r.stderr.trim().split('\n');
      const kib = Number(lines.pop());
      expect({ status: r.status, stderr: lines.join('\n') }).toEqual({ status: 0, stderr: '' });
      expect(objectSet(dir)).toEqual(before);
      expect(fsckStrict(dir)).toEqual({ status: 0, output: '' });
      // Node and its tables take ~60 MiB; held whole (the build before), the two made it 181 MiB.
      expect(kib).toBeLessThan(110 * 1024);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});

// The default check sends the 32 MiB loose blob, deflated anew, to git index-pack as it is
// written. A git that reads 1 MiB every 0.2 s: the streamed entry waits for it a chunk at a time,
// so our own peak stays about what it is without the check (left to queue in git's pipe, most of
// the blob would wait there). Our process's peak alone, from a hook that prints it at exit.
describe('a 32 MiB loose blob checked by a slow git index-pack', () => {
  it('waits for git a chunk at a time: our peak is within 16 MiB of the run without the check', () => {
    const { dir } = makeRepo(1 << 20, 32 * MiB);
    const bin = `${dir}-bin`;
    onTestFinished(() => {
      for (const d of [dir, bin, `${dir}-a`, `${dir}-b`])
        fs.rmSync(d, { recursive: true, force: true });
    });
    fs.mkdirSync(bin);
    const realGit = spawnSync('sh', ['-c', 'command -v git'], { encoding: 'utf8' }).stdout.trim();
    const chunk = path.join(bin, 'chunk');
    const slow = `while :; do dd bs=1M count=1 iflag=fullblock status=none > '${chunk}'; [ -s '${chunk}' ] || break; cat '${chunk}'; sleep 0.2; done`;
    fs.writeFileSync(
      path.join(bin, 'git'),
      `#!/bin/sh\ncase " $* " in *" index-pack "*) ${slow} | '${realGit}' "$@"; exit $?;; esac\nexec '${realGit}' "$@"\n`,
      { mode: 0o755 },
    );
    const hook = path.join(bin, 'peak.mjs');
    fs.writeFileSync(
      hook,
      "import fs from 'node:fs';\nprocess.on('exit', () => fs.writeSync(2, `peak ${process.resourceUsage().maxRSS}\\n`));\n",
    );
    const peak = (args: string[], copy: string): number => {
      const r = spawnSync(process.execPath, [BIN, '--graph-compression=0', '-q', ...args], {
        cwd: copy,
        encoding: 'utf8',
        env: gitEnv({ PATH: `${bin}:${process.env.PATH}`, NODE_OPTIONS: `--import=${hook}` }),
      });
      const lines = r.stderr.trim().split('\n');
      const kib = Number(/^peak (\d+)$/.exec(lines.pop() ?? '')?.[1]);
      expect({ status: r.status, stderr: lines.join('\n') }).toEqual({ status: 0, stderr: '' });
      return kib;
    };
    const copy = (c: string): string => (fs.cpSync(dir, c, { recursive: true }), c);
    const before = objectSet(dir);
    const unchecked = peak(['--no-fsck'], copy(`${dir}-a`));
    const checked = peak([], copy(`${dir}-b`));
    expect(objectSet(`${dir}-b`)).toEqual(before);
    expect(fsckStrict(`${dir}-b`)).toEqual({ status: 0, output: '' });
    expect(checked - unchecked).toBeLessThan(16 * 1024);
  }, 60_000);
});

describe('the bound on an entry held whole (MAX_HELD_ENTRY, lowered here to 512 KiB)', () => {
  // 768 KiB: under the 1 MiB chunk, so that a re-encode holds it whole.
  let pristine: { dir: string; looseId: string };
  beforeAll(() => {
    pristine = makeRepo(768 << 10, 0);
  });
  afterAll(() => fs.rmSync(pristine.dir, { recursive: true, force: true }));
  const run = (dir: string, blob: Level): Promise<unknown> =>
    repack(discoverRepository({ cwd: dir, env: {}, euid: process.geteuid!() }), {
      levels: { 1: 0, 2: 0, 3: blob, 4: 'keep' },
      autoFallback: -1,
      dryRun: false,
      fsck: 'changed',
      keepPacks: [],
      maxHeldEntry: 512 << 10,
    });

  it('an entry to re-encode over it is refused before anything is written: fatal, 128, nothing changed', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rts-large-rewrite-'));
    fs.cpSync(pristine.dir, dir, { recursive: true });
    try {
      const pack = listPacks(dir)[0]!;
      const big = verifyPack(dir, pack).entries.find(
        (e) => e.type === 'blob' && e.depth === 0 && e.sizeInPack > 768 << 10,
      )!;
      const before = snapshot(dir);
      const e = await run(dir, 9).then(
        () => undefined,
        (err: unknown) => err,
      );
      expect(e).toBeInstanceOf(GitError);
      const said: string[] = [];
      const code = reportError(
        {
          out: () => undefined,
          err: (t) => void said.push(t),
          stderrIsTty: false,
          env: {},
          cwd: dir,
        },
        e,
      );
      expect({ code, said }).toEqual({
        code: 128,
        said: [
          `fatal: ${pack}: object ${big.oid} at offset ${big.offset} takes ${big.sizeInPack} bytes in the pack; the rewrite holds such an entry whole to re-encode it, and refuses one over ${512 << 10} bytes\n`,
        ],
      });
      expect(snapshot(dir)).toEqual(before);
      expect(leftovers(dir)).toEqual([]);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a copy over it goes through: git reads back the same objects', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rts-large-rewrite-'));
    fs.cpSync(pristine.dir, dir, { recursive: true });
    try {
      const before = objectSet(dir);
      await run(dir, 'keep');
      expect(objectSet(dir)).toEqual(before);
      expect(fsckStrict(dir)).toEqual({ status: 0, output: '' });
      expect(leftovers(dir)).toEqual([]);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('zstd-import of a 64 MiB blob of zeros (a frame of a few KiB) and a 3 MiB incompressible one (stored plain)', () => {
  it('streams both: far under the blob size, git reads back the same objects', () => {
    const src = fs.mkdtempSync(path.join(os.tmpdir(), 'rts-large-zstd-'));
    const target = fs.mkdtempSync(path.join(os.tmpdir(), 'rts-large-zstd-'));
    try {
      const run = (args: string[], cwd = src): string => gitOk(args, { cwd, env: dateEnv(1) });
      run(['init', '-q', '--bare', '.']);
      run(['symbolic-ref', 'HEAD', 'refs/heads/main']);
      const file = path.join(src, 'in.bin');
      fs.writeFileSync(file, Buffer.alloc(64 * MiB));
      const zeros = run(['hash-object', '-w', file]).trim();
      fs.writeFileSync(file, noise('plain', 3 * MiB));
      const plain = run(['hash-object', '-w', file]).trim();
      fs.rmSync(file);
      const tree = gitOk(['mktree'], {
        cwd: src,
        input: `100644 blob ${zeros}\tzeros.bin\n100644 blob ${plain}\tplain.bin\n`,
      }).trim();
      run(['update-ref', 'refs/heads/main', run(['commit-tree', '-m', 'big', tree]).trim()]);
      run(['repack', '-adq']);
      const zpack = path.join(os.tmpdir(), `rts-large-${path.basename(src)}.zpack`);
      try {
        expect(tool(['--zstd', '-q', '-o', zpack], { cwd: src }).status).toBe(0);
        expect(fs.statSync(zpack).size).toBeLessThan(4 * MiB);
        run(['init', '-q', '--bare', '.'], target);
        const r = spawnSync(
          '/usr/bin/time',
          ['-f', '%M', process.execPath, BIN, 'zstd-import', '-q', '--no-fsck', zpack],
          { cwd: target, encoding: 'utf8', env: gitEnv() },
        );
        const lines = r.stderr.trim().split('\n');
        const kib = Number(lines.pop());
        expect({ status: r.status, stderr: lines.join('\n') }).toEqual({ status: 0, stderr: '' });
        expect(objectSet(target)).toEqual(objectSet(src));
        // (the import sets the zpack's refs and HEAD: git has nothing to note)
        expect(fsckStrict(target)).toEqual({ status: 0, output: '' });
        gitOk(['verify-pack', listPacks(target)[0]!], { cwd: target });
        // Node and its tables take ~60 MiB; held (the build before), the import took 250 MiB.
        expect(kib).toBeLessThan(110 * 1024);
      } finally {
        fs.rmSync(zpack, { force: true });
      }
    } finally {
      fs.rmSync(src, { recursive: true, force: true });
      fs.rmSync(target, { recursive: true, force: true });
    }
  }, 60_000);
});

describe('a worker thread and this one sharing the re-encoding (--no-fsck), from a pack git wrote and from one of ours', () => {
  it('the same pack, byte for byte, as without threads; git indexes it as we did', () => {
    // 3000 commits, each with a tree and a blob: 9000 entries, three batches (at most 4096
    // entries each): with one worker, the third is re-encoded on this thread (pool.ts).
    const make = (): string => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rts-shared-batches-'));
      gitOk(['init', '-q', '--bare', '.'], { cwd: dir });
      gitOk(['symbolic-ref', 'HEAD', 'refs/heads/main'], { cwd: dir });
      let stream = '';
      for (let i = 0; i < 3000; i++) {
        const msg = `commit ${i}\n`;
        const content = `line ${i} of file ${i % 40}\n`.repeat(1 + (i % 7));
        stream += `commit refs/heads/main\nmark :${i + 1}\ncommitter A <a@example.com> ${1_700_000_000 + i} +0000\ndata ${msg.length}\n${msg}`;
        stream += `${i > 0 ? `from :${i}\n` : ''}M 100644 inline f${i % 40}\ndata ${content.length}\n${content}\n`;
      }
      gitOk(['fast-import', '--quiet'], { cwd: dir, input: stream });
      gitOk(['repack', '-a', '-d', '-q'], { cwd: dir });
      return dir;
    };
    const a = make();
    const b = make();
    onTestFinished(() => [a, b].forEach((d) => fs.rmSync(d, { recursive: true, force: true })));
    const before = objectSet(a);
    expect(before.length).toBe(9000);
    const ra = JSON.parse(
      tool(['--json', '--graph-compression=0', '--no-fsck'], {
        cwd: a,
        env: { GIT_REPACK_TS_THREADS: '0' },
      }).stdout,
    );
    const rb = JSON.parse(
      tool(['--json', '--graph-compression=0', '--no-fsck'], {
        cwd: b,
        env: { GIT_REPACK_TS_THREADS: '1' },
      }).stdout,
    );
    expect(rb.partitions.map((p: { newPack: string }) => p.newPack)).toEqual(
      ra.partitions.map((p: { newPack: string }) => p.newPack),
    );
    expect(objectSet(b)).toEqual(before);
    expect(fsckStrict(b)).toEqual({ status: 0, output: '' });
    for (const pack of listPacks(b)) expectGitIndexes(b, pack);
    // From the packs just written (commits and trees stored), back to level 9: every one of them
    // re-encoded again, in mixed batches again.
    type Part = { newPack: string; stats: { reencoded: { commit: number; tree: number } } };
    const again = (dir: string, threads: string): Part[] =>
      JSON.parse(
        tool(['--json', '--graph-compression=9', '--no-fsck'], {
          cwd: dir,
          env: { GIT_REPACK_TS_THREADS: threads },
        }).stdout,
      ).partitions;
    const [pa, pb] = [again(a, '0'), again(b, '1')];
    expect(pb.map((p) => p.stats.reencoded)).toEqual([
      expect.objectContaining({ commit: 3000, tree: 3000 }),
    ]);
    expect(pb.map((p) => p.newPack)).toEqual(pa.map((p) => p.newPack));
    expect(pb[0]!.newPack).not.toBe(rb.partitions[0].newPack);
    expect(objectSet(b)).toEqual(before);
    expect(fsckStrict(b)).toEqual({ status: 0, output: '' });
    for (const pack of listPacks(b)) expectGitIndexes(b, pack);
  }, 60_000);
});
