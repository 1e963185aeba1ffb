import { closeSync, openSync, readSync } from 'node:fs';
import { GitError, corrupt } from '../errors.js';
import type { Hash } from 'node:crypto';
import type { HashAlgo } from '../hash/algo.js';
import { OBJ_BLOB, isBaseType } from '../format/object-type.js';
import {
  MAX_ENTRY_HEADER,
  encodeEntryHeader,
  encodePackHeader,
  parseEntryHeader,
} from '../format/pack.js';
import type { Finished, PackSink } from '../format/pack-writer.js';
import type { RewriteOutput } from './sink.js';

/**
 * The entries of a new pack whose bytes the rewrite writes anew (every entry re-encoded, every
 * loose object packed, every delta written whole: `sel`), sent as a pack of their own to `git
 * index-pack` while the rewrite writes them: git inflates each, hashes each whole object, and
 * each of their ids must come back in its index (`wholeNotIndexed`). A delta is sent as a blob of
 * its own data (git inflates every byte of it and checks its declared size, without resolving the
 * chain: resolving git.git's tree deltas means hashing 5.8 GB of trees). Entries copied byte for
 * byte under a verified CRC32 are not sent. What git reads is what is written: the same bytes,
 * whose CRC32s our proof then holds the file on disk against.
 */
export interface ChangedDestination {
  /** Takes `chunk`, the destination's until it calls `taken` (then it may be filled again). */
  write(chunk: Buffer, taken?: () => void): void;
  /** Undefined, or a promise that resolves once the destination has room again. */
  ready(): Promise<void> | undefined;
  /** Resolves once all that was written has been handed on (see `IndexPackStream.drained`). */
  drained(): Promise<void>;
  /** Everything is sent: what git must give back. */
  end(sent: ChangedPack): void;
  /** The rewrite failed. */
  abort(): void;
}

/** The pack of changed entries: how many, and which whole objects git must hash to their ids. */
export interface ChangedPack {
  count: number;
  /** By idx rank of the new pack: 1 for a whole object sent (git's index must list its id). */
  whole: Uint8Array;
}

/** The pack of changed entries is handed on in pieces of this many bytes. */
const PIECE = 256 << 10;

/**
 * A pack sink that writes through to `inner` and sends the entries `sel` marks (non-zero, by
 * slot) to `dest` as a pack of `count` entries: header, entries (a delta as a blob of its data),
 * trailer. `sel[slot]` becomes 2 for a whole object sent.
 */
class ChangedTee implements PackSink {
  private piece: Buffer = Buffer.allocUnsafe(PIECE);
  /** Pieces git has taken, to be filled again (a fresh one each time was 40 MiB more peak on git.git, waiting for V8's collector). */
  private readonly spare: Buffer[] = [];
  private used = 0;
  private sending = false;
  private sent = 0;
  private readonly hash: Hash;
  private readonly hdr = Buffer.allocUnsafe(MAX_ENTRY_HEADER);

  constructor(
    private readonly inner: PackSink,
    private readonly sel: Uint8Array,
    readonly count: number,
    private readonly algo: HashAlgo,
    private readonly dest: ChangedDestination,
  ) {
    this.hash = algo.create();
    const head = encodePackHeader(count);
    this.put(head, 0, head.length);
  }

  get offset(): number {
    return this.inner.offset;
  }

  writeEntry(
    header: Buffer,
    data: Buffer,
    slot: number,
    headerLen = header.length,
    start = 0,
    end = data.length,
  ): void {
    this.inner.writeEntry(header, data, slot, headerLen, start, end);
    this.sending = this.sel[slot] !== 0;
    if (!this.sending) return;
    const h = parseEntryHeader(
      header,
      0,
      headerLen,
      this.algo.len,
      'the new pack',
      this.inner.offset,
    );
    const whole = isBaseType(h.type);
    this.put(this.hdr, 0, encodeEntryHeader(whole ? h.type : OBJ_BLOB, h.size, this.hdr, 0));
    this.put(data, start, end);
    if (whole) this.sel[slot] = 2;
    this.sent++;
  }

  /** Entries copied unchanged are never sent: git's check is for what was written anew. */
  copyEntries(
    data: Buffer,
    start: number,
    end: number,
    slots: Uint32Array,
    crcs: Uint32Array,
    n: number,
  ): void {
    for (let k = 0; k < n; k++)
      if (this.sel[slots[k]!] !== 0)
        throw new Error(`entry ${slots[k]} is to be checked by git but was copied unchanged`);
    this.sending = false;
    this.inner.copyEntries(data, start, end, slots, crcs, n);
  }

  appendToEntry(data: Buffer, slot: number, start = 0, end = data.length): void {
    this.inner.appendToEntry(data, slot, start, end);
    if (this.sending) this.put(data, start, end);
  }

  /** The trailer: every entry `sel` marked must have been sent. */
  end(): void {
    if (this.sent !== this.count)
      throw new Error(`the pack of changed entries has ${this.sent} entries, not ${this.count}`);
    this.handOn();
    this.dest.write(this.hash.digest());
  }

  finish(): Promise<Finished> {
    return this.inner.finish();
  }

  abort(): Promise<void> {
    this.dest.abort();
    return this.inner.abort();
  }

  private put(src: Uint8Array, start: number, end: number): void {
    while (start < end) {
      const n = Math.min(end - start, PIECE - this.used);
      this.piece.set(src.subarray(start, start + n), this.used);
      this.used += n;
      start += n;
      if (this.used === PIECE) this.handOn();
    }
  }

  private handOn(): void {
    if (this.used === 0) return;
    const full = this.piece;
    const done = full.subarray(0, this.used);
    this.hash.update(done);
    this.dest.write(done, () => this.spare.push(full));
    this.piece = this.spare.pop() ?? Buffer.allocUnsafe(PIECE);
    this.used = 0;
  }
}

/**
 * The output `open` makes, with the entries `sel` marks sent to the destination `start` makes
 * as they are written (see ChangedTee): the trailer goes once the last entry is written, and
 * `dest.end` gets, by rank of the new index, the whole objects sent.
 */
export function withChangedCheck(
  open: () => RewriteOutput,
  sel: Uint8Array,
  algo: HashAlgo,
  start: () => ChangedDestination,
): RewriteOutput {
  const dest = start();
  let inner: RewriteOutput;
  try {
    inner = open();
  } catch (e) {
    dest.abort();
    throw e;
  }
  let count = 0;
  for (let s = 0; s < sel.length; s++) if (sel[s] !== 0) count++;
  const tee = new ChangedTee(inner.sink, sel, count, algo, dest);
  return {
    sink: tee,
    writes: inner.writes,
    ready: () => dest.ready(),
    async complete(makeIndex) {
      tee.end();
      // git gets the rest of its input before the index is built: that work and our proof run
      // on this thread without a turn of the event loop, and git would wait for them idle.
      await dest.drained();
      return inner.complete(() => {
        const index = makeIndex();
        const whole = new Uint8Array(index.count);
        for (let r = 0; r < index.count; r++) whole[r] = sel[index.sorted[r]!] === 2 ? 1 : 0;
        dest.end({ count, whole });
        return index;
      });
    },
  };
}

/**
 * Did git index every whole object of the pack of changed entries under the id the new pack's
 * idx gives it? Both indexes are sorted by id: one merge, a chunk of each at a time. Every
 * position `cp.whole` marks must be found in git's index (`idxPath`), which must hold
 * `cp.count` objects. Returns what is wrong (the first object not found, as hex), or undefined.
 */
export function wholeNotIndexed(
  idxPath: string,
  cp: ChangedPack,
  newIdxPath: string,
  algo: HashAlgo,
): string | undefined {
  const len = algo.len;
  const theirs = new IdReader(idxPath, len);
  const ours = new IdReader(newIdxPath, len);
  try {
    if (theirs.count !== cp.count) return `git indexed ${theirs.count} objects of ${cp.count}`;
    // Ids are compared where they lie in each reader's chunk: no view per id (a subarray costs
    // more than the comparison, in code that runs once and is never optimised).
    for (let j = 0; j < ours.count; j++) {
      const at = ours.next();
      if (cp.whole[j] !== 1) continue;
      let c = -1;
      while (theirs.left > 0) {
        const t = theirs.peek();
        c = theirs.buf.compare(ours.buf, at, at + len, t, t + len);
        if (c >= 0) break;
        theirs.next();
      }
      if (c !== 0) return ours.buf.toString('hex', at, at + len);
    }
    return undefined;
  } finally {
    theirs.close();
    ours.close();
  }
}

/** The ids of an idx v2 in order, read a chunk at a time; each is at an offset of `buf`. */
class IdReader {
  private readonly fd: number;
  readonly count: number;
  readonly buf: Buffer;
  private at = 0;
  private pos = 0;
  private have = 0;

  constructor(
    private readonly path: string,
    private readonly len: number,
  ) {
    this.fd = openSync(path, 'r');
    const head = readExactly(this.fd, path, 0, 8 + 1024);
    if (head.readUInt32BE(0) !== 0xff744f63 || head.readUInt32BE(4) !== 2)
      throw corrupt('verify-failed', path, 0, 'not an index version 2');
    this.count = head.readUInt32BE(8 + 1020);
    this.buf = Buffer.allocUnsafe(4096 * len);
  }

  get left(): number {
    return this.count - this.at;
  }

  /** Where in `buf` the next id is (read in, if its chunk is not). */
  peek(): number {
    if (this.pos === this.have) {
      const m = Math.min(4096, this.count - this.at);
      readExactly(this.fd, this.path, 8 + 1024 + this.at * this.len, m * this.len, this.buf);
      this.pos = 0;
      this.have = m;
    }
    return this.pos * this.len;
  }

  /** `peek`, and moves past that id. */
  next(): number {
    const at = this.peek();
    this.pos++;
    this.at++;
    return at;
  }

  close(): void {
    closeSync(this.fd);
  }
}

function readExactly(fd: number, path: string, at: number, bytes: number, into?: Buffer): Buffer {
  const buf: Buffer = (into ?? Buffer.allocUnsafe(bytes)).subarray(0, bytes);
  for (let done = 0; done < bytes;) {
    const n = readSync(fd, buf, done, bytes - done, at + done);
    if (n === 0) throw new GitError('verify-failed', `${path}: ends before offset ${at + bytes}`);
    done += n;
  }
  return buf;
}
