/**
 * A loose object of a type git does not know (`git hash-object --literally -t foo -w`): no pack
 * can hold it, `git repack -a -d` leaves it loose (nothing can reach it), and so does the rewrite.
 * git's own oracles refuse such a repository (`cat-file --batch-all-objects` and `fsck` die on
 * the object), so they look at everything else with the file set aside for a moment.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { countObjects, fsckStrict, gitDirOf, gitOk, objectSet } from './helpers/git.js';
import { RepoBuilder } from './helpers/repo.js';
import { tool, toolOk } from './helpers/tool.js';

function tmpDir(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rts-unknown-'));
  onTestFinished(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** A pack, loose commits after it, and one loose object of type `foo`. */
function repoWithUnknownType(dir: string): { id: string; file: string } {
  const r = RepoBuilder.init(dir);
  for (let c = 0; c < 6; c++) {
    r.write(`f${c % 3}`, `content ${c}\n`);
    r.commit(`commit ${c}`);
    if (c === 2) r.repack(['-a', '-d']);
  }
  const id = r
    .git(['hash-object', '-t', 'foo', '--literally', '-w', '--stdin'], {
      input: 'not a git type\n',
    })
    .trim();
  return { id, file: path.join(gitDirOf(dir), 'objects', id.slice(0, 2), id.slice(2)) };
}

/** git's object set and fsck of everything but the file, which is put back as it was. */
function withoutIt(
  repo: string,
  file: string,
): { objects: string[]; fsck: { status: number; output: string } } {
  const aside = path.join(path.dirname(path.dirname(file)), 'aside');
  fs.renameSync(file, aside);
  try {
    return { objects: objectSet(repo), fsck: fsckStrict(repo) };
  } finally {
    fs.renameSync(aside, file);
  }
}

/** Loose object files, as paths under objects/. */
function looseFiles(repo: string): string[] {
  const objects = path.join(gitDirOf(repo), 'objects');
  return fs
    .readdirSync(objects)
    .filter((d) => /^[0-9a-f]{2}$/.test(d))
    .flatMap((d) => fs.readdirSync(path.join(objects, d)).map((f) => `${d}/${f}`))
    .sort();
}

/** inspect, verify and walk read the repository (whose loose objects they count or do not read). */
function expectReadable(repo: string): void {
  expect(JSON.parse(toolOk(['inspect', '--json'], { cwd: repo })).loose).toBe(
    countObjects(repo).count,
  );
  expect(JSON.parse(toolOk(['verify', '--json'], { cwd: repo })).ok).toBe(true);
  const listed = gitOk(['rev-list', '--objects', '--all'], { cwd: repo })
    .split('\n')
    .filter(Boolean).length;
  const w = JSON.parse(toolOk(['walk', '--json'], { cwd: repo }));
  expect({ named: w.commits + w.trees + w.blobs + w.tags, missing: w.missing }).toEqual({
    named: listed,
    missing: 0,
  });
}

describe('a loose object of a type no pack can hold', () => {
  it('stays loose and untouched, as git repack -a -d leaves it; everything else is packed, checked by git; again from our own result; inspect, verify and walk read it all', () => {
    const repo = tmpDir();
    const { id, file } = repoWithUnknownType(repo);
    const bytes = fs.readFileSync(file);
    const before = withoutIt(repo, file);
    expect(before.fsck).toEqual({ status: 0, output: '' });
    expect(countObjects(repo).count).toBeGreaterThan(1);
    expectReadable(repo);
    // What git repack -a -d leaves loose, on a copy.
    const copy = path.join(tmpDir(), 'copy');
    fs.cpSync(repo, copy, { recursive: true });
    gitOk(['-c', 'pack.threads=1', 'repack', '-a', '-d', '-q'], { cwd: copy });
    expect(looseFiles(copy)).toEqual([`${id.slice(0, 2)}/${id.slice(2)}`]);
    for (let run = 0; run < 2; run++) {
      const r = tool(['--json', '--graph-compression=0'], { cwd: repo });
      expect(r.status).toBe(0);
      expect(JSON.parse(r.stdout).looseLeft).toEqual([file]);
      expect(r.stderr).toContain(
        `warning: ${file}: loose object of unknown type 'foo' left as it is (no pack can hold it)\n`,
      );
      expect(fs.readFileSync(file).equals(bytes)).toBe(true);
      expect(gitOk(['cat-file', '-t', '--allow-unknown-type', id], { cwd: repo })).toBe('foo\n');
      expect(looseFiles(repo)).toEqual(looseFiles(copy));
      expect(withoutIt(repo, file)).toEqual(before);
      expectReadable(repo);
    }
  });
});
