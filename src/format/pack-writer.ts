import { closeSync, fsyncSync, openSync, writeSync } from 'node:fs';
import { crc32 } from 'node:zlib';
import type { Hash } from 'node:crypto';
import type { HashAlgo } from '../hash/algo.js';
import { encodePackHeader } from './pack.js';

/**
 * Writes a pack sequentially, hashing as it writes (git's `hashfile`): entries are appended
 * through a buffer, each entry's CRC32 is returned, and `finish` appends the trailer and fsyncs.
 */
export class PackFileWriter {
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
    /** Another header than git's `PACK` one (the zstd pack's). */
    header?: Buffer,
    bufferSize = 4 << 20,
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

  /** Appends one entry (header bytes, then compressed data); returns its CRC32. */
  writeEntry(header: Uint8Array, data: Uint8Array): number {
    this.append(header);
    this.append(data);
    return crc32(data, crc32(header));
  }

  /** Appends the trailer hash, fsyncs and closes; returns the checksum (the pack's name). */
  finish(): Buffer {
    this.flush();
    const sum = this.hash.digest();
    let done = 0;
    while (done < sum.length) done += writeSync(this.fd, sum, done, sum.length - done);
    this.offset += sum.length;
    fsyncSync(this.fd);
    closeSync(this.fd);
    this.fd = -1;
    return sum;
  }

  /** Closes without finishing (the caller removes the file). */
  abort(): void {
    if (this.fd >= 0) closeSync(this.fd);
    this.fd = -1;
  }
}
