import { closeSync, fsyncSync, openSync, renameSync, unlinkSync, writeSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';

/** Marks our temporary files (`tmp_pack_rts<pid>_<rand>`): git gc treats `tmp_*` as garbage too. */
export const TMP_TAG = 'rts';

export function tmpPath(packDir: string, kind: string): string {
  return join(packDir, `tmp_${kind}_${TMP_TAG}${process.pid}_${randomBytes(4).toString('hex')}`);
}

/** Pid of the process that made one of our temporary files, or undefined if it is not ours. */
export function tmpOwner(name: string): number | undefined {
  const m = new RegExp(`^tmp_[a-z]+_${TMP_TAG}(\\d+)_[0-9a-f]{8}`).exec(name);
  return m ? Number(m[1]) : undefined;
}

/** Writes a complete file that nobody else can see yet: exclusive create, write, fsync, close. */
export function writeFileDurable(path: string, data: Uint8Array, mode = 0o444): void {
  const fd = openSync(path, 'wx', mode);
  try {
    let done = 0;
    while (done < data.length) done += writeSync(fd, data, done, data.length - done);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** fsync a directory so that renames and unlinks in it are durable. */
export function fsyncDir(dir: string): void {
  let fd: number;
  try {
    fd = openSync(dir, 'r');
  } catch {
    return;
  }
  try {
    fsyncSync(fd);
  } catch {
    // some filesystems refuse fsync on directories; the rename is as durable as they allow
  } finally {
    closeSync(fd);
  }
}

export function unlinkIfExists(path: string): boolean {
  try {
    unlinkSync(path);
    return true;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw e;
  }
}

export function renameInto(from: string, to: string): void {
  renameSync(from, to);
}

/** Is a process with this pid alive on this machine? */
export function pidAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}
