import { closeSync, constants, fstatSync, openSync, readSync, statSync } from 'node:fs';
import type { HashAlgo } from '../../hash/algo.js';
import { HASH_CHUNK, hashFdSync } from '../../hash/hash-object.js';

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

function isRegularFile(path: Buffer): boolean {
  try {
    return statSync(path, { throwIfNoEntry: false })?.isFile() ?? false;
  } catch {
    return false;
  }
}

export class BlobPreHasher {
  private readonly buf = Buffer.allocUnsafeSlow(ROOM + HASH_CHUNK);

  /** `statFirst`: anything but a regular file is left alone unopened (opening a FIFO would let its writer go on). */
  constructor(
    private readonly algo: HashAlgo,
    private readonly statFirst = false,
  ) {}

  hash(path: Buffer): PreHashed | undefined {
    if (this.statFirst && !isRegularFile(path)) return undefined;
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
    const object = this.buf.subarray(start, ROOM + size);
    // Hex straight from the native call: no Buffer per file for the garbage collector.
    return { hex: this.algo.hexDigest(object), cr: object.indexOf(0x0d, header.length) >= 0 };
  }

  private large(fd: number, size: number): PreHashed {
    let cr = false;
    const id = hashFdSync(
      fd,
      'blob',
      size,
      this.algo,
      '',
      this.buf.subarray(ROOM),
      (chunk) => void (cr ||= chunk.includes(0x0d)),
    );
    return { hex: id.toString('hex'), cr };
  }
}

/**
 * Where each path opens once git has changed to the top of the work tree (`baseSlash`: that
 * directory with a trailing slash), as one shared buffer of NUL-terminated entries that both
 * threads read. A path that cannot be opened by name (empty, or holding a NUL) gets an empty
 * entry: it fails here and is hashed in order, where it gets git's message.
 */
export function joinTargets(paths: Buffer[], baseSlash: Buffer): Uint8Array {
  let total = 0;
  for (const p of paths)
    total +=
      (p.length === 0 || p.includes(0)
        ? 0
        : p[0] === 0x2f
          ? p.length
          : baseSlash.length + p.length) + 1;
  const out = Buffer.from(new SharedArrayBuffer(Math.max(1, total)), 0, total);
  let at = 0;
  for (const p of paths) {
    if (p.length > 0 && !p.includes(0)) {
      if (p[0] !== 0x2f) at += baseSlash.copy(out, at);
      at += p.copy(out, at);
    }
    out[at++] = 0;
  }
  return out;
}

export function splitPaths(joined: Uint8Array): Buffer[] {
  const b = Buffer.from(joined.buffer, joined.byteOffset, joined.length);
  const out: Buffer[] = [];
  for (let start = 0; start < b.length;) {
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
 * One batch shared by two threads: the targets (joinTargets), a counter both take chunks of
 * paths from, a done-flag per path, and the ids written in place as hex (`hexLen` bytes each).
 */
export interface SharedBatch {
  algo: string;
  targets: Uint8Array;
  counter: Int32Array;
  flags: Int32Array;
  hex: Uint8Array;
  hexLen: number;
}

export function sharedBatch(algo: HashAlgo, targets: Uint8Array, n: number): SharedBatch {
  const hexLen = algo.len * 2;
  return {
    algo: algo.name,
    targets,
    counter: new Int32Array(new SharedArrayBuffer(4)),
    flags: new Int32Array(new SharedArrayBuffer(4 * Math.max(1, n))),
    hex: new Uint8Array(new SharedArrayBuffer(hexLen * Math.max(1, n))),
    hexLen,
  };
}

/** Hashes chunks of `paths` taken from the shared counter until none are left. */
export function preHashShared(hasher: BlobPreHasher, paths: Buffer[], b: SharedBatch): void {
  const hex = Buffer.from(b.hex.buffer, b.hex.byteOffset, b.hex.length);
  for (;;) {
    const from = Atomics.add(b.counter, 0, PRE_HASH_CHUNK);
    if (from >= paths.length) return;
    const to = Math.min(paths.length, from + PRE_HASH_CHUNK);
    for (let i = from; i < to; i++) {
      const r = hasher.hash(paths[i]!);
      if (r !== undefined) hex.write(r.hex, i * b.hexLen, 'latin1');
      Atomics.store(b.flags, i, r === undefined ? DONE_FAILED : r.cr ? DONE_CR : DONE_PLAIN);
      Atomics.notify(b.flags, i);
    }
  }
}

/** The results, in order, waiting for the other thread where it took a path and is not done. */
export function sharedResults(b: SharedBatch, n: number): (PreHashed | undefined)[] {
  const hex = Buffer.from(b.hex.buffer, b.hex.byteOffset, b.hex.length);
  const out = new Array<PreHashed | undefined>(n);
  for (let i = 0; i < n; i++) {
    let f = Atomics.load(b.flags, i);
    // A thread that died mid-chunk never answers: after a while the path is hashed in order instead.
    for (let waited = 0; f === 0 && waited < 30; waited++) {
      Atomics.wait(b.flags, i, 0, 1000);
      f = Atomics.load(b.flags, i);
    }
    out[i] =
      f === 0 || f === DONE_FAILED
        ? undefined
        : { hex: hex.toString('latin1', i * b.hexLen, (i + 1) * b.hexLen), cr: f === DONE_CR };
  }
  return out;
}
