import { closeSync, openSync } from 'node:fs';
import {
  MessageChannel,
  Worker,
  receiveMessageOnPort,
  type MessagePort,
} from 'node:worker_threads';
import type { HashAlgo } from '../hash/algo.js';
import { GitError } from '../errors.js';
import { encodePackHeader } from './pack.js';
import type { Finished, PackSink } from './pack-writer.js';

/*
 * A pack written on a second thread (pack-writer-thread.ts): this file is the main thread's
 * side, a ring of shared buffers filled here and written, hashed and fsynced there.
 */

/** Pieces up to this many bytes are copied into the ring byte by byte (`append`). */
const SMALL = 32;

/** Layout of the shared control words of a `ThreadedPackWriter` with K ring buffers. */
export const CTL = {
  /** Word k (k < K): 0 while buffer k is the writer's to fill, 1 once handed to the thread. */
  used: (K: number, k: number): number => K + k,
  /** Entries begun (their header appended) when buffer k was handed over. */
  begun: (K: number, k: number): number => 2 * K + k,
  final: (K: number, k: number): number => 3 * K + k,
  error: (K: number): number => 4 * K,
  abort: (K: number): number => 4 * K + 1,
  words: (K: number): number => 4 * K + 2,
};

export interface WriterThreadData {
  fd: number;
  path: string;
  hashLen: number;
  hash: string;
  buffers: number;
  bufferSize: number;
  control: SharedArrayBuffer;
  ring: SharedArrayBuffer;
  /** The rewrite's shared tables: each slot's file offset, the slots in write order, CRC32s. */
  offsets: SharedArrayBuffer;
  /** The offsets are 32-bit (a pack known to stay under 4 GiB), else 64-bit floats. */
  offsets32: boolean;
  order: SharedArrayBuffer;
  crcs: SharedArrayBuffer;
  /** Where the thread reports an error before raising the error flag. */
  errors: MessagePort;
}

interface ThreadError {
  message: string;
  code?: string;
  errno?: number;
  syscall?: string;
}

/** The thread's error as the system error it was (code, syscall, path), for the same messages. */
function systemError(m: ThreadError | undefined, path: string): Error {
  if (m === undefined) return new GitError('io', `cannot write ${path}`, { file: path });
  return Object.assign(new Error(m.message), {
    code: m.code,
    errno: m.errno,
    syscall: m.syscall,
    path,
  });
}

/**
 * The same job on a second thread, for large rewrites: this thread only copies entries into a
 * ring of shared buffers; the writing thread computes the CRC32s, hashes, writes and fsyncs
 * (together about a third of a git.git rewrite's main-thread time). Each entry's offset must be
 * in `offsets[slot]` before `writeEntry`, and `order` must list the slots in the order written.
 */
export class ThreadedPackWriter implements PackSink {
  // Four buffers of 512 KiB. Eight of 1 MiB were needed while the main thread also read the
  // sources (with four it waited ~0.4 s on git.git); since the worker reads them, four of 1 MiB
  // were as fast (4.20-4.34 s against 4.16-4.32 s, 3 interleaved runs), and four of 512 KiB are
  // too (docs/benchmarks.md §2), each step a few MiB lighter.
  private static readonly K = 4;
  offset = 0;
  private readonly ctl: Int32Array;
  private readonly views: Buffer[];
  private readonly worker: Worker;
  private fd: number;
  private k = 0;
  private used = 0;
  private begun = 0;
  private readonly checksum: Promise<Buffer>;
  private readonly durable: Promise<void>;
  private readonly readBack: Promise<void>;
  private failure: Error | undefined;
  private readonly errors: MessagePort;

  constructor(
    readonly path: string,
    algo: HashAlgo,
    count: number,
    tables: { offsets: Float64Array | Uint32Array; order: Uint32Array; crcs: Uint32Array },
    private readonly bufferSize = 512 << 10,
  ) {
    const K = ThreadedPackWriter.K;
    for (const t of [tables.offsets, tables.order, tables.crcs]) {
      if (!(t.buffer instanceof SharedArrayBuffer))
        throw new TypeError('ThreadedPackWriter needs tables in shared memory');
    }
    const control = new SharedArrayBuffer(4 * CTL.words(K));
    const ring = new SharedArrayBuffer(K * bufferSize);
    this.ctl = new Int32Array(control);
    this.views = Array.from({ length: K }, (_, k) => Buffer.from(ring, k * bufferSize, bufferSize));
    // Read and write: the thread reads the pack back once it is written.
    this.fd = openSync(path, 'wx+', 0o444);
    const channel = new MessageChannel();
    this.errors = channel.port1;
    const data: WriterThreadData = {
      fd: this.fd,
      path,
      hashLen: algo.len,
      hash: algo.name,
      buffers: K,
      bufferSize,
      control,
      ring,
      offsets: tables.offsets.buffer as SharedArrayBuffer,
      offsets32: tables.offsets instanceof Uint32Array,
      order: tables.order.buffer as SharedArrayBuffer,
      crcs: tables.crcs.buffer as SharedArrayBuffer,
      errors: channel.port2,
    };
    this.worker = new Worker(new URL('./pack-writer-thread.js', import.meta.url), {
      workerData: data,
      transferList: [channel.port2],
    });
    let gotSum: (b: Buffer) => void;
    let gotDurable: () => void;
    let failed: (e: Error) => void;
    this.checksum = new Promise((res, rej) => {
      gotSum = res;
      failed = rej;
    });
    let failedDurable: (e: Error) => void;
    this.durable = new Promise((res, rej) => {
      gotDurable = res;
      failedDurable = rej;
    });
    let readOk: () => void;
    let readBad: (e: Error) => void;
    this.readBack = new Promise((res, rej) => {
      readOk = res;
      readBad = rej;
    });
    // Nobody may be waiting for these when a run is aborted.
    this.checksum.catch(() => {});
    this.durable.catch(() => {});
    this.readBack.catch(() => {});
    const fail = (e: Error): void => {
      this.failure ??= e;
      failed(e);
      failedDurable(e);
      readBad(e);
    };
    this.worker.on(
      'message',
      (m: { checksum?: Uint8Array; durable?: boolean; readBack?: string | null }) => {
        if (m.checksum !== undefined) gotSum(Buffer.from(m.checksum));
        else if (m.readBack === null) readOk();
        else if (m.readBack !== undefined)
          readBad(new GitError('verify-failed', `new pack ${path}: ${m.readBack}`, { file: path }));
        else if (m.durable) gotDurable();
      },
    );
    this.worker.on('error', (e) => fail(e));
    this.worker.on('exit', () =>
      fail(
        this.threadError() ??
          new GitError('io', `the thread writing ${path} stopped`, { file: path }),
      ),
    );
    const head = encodePackHeader(count);
    this.append(head, 0, head.length);
  }

  writeEntry(
    header: Buffer,
    data: Buffer,
    _slot: number,
    headerLen = header.length,
    start = 0,
    end = data.length,
  ): void {
    this.begun++;
    this.append(header, 0, headerLen);
    this.append(data, start, end);
  }

  /** (The writing thread computes the CRC32s as for any entry.) */
  copyEntries(
    data: Buffer,
    start: number,
    end: number,
    _slots: Uint32Array,
    _crcs: Uint32Array,
    n: number,
  ): void {
    this.begun += n;
    this.append(data, start, end);
  }

  /** (The writing thread cuts entries by their offsets: a piece is only more bytes.) */
  appendToEntry(data: Buffer, _slot: number, start = 0, end = data.length): void {
    this.append(data, start, end);
  }

  private append(data: Buffer, start: number, end: number): void {
    // An entry's header (a few bytes) by hand: `copy` and `set` cost more to call than that.
    if (end - start <= SMALL && this.used + (end - start) < this.bufferSize) {
      const v = this.views[this.k]!;
      let u = this.used;
      for (let p = start; p < end; p++) v[u++] = data[p]!;
      this.used = u;
      this.offset += end - start;
      return;
    }
    let p = start;
    while (p < end) {
      const n = Math.min(end - p, this.bufferSize - this.used);
      this.views[this.k]!.set(data.subarray(p, p + n), this.used);
      this.used += n;
      p += n;
      if (this.used === this.bufferSize) this.handOver(false);
    }
    this.offset += end - start;
  }

  /** Hands the current buffer to the thread and waits (blocking) until the next one is free. */
  private handOver(final: boolean): void {
    const K = ThreadedPackWriter.K;
    const k = this.k;
    this.ctl[CTL.used(K, k)] = this.used;
    this.ctl[CTL.begun(K, k)] = this.begun;
    this.ctl[CTL.final(K, k)] = final ? 1 : 0;
    Atomics.store(this.ctl, k, 1);
    Atomics.notify(this.ctl, k);
    this.k = (k + 1) % K;
    this.used = 0;
    if (final) return;
    while (Atomics.load(this.ctl, this.k) !== 0) {
      const e = this.threadError();
      if (e !== undefined) throw e;
      Atomics.wait(this.ctl, this.k, 1, 200);
    }
  }

  /** The thread's error, once it has raised the flag (read from its port without waiting). */
  private threadError(): Error | undefined {
    if (Atomics.load(this.ctl, CTL.error(ThreadedPackWriter.K)) === 0) return undefined;
    if (this.failure === undefined) {
      const m = receiveMessageOnPort(this.errors)?.message as ThreadError | undefined;
      this.failure = systemError(m, this.path);
    }
    return this.failure;
  }

  async finish(): Promise<Finished> {
    this.handOver(true);
    const checksum = await this.checksum.catch((e: Error) => {
      throw this.threadError() ?? e;
    });
    this.offset += checksum.length;
    const durable = this.durable.then(
      () => {
        closeSync(this.fd);
        this.fd = -1;
        this.errors.close();
      },
      (e: Error) => {
        throw this.threadError() ?? e;
      },
    );
    durable.catch(() => {}); // awaited by the caller, but maybe only after it stopped on an error
    return { checksum, durable, readBack: this.readBack };
  }

  async abort(): Promise<void> {
    const K = ThreadedPackWriter.K;
    Atomics.store(this.ctl, CTL.abort(K), 1);
    for (let k = 0; k < K; k++) Atomics.notify(this.ctl, k);
    await this.worker.terminate();
    // Closed only once the thread is gone: it can no longer write to this number.
    if (this.fd >= 0) closeSync(this.fd);
    this.fd = -1;
    this.errors.close();
  }
}
