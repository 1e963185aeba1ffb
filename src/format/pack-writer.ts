import { close, closeSync, fsync, fsyncSync, openSync, writeSync } from 'node:fs';
import { crc32 } from 'node:zlib';
import type { Hash } from 'node:crypto';
import type { HashAlgo } from '../hash/algo.js';
import { encodePackHeader } from './pack.js';

export interface Finished {
  checksum: Buffer;
  durable: Promise<void>;
  readBack?: Promise<void> | undefined;
}

/** A pack being written: entries in order, each entry's CRC32 into `crcs[slot]`. */
export interface PackSink {
  /** Bytes written so far (the offset of the next entry). */
  readonly offset: number;
  /**
   * Appends one entry: `header[0, headerLen)` then `data[start, end)` (ranges, so that a caller
   * writing a million entries makes no view of each).
   */
  writeEntry(
    header: Buffer,
    data: Buffer,
    slot: number,
    headerLen?: number,
    start?: number,
    end?: number,
  ): void;
  /**
   * Appends more bytes to the entry `writeEntry` began last (slot `slot`): an entry too large to
   * hold is written a piece at a time (git's `write_reuse_object` copying in windows).
   */
  appendToEntry(data: Buffer, slot: number, start?: number, end?: number): void;
  /**
   * Appends `n` consecutive entries written exactly as they are in `data[start, end)` (header and
   * data unchanged), whose CRC32s are known: `crcs[k]` for slot `slots[k]`. Each one's offset must
   * be in the caller's offsets table before (the threaded writer cuts entries by them).
   */
  copyEntries(
    data: Buffer,
    start: number,
    end: number,
    slots: Uint32Array,
    crcs: Uint32Array,
    n: number,
  ): void;
  /**
   * Appends the trailer; resolves with the checksum (the pack's name) once every byte is written
   * and every CRC32 is in `crcs`. `durable` resolves once the file is fsynced and closed;
   * `readBack`, when there is one, once the file has been read back and every entry's header
   * parsed and CRC32 matched (else it rejects): the proof need not read the pack again.
   */
  finish(): Promise<Finished>;
  /** Stops without finishing (the caller removes the file). */
  abort(): Promise<void>;
}

/**
 * fsync, then close, on libuv's threadpool: the caller goes on while the disk catches up and
 * awaits the promise before the file may count (before any rename). The promise is marked
 * handled: a caller that failed before awaiting it leaves no unhandled rejection behind.
 */
export function syncAndClose(fd: number): Promise<void> {
  const done = new Promise<void>((resolve, reject) =>
    fsync(fd, (e) => {
      close(fd, (e2) => {
        const err = e ?? e2;
        if (err) reject(err);
        else resolve();
      });
    }),
  );
  done.catch(() => {});
  return done;
}

/**
 * Writes a pack sequentially, hashing as it writes (git's `hashfile`): entries are appended
 * through a buffer, each entry's CRC32 is stored, and `finish` appends the trailer and fsyncs.
 */
export class PackFileWriter implements PackSink {
  private readonly buf: Buffer;
  private used = 0;
  private fd: number;
  private readonly hash: Hash;
  /** Bytes written so far (the offset of the next entry). */
  offset = 0;

  constructor(
    readonly path: string,
    readonly algo: HashAlgo,
    count: number,
    private readonly crcs: Uint32Array,
    /** Another header than git's `PACK` one (the zstd pack's). */
    header?: Buffer,
    // 1 MiB, not 4: each page of a new buffer costs a page fault the first time it is written,
    // 13 µs each on this machine (a Firecracker VM: 3.2 ms per MiB first touched, 0.05 ms after);
    // jq's rewrite faulted 930 times less, 3 MiB lower peak (docs/decisions.md, "First touch").
    bufferSize = 1 << 20,
  ) {
    // 0o444 like git's pack files; the fd stays writable since we opened it.
    this.fd = openSync(path, 'wx', 0o444);
    this.hash = algo.create();
    this.buf = Buffer.allocUnsafe(bufferSize);
    this.append(header ?? encodePackHeader(count));
  }

  /** The hash of everything written so far (writing goes on). */
  checksumSoFar(): Buffer {
    this.flush();
    return this.hash.copy().digest();
  }

  /** Appends bytes that are not an entry (the zstd pack's index and footer). */
  appendRaw(data: Uint8Array): void {
    this.append(data);
  }

  private flush(): void {
    if (this.used === 0) return;
    const chunk = this.buf.subarray(0, this.used);
    this.hash.update(chunk);
    let done = 0;
    while (done < chunk.length) done += writeSync(this.fd, chunk, done, chunk.length - done);
    this.used = 0;
  }

  private append(data: Uint8Array): void {
    if (data.length > this.buf.length - this.used) {
      this.flush();
      if (data.length > this.buf.length) {
        this.hash.update(data);
        let done = 0;
        while (done < data.length) done += writeSync(this.fd, data, done, data.length - done);
        this.offset += data.length;
        return;
      }
    }
    this.buf.set(data, this.used);
    this.used += data.length;
    this.offset += data.length;
  }

  /** Appends one entry (header bytes, then compressed data). */
  writeEntry(
    header: Buffer,
    data: Buffer,
    slot: number,
    headerLen = header.length,
    start = 0,
    end = data.length,
  ): void {
    const len = headerLen + end - start;
    if (len <= this.buf.length - this.used || (this.flush(), len <= this.buf.length)) {
      // Copied by range into the buffer and CRC'd there at once: no view of each part and one
      // CRC32 call instead of two (making views was 5 % of a 23k-entry run's CPU samples).
      const at = this.used;
      header.copy(this.buf, at, 0, headerLen);
      data.copy(this.buf, at + headerLen, start, end);
      this.used += len;
      this.offset += len;
      this.crcs[slot] = crc32(this.buf.subarray(at, at + len));
      return;
    }
    if (headerLen !== header.length) header = header.subarray(0, headerLen);
    if (start !== 0 || end !== data.length) data = data.subarray(start, end);
    this.append(header);
    this.append(data);
    // (Node's crc32 of nothing is 0 whatever the value it continues from.)
    this.crcs[slot] = data.length === 0 ? crc32(header) : crc32(data, crc32(header));
  }

  copyEntries(
    data: Buffer,
    start: number,
    end: number,
    slots: Uint32Array,
    crcs: Uint32Array,
    n: number,
  ): void {
    this.append(data.subarray(start, end));
    for (let k = 0; k < n; k++) this.crcs[slots[k]!] = crcs[k]!;
  }

  appendToEntry(data: Buffer, slot: number, start = 0, end = data.length): void {
    if (end <= start) return;
    const piece = start === 0 && end === data.length ? data : data.subarray(start, end);
    this.append(piece);
    this.crcs[slot] = crc32(piece, this.crcs[slot]!);
  }

  /**
   * Appends the trailer; the fsync and close go on on libuv's threadpool (`durable`) while the
   * caller writes the index and reads the pack back: jq's pack took 26 ms to fsync here, on the
   * critical path when it was done in line.
   */
  finish(): Promise<Finished> {
    const checksum = this.appendTrailer();
    const fd = this.fd;
    this.fd = -1;
    return Promise.resolve({ checksum, durable: syncAndClose(fd) });
  }

  /** Appends the trailer hash, fsyncs and closes; returns the checksum (the pack's name). */
  finishSync(): Buffer {
    const sum = this.appendTrailer();
    fsyncSync(this.fd);
    closeSync(this.fd);
    this.fd = -1;
    return sum;
  }

  private appendTrailer(): Buffer {
    this.flush();
    const sum = this.hash.digest();
    let done = 0;
    while (done < sum.length) done += writeSync(this.fd, sum, done, sum.length - done);
    this.offset += sum.length;
    return sum;
  }

  /** Closes without finishing (the caller removes the file). */
  abort(): Promise<void> {
    this.abortSync();
    return Promise.resolve();
  }

  abortSync(): void {
    if (this.fd >= 0) closeSync(this.fd);
    this.fd = -1;
  }
}
