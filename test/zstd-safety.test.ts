/**
 * Issue 30, the zstd paths: a zstd pack is untrusted input. Every object it brings is hashed
 * before anything is installed, whatever the fsck mode; the rewrite never keeps an unproven copy
 * of an id two sources hold. The hostile files are built by hand (helpers/zpack-forge.ts,
 * helpers/forge.ts) or with git; what the repository holds before and after is git's word.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { useFixtureCopy } from './helpers/fixture-copy.js';
import { fsckStrict, gitOk, listPacks, objectSet } from './helpers/git.js';
import { OBJ, copyOp, delta, fakeId, forge, insertOp, objectId } from './helpers/forge.js';
import { forgeZpack } from './helpers/zpack-forge.js';
import { tool } from './helpers/tool.js';
import { repoState } from './helpers/repo-state.js';

function tmpDir(): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'rts-zsafe-'));
  return d;
}

const catBlob = (repo: string, id: string): string => gitOk(['cat-file', '-p', id], { cwd: repo });

describe('zstd-import hashes every object it installs, whatever the fsck mode', () => {
  it('a zpack claiming the id of an existing blob with other content: fatal 128, nothing installed (each fsck mode)', () => {
    const repo = useFixtureCopy('basic');
    const dir = tmpDir();
    try {
      const id = gitOk(['rev-parse', 'HEAD:README.md'], { cwd: repo }).trim();
      const genuine = catBlob(repo, id);
      const file = path.join(dir, 'forged.zpack');
      const forged = Buffer.from('forged content\n');
      fs.writeFileSync(
        file,
        forgeZpack([{ type: OBJ.blob, data: forged, id: Buffer.from(id, 'hex') }], 'sha1'),
      );
      const before = repoState(repo);
      for (const mode of ['--no-fsck', '--fsck=connectivity', '--fsck=full']) {
        const r = tool(['zstd-import', mode, file], { cwd: repo });
        expect(r.status, `${mode}: ${r.stderr}`).toBe(128);
        expect(r.stderr).toMatch(/^fatal: /);
        expect(r.stderr).toContain(id);
        expect(r.stdout).toBe('');
        expect(repoState(repo)).toEqual(before);
        expect(catBlob(repo, id)).toBe(genuine);
      }
      // Ours names the zpack and the entry's offset there (git fsck's message is git's).
      const r = tool(['zstd-import', '--no-fsck', file], { cwd: repo });
      expect(r.stderr).toMatch(
        new RegExp(
          `^fatal: ${file.replace(/[.]/g, '\\.')}: object ${id} at offset \\d+ hashes to ${objectId(OBJ.blob, forged, 'sha1').toString('hex')}; nothing was installed\n$`,
        ),
      );
      expect(fsckStrict(repo).status).toBe(0);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a delta whose result is not its id (its base genuine and new): fatal 128 under --no-fsck, nothing installed', () => {
    const repo = useFixtureCopy('basic');
    const dir = tmpDir();
    try {
      const target = gitOk(['rev-parse', 'HEAD:README.md'], { cwd: repo }).trim();
      const base = Buffer.from(
        'a base blob that no repository has yet, long enough to copy from\n',
      );
      const ops = [copyOp(0, 20), insertOp(Buffer.from('and then something else\n'))];
      const file = path.join(dir, 'delta.zpack');
      fs.writeFileSync(
        file,
        forgeZpack(
          [
            { type: OBJ.blob, data: base },
            {
              type: OBJ.ofs,
              data: delta(base.length, 20 + 24, ops),
              ofsBase: 0,
              id: Buffer.from(target, 'hex'),
            },
          ],
          'sha1',
        ),
      );
      const before = repoState(repo);
      const r = tool(['zstd-import', '--no-fsck', file], { cwd: repo });
      expect(r.status, r.stderr).toBe(128);
      expect(r.stderr).toMatch(
        new RegExp(
          `^fatal: .*delta\\.zpack: object ${target} at offset \\d+ hashes to [0-9a-f]{40}; nothing was installed\n$`,
        ),
      );
      expect(repoState(repo)).toEqual(before);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

/** Installs a hand-made pack into `repo`, newer than every pack there (so it is listed first). */
function installForged(
  repo: string,
  f: { pack: Buffer; idx: Buffer; name: string },
  ageSeconds = -60,
): string {
  const dir = path.join(
    gitOk(['rev-parse', '--absolute-git-dir'], { cwd: repo }).trim(),
    'objects',
    'pack',
  );
  const base = path.join(dir, f.name);
  fs.writeFileSync(base + '.pack', f.pack);
  fs.writeFileSync(base + '.idx', f.idx);
  const t = Date.now() / 1000 - ageSeconds;
  for (const e of ['.pack', '.idx']) fs.utimesSync(base + e, t, t);
  return base;
}

describe('the rewrite keeps only a copy it has proven when two sources hold the same id', () => {
  it('a forged copy in the newest pack, the genuine one in an older pack: the genuine content survives, a delta on the forged copy is kept whole', () => {
    const repo = useFixtureCopy('basic');
    const id = gitOk(['rev-parse', 'HEAD:README.md'], { cwd: repo }).trim();
    const genuine = catBlob(repo, id);
    const before = repoState(repo);
    // The forged copy, and a new object stored as a delta against it (it hashes right only there).
    const forged = Buffer.from('forged content, long enough for a delta to copy from\n');
    const result = Buffer.concat([forged.subarray(0, 30), Buffer.from('and its own tail\n')]);
    const dependent = objectId(OBJ.blob, result, 'sha1');
    const f = forge(
      [
        { type: OBJ.blob, data: forged },
        {
          type: OBJ.ofs,
          data: delta(forged.length, result.length, [
            copyOp(0, 30),
            insertOp(Buffer.from('and its own tail\n')),
          ]),
          ofsBase: 0,
        },
      ],
      [Buffer.from(id, 'hex'), dependent],
      'sha1',
    );
    installForged(repo, f);
    expect(catBlob(repo, id)).not.toBe(genuine); // git reads the forged copy first
    const r = tool(['-q', '--graph-compression=0'], { cwd: repo });
    expect(r.status, r.stderr).toBe(0);
    expect(catBlob(repo, id)).toBe(genuine);
    expect(gitOk(['cat-file', '-p', dependent.toString('hex')], { cwd: repo })).toBe(
      result.toString(),
    );
    expect(objectSet(repo)).toEqual(
      [...before.objects, `${dependent.toString('hex')} blob ${result.length}`].sort(),
    );
    expect(fsckStrict(repo).status).toBe(0);
    for (const p of listPacks(repo)) gitOk(['verify-pack', p], { cwd: repo }); // every object hashed by git
  });

  it('every copy forged: fatal 128 naming each file and offset, the repository unchanged', () => {
    const repo = useFixtureCopy('basic');
    const id = fakeId('held twice', 'sha1');
    const a = forge([{ type: OBJ.blob, data: Buffer.from('one lie\n') }], [id], 'sha1');
    const b = forge([{ type: OBJ.blob, data: Buffer.from('another lie\n') }], [id], 'sha1');
    installForged(repo, a, -60);
    installForged(repo, b, -30);
    const before = repoState(repo);
    const r = tool(['-q', '--graph-compression=0'], { cwd: repo });
    expect(r.status, r.stderr).toBe(128);
    expect(r.stderr).toMatch(
      new RegExp(
        `^fatal: object ${id.toString('hex')}: no copy of it hashes to its id \\(.*${a.name}\\.pack at offset 12 hashes to [0-9a-f]{40}; .*${b.name}\\.pack at offset 12 hashes to [0-9a-f]{40}\\); nothing was changed\n$`,
      ),
    );
    expect(repoState(repo)).toEqual(before);
  });

  it('the copy in a kept pack is forged: the genuine copy is packed anew rather than dropped', () => {
    const repo = useFixtureCopy('basic');
    const id = gitOk(['rev-parse', 'HEAD:README.md'], { cwd: repo }).trim();
    const genuine = catBlob(repo, id);
    const kept = installForged(
      repo,
      forge(
        [{ type: OBJ.blob, data: Buffer.from('kept lie\n') }],
        [Buffer.from(id, 'hex')],
        'sha1',
      ),
    );
    fs.writeFileSync(kept + '.keep', '');
    const r = tool(['-q', '--graph-compression=0'], { cwd: repo });
    expect(r.status, r.stderr).toBe(0);
    const fresh = listPacks(repo).filter((p) => !p.startsWith(kept));
    expect(fresh).toHaveLength(1);
    gitOk(['verify-pack', fresh[0]!], { cwd: repo }); // git hashes every object of the new pack
    const ids = gitOk(['show-index'], {
      cwd: repo,
      input: fs.readFileSync(fresh[0]!.replace(/\.pack$/, '.idx')),
    });
    expect(ids).toContain(` ${id} `);
    // Through the new pack alone, git reads the genuine content.
    const solo = tmpDir();
    try {
      gitOk(['init', '-q', '--bare', solo]);
      for (const e of ['.pack', '.idx'])
        fs.copyFileSync(
          fresh[0]!.replace(/\.pack$/, e),
          path.join(solo, 'objects', 'pack', path.basename(fresh[0]!).replace(/\.pack$/, e)),
        );
      expect(catBlob(solo, id)).toBe(genuine);
    } finally {
      fs.rmSync(solo, { recursive: true, force: true });
    }
  });
});

describe('--zstd -o never writes into an object directory or a git directory, links resolved first', () => {
  it('through a link into objects/pack, into another repository, onto its config: refused (129), nothing changed; a link as the file itself is replaced, not followed', () => {
    const repo = useFixtureCopy('basic');
    const other = useFixtureCopy('multi-pack');
    const dir = tmpDir();
    try {
      const gitDir = gitOk(['rev-parse', '--absolute-git-dir'], { cwd: repo }).trim();
      const otherGit = gitOk(['rev-parse', '--absolute-git-dir'], { cwd: other }).trim();
      fs.symlinkSync(path.join(gitDir, 'objects', 'pack'), path.join(dir, 'into-pack'));
      fs.symlinkSync(path.join(otherGit, 'objects'), path.join(dir, 'into-other'));
      fs.symlinkSync(otherGit, path.join(dir, 'other-git'));
      const live = path.basename(listPacks(repo)[0]!);
      const otherPack = path.basename(listPacks(other)[0]!);
      const before = repoState(repo);
      const otherBefore = repoState(other);
      const bytes = fs.readFileSync(path.join(gitDir, 'objects', 'pack', live));
      for (const [target, why] of [
        [path.join(dir, 'into-pack', live), `inside the object directory`],
        [
          path.join(dir, 'into-other', 'pack', otherPack),
          `inside an object directory \\(${otherGit}/objects\\)`,
        ],
        [
          path.join(dir, 'into-other', 'x.zpack'),
          `inside an object directory \\(${otherGit}/objects\\)`,
        ],
        [path.join(dir, 'other-git', 'config'), `inside a git directory \\(${otherGit}\\)`],
        [path.join(gitDir, 'x.zpack'), `inside a git directory \\(${gitDir}\\)`],
      ] as const) {
        const r = tool(['--zstd', '-o', target, '--dict-trainer=js'], { cwd: repo });
        expect(r.status, `${target}: ${r.stderr}`).toBe(129);
        expect(r.stderr).toMatch(new RegExp(`^error: a zstd pack must not be written ${why}`));
      }
      expect(fs.readFileSync(path.join(gitDir, 'objects', 'pack', live)).equals(bytes)).toBe(true);
      expect(repoState(repo)).toEqual(before);
      expect(repoState(other)).toEqual(otherBefore);
      expect(gitOk(['log', '--oneline', '-1'], { cwd: repo })).not.toBe('');
      // A link as the file's own name: the zpack replaces the link, the pack it pointed at stays.
      const named = path.join(dir, 'named.zpack');
      fs.symlinkSync(path.join(gitDir, 'objects', 'pack', live), named);
      const ok = tool(['-q', '--zstd', '-o', named, '--dict-trainer=js'], { cwd: repo });
      expect(ok.status, ok.stderr).toBe(0);
      expect(fs.lstatSync(named).isSymbolicLink()).toBe(false);
      expect(fs.readFileSync(path.join(gitDir, 'objects', 'pack', live)).equals(bytes)).toBe(true);
      expect(fsckStrict(repo).status).toBe(0);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
