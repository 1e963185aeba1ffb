/**
 * The fixtures really have the properties the rest of the test suite relies
 * on. Checked with git and by reading bytes, never with src/.
 */
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { CATALOG } from './fixtures/catalog.js';
import {
  copyFixture,
  FIXTURE_NAMES,
  FIXTURE_ROOT,
  FIXTURES,
  fixtureGitDir,
  fixtureLinkedWorktree,
  fixturePath,
  removeCopy,
  type FixtureName,
} from './fixtures/index.js';
import {
  commonDirOf,
  countObjects,
  fsckStrict,
  git,
  gitOk,
  lines,
  listPacks,
  objectSet,
  packDirOf,
  verifyPack,
} from './helpers/git.js';
import { useFixtureCopy } from './helpers/fixture-copy.js';
import {
  IDX_V2_MAGIC,
  OBJ_OFS_DELTA,
  OBJ_REF_DELTA,
  packEntryType,
  readIdx,
  readPackHeader,
} from './helpers/pack-bytes.js';

const idxOf = (pack: string): string => pack.replace(/\.pack$/, '.idx');

/** Type bits of every entry of a pack, by offset from `git verify-pack -v`. */
function entryTypes(repo: string, pack: string): number[] {
  const bytes = fs.readFileSync(pack);
  return verifyPack(repo, pack).entries.map((e) => packEntryType(bytes, e.offset));
}

function onlyPack(repo: string): string {
  const packs = listPacks(repo);
  expect(packs).toHaveLength(1);
  return packs[0]!;
}

function catType(repo: string, rev: string): string {
  return gitOk(['cat-file', '-t', rev], { cwd: repo }).trim();
}

describe('every fixture', () => {
  it.each([...FIXTURE_NAMES])(
    '%s is complete and passes git fsck --strict',
    (name: FixtureName) => {
      const repo = fixturePath(name);
      expect(fs.existsSync(path.join(FIXTURE_ROOT, name, '.complete'))).toBe(true);
      const dirs = [repo];
      if (FIXTURES[name].linkedWorktree) dirs.push(fixtureLinkedWorktree(name));
      for (const d of dirs) {
        const r = fsckStrict(d);
        expect(r.output).not.toMatch(/^(error|warning|missing|broken)/m);
        expect(r.status).toBe(0);
      }
      expect(fs.existsSync(fixtureGitDir(name))).toBe(true);
      const format = gitOk(['rev-parse', '--show-object-format'], { cwd: repo }).trim();
      expect(format).toBe(FIXTURES[name].objectFormat);
      const bare = gitOk(['rev-parse', '--is-bare-repository'], { cwd: repo }).trim();
      expect(bare).toBe(String(FIXTURES[name].bare));
    },
  );

  it('FIXTURE_ROOT is named after the fixture code hash', () => {
    if (!process.env.REPACK_TS_FIXTURE_ROOT) {
      expect(path.basename(FIXTURE_ROOT)).toMatch(
        new RegExp(`^git-repack-ts-fixtures-${process.getuid?.() ?? 0}-[0-9a-f]{16}$`),
      );
    }
  });
});

describe('basic', () => {
  const repo = fixturePath('basic');

  it('has a single pack with deep OFS_DELTA chains (depth > 10) and a .rev', () => {
    const pack = onlyPack(repo);
    const v = verifyPack(repo, pack);
    expect(v.maxChain).toBeGreaterThan(10);
    expect(Math.max(...v.entries.map((e) => e.depth))).toBe(v.maxChain);
    const types = entryTypes(repo, pack);
    expect(types.filter((t) => t === OBJ_OFS_DELTA).length).toBeGreaterThan(50);
    expect(types).not.toContain(OBJ_REF_DELTA);
    expect(fs.existsSync(pack.replace(/\.pack$/, '.rev'))).toBe(true);
  });

  it('has loose objects on top of the pack', () => {
    const c = countObjects(repo);
    expect(c.count).toBeGreaterThan(0);
    expect(c.inPack).toBeGreaterThan(300);
    const head = gitOk(['rev-parse', 'HEAD'], { cwd: repo }).trim();
    expect(fs.existsSync(path.join(repo, '.git', 'objects', head.slice(0, 2), head.slice(2)))).toBe(
      true,
    );
  });

  it('has a branch, a merge, all kinds of tags and a note', () => {
    expect(gitOk(['rev-parse', '--verify', 'refs/heads/feature'], { cwd: repo })).toBeTruthy();
    expect(lines(gitOk(['rev-list', '--merges', 'HEAD'], { cwd: repo }))).toHaveLength(1);
    expect(catType(repo, 'refs/tags/v0.1')).toBe('tag');
    expect(catType(repo, 'refs/tags/v1.0')).toBe('tag');
    expect(catType(repo, 'refs/tags/light')).toBe('commit');
    expect(catType(repo, 'refs/tags/v1.0-outer')).toBe('tag');
    expect(catType(repo, 'refs/tags/v1.0-outer^{}')).toBe('commit');
    const outer = gitOk(['cat-file', 'tag', 'refs/tags/v1.0-outer'], { cwd: repo });
    expect(outer).toMatch(/^type tag$/m);
    expect(catType(repo, 'refs/tags/blob-tag^{}')).toBe('blob');
    expect(gitOk(['notes', 'list'], { cwd: repo }).trim()).not.toBe('');
  });

  it('has a binary file, an empty file, subdirectories, an executable and a symlink', () => {
    const tree = gitOk(['ls-tree', '-r', 'HEAD'], { cwd: repo });
    expect(tree).toMatch(/^100644 blob e69de29bb2d1d6434b8b29ae775ad8c2e48c5391\tempty\.txt$/m);
    expect(tree).toMatch(/^100755 blob [0-9a-f]{40}\tbin\/run\.sh$/m);
    expect(tree).toMatch(/^120000 blob [0-9a-f]{40}\tlink-to-readme$/m);
    expect(tree).toMatch(/\tdocs\/guide\/deep\/nested\/page\.md$/m);
    const bin = gitOk(['cat-file', 'blob', 'HEAD:data/blob.bin'], { cwd: repo });
    expect(bin.length).toBeGreaterThan(1000);
    const numstat = gitOk(['diff', '--numstat', 'HEAD~20', 'HEAD', '--', 'data/blob.bin'], {
      cwd: repo,
    });
    expect(numstat).toMatch(/^-\t-\tdata\/blob\.bin$/m);
  });

  it('is reproducible: rebuilding the recipe gives the same objects and the same pack', () => {
    const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'git-repack-ts-rebuild-'));
    try {
      const dir = path.join(tmp, 'repo');
      CATALOG.basic.build(dir, {
        fixturePath: () => {
          throw new Error('basic has no deps');
        },
      });
      expect(objectSet(dir)).toEqual(objectSet(repo));
      expect(listPacks(dir).map((p) => path.basename(p))).toEqual(
        listPacks(repo).map((p) => path.basename(p)),
      );
      expect(gitOk(['show-ref'], { cwd: dir })).toBe(gitOk(['show-ref'], { cwd: repo }));
    } finally {
      fs.rmSync(tmp, { recursive: true, force: true });
    }
  });
});

describe('multi-pack', () => {
  const repo = fixturePath('multi-pack');

  it('has several packs, an object in two packs and loose objects', () => {
    const packs = listPacks(repo);
    expect(packs.length).toBeGreaterThanOrEqual(5);
    const seen = new Map<string, number>();
    for (const p of packs)
      for (const oid of readIdx(idxOf(p)).oids) seen.set(oid, (seen.get(oid) ?? 0) + 1);
    expect([...seen.values()].filter((n) => n > 1).length).toBeGreaterThan(10);
    expect(countObjects(repo).count).toBeGreaterThan(2);
  });

  it('has an unreachable blob in a pack only and an unreachable loose blob', () => {
    const out = git(['fsck', '--unreachable', '--no-reflogs', '--no-progress'], { cwd: repo });
    expect(out.status).toBe(0);
    const unreachable = lines(out.stdout.toString())
      .map((l) => /^unreachable blob ([0-9a-f]{40})$/.exec(l)?.[1])
      .filter((x): x is string => !!x);
    expect(unreachable).toHaveLength(2);
    const isLoose = (oid: string): boolean =>
      fs.existsSync(path.join(repo, '.git', 'objects', oid.slice(0, 2), oid.slice(2)));
    const packed = new Set(listPacks(repo).flatMap((p) => readIdx(idxOf(p)).oids));
    expect(unreachable.filter((o) => isLoose(o) && !packed.has(o))).toHaveLength(1);
    expect(unreachable.filter((o) => !isLoose(o) && packed.has(o))).toHaveLength(1);
  });
});

describe('ref-delta', () => {
  it('has REF_DELTA entries and no OFS_DELTA', () => {
    const repo = fixturePath('ref-delta');
    const pack = onlyPack(repo);
    const types = entryTypes(repo, pack);
    expect(types.filter((t) => t === OBJ_REF_DELTA).length).toBeGreaterThan(20);
    expect(types).not.toContain(OBJ_OFS_DELTA);
    expect(verifyPack(repo, pack).maxChain).toBeGreaterThan(10);
    expect(countObjects(repo).count).toBeGreaterThan(0);
  });
});

describe('sha256', () => {
  const repo = fixturePath('sha256');

  it('is a sha256 repository with deltas, a .rev, tags, a merge and loose objects', () => {
    expect(gitOk(['rev-parse', '--show-object-format'], { cwd: repo }).trim()).toBe('sha256');
    const pack = onlyPack(repo);
    expect(path.basename(pack)).toMatch(/^pack-[0-9a-f]{64}\.pack$/);
    expect(fs.existsSync(pack.replace(/\.pack$/, '.rev'))).toBe(true);
    expect(verifyPack(repo, pack).maxChain).toBeGreaterThan(10);
    expect(entryTypes(repo, pack)).toContain(OBJ_OFS_DELTA);
    expect(readIdx(idxOf(pack), 32).count).toBe(readPackHeader(fs.readFileSync(pack)).count);
    expect(catType(repo, 'refs/tags/v1.0-outer')).toBe('tag');
    expect(lines(gitOk(['rev-list', '--merges', 'HEAD'], { cwd: repo }))).toHaveLength(1);
    expect(countObjects(repo).count).toBeGreaterThan(0);
    expect(objectSet(repo)[0]).toMatch(/^[0-9a-f]{64} /);
  });
});

describe('large-offset', () => {
  it('has an idx v2 whose 64-bit offset table is used', () => {
    const repo = fixturePath('large-offset');
    const pack = onlyPack(repo);
    const idx = readIdx(idxOf(pack));
    expect(idx.version).toBe(2);
    expect(idx.msbEntries).toBeGreaterThan(0);
    expect(idx.largeOffsetEntries).toBe(idx.msbEntries);
    // Every object past 4096 bytes goes through the 64-bit table.
    expect(idx.msbEntries).toBe(idx.offsets.filter((o) => o > 4096).length);
    // Same offsets as git's own view of the pack.
    const byOid = new Map(verifyPack(repo, pack).entries.map((e) => [e.oid, e.offset]));
    idx.oids.forEach((oid, i) => expect(idx.offsets[i]).toBe(byOid.get(oid)));
    expect(objectSet(repo)).toEqual(objectSet(fixturePath('basic')));
  });
});

describe('idx-v1', () => {
  it('has a version 1 idx', () => {
    const repo = fixturePath('idx-v1');
    const pack = onlyPack(repo);
    const head = fs.readFileSync(idxOf(pack)).subarray(0, 4);
    expect(head.equals(IDX_V2_MAGIC)).toBe(false);
    const idx = readIdx(idxOf(pack));
    expect(idx.version).toBe(1);
    expect(idx.count).toBe(readPackHeader(fs.readFileSync(pack)).count);
    gitOk(['verify-pack', idxOf(pack)], { cwd: repo });
    expect(objectSet(repo)).toEqual(objectSet(fixturePath('basic')));
  });
});

describe('bare', () => {
  it('is a bare, fully packed clone of basic', () => {
    const repo = fixturePath('bare');
    expect(FIXTURES.bare.bare).toBe(true);
    expect(fixtureGitDir('bare')).toBe(repo);
    expect(gitOk(['rev-parse', '--is-bare-repository'], { cwd: repo }).trim()).toBe('true');
    const pack = onlyPack(repo);
    expect(fs.existsSync(pack.replace(/\.pack$/, '.bitmap'))).toBe(true);
    expect(countObjects(repo).count).toBe(0);
    const basic = fixturePath('basic');
    expect(gitOk(['rev-parse', 'main', 'v1.0-outer'], { cwd: repo })).toBe(
      gitOk(['rev-parse', 'main', 'v1.0-outer'], { cwd: basic }),
    );
  });
});

describe('worktree', () => {
  it('has a linked worktree whose HEAD commit is reachable from nothing else', () => {
    const repo = fixturePath('worktree');
    const wt = fixtureLinkedWorktree('worktree');
    expect(commonDirOf(wt)).toBe(path.join(repo, '.git'));
    expect(gitOk(['rev-parse', '--show-toplevel'], { cwd: path.join(wt, 'src') }).trim()).toBe(wt);
    expect(fs.readFileSync(path.join(wt, '.git'), 'utf8')).toMatch(/^gitdir: /);
    const head = gitOk(['rev-parse', 'HEAD'], { cwd: wt }).trim();
    expect(gitOk(['for-each-ref', '--contains', head], { cwd: repo }).trim()).toBe('');
    const list = gitOk(['worktree', 'list', '--porcelain'], { cwd: repo });
    expect(list).toContain(`worktree ${wt}\n`);
  });

  it('copies are re-pointed at themselves', () => {
    const repo = useFixtureCopy('worktree');
    const wt = fixtureLinkedWorktree('worktree', repo);
    expect(commonDirOf(wt)).toBe(path.join(repo, '.git'));
    expect(gitOk(['worktree', 'list', '--porcelain'], { cwd: repo })).toContain(`worktree ${wt}\n`);
    expect(gitOk(['status', '--porcelain'], { cwd: wt })).toBe('');
    expect(fsckStrict(wt).status).toBe(0);
  });
});

describe('alternates', () => {
  it('borrows from the pristine basic through an absolute alternates path', () => {
    const repo = fixturePath('alternates');
    const alt = fs
      .readFileSync(path.join(repo, '.git', 'objects', 'info', 'alternates'), 'utf8')
      .trim();
    expect(path.isAbsolute(alt)).toBe(true);
    expect(alt).toBe(path.join(fixturePath('basic'), '.git', 'objects'));
    const c = countObjects(repo);
    expect(c.count + c.inPack).toBeLessThan(40);
    expect(c.count).toBeGreaterThan(0);
    expect(listPacks(repo)).toHaveLength(1);
    const all = new Set(objectSet(repo));
    for (const o of objectSet(fixturePath('basic'))) expect(all.has(o)).toBe(true);
  });
});

describe('promisor', () => {
  it('is a partial clone with .promisor packs and missing objects', () => {
    const repo = fixturePath('promisor');
    const packDir = packDirOf(repo);
    const promisorFiles = fs.readdirSync(packDir).filter((f) => f.endsWith('.promisor'));
    expect(promisorFiles).toHaveLength(2);
    const missing = lines(
      gitOk(['rev-list', '--objects', '--all', '--missing=print'], { cwd: repo }),
    ).filter((l) => l.startsWith('?'));
    expect(missing.length).toBeGreaterThan(50);
    expect(gitOk(['config', 'remote.origin.promisor'], { cwd: repo }).trim()).toBe('true');
    expect(objectSet(repo).some((l) => / blob /.test(l))).toBe(false);
  });
});

describe('keep', () => {
  it('has several packs, exactly one with a .keep', () => {
    const repo = fixturePath('keep');
    expect(listPacks(repo)).toHaveLength(3);
    const keeps = fs.readdirSync(packDirOf(repo)).filter((f) => f.endsWith('.keep'));
    expect(keeps).toHaveLength(1);
    expect(listPacks(repo).map((p) => path.basename(p, '.pack'))).toContain(
      path.basename(keeps[0]!, '.keep'),
    );
  });
});

describe('midx-bitmap', () => {
  it('has a multi-pack-index with a bitmap over several packs', () => {
    const repo = fixturePath('midx-bitmap');
    const packDir = packDirOf(repo);
    expect(listPacks(repo).length).toBeGreaterThanOrEqual(3);
    expect(fs.existsSync(path.join(packDir, 'multi-pack-index'))).toBe(true);
    expect(
      fs.readdirSync(packDir).filter((f) => /^multi-pack-index-[0-9a-f]{40}\.bitmap$/.test(f)),
    ).toHaveLength(1);
    gitOk(['multi-pack-index', 'verify', '--no-progress'], { cwd: repo });
    const midx = fs.readFileSync(path.join(packDir, 'multi-pack-index'));
    expect(midx.subarray(0, 4).toString('latin1')).toBe('MIDX');
    expect(midx.indexOf('RIDX', 0, 'latin1')).toBeGreaterThan(0);
    const bitmapped = git(['rev-list', '--count', '--use-bitmap-index', '--objects', 'HEAD~1'], {
      cwd: repo,
    });
    expect(bitmapped.status).toBe(0);
  });
});

describe('big-blob', () => {
  it('has 3 MiB random and compressible blobs and deltified 1 MiB text versions', () => {
    const repo = fixturePath('big-blob');
    const size = (rev: string): number =>
      Number(gitOk(['cat-file', '-s', rev], { cwd: repo }).trim());
    expect(size('HEAD:big-random.bin')).toBe(3 << 20);
    expect(size('HEAD:big-compressible.txt')).toBe(3 << 20);
    expect(size('HEAD:text-1mib.txt')).toBeGreaterThanOrEqual(1 << 20);
    const pack = onlyPack(repo);
    const bytes = fs.statSync(pack).size;
    expect(bytes).toBeGreaterThan(3 << 20); // random data does not compress
    expect(bytes).toBeLessThan((3 << 20) + (1 << 20)); // the rest does
    const v = verifyPack(repo, pack);
    expect(v.entries.filter((e) => e.type === 'blob' && e.depth > 0).length).toBeGreaterThanOrEqual(
      3,
    );
  });
});

describe('pack-v3', () => {
  it('has a version 3 pack with a valid trailer that git accepts', () => {
    const repo = fixturePath('pack-v3');
    const pack = onlyPack(repo);
    const bytes = fs.readFileSync(pack);
    const h = readPackHeader(bytes);
    expect(h.signature).toBe('PACK');
    expect(h.version).toBe(3);
    const sum = createHash('sha1')
      .update(bytes.subarray(0, bytes.length - 20))
      .digest();
    expect(sum.equals(bytes.subarray(bytes.length - 20))).toBe(true);
    expect(path.basename(pack)).toBe(`pack-${sum.toString('hex')}.pack`);
    gitOk(['verify-pack', idxOf(pack)], { cwd: repo });
    expect(readIdx(idxOf(pack)).count).toBe(h.count);
  });
});

describe('empty-repo', () => {
  it('has no objects and no packs', () => {
    const repo = fixturePath('empty-repo');
    expect(listPacks(repo)).toEqual([]);
    expect(objectSet(repo)).toEqual([]);
    expect(countObjects(repo).count).toBe(0);
    expect(git(['rev-parse', '--verify', '-q', 'HEAD'], { cwd: repo }).status).not.toBe(0);
  });
});

describe('copyFixture', () => {
  it('makes an independent copy keeping modes, symlinks and objects', () => {
    const pristine = fixturePath('basic');
    const copy = copyFixture('basic');
    try {
      expect(copy).not.toBe(pristine);
      expect(objectSet(copy)).toEqual(objectSet(pristine));
      expect(fs.readlinkSync(path.join(copy, 'link-to-readme'))).toBe('README.md');
      expect(fs.statSync(path.join(copy, 'bin', 'run.sh')).mode & 0o777).toBe(0o755);
      const pack = onlyPack(copy);
      expect(fs.statSync(pack).mode & 0o777).toBe(0o444);
      expect(gitOk(['status', '--porcelain'], { cwd: copy })).toBe('');
      expect(fs.existsSync(path.join(path.dirname(copy), '.complete'))).toBe(false);
      // Changing the copy leaves the pristine fixture alone.
      gitOk(['-c', 'pack.threads=1', 'repack', '-adq'], { cwd: copy });
      expect(countObjects(copy).count).toBe(0);
      expect(countObjects(pristine).count).toBeGreaterThan(0);
    } finally {
      removeCopy(copy);
    }
    expect(fs.existsSync(copy)).toBe(false);
  });

  it('bare copies return the git dir', () => {
    const copy = useFixtureCopy('bare');
    expect(gitOk(['rev-parse', '--absolute-git-dir'], { cwd: copy }).trim()).toBe(copy);
  });
});
