import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'vitest';
import { gitOk } from './git.js';

/** git's own index of our pack is byte-identical to ours, and so is its .rev. */
export function expectGitIndexes(repo: string, pack: string): void {
  const base = pack.slice(0, -5);
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'rts-idx-'));
  try {
    gitOk(['index-pack', '--rev-index', '-o', path.join(tmp, 'g.idx'), pack], { cwd: repo });
    expect(fs.readFileSync(path.join(tmp, 'g.idx')).equals(fs.readFileSync(base + '.idx'))).toBe(
      true,
    );
    if (fs.existsSync(base + '.rev'))
      expect(fs.readFileSync(path.join(tmp, 'g.rev')).equals(fs.readFileSync(base + '.rev'))).toBe(
        true,
      );
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}
