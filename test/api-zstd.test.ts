/**
 * The zstd export and import in the library (src/api/zstd.ts): the same results as the command's
 * --json, the same refusals as GitRepackError, git the judge of every repository touched.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { GitRepackError, zstdExport, zstdImport } from '../src/index.js';
import { fixturePath } from './fixtures/index.js';
import { useFixtureCopy } from './helpers/fixture-copy.js';
import { fsckStrict, gitOk, objectSet } from './helpers/git.js';
import { OBJ } from './helpers/forge.js';
import { repoState } from './helpers/repo-state.js';
import { toolOk } from './helpers/tool.js';
import { forgeZpack } from './helpers/zpack-forge.js';

async function rejection(p: Promise<unknown>): Promise<GitRepackError> {
  const e = await p.then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(GitRepackError);
  return e as GitRepackError;
}

function bare(dir: string, name: string): string {
  const p = path.join(dir, name);
  gitOk(['init', '-q', '--bare', p]);
  return p;
}

describe('zstdExport and zstdImport', () => {
  it('resolve to what --json prints, and restore the repository: objects, refs, HEAD', async () => {
    const src = fixturePath('basic');
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'api-zstd-'));
    try {
      const viaApi = path.join(dir, 'api.zpack');
      const viaCli = path.join(dir, 'cli.zpack');
      const progress: string[] = [];
      const e = await zstdExport(src, viaApi, {
        level: 3,
        dictTrainer: 'js',
        graphCompression: 0,
        onProgress: (phase) => progress.push(phase),
      });
      const c = JSON.parse(
        toolOk(['--zstd=3', '--dict-trainer=js', '--graph-compression=0', '-o', viaCli, '--json'], {
          cwd: src,
        }),
      );
      expect({ ...e, path: '' }).toEqual({ ...c, path: '' });
      expect(e.path).toBe(viaApi);
      expect(fs.readFileSync(viaApi).equals(fs.readFileSync(viaCli))).toBe(true);
      expect(progress).toContain('writing objects');
      const a = bare(dir, 'a');
      const b = bare(dir, 'b');
      const i = await zstdImport(a, viaApi, { fsck: 'connectivity' });
      const j = JSON.parse(
        toolOk(['zstd-import', '--fsck=connectivity', '--json', viaApi], { cwd: b }),
      );
      expect(i).toEqual(j);
      expect(i.refs.every((r) => r.status === 'new')).toBe(true);
      expect(i.head).toEqual({ status: 'set', ref: 'refs/heads/main' });
      for (const t of [a, b]) {
        expect(objectSet(t)).toEqual(objectSet(src));
        expect(gitOk(['for-each-ref'], { cwd: t })).toBe(gitOk(['for-each-ref'], { cwd: src }));
        expect(fsckStrict(t).status).toBe(0);
      }
      // A second import: everything up to date, nothing refused.
      const again = await zstdImport(a, viaApi);
      expect(again.alreadyPresent).toBe(true);
      expect(again.refs.every((r) => r.status === 'up-to-date')).toBe(true);
      expect(again.head).toEqual({ status: 'unchanged' });
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuse bad options, a path inside the object directory and a forged zpack as GitRepackError, changing nothing', async () => {
    const repo = useFixtureCopy('basic');
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'api-zstd-'));
    try {
      const before = repoState(repo);
      const out = path.join(dir, 'x.zpack');
      expect((await rejection(zstdExport(repo, out, { level: 23 }))).code).toBe('usage');
      expect((await rejection(zstdExport(repo, out, { dictSize: 12 }))).code).toBe('usage');
      expect((await rejection(zstdExport(repo, out, { zstd: 3 } as object))).message).toBe(
        "zstdExport: unknown option 'zstd'",
      );
      expect(
        (await rejection(zstdExport(repo, path.join(repo, '.git', 'objects', 'pack', 'x.zpack'))))
          .code,
      ).toBe('usage');
      expect((await rejection(zstdImport(repo, out, { fsck: 'changed' as 'full' }))).code).toBe(
        'usage',
      );
      expect(
        (await rejection(zstdImport(repo, out, { force: true, dryRun: true } as object))).code,
      ).toBe('usage');
      expect((await rejection(zstdExport(repo, out, { signal: AbortSignal.abort() }))).code).toBe(
        'aborted',
      );
      expect(fs.existsSync(out)).toBe(false);
      const id = gitOk(['rev-parse', 'HEAD:README.md'], { cwd: repo }).trim();
      fs.writeFileSync(
        out,
        forgeZpack(
          [{ type: OBJ.blob, data: Buffer.from('not README\n'), id: Buffer.from(id, 'hex') }],
          'sha1',
        ),
      );
      const forged = await rejection(zstdImport(repo, out, { fsck: false }));
      expect([forged.code, forged.file, forged.objectId]).toEqual(['bad-object', out, id]);
      expect(forged.offset).toBeGreaterThan(0);
      expect(repoState(repo)).toEqual(before);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
