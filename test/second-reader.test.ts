import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import git from 'isomorphic-git';
import { useFixtureCopy } from './helpers/fixture-copy.js';
import { gitDirOf, gitOkBuffer, lines, gitOk } from './helpers/git.js';
import { toolOk } from './helpers/tool.js';

/**
 * isomorphic-git is an independent JavaScript reader: every object of every pack we write
 * must read back through it with the same type and content as git gives.
 */
describe('isomorphic-git reads the packs we write', () => {
  for (const name of ['basic', 'multi-pack', 'ref-delta', 'big-blob'] as const) {
    it(`${name}, commits and trees at level 0`, async () => {
      const repo = useFixtureCopy(name);
      toolOk(['-q', '--graph-compression=0', '--blob-compression=9'], { cwd: repo });
      const gitdir = gitDirOf(repo);
      const ids = lines(
        gitOk(['cat-file', '--batch-all-objects', '--batch-check=%(objectname) %(objecttype)'], {
          cwd: repo,
        }),
      ).map((l) => l.split(' '));
      expect(ids.length).toBeGreaterThan(10);
      // git's view of every object, in one `cat-file --batch`
      const batch = gitOkBuffer(['cat-file', '--batch'], {
        cwd: repo,
        input: ids.map(([oid]) => oid).join('\n') + '\n',
      });
      const want = new Map<string, { type: string; data: Buffer }>();
      for (let p = 0; p < batch.length;) {
        const nl = batch.indexOf(10, p);
        const [oid, type, size] = batch.toString('latin1', p, nl).split(' ');
        want.set(oid!, { type: type!, data: batch.subarray(nl + 1, nl + 1 + Number(size)) });
        p = nl + 1 + Number(size) + 1;
      }
      const cache = {};
      for (const [oid] of ids) {
        const o = await git.readObject({ fs, gitdir, oid: oid!, format: 'content', cache });
        expect(o.type).toBe(want.get(oid!)!.type);
        expect(Buffer.from(o.object as Uint8Array).equals(want.get(oid!)!.data)).toBe(true);
      }
    });
  }
});
