/**
 * The reachability bitmap of a rewritten pack (issue 30, item 7): a repository that had one has a
 * valid one after the rewrite. Repositories are built by git (fast-import, `git repack -adb`,
 * `git gc`), and git judges the result: `rev-list --test-bitmap` on every commit that had a
 * bitmap, the object set, `fsck --strict`, object lists with and without the bitmap, and a clone
 * served from the bitmap.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { repack } from '../src/index.js';
import { encodeBitmap, encodeEwah, ewahPositions, parseBitmap } from '../src/format/bitmap.js';
import { carryBitmap } from '../src/commands/repack-bitmap.js';
import { SHA1, SHA256 } from '../src/hash/algo.js';
import { Pack } from '../src/store/pack.js';
import { fsckStrict, git, gitOk, lines, listPacks, objectSet, packDirOf } from './helpers/git.js';
import { RepoBuilder, type ObjectFormat } from './helpers/repo.js';
import { tool, toolOk } from './helpers/tool.js';
import { toolFault, tracePoints } from './helpers/faults.js';

/** A directory of this test's own, removed when it finishes. */
function scratch(): string {
  const dir = fs.mkdtempSync(path.join(fs.realpathSync(os.tmpdir()), 'rts-bitmap-'));
  onTestFinished(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

const WHO = 'Fixture Committer <committer@example.com>';
const EPOCH = 1_700_000_000;

/**
 * A fast-import stream: `n` commits on main touching two files each (40-line files, so that git
 * makes deltas), a side branch merged every 20 commits, an annotated tag every 25.
 */
function history(n: number, from = 0): string {
  const out: string[] = [];
  const data = (s: string): string => `data ${Buffer.byteLength(s)}\n${s}\n`;
  const file = (p: string, i: number): string =>
    `M 100644 inline ${p}\n` +
    data(Array.from({ length: 40 }, (_, k) => `line ${k} of ${p}`).join('\n') + `\nrevision ${i}`);
  let mark = 0;
  let main = 0;
  let side = 0;
  const sideRef = from === 0 ? 'refs/heads/side' : `refs/heads/side-${from}`;
  for (let i = from + 1; i <= from + n; i++) {
    if (i % 7 === 0 && main > 0) {
      out.push(
        `commit ${sideRef}\nmark :${++mark}\ncommitter ${WHO} ${EPOCH + i * 60 - 30} +0000\n${data(`side ${i}`)}from :${side || main}\n${file(`side/s${i % 5}.txt`, i)}`,
      );
      side = mark;
    }
    const parent = main === 0 ? (from > 0 ? 'from refs/heads/main^0\n' : '') : `from :${main}\n`;
    const merge = i % 20 === 0 && side > 0 ? `merge :${side}\n` : '';
    out.push(
      `commit refs/heads/main\nmark :${++mark}\ncommitter ${WHO} ${EPOCH + i * 60} +0000\n${data(`commit ${i}`)}${parent}${merge}${file(`d${i % 4}/f${i % 13}.txt`, i)}${file(`d${(i + 1) % 4}/g${i % 11}.txt`, i)}`,
    );
    main = mark;
    if (i % 25 === 0)
      out.push(
        `tag v${i}\nfrom :${main}\ntagger ${WHO} ${EPOCH + i * 60} +0000\n${data(`release ${i}`)}`,
      );
  }
  return out.join('');
}

/** A repository of `commits` commits (see `history`), packed by `git repack -adb` unless told otherwise. */
function bitmapRepo(
  dir: string,
  opts: { commits?: number; bare?: boolean; objectFormat?: ObjectFormat; repack?: string[] } = {},
): string {
  const r = RepoBuilder.init(dir, { bare: opts.bare, objectFormat: opts.objectFormat });
  r.git(['fast-import', '--quiet'], { input: history(opts.commits ?? 110) });
  if (opts.repack !== undefined) r.git(opts.repack);
  else r.repack(['-adb']);
  return dir;
}

/** More commits on main: loose objects, or a pack of their own. */
function addCommits(repo: string, n: number, from: number, as: 'loose' | 'pack'): void {
  const limit = as === 'loose' ? 1 << 30 : 0; // fast-import unpacks an import of fewer objects
  gitOk(['-c', `fastimport.unpackLimit=${limit}`, 'fast-import', '--quiet'], {
    cwd: repo,
    input: history(n, from),
  });
}

function bitmapFiles(repo: string): string[] {
  const dir = packDirOf(repo);
  return fs
    .readdirSync(dir)
    .filter((f) => f.endsWith('.bitmap'))
    .map((f) => path.join(dir, f));
}

/** Commits whose bitmap git finds and checks (`rev-list --test-bitmap` ends with OK!). */
function bitmappedCommits(repo: string): string[] {
  return lines(gitOk(['rev-list', '--all'], { cwd: repo })).filter((c) => {
    const r = git(['rev-list', '--test-bitmap', c], { cwd: repo });
    return r.status === 0 && r.stderr.includes('OK!');
  });
}

/** Ids listed by `rev-list --objects --all`, sorted (the names, which a bitmap walk lacks, dropped). */
function reachable(repo: string, bitmap: boolean): string[] {
  const args = ['rev-list', '--objects', '--all', ...(bitmap ? ['--use-bitmap-index'] : [])];
  return lines(gitOk(args, { cwd: repo }))
    .map((l) => l.split(' ')[0]!)
    .sort();
}

interface Before {
  objects: string[];
  bitmapped: string[];
}

function before(repo: string): Before {
  const bitmapped = bitmappedCommits(repo);
  expect(bitmapped.length).toBeGreaterThan(0);
  return { objects: objectSet(repo), bitmapped };
}

/** What git says of the rewritten repository and its bitmap. */
function checkAfter(repo: string, b: Before): void {
  expect(objectSet(repo)).toEqual(b.objects);
  const f = fsckStrict(repo);
  expect(f.output).toBe('');
  expect(f.status).toBe(0);
  // Each commit bitmap carried over is checked by git against a walk; no other commit has one.
  expect(bitmappedCommits(repo)).toEqual(b.bitmapped);
  expect(reachable(repo, true)).toEqual(reachable(repo, false));
  // A clone served by pack-objects, which counts objects with the bitmap and reuses the pack.
  const clone = path.join(path.dirname(repo), `clone-${path.basename(repo)}-${Date.now()}`);
  gitOk(['clone', '-q', '--bare', '--no-local', repo, clone]);
  expect(fsckStrict(clone).status).toBe(0);
  expect(objectSet(clone).map((l) => l.split(' ')[0]!)).toEqual([
    ...new Set(reachable(repo, false)),
  ]);
  fs.rmSync(clone, { recursive: true, force: true });
}

/** `a` and `b` differ only in the pack checksum of the header and in the trailer. */
function sameButChecksums(a: Buffer, b: Buffer, len: number): void {
  expect(b.length).toBe(a.length);
  expect(b.subarray(0, 12).equals(a.subarray(0, 12))).toBe(true);
  expect(b.subarray(12 + len, b.length - len).equals(a.subarray(12 + len, a.length - len))).toBe(
    true,
  );
}

describe('the reachability bitmap of a rewritten pack', () => {
  it('git repack -adb: carried over (git bytes but for the checksums), checked by git; a second run, then a third at other levels', () => {
    const repo = bitmapRepo(path.join(scratch(), 'r'));
    const b = before(repo);
    expect(b.bitmapped.length).toBeGreaterThan(100);
    expect(b.bitmapped).toContain(gitOk(['rev-parse', 'HEAD'], { cwd: repo }).trim()); // so --test-bitmap HEAD is checked
    const old = fs.readFileSync(bitmapFiles(repo)[0]!);
    const out = JSON.parse(toolOk(['--json', '--graph-compression=0'], { cwd: repo }));
    expect(out.partitions[0].bitmap).toBe('carried');
    const files = bitmapFiles(repo);
    expect(files.map((f) => path.basename(f, '.bitmap'))).toEqual([out.partitions[0].newPack]);
    sameButChecksums(old, fs.readFileSync(files[0]!), 20);
    checkAfter(repo, b);
    // Our own output, the same settings: nothing to do, the pack (proven) and its bitmap stay as
    // they are; read again with -a, found unchanged, and still the same bitmap.
    const ours = fs.readFileSync(files[0]!);
    const again = JSON.parse(toolOk(['--json', '--graph-compression=0'], { cwd: repo }));
    expect(again.partitions).toEqual([]);
    expect(again.provenPacks).toEqual([out.partitions[0].newPack]);
    const all = JSON.parse(toolOk(['--json', '-a', '--graph-compression=0'], { cwd: repo }));
    expect(all.partitions[0].unchanged).toBe(true);
    expect(fs.readFileSync(files[0]!).equals(ours)).toBe(true);
    // Our own output at other levels: carried over again, from our bitmap.
    const third = JSON.parse(toolOk(['--json', '--graph-compression=9'], { cwd: repo }));
    expect(third.partitions[0].bitmap).toBe('carried');
    expect(bitmapFiles(repo).map((f) => path.basename(f, '.bitmap'))).toEqual([
      third.partitions[0].newPack,
    ]);
    checkAfter(repo, b);
  });

  it('loose objects and a pack made after the bitmap are merged in: the old commits keep theirs', () => {
    const repo = bitmapRepo(path.join(scratch(), 'r'), { commits: 60 });
    addCommits(repo, 15, 60, 'pack'); // a second pack, without a bitmap
    addCommits(repo, 10, 75, 'loose');
    expect(listPacks(repo).length).toBe(2);
    const b = before(repo);
    const head = gitOk(['rev-parse', 'HEAD'], { cwd: repo }).trim();
    expect(b.bitmapped).not.toContain(head);
    const out = JSON.parse(toolOk(['--json', '--graph-compression=0'], { cwd: repo }));
    expect(out.partitions[0]).toMatchObject({
      bitmap: 'carried',
      looseObjects: expect.any(Number),
    });
    expect(out.partitions[0].looseObjects).toBeGreaterThan(0);
    expect(listPacks(repo).length).toBe(1);
    checkAfter(repo, b);
  });

  it('a bare repository after git gc (repack.writeBitmaps on by default there)', () => {
    const dir = scratch();
    const src = bitmapRepo(path.join(dir, 'src'), { commits: 40, repack: ['repack', '-adq'] });
    const repo = path.join(dir, 'bare.git');
    gitOk(['clone', '-q', '--bare', '--no-local', src, repo]);
    gitOk(['-c', 'pack.threads=1', 'gc', '-q'], { cwd: repo });
    expect(bitmapFiles(repo).length).toBe(1);
    const b = before(repo);
    const out = JSON.parse(toolOk(['--json', '--graph-compression=0'], { cwd: repo }));
    expect(out.partitions[0].bitmap).toBe('carried');
    checkAfter(repo, b);
  });

  it('SHA-256', () => {
    const repo = bitmapRepo(path.join(scratch(), 'r'), { commits: 40, objectFormat: 'sha256' });
    const b = before(repo);
    const old = fs.readFileSync(bitmapFiles(repo)[0]!);
    toolOk(['-q', '--graph-compression=0'], { cwd: repo });
    sameButChecksums(old, fs.readFileSync(bitmapFiles(repo)[0]!), 32);
    checkAfter(repo, b);
  });

  it('with a lookup table (pack.writeBitmapLookupTable)', () => {
    const repo = bitmapRepo(path.join(scratch(), 'r'), {
      commits: 40,
      repack: ['-c', 'pack.threads=1', '-c', 'pack.writeBitmapLookupTable=true', 'repack', '-adbq'],
    });
    const b = before(repo);
    const old = fs.readFileSync(bitmapFiles(repo)[0]!);
    expect(old.readUInt16BE(6) & 0x10).toBe(0x10);
    toolOk(['-q', '--graph-compression=0'], { cwd: repo });
    sameButChecksums(old, fs.readFileSync(bitmapFiles(repo)[0]!), 20);
    checkAfter(repo, b);
  });

  it('objects of the bitmapped pack kept in a .keep pack: git writes a multi-pack-index bitmap instead, with a warning', () => {
    const repo = bitmapRepo(path.join(scratch(), 'r'), { commits: 30, repack: ['repack', '-adq'] });
    const kept = listPacks(repo)[0]!;
    fs.writeFileSync(kept.replace(/\.pack$/, '.keep'), '');
    gitOk(['fast-import', '--quiet'], { cwd: repo, input: history(20, 30) });
    // With a bitmap to write, git packs the kept objects too (repack's pack_kept_objects).
    gitOk(['-c', 'pack.threads=1', 'repack', '-adbq'], { cwd: repo });
    expect(bitmapFiles(repo).length).toBe(1);
    const b = before(repo);
    const r = tool(['--json', '--graph-compression=0'], { cwd: repo });
    expect(r.status).toBe(0);
    expect(r.stderr).toMatch(
      /\.bitmap is not carried over \(.*objects of its pack are not in the new pack.*\); git writes a multi-pack-index bitmap instead/,
    );
    expect(JSON.parse(r.stdout).partitions[0].bitmap).toBe('midx');
    expect(bitmapFiles(repo).map((f) => path.basename(f))).toEqual([
      expect.stringMatching(/^multi-pack-index-[0-9a-f]{40}\.bitmap$/),
    ]);
    gitOk(['multi-pack-index', 'verify'], { cwd: repo });
    expect(git(['rev-list', '--test-bitmap', 'HEAD'], { cwd: repo }).stderr).toContain('OK!');
    expect(objectSet(repo)).toEqual(b.objects);
    expect(fsckStrict(repo).status).toBe(0);
    expect(reachable(repo, true)).toEqual(reachable(repo, false));
  });

  it('a damaged bitmap is not carried over: git writes a multi-pack-index bitmap, nothing is lost', () => {
    const repo = bitmapRepo(path.join(scratch(), 'r'), { commits: 30 });
    const b = before(repo);
    const file = bitmapFiles(repo)[0]!;
    const bytes = fs.readFileSync(file);
    bytes[100] = bytes[100]! ^ 0x40;
    fs.chmodSync(file, 0o644);
    fs.writeFileSync(file, bytes);
    const r = tool(['--json', '--graph-compression=0'], { cwd: repo });
    expect(r.status).toBe(0);
    expect(r.stderr).toContain(
      `warning: ${file} is not carried over (bitmap checksum mismatch at offset ${bytes.length - 20}); git writes a multi-pack-index bitmap instead\n`,
    );
    expect(JSON.parse(r.stdout).partitions[0].bitmap).toBe('midx');
    expect(git(['rev-list', '--test-bitmap', 'HEAD'], { cwd: repo }).stderr).toContain('OK!');
    expect(objectSet(repo)).toEqual(b.objects);
    expect(fsckStrict(repo).status).toBe(0);
  });

  it('a run killed before the .idx is renamed in: the next run takes the new .bitmap back with the .pack', () => {
    const dir = scratch();
    const repo = bitmapRepo(path.join(dir, 'r'), { commits: 30 });
    const b = before(repo);
    const traced = path.join(dir, 'traced');
    fs.cpSync(repo, traced, { recursive: true });
    const renames = tracePoints(['-q', '--graph-compression=0'], traced).filter(
      (p) => p.point === 'rename',
    );
    const bitmapAt = renames.findIndex((p) => p.detail.endsWith('.bitmap'));
    const idxAt = renames.findIndex((p) => p.detail.endsWith('.idx'));
    expect(bitmapAt).toBeGreaterThanOrEqual(0);
    expect(idxAt).toBeGreaterThan(bitmapAt);
    expect(toolFault(['-q', '--graph-compression=0'], repo, `rename:${idxAt + 1}`).killed).toBe(
      true,
    );
    const dirOf = packDirOf(repo);
    const orphan = path.basename(renames[idxAt]!.detail, '.idx');
    expect(fs.existsSync(path.join(dirOf, orphan + '.bitmap'))).toBe(true);
    // Another setting: a pack of another name, so that nothing overwrites what the kill left.
    toolOk(['-q', '--graph-compression=9'], { cwd: repo });
    const names = fs.readdirSync(dirOf);
    expect(names.filter((n) => n.startsWith(orphan))).toEqual([]);
    for (const n of names) expect(names).toContain(n.replace(/\.\w+$/, '.idx'));
    checkAfter(repo, b);
  });
});

describe('the library option writeBitmapIndex (git repack -b / --no-write-bitmap-index)', () => {
  it('true: a repository without a bitmap gets git multi-pack-index bitmap', async () => {
    const repo = bitmapRepo(path.join(scratch(), 'r'), { commits: 20, repack: ['repack', '-adq'] });
    expect(bitmapFiles(repo)).toEqual([]);
    const objects = objectSet(repo);
    const warnings: string[] = [];
    const out = await repack(repo, {
      graphCompression: 0,
      writeBitmapIndex: true,
      onWarning: (w) => warnings.push(w),
    });
    expect(warnings).toEqual([]);
    expect(out.partitions[0]!.bitmap).toBe('midx');
    expect(bitmapFiles(repo).map((f) => path.basename(f))).toEqual([
      expect.stringMatching(/^multi-pack-index-[0-9a-f]{40}\.bitmap$/),
    ]);
    expect(git(['rev-list', '--test-bitmap', 'HEAD'], { cwd: repo }).stderr).toContain('OK!');
    expect(objectSet(repo)).toEqual(objects);
  });

  it('false: the bitmap goes with its pack, and none is written', async () => {
    const repo = bitmapRepo(path.join(scratch(), 'r'), { commits: 20 });
    expect(bitmapFiles(repo).length).toBe(1);
    const objects = objectSet(repo);
    const out = await repack(repo, { graphCompression: 0, writeBitmapIndex: false });
    expect(out.partitions[0]!.bitmap).toBeUndefined();
    expect(bitmapFiles(repo)).toEqual([]);
    expect(fs.existsSync(path.join(packDirOf(repo), 'multi-pack-index'))).toBe(false);
    expect(objectSet(repo)).toEqual(objects);
  });
});

describe('the .bitmap codec against git', () => {
  it("re-encodes git's type bitmaps and plain commit bitmaps to git's bytes, and the whole file", () => {
    for (const [objectFormat, algo] of [
      ['sha1', SHA1],
      ['sha256', SHA256],
    ] as const) {
      const repo = bitmapRepo(path.join(scratch(), 'r'), {
        commits: 110,
        objectFormat,
        repack: [
          '-c',
          'pack.threads=1',
          '-c',
          'pack.writeBitmapLookupTable=true',
          'repack',
          '-adbq',
        ],
      });
      const pack = listPacks(repo)[0]!;
      const buf = fs.readFileSync(pack.replace(/\.pack$/, '.bitmap'));
      const count = Number(
        gitOk(['count-objects', '-v'], { cwd: repo }).match(/in-pack: (\d+)/)![1],
      );
      const b = parseBitmap(buf, count, algo, 'x.bitmap');
      expect(b.types.map((t) => encodeEwah(ewahPositions(t), 'set'))).toEqual(b.types);
      const plain = b.entries.filter((e) => e.xorOffset === 0);
      expect(plain.length).toBeGreaterThan(0);
      expect(b.entries.length - plain.length).toBeGreaterThan(0); // XORed entries are there too
      for (const e of plain)
        expect(encodeEwah(ewahPositions(e.ewah), 'words').equals(e.ewah)).toBe(true);
      expect(encodeBitmap(b, algo).equals(buf)).toBe(true);
    }
  });

  it('refuses damaged files, naming the file and offset', () => {
    const repo = bitmapRepo(path.join(scratch(), 'r'), { commits: 10 });
    const buf = fs.readFileSync(bitmapFiles(repo)[0]!);
    const count = objectSet(repo).length;
    const reseal = (b: Buffer): Buffer =>
      Buffer.concat([b.subarray(0, b.length - 20), SHA1.digest(b.subarray(0, b.length - 20))]);
    const cases: [string, Buffer, RegExp][] = [
      ['truncated', buf.subarray(0, 30), /x\.bitmap: bitmap file too small at offset 0/],
      [
        'signature',
        reseal(Buffer.concat([Buffer.from('BITX'), buf.subarray(4)])),
        /bad signature at offset 0/,
      ],
      [
        'version',
        reseal(Buffer.concat([buf.subarray(0, 4), Buffer.from([0, 2]), buf.subarray(6)])),
        /unsupported bitmap version 2 at offset 4/,
      ],
      [
        'options',
        reseal(Buffer.concat([buf.subarray(0, 6), Buffer.from([0, 0x21]), buf.subarray(8)])),
        /unknown bitmap options 0x21 at offset 6/,
      ],
      [
        'checksum',
        Buffer.concat([buf.subarray(0, buf.length - 1), Buffer.from([buf[buf.length - 1]! ^ 1])]),
        /bitmap checksum mismatch at offset/,
      ],
      [
        'entries',
        reseal(Buffer.concat([buf.subarray(0, 8), Buffer.from([0, 0, 1, 0]), buf.subarray(12)])),
        /x\.bitmap: /,
      ],
    ];
    for (const [what, b, msg] of cases)
      expect(() => parseBitmap(b, count, SHA1, 'x.bitmap'), what).toThrow(msg);
    // Fewer objects than the bitmap has bits for.
    expect(() => parseBitmap(buf, 5, SHA1, 'x.bitmap')).toThrow(
      /past the 5 objects of the pack|out of range|too short/,
    );
  });

  it('moves every bit to where its object is in a pack git wrote in another order, with objects added', () => {
    const dir = scratch();
    const repo = bitmapRepo(path.join(dir, 'r'), { commits: 60 });
    const old = listPacks(repo)[0]!;
    const b = before(repo);
    addCommits(repo, 5, 60, 'loose');
    // Every object, in a shuffled order (pack-objects writes a list in the order given).
    const ids = lines(
      gitOk(['cat-file', '--batch-all-objects', '--batch-check=%(objectname)'], { cwd: repo }),
    );
    let seed = 7;
    for (let i = ids.length - 1; i > 0; i--) {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      const j = seed % (i + 1);
      [ids[i], ids[j]] = [ids[j]!, ids[i]!];
    }
    const hex = gitOk(['-c', 'pack.threads=1', 'pack-objects', '-q', path.join(dir, 'pack')], {
      cwd: repo,
      input: ids.join('\n') + '\n',
    }).trim();
    const shuffled = path.join(dir, `pack-${hex}.pack`);
    const src = Pack.open(old, SHA1);
    const dst = Pack.open(shuffled, SHA1);
    const carried = carryBitmap(src, old.replace(/\.pack$/, '.bitmap'), dst);
    src.close();
    dst.close();
    expect(carried).toMatchObject({ permuted: true, added: ids.length - b.objects.length });
    // The shuffled pack and its bitmap replace everything.
    const packDir = packDirOf(repo);
    for (const f of fs.readdirSync(packDir)) fs.rmSync(path.join(packDir, f), { force: true });
    for (const ext of ['.pack', '.idx'])
      fs.copyFileSync(shuffled.replace(/\.pack$/, ext), path.join(packDir, `pack-${hex}${ext}`));
    fs.writeFileSync(path.join(packDir, `pack-${hex}.bitmap`), carried.bytes);
    gitOk(['prune-packed'], { cwd: repo });
    expect(bitmappedCommits(repo)).toEqual(b.bitmapped);
    expect(reachable(repo, true)).toEqual(reachable(repo, false));
    expect(fsckStrict(repo).status).toBe(0);
  });
});
