import { readSync } from 'node:fs';
import type { Hash } from 'node:crypto';
import { GitError, type ErrorCode } from '../errors.js';
import { SHA1, type HashAlgo } from './algo.js';

/**
 * The streaming object hasher: `"<type> <size>\0"` then the content, through the repository's
 * hash, in one pass and constant memory (git's `hash_object_file`, without `index_stream`'s deflate).
 */

/**
 * `"<type> <size>\0"` with the type's bytes as given (UTF-8): `--literally -t <anything>` hashes
 * the type exactly as git does, which a latin1 encoding would not.
 */
export function objectHeaderBytes(type: string, size: number): Buffer {
  return Buffer.from(`${type} ${size}\0`, 'utf8');
}

/** Read size of the synchronous loop: 64 KiB–1 MiB measure the same; larger chunks fall out of cache. */
export const HASH_CHUNK = 1 << 20;

/**
 * A failure of hash-object, in git's shape: `error:` lines (`details`) printed before `fatal: message`.
 * git prints `error: short read while indexing f` then `fatal: Unable to hash f`, for example.
 */
export class HashObjectError extends GitError {
  constructor(
    code: ErrorCode,
    message: string,
    readonly details: string[] = [],
    where?: { file?: string; cause?: unknown },
  ) {
    super(code, message, where);
    this.name = 'HashObjectError';
  }
}

/** git's `unable to write object` (object-file.c), which hash-object words after the file it was adding. */
export class UnableToWriteObject extends HashObjectError {
  constructor(details: string[], cause: unknown) {
    super('io', 'unable to write object', details, { cause });
    this.name = 'UnableToWriteObject';
  }
}

/** The content ended before, or went on past, the size its header declared. */
export class ContentSizeError extends HashObjectError {
  constructor(
    readonly expected: number,
    readonly actual: number,
    label: string,
  ) {
    super(
      'io',
      `Unable to hash ${label}`,
      [
        actual < expected
          ? `short read while indexing ${label}`
          : `${label} grew while being indexed (more than ${expected} bytes)`,
      ],
      { file: label },
    );
  }
}

/** An object id computed incrementally over content whose size is known before it is read. */
export class ObjectHasher {
  private readonly hash: Hash;
  /** Content bytes seen so far (the header excluded). */
  received = 0;

  constructor(
    readonly algo: HashAlgo,
    readonly type: string,
    readonly size: number,
    readonly label = '(null)',
  ) {
    this.hash = algo.create();
    this.hash.update(objectHeaderBytes(type, size));
  }

  update(chunk: Uint8Array): void {
    this.received += chunk.length;
    if (this.received > this.size) throw new ContentSizeError(this.size, this.received, this.label);
    this.hash.update(chunk);
  }

  /** The id; throws if fewer bytes than declared were seen. */
  digest(): Buffer {
    if (this.received !== this.size)
      throw new ContentSizeError(this.size, this.received, this.label);
    return this.hash.digest();
  }
}

export interface HashObjectOptions {
  /** SHA-1 unless given (git outside a repository). */
  algo?: HashAlgo;
  /**
   * The content's size, when known: the stream is then hashed as it arrives and must be exactly
   * this long. Without it the content is collected first, as git's `index_pipe` does for a pipe.
   */
  size?: number;
  /** How errors name the content. */
  label?: string;
}

/**
 * The object id of a stream's content as `type` (the library entry point reused by the tool).
 * With `opts.size` memory stays constant; without it the stream is held until its end, since the
 * header carries the size.
 */
export async function hashObject(
  source: AsyncIterable<Uint8Array> | Iterable<Uint8Array>,
  type: string,
  opts: HashObjectOptions = {},
): Promise<Buffer> {
  const algo = opts.algo ?? SHA1;
  if (opts.size !== undefined) {
    const h = new ObjectHasher(algo, type, opts.size, opts.label);
    for await (const chunk of source) h.update(chunk);
    return h.digest();
  }
  const chunks: Uint8Array[] = [];
  let total = 0;
  for await (const chunk of source) {
    chunks.push(chunk);
    total += chunk.length;
  }
  const h = new ObjectHasher(algo, type, total, opts.label);
  for (const c of chunks) h.update(c);
  return h.digest();
}

/**
 * Hashes `size` bytes of a regular file from offset 0 with large synchronous reads (measured faster
 * than a read stream, and nothing else runs meanwhile). Detects a file that shrinks or grows while
 * it is read: git would hash a stale or short snapshot. The last read asks for one byte more than
 * is left, so a file that fits the buffer costs one read. `inspect` sees each chunk of content.
 */
export function hashFdSync(
  fd: number,
  type: string,
  size: number,
  algo: HashAlgo,
  label: string,
  buf: Buffer = Buffer.allocUnsafe(HASH_CHUNK),
  inspect?: (chunk: Buffer) => void,
): Buffer {
  const h = new ObjectHasher(algo, type, size, label);
  let pos = 0;
  for (;;) {
    const left = size - pos;
    const want = Math.min(buf.length, left + 1);
    const n = readSync(fd, buf, 0, want, pos);
    if (n > left) throw new ContentSizeError(size, size + 1, label);
    if (n === 0 && left > 0) throw new ContentSizeError(size, pos, label);
    if (n > 0) {
      const chunk = n === buf.length ? buf : buf.subarray(0, n);
      h.update(chunk);
      inspect?.(chunk);
    }
    pos += n;
    // A short read of a regular file is its end (the read asked for more than was left).
    if (n === 0 || (n === left && want > left)) break;
  }
  return h.digest();
}

/** Reads exactly `size` bytes of a regular file into memory (same size checks as `hashFdSync`). */
export function readFdExact(fd: number, size: number, label: string): Buffer {
  const out = Buffer.allocUnsafe(size);
  let pos = 0;
  while (pos < size) {
    const n = readSync(fd, out, pos, Math.min(HASH_CHUNK, size - pos), pos);
    if (n === 0) throw new ContentSizeError(size, pos, label);
    pos += n;
  }
  if (readSync(fd, Buffer.allocUnsafe(1), 0, 1, pos) !== 0)
    throw new ContentSizeError(size, size + 1, label);
  return out;
}

// ---------------------------------------------------------------------------------------------
// HASH_FORMAT_CHECK: what `index_mem` verifies before it hashes a commit, tree or tag.

export type ObjectTypeName = 'commit' | 'tree' | 'blob' | 'tag';

/**
 * git's in-process object table as far as hash-object touches it: `lookup_tree`, `lookup_commit`…
 * register an id with a type, and a later lookup of the same id as another type fails
 * (`object_as_type`). It lives as long as one command, like git's.
 */
export class ObjectTypeTable {
  private readonly types = new Map<string, ObjectTypeName>();

  /** Registers `hex` as `type`; on a clash returns git's error line instead. */
  lookup(hex: string, type: ObjectTypeName): string | undefined {
    const have = this.types.get(hex);
    if (have === undefined) {
      this.types.set(hex, type);
      return undefined;
    }
    return have === type ? undefined : `object ${hex} is a ${have}, not a ${type}`;
  }
}

function startsWithAscii(buf: Uint8Array, pos: number, end: number, s: string): boolean {
  if (pos + s.length > end) return false;
  for (let i = 0; i < s.length; i++) if (buf[pos + i] !== s.charCodeAt(i)) return false;
  return true;
}

/** `get_oid_hex`: exactly `hexsz` hex digits (either case); the id in lower case, or undefined. */
function parseHexAt(buf: Uint8Array, pos: number, end: number, hexsz: number): string | undefined {
  if (pos + hexsz > end) return undefined;
  let s = '';
  for (let i = pos; i < pos + hexsz; i++) {
    const c = buf[i]!;
    if ((c >= 0x30 && c <= 0x39) || (c >= 0x61 && c <= 0x66)) s += String.fromCharCode(c);
    else if (c >= 0x41 && c <= 0x46) s += String.fromCharCode(c + 0x20);
    else return undefined;
  }
  return s;
}

function corruptObject(fatal: string, details: string[]): HashObjectError {
  return new HashObjectError('bad-object', fatal, details);
}

/** git's `parse_commit_buffer` as `check_commit` runs it (the commit's own id is still all zeros). */
function checkCommit(buf: Uint8Array, algo: HashAlgo, table: ObjectTypeTable): void {
  const hexsz = algo.len * 2;
  const zero = '0'.repeat(hexsz);
  const treeEntryLen = hexsz + 5;
  const parentEntryLen = hexsz + 7;
  const tail = buf.length;
  const fail = (...lines: string[]): never => {
    throw corruptObject('corrupt commit', lines);
  };
  if (
    tail <= treeEntryLen + 1 ||
    !startsWithAscii(buf, 0, tail, 'tree ') ||
    buf[treeEntryLen] !== 0x0a
  ) {
    fail(`bogus commit object ${zero}`);
  }
  const tree = parseHexAt(buf, 5, tail, hexsz);
  if (tree === undefined) fail(`bad tree pointer in commit ${zero}`);
  const clash = table.lookup(tree!, 'tree');
  if (clash !== undefined) fail(clash, `bad tree pointer ${tree} in commit ${zero}`);
  let p = treeEntryLen + 1;
  while (p + parentEntryLen < tail && startsWithAscii(buf, p, tail, 'parent ')) {
    const parent = parseHexAt(buf, p + 7, tail, hexsz);
    if (
      tail <= p + parentEntryLen + 1 ||
      parent === undefined ||
      buf[p + parentEntryLen] !== 0x0a
    ) {
      fail(`bad parents in commit ${zero}`);
    }
    p += parentEntryLen + 1;
    const c = table.lookup(parent!, 'commit');
    if (c !== undefined) fail(c, `bad parent ${parent} in commit ${zero}`);
  }
}

/** git's `parse_tag_buffer` as `check_tag` runs it. */
function checkTag(buf: Uint8Array, algo: HashAlgo, table: ObjectTypeTable): void {
  const hexsz = algo.len * 2;
  const zero = '0'.repeat(hexsz);
  const tail = buf.length;
  const fail = (...lines: string[]): never => {
    throw corruptObject('corrupt tag', lines);
  };
  if (tail < hexsz + 24) fail();
  const target = startsWithAscii(buf, 0, tail, 'object ')
    ? parseHexAt(buf, 7, tail, hexsz)
    : undefined;
  if (target === undefined || buf[7 + hexsz] !== 0x0a) fail();
  let p = 8 + hexsz;
  if (!startsWithAscii(buf, p, tail, 'type ')) fail();
  p += 5;
  let nl = buf.indexOf(0x0a, p);
  if (nl < 0 || nl - p >= 20) fail();
  // The type is copied into a C string: a NUL inside it ends it.
  let typeEnd = buf.indexOf(0, p);
  if (typeEnd < 0 || typeEnd > nl) typeEnd = nl;
  const type = Buffer.from(buf.buffer, buf.byteOffset + p, typeEnd - p).toString('latin1');
  p = nl + 1;
  if (type !== 'blob' && type !== 'tree' && type !== 'commit' && type !== 'tag') {
    fail(`unknown tag type '${type}' in ${zero}`);
  }
  const clash = table.lookup(target!, type as ObjectTypeName);
  if (clash !== undefined) fail(clash, `bad tag pointer to ${target} in ${zero}`);
  if (!(p + 4 < tail && startsWithAscii(buf, p, tail, 'tag '))) fail();
  p += 4;
  nl = buf.indexOf(0x0a, p);
  if (nl < 0) fail();
}

/** git's `check_tree`: every entry decodes (`decode_tree_entry`, `update_tree_entry`), or it dies. */
function checkTree(buf: Uint8Array, algo: HashAlgo): void {
  const raw = algo.len;
  const die = (msg: string): never => {
    throw corruptObject(msg, []);
  };
  let off = 0;
  let size = buf.length;
  /** Returns where the entry ends. */
  const decode = (): number => {
    if (size < raw + 3 || buf[off + size - (raw + 1)] !== 0) die('too-short tree object');
    // get_mode: octal digits up to a space; a leading space is malformed.
    let i = off;
    if (buf[i] === 0x20) die('malformed mode in tree entry');
    for (;;) {
      const c = buf[i++]!;
      if (c === 0x20) break;
      if (c < 0x30 || c > 0x37) die('malformed mode in tree entry');
    }
    if (buf[i] === 0) die('empty filename in tree entry');
    const nul = buf.indexOf(0, i);
    return nul + 1 + raw;
  };
  if (size === 0) return;
  let end = decode();
  for (;;) {
    const len = end - off;
    if (size < len) die('too-short tree file');
    off = end;
    size -= len;
    if (size === 0) return;
    end = decode();
  }
}

/** `index_mem`'s HASH_FORMAT_CHECK for `type` (blobs are not checked). */
export function checkObjectFormat(
  type: string,
  content: Uint8Array,
  algo: HashAlgo,
  table: ObjectTypeTable,
): void {
  if (type === 'commit') checkCommit(content, algo, table);
  else if (type === 'tree') checkTree(content, algo);
  else if (type === 'tag') checkTag(content, algo, table);
}
