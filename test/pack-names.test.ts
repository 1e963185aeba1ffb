/**
 * git reads every `<name>.idx` beside a `<name>.pack` in objects/pack, whatever the name
 * (packfile.c: prepare_pack, add_packed_git): a name that is not valid UTF-8, a `.tmp-*` pack a
 * killed `git repack` left. Every command of ours must see the same packs git sees.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { countObjects, fsckStrict, gitOk, listPacks, objectSet, packDirOf } from './helpers/git.js';
import { expectGitIndexes } from './helpers/git-indexes.js';
import { RepoBuilder } from './helpers/repo.js';
import { tool, toolOk } from './helpers/tool.js';

/** objects/pack entries as bytes (a name that is not UTF-8 kept as it is). */
function packDirBytes(repo: string): Buffer[] {
  return fs.readdirSync(packDirOf(repo), { encoding: 'buffer' }).sort(Buffer.compare);
}

/** `<pack dir>/<name><ext>` as bytes. */
function bytePath(repo: string, name: Buffer, ext: string): Buffer {
  return Buffer.concat([Buffer.from(packDirOf(repo) + '/'), name, Buffer.from(ext)]);
}

/** A name with byte 0xff (not UTF-8). */
const ODD = Buffer.from('pack-\xff', 'latin1');

/**
 * Three packs (with `.rev`s) and nothing loose, the second renamed to `pack-\xff` (the only copy
 * of its objects); then what a `git repack -a -d` killed before its renames leaves: pack-objects'
 * pack of everything, as `.tmp-4242-pack-<hash>`.
 */
function repoWithOddNames(): { repo: string; odd: Buffer[] } {
  const repo = fs.mkdtempSync(path.join(os.tmpdir(), 'rts-names-'));
  onTestFinished(() => fs.rmSync(repo, { recursive: true, force: true }));
  const r = RepoBuilder.init(repo);
  r.config('pack.writeReverseIndex', 'true');
  const packs: string[] = [];
  for (let step = 0; step < 3; step++) {
    for (let c = 0; c < 4; c++) {
      r.write(`d${c}/f`, `step ${step} commit ${c}\n`.repeat(20));
      r.commit(`step ${step} commit ${c}`);
    }
    packs.push(...r.repackNew(step === 0 ? ['-a', '-d'] : ['-d']));
  }
  expect(packs.length).toBe(3);
  const before = objectSet(repo);
  const base = packs[1]!.slice(0, -5);
  for (const ext of ['.pack', '.rev', '.idx']) fs.renameSync(base + ext, bytePath(repo, ODD, ext));
  const hash = r
    .git(
      [
        '-c',
        'pack.threads=1',
        'pack-objects',
        '--all',
        '--reflog',
        '--indexed-objects',
        '-q',
        path.join(packDirOf(repo), '.tmp-4242-pack'),
      ],
      { input: '' },
    )
    .trim();
  // git still reads them all: the same objects, in four packs.
  expect(objectSet(repo)).toEqual(before);
  expect(countObjects(repo)).toMatchObject({ count: 0, packs: 4, garbage: 0 });
  return { repo, odd: [ODD, Buffer.from(`.tmp-4242-pack-${hash}`)] };
}

describe('packs under any name: seen as git sees them', () => {
  it('inspect, verify and walk count the objects of every pack git counts', () => {
    const { repo } = repoWithOddNames();
    const git = countObjects(repo);
    const census = JSON.parse(toolOk(['inspect', '--json'], { cwd: repo }));
    expect({ packs: census.packs.length, objects: census.total.objects }).toEqual({
      packs: git.packs,
      objects: git.inPack,
    });
    expect(census.packs.map((p: { pack: string }) => path.basename(p.pack)).sort()).toEqual([
      expect.stringMatching(/^\.tmp-4242-pack-[0-9a-f]{40}\.pack$/),
      expect.stringMatching(/^pack-[0-9a-f]{40}\.pack$/),
      expect.stringMatching(/^pack-[0-9a-f]{40}\.pack$/),
      'pack-\ufffd.pack',
    ]);
    const v = JSON.parse(toolOk(['verify', '--json'], { cwd: repo }));
    expect(v.ok).toBe(true);
    expect(v.packs.reduce((n: number, p: { objects: number }) => n + p.objects, 0)).toBe(
      git.inPack,
    );
    // rev-list --objects --all names every object here: nothing is missing for git or for us.
    const listed = gitOk(['rev-list', '--objects', '--all'], { cwd: repo })
      .split('\n')
      .filter(Boolean).length;
    const w = JSON.parse(toolOk(['walk', '--json'], { cwd: repo }));
    expect({ named: w.commits + w.trees + w.blobs + w.tags, missing: w.missing }).toEqual({
      named: listed,
      missing: 0,
    });
  });

  it('the rewrite (checked by git fsck) leaves them as they are, says so, and relies on none of them; again from its own result', () => {
    const { repo, odd } = repoWithOddNames();
    const before = objectSet(repo);
    const bytes = odd.map((n) => fs.readFileSync(bytePath(repo, n, '.pack')));
    for (let run = 0; run < 2; run++) {
      const r = tool(['--json', '--graph-compression=0', '--fsck=full'], { cwd: repo });
      expect(r.status).toBe(0);
      const out = JSON.parse(r.stdout);
      expect(out.keptPacks.sort()).toEqual([
        expect.stringMatching(/^\.tmp-4242-pack-[0-9a-f]{40}$/),
        'pack-\ufffd',
      ]);
      for (const n of ['.tmp-4242-pack-', 'pack-\ufffd'])
        expect(r.stderr).toMatch(
          new RegExp(
            `/${n.replace('.', '\\.')}[0-9a-f]*\\.pack: not named pack-<checksum> or loose-<checksum>; left as it is; nothing the rewrite removes relies on it\n`,
          ),
        );
      expect(objectSet(repo)).toEqual(before);
      expect(fsckStrict(repo)).toEqual({ status: 0, output: '' });
      odd.forEach((n, i) =>
        expect(fs.readFileSync(bytePath(repo, n, '.pack')).equals(bytes[i]!)).toBe(true),
      );
      expect(countObjects(repo)).toMatchObject({ count: 0, packs: 3, garbage: 0 });
      const ours = listPacks(repo).filter((p) => /\/pack-[0-9a-f]{40}\.pack$/.test(p));
      expect(ours.length).toBe(1);
      expectGitIndexes(repo, ours[0]!);
    }
    expect(
      packDirBytes(repo)
        .filter((n) => n.includes(0xff))
        .map((n) => n.toString('latin1')),
    ).toEqual(['pack-\xff.idx', 'pack-\xff.pack', 'pack-\xff.rev']);
    // The killed repack's leftover, deleted as git repack would delete it: nothing is lost.
    for (const ext of ['.pack', '.idx', '.rev'])
      fs.rmSync(bytePath(repo, odd[1]!, ext), { force: true });
    expect(objectSet(repo)).toEqual(before);
    expect(fsckStrict(repo)).toEqual({ status: 0, output: '' });
  });
});
