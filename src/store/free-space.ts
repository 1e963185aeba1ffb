import { statfsSync } from 'node:fs';
import { GitError } from '../errors.js';
import { fault } from './files.js';

/** What statfs(2) says of a filesystem: blocks an unprivileged writer may use, and their size. */
export interface FsSpace {
  bavail: number;
  bsize: number;
}

export type Statfs = (path: string) => FsSpace;

/**
 * Bytes an unprivileged writer may still write in the filesystem holding `dir`, or undefined
 * where statfs cannot say (then nothing is refused: the write fails as it would have). The
 * reliability harness's `statfs:enospc` fault (src/store/files.ts) reports a full filesystem.
 */
export function availableBytes(dir: string, statfs: Statfs = statfsSync): number | undefined {
  try {
    fault('statfs', dir);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOSPC') return 0;
    throw e;
  }
  try {
    const s = statfs(dir);
    return s.bavail * s.bsize;
  } catch {
    return undefined;
  }
}

const MiB = 1 << 20;
const fmt = (n: number): string =>
  n >= 10 * 2 ** 30 ? `${(n / 2 ** 30).toFixed(1)} GiB` : `${(n / MiB).toFixed(2)} MiB`;

/**
 * Refuses, before anything is written, a write of about `need` bytes into `dir` that the
 * filesystem has no room for: a rewrite needs a second copy of the pack beside the first, and
 * running out half-way would cost the time of the whole run for nothing. A margin of 1/64 and
 * 64 KiB covers the estimate's error and the filesystem's own blocks (a fixed 16 MiB refused
 * rewrites a 3 MiB tmpfs had room for: test/reliability-env.test.ts).
 */
export function ensureFreeSpace(dir: string, need: number, what: string, statfs?: Statfs): void {
  const avail = availableBytes(dir, statfs);
  if (avail === undefined) return;
  const want = need + Math.ceil(need / 64) + 64 * 1024;
  if (avail >= want) return;
  // git's words for a full disk (strerror), as the write would have said them; nothing is changed yet.
  throw new GitError(
    'io',
    `${dir}: No space left on device for ${what} (about ${fmt(want)} needed, ${fmt(avail)} available); nothing was changed`,
    { file: dir },
  );
}
