import { fstatSync, readSync } from 'node:fs';
import { HASH_CHUNK } from '../hash/hash-object.js';

/**
 * Synchronous reads of a descriptor that may be a pipe, a terminal or a non-blocking socket
 * (hash-object's standard input): EAGAIN waits and retries, EOF reads as 0.
 */

function sleepMs(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/** The size of a regular file open as `fd`; undefined for anything else (a pipe, a terminal). */
export function regularFileSize(fd: number): number | undefined {
  try {
    const st = fstatSync(fd);
    return st.isFile() ? st.size : undefined;
  } catch {
    return undefined;
  }
}

/** A read that waits on a non-blocking descriptor instead of failing with EAGAIN. */
export function readBlocking(fd: number, buf: Buffer, off: number, len: number): number {
  for (;;) {
    try {
      return readSync(fd, buf, off, len, null);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'EAGAIN') {
        sleepMs(2);
        continue;
      }
      if ((e as NodeJS.ErrnoException).code === 'EOF') return 0;
      throw e;
    }
  }
}

/** strbuf_read: everything up to EOF (pipes, terminals, character devices). */
export function readToEnd(fd: number): Buffer {
  const chunks: Buffer[] = [];
  let total = 0;
  for (;;) {
    const buf = Buffer.allocUnsafe(Math.min(HASH_CHUNK, Math.max(8192, total)));
    const n = readBlocking(fd, buf, 0, buf.length);
    if (n === 0) break;
    chunks.push(n === buf.length ? buf : buf.subarray(0, n));
    total += n;
  }
  return chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, total);
}

/**
 * LF-terminated lines of a descriptor, in batches of what one read returned (so a caller that
 * answers each batch before reading on serves a coprocess line by line, as git does). The last
 * line may lack its LF. Returns undefined at EOF. A regular file cannot be a coprocess: it is read
 * in larger batches (fewer `git check-attr` runs).
 */
export class LineReader {
  private readonly buf: Buffer;
  private pending = Buffer.alloc(0);
  private eof = false;

  constructor(private readonly fd: number) {
    this.buf = Buffer.allocUnsafe(regularFileSize(fd) !== undefined ? 4 << 20 : 64 * 1024);
  }

  next(): Buffer[] | undefined {
    while (!this.eof) {
      const n = readBlocking(this.fd, this.buf, 0, this.buf.length);
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
      if (this.eof && this.pending.length > 0) {
        lines.push(this.pending);
        this.pending = Buffer.alloc(0);
      }
      if (lines.length > 0) return lines;
    }
    return undefined;
  }
}
