import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { GitRepackError, walk } from '../src/index.js';
import { fixturePath, type FixtureName } from './fixtures/index.js';
import { useFixtureCopy } from './helpers/fixture-copy.js';
import { git, gitDirOf, gitOk } from './helpers/git.js';
import { RepoBuilder } from './helpers/repo.js';
import { tool, toolOk } from './helpers/tool.js';

/** What `git rev-list --objects --all` reaches, by type, and how many of its objects are missing. */
function gitWalk(
  repo: string,
  config: string[] = [],
): { commits: number; trees: number; blobs: number; tags: number; missing: number } {
  const listed = gitOk([...config, 'rev-list', '--objects', '--all', '--missing=print'], {
    cwd: repo,
  })
    .split('\n')
    .filter(Boolean);
  const missing = listed.filter((l) => l.startsWith('?')).length;
  const ids = listed
    .filter((l) => !l.startsWith('?'))
    .map((l) => l.slice(0, l.indexOf(' ') < 0 ? l.length : l.indexOf(' ')));
  const types = gitOk(['cat-file', '--batch-check=%(objecttype)'], {
    cwd: repo,
    input: ids.join('\n') + '\n',
  })
    .split('\n')
    .filter(Boolean);
  const count = (t: string): number => types.filter((x) => x === t).length;
  return {
    commits: count('commit'),
    trees: count('tree'),
    blobs: count('blob'),
    tags: count('tag'),
    missing,
  };
}

function ourWalk(repo: string): Record<string, number> {
  const r = JSON.parse(toolOk(['walk', '--json'], { cwd: repo })) as Record<string, number>;
  return {
    commits: r.commits!,
    trees: r.trees!,
    blobs: r.blobs!,
    tags: r.tags!,
    missing: r.missing!,
  };
}

describe('walk: the objects git rev-list --objects --all reaches, by type', () => {
  for (const name of [
    'basic',
    'multi-pack',
    'ref-delta',
    'sha256',
    'idx-v1',
    'promisor',
    'alternates',
  ] as FixtureName[]) {
    it(name, () => {
      const repo = fixturePath(name);
      expect(ourWalk(repo)).toEqual(gitWalk(repo));
    });
  }

  it('thousands of blobs named again and again in many trees, a gitlink, a blob under several names', () => {
    // The walk answers most tree entries from a small table of recent ids (commands/walk.ts,
    // RecentIds): 3,000 distinct blobs in 64 Ki slots share slots, and each commit's trees name
    // almost the same ids as the one before.
    const repo = fs.mkdtempSync(path.join(os.tmpdir(), 'rts-walk-'));
    try {
      gitOk(['init', '-q', '--bare', repo], { cwd: os.tmpdir() });
      const lines: string[] = [];
      const gitlink = 'c'.repeat(40);
      for (let c = 0; c < 30; c++) {
        const msg = `commit ${c}`;
        lines.push(
          'commit refs/heads/main',
          `committer A U Thor <a@example.com> ${1_700_000_000 + c * 60} +0000`,
          `data ${msg.length}`,
          msg,
        );
        for (let f = 0; f < 100; f++) {
          const body = `file ${f} version ${c}\n`;
          lines.push(`M 100644 inline d${f % 10}/f${f}`, `data ${body.length}`, body);
        }
        const same = 'the same bytes\n';
        lines.push(`M 100644 inline same-${c}`, `data ${same.length}`, same);
        lines.push(`M 160000 ${gitlink} sub`);
      }
      lines.push('');
      gitOk(['fast-import', '--quiet'], { cwd: repo, input: lines.join('\n') });
      gitOk(['repack', '-a', '-d', '-q'], { cwd: repo });
      const want = gitWalk(repo);
      expect(want.blobs).toBe(3001);
      expect(ourWalk(repo)).toEqual(want);
    } finally {
      fs.rmSync(repo, { recursive: true, force: true });
    }
  });
});

/** A fresh directory, removed when the test ends. */
function tmpDir(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rts-walk-'));
  onTestFinished(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Removes the loose file of object `id` (the repository's objects are all loose). */
function removeLoose(repo: string, id: string): void {
  const f = path.join(gitDirOf(repo), 'objects', id.slice(0, 2), id.slice(2));
  expect(fs.existsSync(f)).toBe(true);
  fs.rmSync(f);
}

/** What git's `rev-list --objects --all` and our walk say: exit code and stderr. */
function bothWalks(repo: string): {
  git: { status: number; stderr: string };
  ours: { status: number; stderr: string };
} {
  const g = git(['rev-list', '--objects', '--all'], { cwd: repo });
  const o = tool(['walk', '--json'], { cwd: repo });
  return {
    git: { status: g.status, stderr: g.stderr },
    ours: { status: o.status, stderr: o.stderr },
  };
}

describe('walk: an object nothing promises is missing: git rev-list dies on it, so does the walk', () => {
  /** Loose objects only: main of three commits, a tag of a blob nothing else names. */
  function history(dir: string): RepoBuilder {
    const r = RepoBuilder.init(dir);
    r.write('a/f', '1\n');
    r.commit('one');
    r.write('a/g', '2\n');
    r.write('b', 'b\n');
    r.commit('two');
    r.write('b', 'b2\n');
    r.commit('three');
    r.tagAnnotated('v1', r.hashObject('tagged only\n'), 'a tag of a blob');
    return r;
  }

  const cases: { what: string; id: (r: RepoBuilder) => string }[] = [
    { what: 'a blob', id: (r) => r.revParse('HEAD~1:a/g') },
    { what: 'a tree', id: (r) => r.revParse('HEAD~1:a') },
    {
      what: 'a parent commit (git says error: Could not read, then fatal)',
      id: (r) => r.revParse('HEAD~1'),
    },
    { what: 'the commit a branch points at', id: (r) => r.revParse('HEAD') },
    { what: "a tag's object", id: (r) => r.revParse('v1^{}') },
  ];
  for (const c of cases) {
    it(`${c.what}: exit 128 and git's message; the library's walk() rejects with missing-object`, async () => {
      const dir = tmpDir();
      const r = history(dir);
      const id = c.id(r);
      removeLoose(dir, id);
      const { git: g, ours } = bothWalks(dir);
      expect(g.status).toBe(128);
      expect(g.stderr).toMatch(/^(error: .*\n)?fatal: /);
      expect(ours).toEqual(g);
      const e = await walk(dir).catch((x: unknown) => x);
      expect(e).toBeInstanceOf(GitRepackError);
      expect({
        code: (e as GitRepackError).code,
        objectId: (e as GitRepackError).objectId,
        fatal: `fatal: ${(e as GitRepackError).message}\n`,
      }).toEqual({
        code: 'missing-object',
        objectId: id,
        fatal: g.stderr.slice(g.stderr.indexOf('fatal: ')),
      });
    });
  }

  it('a shallow clone: the parents of its shallow commits are not walked (git grafts them away), nothing is missing', () => {
    const dir = path.join(tmpDir(), 'shallow');
    gitOk([
      'clone',
      '-q',
      '--depth=2',
      '--no-local',
      '--upload-pack',
      'git -c pack.threads=1 upload-pack',
      `file://${fixturePath('basic')}`,
      dir,
    ]);
    expect(fs.existsSync(path.join(dir, '.git', 'shallow'))).toBe(true);
    const want = gitWalk(dir);
    expect(want.missing).toBe(0);
    expect(ourWalk(dir)).toEqual(want);
  });
});

describe('walk: a partial clone, promised objects missing', () => {
  /** The public snapshots' shape: a partial clone without its config (so without a promisor remote). */
  function snapshot(): string {
    const repo = useFixtureCopy('promisor');
    fs.rmSync(path.join(gitDirOf(repo), 'config'));
    return repo;
  }
  // What git counts once told of the promisor remote the config named (it fetches nothing with --missing).
  const PROMISOR = ['-c', 'remote.origin.promisor=true', '-c', 'extensions.partialClone=origin'];

  it('promised objects are counted missing, the walk succeeds; one a local tree names is promised too (git is_promisor_object); one nothing promises is fatal as in git', () => {
    const repo = snapshot();
    const want = gitWalk(repo, PROMISOR);
    expect(want.missing).toBeGreaterThan(0);
    expect(ourWalk(repo)).toEqual(want);
    // A local commit whose tree names promised blobs (every blob of the clone, under other names):
    // the promisor packs' trees name them, not the local tree, which the walk reaches first (HEAD).
    const r = new RepoBuilder(repo, 90_000);
    const blobs = r
      .git(['ls-tree', '-r', 'HEAD'])
      .split('\n')
      .filter((l) => l.includes(' blob '));
    expect(blobs.length).toBeGreaterThan(1);
    const local = r
      .git(['mktree', '--missing'], {
        input: blobs.map((l, i) => l.replace(/\t.*/, `\tlocal-${i}`)).join('\n') + '\n',
      })
      .trim();
    r.advance();
    r.git([
      'update-ref',
      '--no-deref',
      'HEAD',
      r.git(['commit-tree', local, '-m', 'local']).trim(),
    ]);
    const wantLocal = gitWalk(repo, PROMISOR);
    expect(wantLocal.missing).toBe(want.missing);
    expect(ourWalk(repo)).toEqual(wantLocal);
    // A blob no promisor pack names: git (no promisor remote here) dies, so does the walk.
    const lost = r.git(['hash-object', '--stdin'], { input: 'never written\n' }).trim();
    const orphan = r.git(['mktree', '--missing'], { input: `100644 blob ${lost}\tlost\n` }).trim();
    r.git(['update-ref', 'refs/heads/lost', r.git(['commit-tree', orphan, '-m', 'lost']).trim()]);
    const { git: g, ours } = bothWalks(repo);
    expect(g).toEqual({ status: 128, stderr: `fatal: missing blob object '${lost}'\n` });
    expect(ours).toEqual(g);
  });
});
