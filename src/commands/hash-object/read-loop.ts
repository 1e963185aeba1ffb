import { constants as bufferConstants } from 'node:buffer';
import { fstatSync, read, readFileSync } from 'node:fs';
import { freemem } from 'node:os';
import { GitError } from '../../errors.js';
import { HASH_CHUNK } from '../../hash/hash-object.js';

/**
 * Reads of a descriptor that may be a pipe, a FIFO, a terminal or a non-blocking socket
 * (hash-object's standard input, a FIFO named on the command line): on libuv's threadpool, so
 * that a read that waits for a writer never holds the main thread, where the signal handlers run
 * (SIGINT, SIGTERM end the run as they end git). EAGAIN waits and retries, EOF reads as 0.
 */

/** The size of a regular file open as `fd`; undefined for anything else (a pipe, a terminal). */
export function regularFileSize(fd: number): number | undefined {
  try {
    const st = fstatSync(fd);
    return st.isFile() ? st.size : undefined;
  } catch {
    return undefined;
  }
}

/** Longest wait between two tries of a non-blocking descriptor that had nothing. */
const MAX_POLL_MS = 20;

/** One read (at `pos`, or the descriptor's position when null), waiting on a non-blocking descriptor instead of failing with EAGAIN. */
export async function readAsync(
  fd: number,
  buf: Buffer,
  off: number,
  len: number,
  pos: number | null = null,
): Promise<number> {
  for (let wait = 1; ; wait = Math.min(MAX_POLL_MS, wait * 2)) {
    try {
      return await new Promise<number>((resolve, reject) =>
        read(fd, buf, off, len, pos, (e, n) => (e ? reject(e) : resolve(n))),
      );
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === 'EOF') return 0;
      if (code !== 'EAGAIN') throw e;
      await new Promise((r) => setTimeout(r, wait));
    }
  }
}

/** git's xrealloc when it fails: what `strbuf_read` of an input that never ends comes to. */
export class OutOfMemory extends GitError {
  constructor() {
    super('io', 'Out of memory, realloc failed');
    this.name = 'OutOfMemory';
  }
}

/** A limit from /proc/self/limits ("Max address space"), or undefined when unlimited or unknown. */
function rlimit(name: string): number | undefined {
  try {
    const line = readFileSync('/proc/self/limits', 'latin1')
      .split('\n')
      .find((l) => l.startsWith(name));
    const soft = line?.slice(26).trim().split(/\s+/)[0];
    return soft === undefined || soft === 'unlimited' ? undefined : Number(soft);
  } catch {
    return undefined;
  }
}

/** This process's mapped size now (VmSize), the measure RLIMIT_AS applies to. */
function mappedBytes(): number {
  try {
    const m = /^VmSize:\s+(\d+) kB$/m.exec(readFileSync('/proc/self/status', 'latin1'));
    return m ? Number(m[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

/**
 * How much of an input of unknown length may be held: where git's strbuf would fail to grow,
 * before the kernel or V8 ends the process instead. Half of what the address-space limit leaves
 * and of the free memory (the chunks are joined into one buffer at the end), within one Buffer.
 */
export function holdLimit(): number {
  let limit = Math.min(bufferConstants.MAX_LENGTH, freemem() / 2);
  const as = rlimit('Max address space');
  if (as !== undefined) limit = Math.min(limit, (as - mappedBytes()) / 2);
  return Math.max(0, Math.floor(limit));
}

/** strbuf_read: everything up to EOF (pipes, FIFOs, terminals, devices), at most `limit` bytes (then OutOfMemory). */
export async function readToEnd(
  fd: number,
  limit = holdLimit(),
  from: number | null = null,
): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let total = 0;
  for (;;) {
    const buf = Buffer.allocUnsafe(Math.min(HASH_CHUNK, Math.max(8192, total)));
    const n = await readAsync(fd, buf, 0, buf.length, from === null ? null : from + total);
    if (n === 0) break;
    if (total + n > limit) throw new OutOfMemory();
    chunks.push(n === buf.length ? buf : buf.subarray(0, n));
    total += n;
  }
  return chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, total);
}

/**
 * LF-terminated lines of a descriptor, in batches of what one read returned (so a caller that
 * answers each batch before reading on serves a coprocess line by line, as git does). The last
 * line may lack its LF. Resolves to undefined at EOF. A regular file cannot be a coprocess: it is
 * read in larger batches (fewer `git check-attr` runs).
 */
export class LineReader {
  private readonly buf: Buffer;
  private pending = Buffer.alloc(0);
  private eof = false;
  /** A line longer than this is git's strbuf failing to grow. */
  private readonly limit = holdLimit();

  constructor(private readonly fd: number) {
    this.buf = Buffer.allocUnsafe(regularFileSize(fd) !== undefined ? 4 << 20 : 64 * 1024);
  }

  async next(): Promise<Buffer[] | undefined> {
    while (!this.eof) {
      const n = await readAsync(this.fd, this.buf, 0, this.buf.length);
      if (n === 0) this.eof = true;
      const data = n === 0 ? this.pending : Buffer.concat([this.pending, this.buf.subarray(0, n)]);
      const lines: Buffer[] = [];
      let start = 0;
      for (;;) {
        const nl = data.indexOf(0x0a, start);
        if (nl < 0) break;
        lines.push(data.subarray(start, nl));
        start = nl + 1;
      }
      this.pending = Buffer.from(data.subarray(start));
      if (this.pending.length > this.limit) throw new OutOfMemory();
      if (this.eof && this.pending.length > 0) {
        lines.push(this.pending);
        this.pending = Buffer.alloc(0);
      }
      if (lines.length > 0) return lines;
    }
    return undefined;
  }
}
