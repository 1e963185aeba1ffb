import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  TREE_ENTRY_GITLINK,
  TREE_ENTRY_TREE,
  committerTime,
  forEachCommitLink,
  forEachTreeEntry,
  hexInto,
} from '../src/format/object-parse.js';
import { gitOk, gitOkBuffer, lines } from './helpers/git.js';
import { RepoBuilder } from './helpers/repo.js';

/**
 * The one commit and tree parser (the walk and the reader benchmark): what it reads out of raw
 * objects must be what git reads out of them (`git log --format`, `git ls-tree`).
 */

let dir: string;
let r: RepoBuilder;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'rts-object-parse-'));
  r = RepoBuilder.init(join(dir, 'repo'), { tick: 3_000 });
  r.write('a.txt', 'a\n');
  r.write('dir/b.txt', 'b\n');
  r.write('dir/sub/c.txt', 'c\n');
  r.write('run.sh', '#!/bin/sh\n', 0o755);
  r.symlink('link', 'a.txt');
  r.write('name with spaces and ünïcode', 'u\n');
  r.commit('first');
  r.branch('side');
  r.write('a.txt', 'a2\n');
  r.commit('second');
  r.checkout('side');
  r.write('side.txt', 's\n');
  r.commit('side');
  r.checkout('main');
  r.merge('side', 'merge side');
  // A gitlink (a submodule's commit) in the tree, as git writes it.
  const sub = r.revParse('HEAD~1');
  r.advance();
  r.git(['update-index', '--add', '--cacheinfo', `160000,${sub},vendor/mod`]);
  r.git(['commit', '-q', '--no-verify', '-m', 'gitlink']);
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('format/object-parse: commits and trees read as git reads them', () => {
  it('every commit: its tree, its parents in order and its committer time', () => {
    const repo = r.path('.');
    for (const c of lines(gitOk(['rev-list', '--all'], { cwd: repo }))) {
      const raw = gitOkBuffer(['cat-file', 'commit', c], { cwd: repo });
      const links: string[] = [];
      forEachCommitLink(raw, (isTree, at) => {
        const id = Buffer.alloc(20);
        expect(hexInto(raw, at, id, 20)).toBe(true);
        links.push(`${isTree ? 'tree' : 'parent'} ${id.toString('hex')}`);
      });
      const [tree, parents, time] = gitOk(['log', '-1', '--format=%T%n%P%n%ct', c], {
        cwd: repo,
      }).split('\n');
      const want = [
        `tree ${tree}`,
        ...parents!
          .split(' ')
          .filter((p) => p !== '')
          .map((p) => `parent ${p}`),
      ];
      expect(links).toEqual(want);
      expect(committerTime(raw)).toBe(Number(time));
    }
  });

  it('every tree: names, ids and kinds (tree, blob, gitlink) in order', () => {
    const repo = r.path('.');
    const trees = lines(gitOk(['rev-list', '--all', '--objects'], { cwd: repo }))
      .map((l) => l.split(' ')[0]!)
      .filter((id) => gitOk(['cat-file', '-t', id], { cwd: repo }).trim() === 'tree');
    expect(trees.length).toBeGreaterThan(4);
    let gitlinks = 0;
    for (const t of trees) {
      const raw = gitOkBuffer(['cat-file', 'tree', t], { cwd: repo });
      const got: string[] = [];
      const bad = forEachTreeEntry(raw, 20, (s, e, at, kind) => {
        const type =
          kind === TREE_ENTRY_TREE ? 'tree' : kind === TREE_ENTRY_GITLINK ? 'commit' : 'blob';
        if (kind === TREE_ENTRY_GITLINK) gitlinks++;
        got.push(
          `${type} ${raw.subarray(at, at + 20).toString('hex')}\t${raw.subarray(s, e).toString('utf8')}`,
        );
      });
      expect(bad).toBe(-1);
      const want = lines(gitOk(['-c', 'core.quotePath=false', 'ls-tree', t], { cwd: repo })).map(
        (l) => l.replace(/^\d+ /, ''),
      );
      expect(got).toEqual(want);
    }
    expect(gitlinks).toBeGreaterThan(0);
  });

  it('a truncated tree stops at the entry that is cut, and says where', () => {
    const repo = r.path('.');
    const raw = gitOkBuffer(['cat-file', 'tree', 'HEAD^{tree}'], { cwd: repo });
    const firstLen = raw.indexOf(0) + 1 + 20;
    const seen: number[] = [];
    expect(forEachTreeEntry(raw.subarray(0, firstLen + 5), 20, (s) => seen.push(s))).toBe(firstLen);
    expect(seen).toHaveLength(1);
  });
});
