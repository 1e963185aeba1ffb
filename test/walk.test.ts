import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { fixturePath, type FixtureName } from './fixtures/index.js';
import { gitOk } from './helpers/git.js';
import { toolOk } from './helpers/tool.js';

/** What `git rev-list --objects --all` reaches, by type, and how many of its objects are missing. */
function gitWalk(repo: string): { commits: number; trees: number; blobs: number; tags: number; missing: number } {
  const listed = gitOk(['rev-list', '--objects', '--all', '--missing=print'], { cwd: repo }).split('\n').filter(Boolean);
  const missing = listed.filter((l) => l.startsWith('?')).length;
  const ids = listed.filter((l) => !l.startsWith('?')).map((l) => l.slice(0, l.indexOf(' ') < 0 ? l.length : l.indexOf(' ')));
  const types = gitOk(['cat-file', '--batch-check=%(objecttype)'], { cwd: repo, input: ids.join('\n') + '\n' }).split('\n').filter(Boolean);
  const count = (t: string): number => types.filter((x) => x === t).length;
  return { commits: count('commit'), trees: count('tree'), blobs: count('blob'), tags: count('tag'), missing };
}

function ourWalk(repo: string): Record<string, number> {
  const r = JSON.parse(toolOk(['walk', '--json'], { cwd: repo })) as Record<string, number>;
  return { commits: r.commits!, trees: r.trees!, blobs: r.blobs!, tags: r.tags!, missing: r.missing! };
}

describe('walk: the objects git rev-list --objects --all reaches, by type', () => {
  for (const name of ['basic', 'multi-pack', 'ref-delta', 'sha256', 'idx-v1', 'promisor', 'alternates'] as FixtureName[]) {
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
        lines.push('commit refs/heads/main', `committer A U Thor <a@example.com> ${1_700_000_000 + c * 60} +0000`, `data ${msg.length}`, msg);
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
