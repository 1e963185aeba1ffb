import { closeSync, constants, fstatSync, openSync, readSync } from 'node:fs';
import type { HashAlgo } from '../hash/algo.js';
import { HASH_CHUNK, hashFdSync } from '../hash/hash-object.js';

/**
 * Blob ids of regular files computed ahead of their turn (`--stdin-paths` without -w, where the
 * id does not depend on what git decides about conversion), with whether each holds a CR (which
 * `crlf_to_git` could convert). Anything unusual (not a regular file, unreadable, changing) is
 * left out: the file is then hashed in order, where failures get git's messages.
 */

export interface PreHashed {
  hex: string;
  /** Some CR in the content. */
  cr: boolean;
}

/** Room before the content for `"blob <size>\0"`: small files are hashed in one native call. */
const ROOM = 32;

export class BlobPreHasher {
  private readonly buf = Buffer.allocUnsafeSlow(ROOM + HASH_CHUNK);

  constructor(private readonly algo: HashAlgo) {}

  hash(path: string | Buffer): PreHashed | undefined {
    let fd: number;
    try {
      // Non-blocking: a FIFO must not stall the batch here (it is read in order, as git reads it).
      fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
    } catch {
      return undefined;
    }
    try {
      const st = fstatSync(fd);
      if (!st.isFile()) return undefined;
      return st.size < HASH_CHUNK ? this.small(fd, st.size) : this.large(fd, st.size);
    } catch {
      return undefined;
    } finally {
      closeSync(fd);
    }
  }

  /** One read asking one byte more than the size: exactly `size` back means the whole, unchanged file. */
  private small(fd: number, size: number): PreHashed | undefined {
    // git's sizes are unsigned long; a header longer than ROOM cannot happen below HASH_CHUNK.
    const n = readSync(fd, this.buf, ROOM, size + 1, 0);
    if (n !== size) return undefined;
    const header = `blob ${size}\0`;
    const start = ROOM - header.length;
    this.buf.write(header, start, 'latin1');
    const id = this.algo.digest(this.buf.subarray(start, ROOM + size));
    return { hex: id.toString('hex'), cr: this.buf.subarray(ROOM, ROOM + size).includes(0x0d) };
  }

  private large(fd: number, size: number): PreHashed {
    let cr = false;
    const id = hashFdSync(fd, 'blob', size, this.algo, '', this.buf.subarray(ROOM), (chunk) => void (cr ||= chunk.includes(0x0d)));
    return { hex: id.toString('hex'), cr };
  }
}

/** Paths as one buffer, each followed by NUL (how they travel to the worker). */
export function joinPaths(paths: Buffer[]): Buffer {
  const out = Buffer.allocUnsafe(paths.reduce((n, b) => n + b.length + 1, 0));
  let at = 0;
  for (const b of paths) {
    at += b.copy(out, at);
    out[at++] = 0;
  }
  return out;
}

export function splitPaths(joined: Uint8Array): Buffer[] {
  const b = Buffer.from(joined.buffer, joined.byteOffset, joined.length);
  const out: Buffer[] = [];
  for (let start = 0; start < b.length; ) {
    const nul = b.indexOf(0, start);
    out.push(b.subarray(start, nul));
    start = nul + 1;
  }
  return out;
}

/** Paths a thread takes from the shared counter at a time. */
export const PRE_HASH_CHUNK = 32;

/** Done-flags of a shared batch: 0 pending, then one of these (the other thread waits on them). */
const DONE_FAILED = 1;
const DONE_PLAIN = 2;
const DONE_CR = 3;

/**
 * One batch shared by two threads: a counter both take chunks of paths from, a done-flag per
 * path, and the ids written in place (`len` bytes each).
 */
export interface SharedBatch {
  counter: Int32Array;
  flags: Int32Array;
  ids: Uint8Array;
  len: number;
}

export function sharedBatch(n: number, len: number): SharedBatch {
  return {
    counter: new Int32Array(new SharedArrayBuffer(4)),
    flags: new Int32Array(new SharedArrayBuffer(4 * Math.max(1, n))),
    ids: new Uint8Array(new SharedArrayBuffer(len * Math.max(1, n))),
    len,
  };
}

/** Hashes chunks of `paths` taken from the shared counter until none are left. */
export function preHashShared(hasher: BlobPreHasher, paths: Buffer[], b: SharedBatch): void {
  for (;;) {
    const from = Atomics.add(b.counter, 0, PRE_HASH_CHUNK);
    if (from >= paths.length) return;
    const to = Math.min(paths.length, from + PRE_HASH_CHUNK);
    for (let i = from; i < to; i++) {
      const r = hasher.hash(paths[i]!);
      if (r !== undefined) Buffer.from(r.hex, 'hex').copy(b.ids, i * b.len);
      Atomics.store(b.flags, i, r === undefined ? DONE_FAILED : r.cr ? DONE_CR : DONE_PLAIN);
      Atomics.notify(b.flags, i);
    }
  }
}

/** The result for path `i`, waiting for the other thread if it took that path and is not done. */
export function sharedResult(b: SharedBatch, i: number): PreHashed | undefined {
  let f = Atomics.load(b.flags, i);
  // A thread that died mid-chunk never answers: after a while the path is hashed in order instead.
  for (let waited = 0; f === 0 && waited < 30; waited++) {
    Atomics.wait(b.flags, i, 0, 1000);
    f = Atomics.load(b.flags, i);
  }
  if (f === 0 || f === DONE_FAILED) return undefined;
  return { hex: Buffer.from(b.ids.buffer, i * b.len, b.len).toString('hex'), cr: f === DONE_CR };
}
