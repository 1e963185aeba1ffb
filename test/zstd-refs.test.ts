/**
 * Issue 30, item 2: `zstd-import` restores the refs a zstd pack carries, as `git fetch <bundle>
 * 'refs/*:refs/*'` and `git clone` would: git's own fetch from a bundle of the same repository is
 * the oracle for what is created and for the report's wording; the zpack's refs are untrusted.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { fixturePath } from './fixtures/index.js';
import { useFixtureCopy } from './helpers/fixture-copy.js';
import { fsckStrict, git, gitOk, lines, objectSet } from './helpers/git.js';
import { OBJ, fakeId, objectId } from './helpers/forge.js';
import { forgeZpack } from './helpers/zpack-forge.js';
import { tool, toolOk } from './helpers/tool.js';
import { runUntil } from './helpers/faults.js';
import { isValidRefname } from '../src/format/refname.js';
import { repoState } from './helpers/repo-state.js';

function tmpDir(): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'rts-zrefs-'));
}

const refList = (repo: string): string =>
  gitOk(['for-each-ref', '--format=%(objectname) %(refname)'], { cwd: repo });
const reachable = (repo: string): string[] =>
  lines(gitOk(['rev-list', '--objects', '--all'], { cwd: repo })).sort();

function exportOf(src: string, dir: string): string {
  const file = path.join(dir, 'all.zpack');
  toolOk(['-q', '--zstd=3', '-o', file, '--dict-trainer=js'], { cwd: src });
  return file;
}

describe('zstd-import restores the refs and HEAD', () => {
  it('into an empty repository: the refs git fetch would create, the same report, HEAD as clone sets it; gc --prune=now keeps every object', () => {
    const src = fixturePath('basic');
    const dir = tmpDir();
    try {
      const file = exportOf(src, dir);
      const target = path.join(dir, 'target');
      gitOk(['init', '-q', '--bare', target]);
      const r = tool(['zstd-import', '-q', file], { cwd: target });
      expect(r.status, r.stderr).toBe(0);
      expect(refList(target)).toBe(refList(src));
      expect(gitOk(['symbolic-ref', 'HEAD'], { cwd: target })).toBe(
        gitOk(['symbolic-ref', 'HEAD'], { cwd: src }),
      );
      // What git fetch from a bundle of the same repository prints, line for line (git's order aside).
      const again = path.join(dir, 'again');
      gitOk(['init', '-q', '--bare', again]);
      const report = tool(['zstd-import', file], { cwd: again });
      gitOk(['bundle', 'create', path.join(dir, 'b.bundle'), '--all'], { cwd: src });
      const viaGit = path.join(dir, 'via-git');
      gitOk(['init', '-q', '--bare', viaGit]);
      const fetched = git(['fetch', path.join(dir, 'b.bundle'), 'refs/*:refs/*'], { cwd: viaGit });
      expect(fetched.status).toBe(0);
      const ours = report.stderr.split('\n').filter((l) => l.startsWith(' '));
      const theirs = fetched.stderr.split('\n').filter((l) => l.startsWith(' '));
      expect(ours.sort()).toEqual(theirs.sort());
      expect(report.stderr).toContain(`From ${file}\n`);
      // Nothing is unreachable: git gc --prune=now removes nothing.
      const before = objectSet(target);
      gitOk(['gc', '-q', '--prune=now'], { cwd: target });
      expect(objectSet(target)).toEqual(before);
      expect(reachable(target)).toEqual(reachable(src));
      expect(fsckStrict(target).status).toBe(0);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a ref that differs is left alone (exit 1, reported) unless --force; equal refs are up to date', () => {
    const src = fixturePath('basic');
    const dir = tmpDir();
    try {
      const file = exportOf(src, dir);
      const repo = useFixtureCopy('basic');
      const main = gitOk(['rev-parse', 'refs/heads/main'], { cwd: repo }).trim();
      const older = gitOk(['rev-parse', 'refs/heads/main~3'], { cwd: repo }).trim();
      const v01 = gitOk(['rev-parse', 'refs/tags/v0.1'], { cwd: repo }).trim();
      gitOk(['update-ref', 'refs/heads/main', older], { cwd: repo });
      gitOk(['update-ref', 'refs/tags/v0.1', older], { cwd: repo });
      gitOk(['update-ref', '-d', 'refs/tags/light'], { cwd: repo });
      const r = tool(['zstd-import', file], { cwd: repo });
      expect(r.status, r.stderr).toBe(1);
      expect(r.stderr).toContain(
        ' ! [rejected]        main       -> main  (would clobber existing ref)\n',
      );
      expect(r.stderr).toContain(
        ' ! [rejected]        v0.1       -> v0.1  (would clobber existing tag)\n',
      );
      expect(r.stderr).toContain(' * [new tag]         light      -> light\n');
      expect(gitOk(['rev-parse', 'refs/heads/main', 'refs/tags/v0.1'], { cwd: repo })).toBe(
        `${older}\n${older}\n`,
      );
      const f = tool(['zstd-import', '--force', file], { cwd: repo });
      expect(f.status, f.stderr).toBe(0);
      expect(f.stderr).toContain(
        ` + ${older.slice(0, 7)}...${main.slice(0, 7)} main       -> main  (forced update)\n`,
      );
      expect(f.stderr).toContain(' t [tag update]      v0.1       -> v0.1\n');
      expect(refList(repo)).toBe(refList(src));
      expect(gitOk(['rev-parse', 'refs/tags/v0.1'], { cwd: repo }).trim()).toBe(v01);
      // Everything as it is now: nothing to say, exit 0.
      const again = tool(['zstd-import', file], { cwd: repo });
      expect(again.status).toBe(0);
      expect(again.stderr).toBe('');
      // the reflog says who moved the branch
      expect(gitOk(['reflog', '-1', '--format=%gs', 'refs/heads/main'], { cwd: repo })).toBe(
        `zstd-import: ${file}\n`,
      );
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('untrusted refs: names git refuses, missing objects, a branch that is no commit, D/F clashes and repeats are refused one by one; HEAD set to the branch clone would pick', () => {
    const dir = tmpDir();
    try {
      const blob = Buffer.from('content\n');
      const tree = Buffer.concat([Buffer.from('100644 f\0'), objectId(OBJ.blob, blob, 'sha1')]);
      const commit = Buffer.from(
        `tree ${objectId(OBJ.tree, tree, 'sha1').toString('hex')}\nauthor A <a@b> 1700000000 +0000\ncommitter A <a@b> 1700000000 +0000\n\nc\n`,
      );
      const c = objectId(OBJ.commit, commit, 'sha1').toString('hex');
      const b = objectId(OBJ.blob, blob, 'sha1').toString('hex');
      const names = [
        'refs/heads/ok',
        'refs/heads/a..b',
        'refs/heads/x.lock',
        'refs/heads/sp ace',
        'refs/heads/ctl\u0001',
        'refs/heads/.hidden',
        '../../config',
        'HEAD',
        'refs/heads/ok/deeper',
        'refs/tags/t@{1}',
        'refs/heads/tail/',
        'refs//heads/double',
        'refs/heads/star*',
      ];
      const refs =
        `${c} HEAD\n` +
        names.map((n) => `${c} ${n}\n`).join('') +
        `${fakeId('gone', 'sha1').toString('hex')} refs/heads/missing\n${b} refs/heads/blob\n${b} refs/tags/blob-ok\n${c} refs/heads/ok\nnot-an-id refs/heads/junk\n`;
      const file = path.join(dir, 'hostile.zpack');
      fs.writeFileSync(
        file,
        forgeZpack(
          [
            { type: OBJ.blob, data: blob },
            { type: OBJ.tree, data: tree },
            { type: OBJ.commit, data: commit },
          ],
          'sha1',
          { refs },
        ),
      );
      const target = path.join(dir, 't');
      gitOk(['init', '-q', '--bare', target]);
      const r = tool(['zstd-import', '--no-fsck', file], { cwd: target });
      expect(r.status, r.stderr).toBe(1);
      // git's check-ref-format is the oracle for which names are acceptable.
      const accepted = names.filter(
        (n) => n.startsWith('refs/') && git(['check-ref-format', n]).status === 0,
      );
      expect(accepted).toEqual(['refs/heads/ok', 'refs/heads/ok/deeper']);
      expect(
        names.filter((n) => isValidRefname(n) !== (git(['check-ref-format', n]).status === 0)),
      ).toEqual([]);
      expect(refList(target)).toBe(`${c} refs/heads/ok\n${b} refs/tags/blob-ok\n`);
      for (const n of names.filter((x) => !accepted.includes(x))) {
        expect(r.stderr).toContain(
          `error: * Ignoring funny ref '${JSON.stringify(n).slice(1, -1)}' locally\n`,
        );
      }
      expect(r.stderr).toContain('(missing object)');
      expect(r.stderr).toContain('-> blob  (not a commit)');
      expect(r.stderr).toContain('-> ok/deeper  (unable to update local ref)');
      expect(r.stderr).toContain('-> ok  (listed twice)');
      // HEAD: master is unborn, no branch of the zpack is "master": clone would take 'ok' (HEAD's id).
      expect(gitOk(['symbolic-ref', 'HEAD'], { cwd: target })).toBe('refs/heads/ok\n');
      expect(r.stderr).toContain('HEAD is now refs/heads/ok\n');
      expect(fs.readdirSync(target).filter((f) => f === 'config.lock' || f.includes('..'))).toEqual(
        [],
      );
      expect(fsckStrict(target).status).toBe(0);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a detached HEAD no branch holds: detached at the same commit, so its objects stay reachable; a HEAD with commits is never moved', () => {
    const repo = useFixtureCopy('basic');
    const dir = tmpDir();
    try {
      const tip = gitOk(['commit-tree', '-p', 'HEAD', '-m', 'only HEAD has me', 'HEAD^{tree}'], {
        cwd: repo,
      }).trim();
      gitOk(['update-ref', '--no-deref', 'HEAD', tip], { cwd: repo });
      const file = exportOf(repo, dir);
      const target = path.join(dir, 't');
      gitOk(['init', '-q', '--bare', target]);
      const r = tool(['zstd-import', file], { cwd: target });
      expect(r.status, r.stderr).toBe(0);
      expect(r.stderr).toContain(`HEAD is now detached at ${tip.slice(0, 7)}\n`);
      expect(fs.readFileSync(path.join(target, 'HEAD'), 'utf8')).toBe(`${tip}\n`);
      gitOk(['gc', '-q', '--prune=now'], { cwd: target });
      expect(gitOk(['cat-file', '-t', tip], { cwd: target })).toBe('commit\n');
      // The source's own HEAD (detached, with commits) is not moved by importing there again.
      const { objects, refs, head } = repoState(repo);
      const again = tool(['zstd-import', file], { cwd: repo });
      expect(again.status, again.stderr).toBe(0);
      expect(repoState(repo)).toMatchObject({ objects, refs, head });
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('zstd-import and another writer', () => {
  it('a ref created by someone else once the import has planned: git refuses the transaction, fatal 128, no ref of the zpack set; the next import reports it', async () => {
    const src = fixturePath('basic');
    const dir = tmpDir();
    try {
      const file = exportOf(src, dir);
      const target = path.join(dir, 't');
      gitOk(['init', '-q', '--bare', target]);
      const run = await runUntil(['zstd-import', file], target, 'phase:refs');
      let r: Awaited<typeof run.done>;
      try {
        expect(run.stopped).toBe(true);
        const other = gitOk(['rev-parse', 'refs/heads/main~2'], { cwd: src }).trim();
        gitOk(['update-ref', 'refs/heads/main', other], { cwd: target }); // the objects are installed by now
      } finally {
        run.resume();
        r = await run.done;
      }
      expect(r.status, r.stderr).toBe(128);
      expect(r.stderr).toMatch(
        /^fatal: .*all\.zpack: git did not set the refs \(.*refs\/heads\/main.*\); no ref was changed, the objects are installed: run the import again\n$/s,
      );
      const main = gitOk(['rev-parse', 'refs/heads/main~2'], { cwd: src }).trim();
      expect(refList(target)).toBe(`${main} refs/heads/main\n`);
      const again = tool(['zstd-import', file], { cwd: target });
      expect(again.status).toBe(1);
      expect(again.stderr).toMatch(
        /^ ! \[rejected\] {8}main +-> main {2}\(would clobber existing ref\)$/m,
      );
      // HEAD's branch was not set: HEAD is detached at the zpack's HEAD, which stays reachable.
      expect(again.stderr).toContain(
        `HEAD is now detached at ${gitOk(['rev-parse', 'HEAD'], { cwd: src }).slice(0, 7)}\n`,
      );
      expect(refList(target)).toBe(
        refList(src).replace(/^\S+ refs\/heads\/main$/m, `${main} refs/heads/main`),
      );
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('refname rules (git check-ref-format is the oracle)', () => {
  it('accepts and refuses exactly what git does', () => {
    const cases = [
      'refs/heads/main',
      'heads/foo',
      'foo',
      'foo/bar/baz',
      'refs///heads/foo',
      'heads/foo/',
      './foo',
      '.refs/foo',
      'heads/foo..bar',
      'heads/foo?bar',
      'foo./bar',
      'heads/foo.lock',
      'heads/foo@bar',
      'heads/v@{ation',
      'heads/foo\\bar',
      'heads/foo\tbar',
      'heads/foo\u007f',
      '@',
      'refs/heads/@',
      'refs/heads/é',
      'refs/tags/v1.0',
      'refs/a.',
      'refs/a/.b',
      'refs/a/b.lock/c',
      'refs/heads/{x}',
      'refs/heads/~x',
      'refs/heads/^x',
      'refs/heads/x:y',
      'refs/heads/[x',
    ];
    for (const n of cases)
      expect(isValidRefname(n), n).toBe(git(['check-ref-format', n]).status === 0);
  });
});
