import { fsync, readSync, writeSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { parentPort, workerData } from 'node:worker_threads';
import { crc32 } from 'node:zlib';
import { CTL, type WriterThreadData } from './pack-writer-threaded.js';
import { MAX_ENTRY_HEADER, parseEntryHeader } from './pack.js';

/**
 * The writing thread of a large rewrite: takes the filled buffers of the ring in order, computes
 * each entry's CRC32 (entry boundaries from the shared offsets, in write order), hashes and
 * writes the bytes, then appends the trailer and reports the checksum. Then, while the fsync runs
 * (on libuv's pool), it reads the pack back: every entry's header must parse and its bytes must
 * have the CRC32 computed before they were written (the proof's read-back, off the main thread).
 */
const d = workerData as WriterThreadData;
const K = d.buffers;
const ctl = new Int32Array(d.control);
const views = Array.from({ length: K }, (_, k) =>
  Buffer.from(d.ring, k * d.bufferSize, d.bufferSize),
);
const offs = d.offsets32 ? new Uint32Array(d.offsets) : new Float64Array(d.offsets);
const order = new Uint32Array(d.order);
const crcs = new Uint32Array(d.crcs);
const hash = createHash(d.hash);

function waitFull(k: number): boolean {
  while (Atomics.load(ctl, k) !== 1) {
    if (Atomics.load(ctl, CTL.abort(K)) !== 0) return false;
    Atomics.wait(ctl, k, 0, 200);
  }
  return true;
}

function readFull(buf: Buffer, len: number, at: number): void {
  for (let done = 0; done < len;) {
    const n = readSync(d.fd, buf, done, len - done, at + done);
    if (n === 0) throw new Error(`unexpected end of file at offset ${at + done}`);
    done += n;
  }
}

/**
 * Entry boundaries over a stream of chunks (entry k starts at offs[order[k]]): the running CRC32
 * of each entry, handed to `onEnd` with the entry's slot once its last byte is seen. Used for the
 * writing and for reading back, so both cut the pack the same way.
 */
class EntryCrcs {
  /** Write-order index of the entry whose CRC32 is being computed. */
  k = 0;
  private crc = 0;

  /**
   * Takes `buf[0, len)`, at file offset `g`. The first `known` entries' starts are known; the
   * last of them ends at `lastEnd` (Infinity: not yet known). `onStart` sees each entry that
   * begins in this chunk (its position in `buf`, and where the next one starts); a string
   * returned by either callback is a problem, and stops.
   */
  feed(
    buf: Buffer,
    g: number,
    len: number,
    known: number,
    lastEnd: number,
    onEnd: (slot: number, crc: number, at: number) => string | undefined,
    onStart?: (at: number, start: number, next: number) => string | undefined,
  ): string | undefined {
    let pos = 0;
    while (this.k < known) {
      const at = offs[order[this.k]!]!;
      const start = at - g;
      if (start >= len) break;
      const next = this.k + 1 < known ? offs[order[this.k + 1]!]! - g : lastEnd - g;
      if (start >= 0) {
        const problem = onStart?.(at, start, next);
        if (problem !== undefined) return problem;
      }
      if (start > pos) pos = start; // bytes that are no entry's (the pack header)
      const end = Math.min(next, len);
      if (end > pos) this.crc = crc32(buf.subarray(pos, end), this.crc);
      pos = end;
      if (next > len) break; // continues in the next chunk
      const problem = onEnd(order[this.k]!, this.crc, at);
      if (problem !== undefined) return problem;
      this.crc = 0;
      this.k++;
    }
    return undefined;
  }
}

/** Reads the written pack back; a problem found, or undefined. */
function readBack(n: number, dataEnd: number): string | undefined {
  const buf = Buffer.allocUnsafe(d.bufferSize);
  const head = Buffer.allocUnsafe(MAX_ENTRY_HEADER);
  const entries = new EntryCrcs();
  // Each header must parse (read apart when it crosses the chunk's end) ...
  const parse = (at: number, start: number, next: number, len: number): string | undefined => {
    const hl = Math.min(MAX_ENTRY_HEADER, next - start);
    try {
      if (start + hl <= len) parseEntryHeader(buf, start, start + hl, d.hashLen, d.path, at);
      else {
        readFull(head, hl, at);
        parseEntryHeader(head, 0, hl, d.hashLen, d.path, at);
      }
    } catch (e) {
      return (e as Error).message;
    }
    return undefined;
  };
  // ... and each entry's bytes must have the CRC32 computed before they were written.
  const check = (slot: number, crc: number, at: number): string | undefined =>
    crc !== crcs[slot] ? `entry does not read back as written at offset ${at}` : undefined;
  for (let g = 0; g < dataEnd;) {
    const len = Math.min(buf.length, dataEnd - g);
    readFull(buf, len, g);
    const problem = entries.feed(buf, g, len, n, dataEnd, check, (at, start, next) =>
      parse(at, start, next, len),
    );
    if (problem !== undefined) return problem;
    g += len;
  }
  return entries.k === n ? undefined : `${entries.k} entries read back, ${n} written`;
}

async function run(): Promise<void> {
  let k = 0;
  let g = 0; // file offset of the current buffer's first byte
  const entries = new EntryCrcs();
  const store = (slot: number, crc: number): undefined => {
    crcs[slot] = crc;
    return undefined;
  };
  for (;;) {
    if (!waitFull(k)) return;
    const view = views[k]!;
    const len = ctl[CTL.used(K, k)]!;
    const begun = ctl[CTL.begun(K, k)]!;
    const final = ctl[CTL.final(K, k)]! !== 0;
    entries.feed(view, g, len, begun, final ? g + len : Infinity, store);
    const chunk = view.subarray(0, len);
    hash.update(chunk);
    for (let done = 0; done < len;) done += writeSync(d.fd, chunk, done, len - done);
    g += len;
    Atomics.store(ctl, k, 0);
    Atomics.notify(ctl, k);
    k = (k + 1) % K;
    if (final) break;
  }
  const sum = hash.digest();
  for (let done = 0; done < sum.length;) done += writeSync(d.fd, sum, done, sum.length - done);
  parentPort!.postMessage({ checksum: sum, entries: entries.k });
  const synced = new Promise<void>((resolve, reject) =>
    fsync(d.fd, (e) => (e ? reject(e) : resolve())),
  );
  synced.catch(() => {}); // awaited below, after the read-back
  parentPort!.postMessage({ readBack: readBack(entries.k, g) ?? null });
  await synced;
  // The file is closed by the thread that opened it (a worker closing it draws a warning).
  parentPort!.postMessage({ durable: true });
}

run().catch((e: unknown) => {
  const err = e as NodeJS.ErrnoException;
  // First the error itself, on the port the writing thread reads synchronously, then the flag.
  d.errors.postMessage({
    message: err.message,
    code: err.code,
    errno: err.errno,
    syscall: err.syscall,
  });
  Atomics.store(ctl, CTL.error(K), 1);
  for (let k = 0; k < K; k++) Atomics.notify(ctl, k);
  parentPort!.postMessage({ error: { message: err.message, code: err.code } });
});
