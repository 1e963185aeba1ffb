import {
  closeSync,
  fsyncSync,
  linkSync,
  mkdirSync,
  openSync,
  readSync,
  renameSync,
  statSync,
  utimesSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import { errnoText } from '../errors.js';
import { crc32, deflateSync } from 'node:zlib';
import { DEFLATE_BLOCK, ParallelDeflate } from '../codec/parallel-deflate.js';
import { IDX_MAGIC, encodeIdxV2 } from '../format/idx.js';
import { OBJ_BLOB } from '../format/object-type.js';
import { encodeEntryHeader, encodePackHeader } from '../format/pack.js';
import { toHex, type HashAlgo } from '../hash/algo.js';
import {
  ContentSizeError,
  HashObjectError,
  UnableToWriteObject,
  ObjectHasher,
  objectHeaderBytes,
} from '../hash/hash-object.js';
import { fsyncDir, tmpPath, unlinkIfExists, writeFileDurable } from './files.js';
import { installPack, listPacks } from './packdir.js';
import { withExt, type FsPath } from './fs-path.js';
import { adjustSharedPerm } from './shared-perm.js';

/**
 * Writing one object the way `git hash-object -w` does: a loose object (`write_loose_object`),
 * or, for a blob above `core.bigFileThreshold`, a pack of its own (`deflate_to_pack` in
 * bulk-checkin.c). Content is streamed from a file descriptor and deflated pigz-style on the
 * thread pool; it is hashed again as it is written, so data that changed since the id was
 * computed is refused ("confused by unstable object source data", as git says).
 */

/** Where and how objects are written (from the repository and its configuration). */
export interface ObjectWriteTarget {
  objectsDir: string;
  /** Alternate object directories: objects found there are not written again. */
  alternates: string[];
  algo: HashAlgo;
  /** `core.looseCompression` (default `core.compression`, else 1). */
  looseCompression: number;
  /** `pack.compression` (default `core.compression`, else -1). */
  packCompression: number;
  /** git's `get_shared_repository()`: 0, 0o660, 0o664, or minus a file mode. */
  sharedRepository: number;
  /** Deflate threads (default: available cores). */
  concurrency?: number;
  /**
   * fsync a loose object (and its directory) before it becomes visible. git 2.39 does so only
   * when `core.fsync` names loose objects or `core.fsyncObjectFiles` is true (not by default);
   * packs are always fsynced, as git's default `core.fsync` says.
   */
  fsyncLoose?: boolean;
}

/** Content to write: in memory, or `size` bytes of a regular file from offset 0. */
export type ContentSource =
  { data: Uint8Array; label: string } | { fd: number; size: number; label: string };

function sourceSize(s: ContentSource): number {
  return 'data' in s ? s.data.length : s.size;
}

// ---------------------------------------------------------------------------------------------
// Existence: `has_object_file` and the freshening `write_object_file` does instead of rewriting.

/** Is `id` listed in this `.idx`? Reads the fanout and the ids of one fanout bucket only. */
export function idxHasObject(idxPath: FsPath, id: Uint8Array, len: number): boolean {
  let fd: number;
  try {
    fd = openSync(idxPath, 'r');
  } catch {
    return false;
  }
  try {
    const head = Buffer.alloc(8);
    if (readSync(fd, head, 0, 8, 0) < 8) return false;
    const v2 = head.readUInt32BE(0) === IDX_MAGIC;
    const fanAt = v2 ? 8 : 0;
    const fan = Buffer.alloc(1024);
    if (readSync(fd, fan, 0, 1024, fanAt) < 1024) return false;
    const first = id[0]!;
    const lo = first === 0 ? 0 : fan.readUInt32BE((first - 1) * 4);
    const hi = fan.readUInt32BE(first * 4);
    if (hi <= lo) return false;
    // v2: ids in one table after the fanout; v1: 4-byte offset then id, per entry.
    const rec = v2 ? len : len + 4;
    const skip = v2 ? 0 : 4;
    const base = fanAt + 1024;
    const n = hi - lo;
    const slice = Buffer.allocUnsafe(n * rec);
    if (readSync(fd, slice, 0, slice.length, base + lo * rec) < slice.length) return false;
    const want = Buffer.from(id.buffer, id.byteOffset, len);
    let a = 0;
    let b = n;
    while (a < b) {
      const mid = (a + b) >>> 1;
      const c = slice.compare(want, 0, len, mid * rec + skip, mid * rec + skip + len);
      if (c === 0) return true;
      if (c < 0) a = mid + 1;
      else b = mid;
    }
    return false;
  } finally {
    closeSync(fd);
  }
}

function loosePathOf(objectsDir: string, hex: string): string {
  return join(objectsDir, hex.slice(0, 2), hex.slice(2));
}

function exists(path: string): boolean {
  try {
    statSync(path);
    return true;
  } catch {
    return false;
  }
}

/** git's `freshen_file`: bump the mtime so that gc sees the object as new. */
function freshenFile(path: FsPath): boolean {
  try {
    const now = new Date();
    utimesSync(path, now, now);
    return true;
  } catch {
    return false;
  }
}

/** `has_object_file`: in a pack or loose, here or in an alternate. */
export function hasObject(t: ObjectWriteTarget, id: Uint8Array): boolean {
  const hex = toHex(id);
  for (const dir of [t.objectsDir, ...t.alternates]) {
    for (const p of listPacks(dir))
      if (idxHasObject(withExt(p.fsBase, '.idx'), id, t.algo.len)) return true;
  }
  for (const dir of [t.objectsDir, ...t.alternates]) if (exists(loosePathOf(dir, hex))) return true;
  return false;
}

/**
 * `freshen_packed_object(oid) || freshen_loose_object(oid)`: true when the object exists and its
 * file could be touched, so that `write_object_file` need not write it. A cruft pack does not count.
 */
export function freshenObject(t: ObjectWriteTarget, id: Uint8Array): boolean {
  const hex = toHex(id);
  let packed = false;
  search: for (const dir of [t.objectsDir, ...t.alternates]) {
    for (const p of listPacks(dir)) {
      if (!idxHasObject(withExt(p.fsBase, '.idx'), id, t.algo.len)) continue;
      packed = !p.cruft && freshenFile(withExt(p.fsBase, '.pack'));
      break search;
    }
  }
  if (packed) return true;
  for (const dir of [t.objectsDir, ...t.alternates]) {
    const f = loosePathOf(dir, hex);
    if (exists(f) && freshenFile(f)) return true;
  }
  return false;
}

// core.sharedRepository: the rule lives in shared-perm.ts (the rewrite applies it too).
export {
  PERM_EVERYBODY,
  PERM_GROUP,
  PERM_UMASK,
  adjustSharedPerm,
  parseSharedRepository,
} from './shared-perm.js';

function ensureDir(dir: string, shared: number): void {
  try {
    mkdirSync(dir, 0o777);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'EEXIST') return;
    throw e;
  }
  adjustSharedPerm(dir, shared);
}

// ---------------------------------------------------------------------------------------------
// Streaming the content through the deflater.

function writeAll(fd: number, data: Uint8Array): void {
  let done = 0;
  while (done < data.length) done += writeSync(fd, data, done, data.length - done);
}

/**
 * Cuts the content (behind an optional in-stream header) into deflate blocks, hashing it again on
 * the way (`verify`). File blocks are fresh buffers: each is owned by its deflate job until done.
 */
async function deflateContent(
  source: ContentSource,
  header: Buffer | undefined,
  level: number,
  concurrency: number | undefined,
  verify: ObjectHasher,
  onOutput: (piece: Buffer) => void,
): Promise<void> {
  const size = sourceSize(source);
  const hlen = header?.length ?? 0;
  if (hlen + size <= DEFLATE_BLOCK) {
    // One block: a plain deflate on this thread is the cheapest.
    let content: Uint8Array;
    if ('data' in source) content = source.data;
    else {
      const buf = Buffer.allocUnsafe(size);
      readExact(source.fd, buf, 0, size, 0, source.label);
      checkEof(source.fd, size, source.label);
      content = buf;
    }
    verify.update(content);
    const input = header ? Buffer.concat([header, content]) : content;
    onOutput(deflateSync(input, { level }));
    return;
  }
  const pd = new ParallelDeflate({
    level,
    ...(concurrency !== undefined ? { concurrency } : {}),
    onOutput,
  });
  try {
    let pos = 0;
    let first = true;
    while (first || pos < size) {
      const room = DEFLATE_BLOCK - (first ? hlen : 0);
      const n = Math.min(room, size - pos);
      const off = first ? hlen : 0;
      let block: Buffer;
      if ('data' in source) {
        const part = Buffer.from(source.data.buffer, source.data.byteOffset + pos, n);
        block = first && header ? Buffer.concat([header, part]) : part;
      } else {
        block = pd.acquire().subarray(0, off + n);
        if (first && header) header.copy(block, 0);
        readExact(source.fd, block, off, n, pos, source.label);
      }
      pos += n;
      first = false;
      const last = pos >= size;
      if (last && !('data' in source)) checkEof(source.fd, size, source.label);
      // The job is queued before push's first await: hash the block while the pool deflates it.
      const queued = pd.push(block, last);
      verify.update(block.subarray(off));
      await queued;
    }
    await pd.end();
  } catch (e) {
    pd.abandon();
    throw e;
  }
}

function readExact(
  fd: number,
  buf: Buffer,
  off: number,
  n: number,
  pos: number,
  label: string,
): void {
  let got = 0;
  while (got < n) {
    const r = readSync(fd, buf, off + got, n - got, pos + got);
    if (r === 0) throw new ContentSizeError(pos + n, pos + got, label);
    got += r;
  }
}

function checkEof(fd: number, size: number, label: string): void {
  if (readSync(fd, Buffer.allocUnsafe(1), 0, 1, size) !== 0)
    throw new ContentSizeError(size, size + 1, label);
}

function unstable(id: Uint8Array): HashObjectError {
  return new HashObjectError('io', `confused by unstable object source data for ${toHex(id)}`);
}

function createFailure(e: unknown, objectsDir: string): HashObjectError {
  const err = e as NodeJS.ErrnoException;
  if (err.code === 'EACCES' || err.code === 'EPERM')
    return new UnableToWriteObject(
      [`insufficient permission for adding an object to repository database ${objectsDir}`],
      e,
    );
  return new UnableToWriteObject([`unable to create temporary file: ${errnoText(e)}`], e);
}

/** git's `finalize_object_file`: hard link into place (an existing object wins), else rename. */
function finalizeObjectFile(tmp: string, final: string): void {
  try {
    linkSync(tmp, final);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code !== 'EEXIST') renameSync(tmp, final);
  }
  unlinkIfExists(tmp);
}

/**
 * Writes `id` as a loose object: `zlib("<type> <size>\0" + content)` at `core.looseCompression`,
 * into a temporary file in its fan-out directory, fsynced if `t.fsyncLoose` is not false, then
 * linked into place read-only.
 * The caller has checked (`freshenObject`) that it does not exist yet.
 */
export async function writeLooseObject(
  t: ObjectWriteTarget,
  type: string,
  id: Uint8Array,
  source: ContentSource,
): Promise<string> {
  const hex = toHex(id);
  const dir = join(t.objectsDir, hex.slice(0, 2));
  const final = join(dir, hex.slice(2));
  let tmp: string;
  let fd: number;
  try {
    ensureDir(dir, t.sharedRepository);
    tmp = tmpPath(dir, 'obj');
    fd = openSync(tmp, 'wx', 0o444);
  } catch (e) {
    throw createFailure(e, t.objectsDir);
  }
  let done = false;
  try {
    const size = sourceSize(source);
    const verify = new ObjectHasher(t.algo, type, size, source.label);
    await deflateContent(
      source,
      objectHeaderBytes(type, size),
      t.looseCompression,
      t.concurrency,
      verify,
      (piece) => writeAll(fd, piece),
    );
    if (!verify.digest().equals(id)) throw unstable(id);
    if (t.fsyncLoose !== false) fsyncSync(fd);
    closeSync(fd);
    fd = -1;
    finalizeObjectFile(tmp, final);
    adjustSharedPerm(final, t.sharedRepository);
    if (t.fsyncLoose !== false) fsyncDir(dir);
    done = true;
    return final;
  } finally {
    if (fd >= 0) closeSync(fd);
    if (!done) unlinkIfExists(tmp);
  }
}

/**
 * bulk-checkin's `deflate_to_pack` for one blob: `objects/pack/pack-<hash>.pack` holding the blob
 * alone (deflated at `pack.compression`, CRC32 and pack hash computed as it is written) and its
 * `.idx` v2; installed `.pack` first, `.idx` last. The caller has checked `hasObject`.
 */
export async function writeBulkCheckinPack(
  t: ObjectWriteTarget,
  id: Uint8Array,
  source: ContentSource,
): Promise<{ pack: string; idx: string }> {
  const packDir = join(t.objectsDir, 'pack');
  let tmp: string;
  let fd: number;
  try {
    ensureDir(packDir, t.sharedRepository);
    tmp = tmpPath(packDir, 'pack');
    fd = openSync(tmp, 'wx', 0o444);
  } catch (e) {
    throw createFailure(e, t.objectsDir);
  }
  let tmpIdx: string | undefined;
  let done = false;
  try {
    const size = sourceSize(source);
    const packHash = t.algo.create();
    let crc = 0;
    const write = (b: Buffer, entry: boolean): void => {
      writeAll(fd, b);
      packHash.update(b);
      if (entry && b.length > 0) crc = crc32(b, crc); // crc32 of nothing is 0 in Node, whatever it continues
    };
    write(encodePackHeader(1), false);
    const eh = Buffer.alloc(16);
    write(eh.subarray(0, encodeEntryHeader(OBJ_BLOB, size, eh, 0)), true);
    const verify = new ObjectHasher(t.algo, 'blob', size, source.label);
    await deflateContent(source, undefined, t.packCompression, t.concurrency, verify, (piece) =>
      write(piece, true),
    );
    if (!verify.digest().equals(id)) throw unstable(id);
    const checksum = packHash.digest();
    writeAll(fd, checksum);
    fsyncSync(fd);
    closeSync(fd);
    fd = -1;
    const idx = encodeIdxV2(
      {
        count: 1,
        ids: Buffer.from(id),
        offsets: Float64Array.of(12),
        crcs: Uint32Array.of(crc >>> 0),
      },
      checksum,
      t.algo,
    );
    tmpIdx = tmpPath(packDir, 'idx');
    writeFileDurable(tmpIdx, idx);
    adjustSharedPerm(tmp, t.sharedRepository);
    adjustSharedPerm(tmpIdx, t.sharedRepository);
    const base = installPack(packDir, toHex(checksum), { pack: tmp, idx: tmpIdx });
    fsyncDir(packDir);
    done = true;
    return { pack: base + '.pack', idx: base + '.idx' };
  } finally {
    if (fd >= 0) closeSync(fd);
    if (!done) {
      unlinkIfExists(tmp);
      if (tmpIdx !== undefined) unlinkIfExists(tmpIdx);
    }
  }
}
