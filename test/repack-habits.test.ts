/**
 * git repack's habits (issue 31): `git repack-ts -a -d`, `-adq`, `-l` are what a git user types
 * first. Each is compared with `git repack` run with the same options on a second copy of the
 * same repository: both succeed, both leave one pack holding every object that was there.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { useFixtureCopy } from './helpers/fixture-copy.js';
import { fsckStrict, git, gitOk, listPacks, objectSet, packDirOf } from './helpers/git.js';
import { tool } from './helpers/tool.js';

/** Every object, and how many packs and loose objects hold them. */
function state(repo: string): { objects: string[]; packs: number; loose: number } {
  const loose = gitOk(['count-objects', '-v'], { cwd: repo }).match(/^count: (\d+)$/m)![1]!;
  return { objects: objectSet(repo), packs: listPacks(repo).length, loose: Number(loose) };
}

describe("git repack's options, as a git user types them", () => {
  it.each([
    [['-a', '-d']],
    [['-adq']],
    [['-adl']],
    [['-a', '-d', '-l', '-q']],
    [['-A', '-d']],
    [['-adk']],
  ])(
    '%j: accepted, one pack of every object, like git repack with the same options',
    (opts) => {
      const ours = useFixtureCopy('multi-pack');
      const theirs = useFixtureCopy('multi-pack');
      const before = objectSet(ours);
      // git's -a -d drops what is unreachable; -A loosens it; -k keeps it: each pack holds what is reachable at least.
      const g = git(['repack', ...opts], { cwd: theirs });
      expect(g.status, g.stderr).toBe(0);
      const r = tool([...opts, '--graph-compression=0'], { cwd: ours });
      expect({ status: r.status, stderr: r.stderr }).toEqual({ status: 0, stderr: '' });
      const s = state(ours);
      expect(s.packs).toBe(state(theirs).packs);
      expect(s.packs).toBe(1);
      expect(s.loose).toBe(0);
      // Nothing dropped: every object that was there (git's, a subset, included).
      expect(s.objects).toEqual(before);
      for (const id of state(theirs).objects) expect(s.objects).toContain(id);
      expect(fsckStrict(ours).status).toBe(0);
    },
    60_000,
  );

  it.each([
    [
      ['-adf'],
      /^error: -f: git repack-ts searches for no deltas, it keeps every one as it is; for a new delta search run 'git repack -a -d -f', then git repack-ts\n$/,
    ],
    [
      ['-a', '-d', '-F'],
      /^error: -F: git repack-ts keeps every delta and re-deflates what its levels change \(--compression=<n>: every entry\); for a new delta search run 'git repack -a -d -F', then git repack-ts\n$/,
    ],
    [
      ['--window=50'],
      /^error: --window: .* run 'git repack -a -d -f --window=<n>', then git repack-ts\n$/,
    ],
    [
      ['--depth', '20'],
      /^error: --depth: .* run 'git repack -a -d -f --depth=<n>', then git repack-ts\n$/,
    ],
    [['--window-memory=1g'], /^error: --window-memory: .*\n$/],
  ])(
    '%j (which git repack takes): one line saying what we do instead, exit 129, nothing touched',
    (opts, line) => {
      const repo = useFixtureCopy('basic');
      const before = state(repo);
      // git takes the option (here on a copy): ours is a refusal, not an unknown switch.
      const theirs = useFixtureCopy('basic');
      expect(git(['repack', ...opts], { cwd: theirs }).status).toBe(0);
      const r = tool([...opts, '--graph-compression=0'], { cwd: repo });
      expect(r.status).toBe(129);
      expect(r.stderr).toMatch(line);
      expect(r.stdout).toBe('');
      expect(state(repo)).toEqual(before);
    },
  );

  it.each([[['-adb']], [['-a', '-d', '--write-bitmap-index']]])(
    '%j: a reachability bitmap, as git repack writes one, that git checks',
    (opts) => {
      const ours = useFixtureCopy('multi-pack');
      const theirs = useFixtureCopy('multi-pack');
      const before = objectSet(ours);
      expect(git(['repack', ...opts], { cwd: theirs }).status).toBe(0);
      const r = tool([...opts, '--graph-compression=0'], { cwd: ours });
      expect({ status: r.status, stderr: r.stderr }).toEqual({ status: 0, stderr: '' });
      const bitmaps = (repo: string): string[] =>
        fs.readdirSync(packDirOf(repo)).filter((n) => path.extname(n) === '.bitmap');
      expect(bitmaps(theirs)).toHaveLength(1);
      expect(bitmaps(ours)).toHaveLength(1);
      expect(git(['rev-list', '--test-bitmap', 'HEAD'], { cwd: ours }).status).toBe(0);
      expect(objectSet(ours)).toEqual(before);
      expect(fsckStrict(ours).status).toBe(0);
    },
  );

  it("an option git repack does not know either: git's parse-options error, exit 129", () => {
    const repo = useFixtureCopy('basic');
    for (const opts of [['-adx'], ['--frobnicate']]) {
      const g = git(['repack', ...opts], { cwd: repo });
      const r = tool(opts, { cwd: repo });
      expect(r.status).toBe(g.status);
      // The first line is git's own, word for word; the usage that follows is ours.
      expect(r.stderr.split('\n')[0]).toBe(g.stderr.split('\n')[0]);
    }
    // Ambiguous in both now (--keep-unreachable, --keep-pack), each naming them in its own declaration order.
    const g = git(['repack', '--keep'], { cwd: repo });
    const r = tool(['--keep'], { cwd: repo });
    expect(r.status).toBe(g.status);
    const both =
      /^error: ambiguous option: keep \(could be --keep-(unreachable|pack) or --keep-(unreachable|pack)\)\n/;
    expect(g.stderr).toMatch(both);
    expect(r.stderr).toMatch(both);
  });
});
