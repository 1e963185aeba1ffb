/**
 * The rewrite asks for room for its new pack before writing it (issue 20): refused with
 * `fatal: …`, exit 128, and the repository exactly as it was.
 */
import { describe, expect, it } from 'vitest';
import { fsckStrict, objectSet, packDirOf } from './helpers/git.js';
import { treeDigest } from './helpers/faults.js';
import { useFixtureCopy } from './helpers/fixture-copy.js';
import { tool } from './helpers/tool.js';
import { GitError } from '../src/errors.js';
import { availableBytes, ensureFreeSpace } from '../src/store/free-space.js';

const MiB = 1 << 20;
const fakeStatfs = (bytes: number) => () => ({ bavail: bytes / 4096, bsize: 4096 });

describe('free space before the new pack is written', () => {
  it('refuses a write the filesystem has no room for, margin included; says nothing when statfs cannot tell', () => {
    // 100 MiB to write: 100 + 100/64 MiB + 64 KiB wanted (101.625 MiB).
    expect(() =>
      ensureFreeSpace('/x/objects/pack', 100 * MiB, 'the new pack', fakeStatfs(101.5 * MiB)),
    ).toThrow(GitError);
    expect(() =>
      ensureFreeSpace('/x/objects/pack', 100 * MiB, 'the new pack', fakeStatfs(101.5 * MiB)),
    ).toThrow(
      '/x/objects/pack: No space left on device for the new pack (about 101.63 MiB needed, 101.50 MiB available); nothing was changed',
    );
    expect(() =>
      ensureFreeSpace('/x/objects/pack', 100 * MiB, 'the new pack', fakeStatfs(101.75 * MiB)),
    ).not.toThrow();
    const unsupported = (): never => {
      throw Object.assign(new Error('ENOSYS'), { code: 'ENOSYS' });
    };
    expect(availableBytes('/x', unsupported)).toBeUndefined();
    expect(() => ensureFreeSpace('/x', 100 * MiB, 'the new pack', unsupported)).not.toThrow();
  });

  it('a full filesystem: fatal naming the pack directory, exit 128, the repository untouched', () => {
    const repo = useFixtureCopy('basic');
    const before = treeDigest(repo);
    const objects = objectSet(repo);
    const r = tool(['--graph-compression=0', '-q'], {
      cwd: repo,
      env: { GIT_REPACK_TS_FAULT: 'statfs:enospc' },
    });
    expect(r.status).toBe(128);
    expect(r.stderr).toBe(
      `fatal: ${packDirOf(repo)}: No space left on device for the new pack (about ${r.stderr.match(/about (\S+ MiB)/)?.[1]} needed, 0.00 MiB available); nothing was changed\n`,
    );
    expect(treeDigest(repo)).toEqual(before);
    expect(objectSet(repo)).toEqual(objects);
    expect(fsckStrict(repo).status).toBe(0);
  });

  it('with room, the same rewrite goes through (the check asks for no more than the disk has)', () => {
    const repo = useFixtureCopy('basic');
    const objects = objectSet(repo);
    const r = tool(['--graph-compression=0', '-q'], { cwd: repo });
    expect(r.status).toBe(0);
    expect(objectSet(repo)).toEqual(objects);
  });
});
