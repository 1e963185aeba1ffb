import { closeSync, constants, fstatSync, openSync, readSync, type Stats } from 'node:fs';
import { GitError, systemError } from '../errors.js';
import { shownPath, type FsPath } from './fs-path.js';

/**
 * Opening files of a repository that anyone able to write it may have replaced: a FIFO would
 * block an open or a read until killed, a device or a sparse 3 GiB lock file would be read whole,
 * a symbolic link would lead outside the repository. Every open here is O_NONBLOCK (a FIFO opens
 * at once and is then refused by fstat), small files are read up to a bound, and files that git
 * itself never follows links for are opened with O_NOFOLLOW.
 */
const { O_RDONLY, O_NOFOLLOW, O_NONBLOCK } = constants;

export type SmallFile = { data: Buffer; st: Stats } | { why: string };

/**
 * At most `max` bytes of a regular file, never through a symbolic link unless `follow`; undefined
 * when there is no such file, `why` when there is something else.
 */
export function readSmallFile(path: string, max: number, follow = false): SmallFile | undefined {
  let fd: number;
  try {
    fd = openSync(path, O_RDONLY | O_NONBLOCK | (follow ? 0 : O_NOFOLLOW));
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return undefined;
    if (code === 'ELOOP') return { why: 'a symbolic link' };
    throw e;
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) return { why: 'not a regular file' };
    const data = Buffer.alloc(Math.min(max, st.size));
    let n = 0;
    while (n < data.length) {
      const got = readSync(fd, data, n, data.length - n, n);
      if (got === 0) break;
      n += got;
    }
    return { data: data.subarray(0, n), st };
  } finally {
    closeSync(fd);
  }
}

/**
 * A descriptor for a regular file (links followed, as git's `add_packed_git` stats a pack), or a
 * GitError naming the file: never blocks on a FIFO swapped in after the directory was listed.
 */
export function openRegular(file: FsPath): number {
  const path = shownPath(file);
  let fd: number;
  try {
    fd = openSync(file, O_RDONLY | O_NONBLOCK);
  } catch (e) {
    throw systemError('io', 'cannot open', e, path);
  }
  let regular = false;
  try {
    regular = fstatSync(fd).isFile();
  } finally {
    if (!regular) closeSync(fd);
  }
  if (!regular) throw new GitError('io', `cannot open ${path}: not a regular file`, { file: path });
  return fd;
}

/** The whole of a regular file (an `.idx`), read through `openRegular`. */
export function readRegular(path: FsPath): Buffer {
  const fd = openRegular(path);
  try {
    const size = fstatSync(fd).size;
    const out = Buffer.allocUnsafe(size);
    let n = 0;
    while (n < size) {
      const got = readSync(fd, out, n, size - n, n);
      if (got === 0) break;
      n += got;
    }
    return out.subarray(0, n);
  } finally {
    closeSync(fd);
  }
}
