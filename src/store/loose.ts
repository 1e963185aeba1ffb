import {
  closeSync,
  constants,
  createReadStream,
  fstatSync,
  openSync,
  readFileSync,
  readSync,
  readdirSync,
  statSync,
} from 'node:fs';
import { basename, dirname, join, sep } from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { GitError, corrupt } from '../errors.js';
import { inflateLoose, inflateLooseHead, inflateStream, looseStreamError } from '../codec/zlib.js';
import { toHex, type HashAlgo } from '../hash/algo.js';
import { typeFromName, type BaseType } from '../format/object-type.js';

export interface LooseObject {
  type: BaseType;
  data: Buffer;
}

/** `join(objectsDir, '')` of the last objectsDir: join's normalising, once a run, not per id. */
let lastDir: string | undefined;
let lastPrefix = '';

export function loosePath(objectsDir: string, id: Uint8Array): string {
  // (Buffer's native hex: toHex's string of 20 pieces is flattened again by each slice)
  const hex = Buffer.from(id.buffer, id.byteOffset, id.byteLength).toString('hex');
  if (objectsDir !== lastDir) {
    // (hex parts have no '.' nor separator: join would change nothing after the prefix)
    lastPrefix = join(objectsDir, '00').slice(0, -2);
    lastDir = objectsDir;
  }
  return lastPrefix + hex.slice(0, 2) + sep + hex.slice(2);
}

/** `"<type> <size>\0"` at the start of a loose object (git's `parse_loose_header`). */
function parseLooseHeader(
  buf: Buffer,
  file: string,
): { type: BaseType; size: number; len: number } {
  const h = splitLooseHeader(buf, 64);
  const type = h === undefined ? undefined : typeFromName(h.typeName);
  if (h === undefined || type === undefined)
    throw corrupt('bad-object', file, 0, 'bad loose object header');
  return { type, size: h.size, len: h.len };
}

/** A header's type name (any, as with git's OBJECT_INFO_ALLOW_UNKNOWN_TYPE), size and length; undefined when malformed. */
function splitLooseHeader(
  buf: Buffer,
  maxLen: number,
): { typeName: string; size: number; len: number } | undefined {
  const nul = buf.indexOf(0);
  const sp = buf.indexOf(0x20);
  if (nul < 0 || sp <= 0 || sp > nul || nul > maxLen) return undefined;
  const sizeText = buf.toString('latin1', sp + 1, nul);
  if (!/^(0|[1-9]\d*)$/.test(sizeText)) return undefined;
  return { typeName: buf.toString('latin1', 0, sp), size: Number(sizeText), len: nul + 1 };
}

/**
 * Loose files read whole by `unknownLooseType` (the selection's look at every header), kept with
 * their header for `readLooseOrHeader` (the rewrite's) to take instead of reading each file again:
 * one read per file. Only files up to KEEP_FILE bytes, KEEP_BYTES in all; each is taken once. A
 * loose object never changes under its name, and the rewrite hashes what it packs.
 */
const kept = new Map<string, { comp: Buffer; header: LooseHeader }>();
let keptBytes = 0;
const KEEP_FILE = 16 << 10;
const KEEP_BYTES = 16 << 20;
let keepRoom: Buffer | undefined;
const { O_RDONLY, O_NONBLOCK } = constants;

/**
 * The type a loose object's header names when it is none of git's four (written by `git
 * hash-object --literally -t <type>`): no pack can hold it. Undefined for the four, and for a
 * header that cannot be read (the reader that needs the object then says why). One open and one
 * read of the file: O_NONBLOCK, so a FIFO in its place never blocks; no fstat, for a short read is
 * the end of a regular file, and anything else fails its header or, packed, its id.
 */
export function unknownLooseType(file: string): string | undefined {
  try {
    const room = (keepRoom ??= Buffer.allocUnsafeSlow(KEEP_FILE));
    const fd = openSync(file, O_RDONLY | O_NONBLOCK);
    let got: number;
    try {
      got = readSync(fd, room, 0, KEEP_FILE, 0);
    } finally {
      closeSync(fd);
    }
    const comp = room.subarray(0, got);
    // 65 bytes hold the header of any object to pack (headerOf); a longer one names another type
    let head = inflateLooseHead(comp.subarray(0, 512), 65, file);
    if (head.length === 65 && !head.includes(0))
      head = inflateLooseHead(comp.subarray(0, 512), 4096, file);
    // A type name longer than that: 512 bytes of deflate inflate to at most ~530 KiB.
    if (head.length === 4096 && !head.includes(0))
      head = inflateLooseHead(comp.subarray(0, 512), 1 << 20, file);
    const h = splitLooseHeader(head, head.length);
    if (h === undefined) return undefined;
    const type = typeFromName(h.typeName);
    if (type === undefined) return h.typeName;
    // the whole file of an object to pack, kept with its header (parseLooseHeader's bound on it)
    if (got < KEEP_FILE && h.len <= 65 && keptBytes + got <= KEEP_BYTES) {
      kept.set(file, { comp: Buffer.from(comp), header: { type, size: h.size, len: h.len } });
      keptBytes += comp.length;
    }
  } catch {
    return undefined;
  }
  return undefined;
}

/** The size of a loose object's file: the kept one's, else stat's (0 when it is gone). */
export function looseFileSize(file: string): number {
  return kept.get(file)?.comp.length ?? statSync(file, { throwIfNoEntry: false })?.size ?? 0;
}

/**
 * Reads a loose object. The header is inflated first from a prefix (like `unpack_loose_header`),
 * so the declared size bounds the allocation of the whole object.
 */
export function readLooseFile(file: string): LooseObject {
  return asLooseError(file, () => readLoose(file));
}

/** git's `loose object <id> (stored in <file>) is corrupt` (object-file.c) for a damage found in `f`. */
function asLooseError<T>(file: string, f: () => T): T {
  try {
    return f();
  } catch (e) {
    // git's `loose object <id> (stored in <file>) is corrupt` (object-file.c).
    if (!(e instanceof GitError) || e.code !== 'bad-object') throw e;
    const hex = basename(dirname(file)) + basename(file);
    throw new GitError(
      'bad-object',
      `loose object ${hex} (stored in ${file}) is corrupt: ${e.detail}`,
      { file, offset: 0, objectId: hex, detail: e.detail, cause: e },
    );
  }
}

function readLoose(file: string): LooseObject {
  return decodeLoose(readFileSync(file), file);
}

/** A loose object from its whole file `comp`: its header bounds the inflate (git's `unpack_loose_rest`). */
function decodeLoose(comp: Buffer, file: string): LooseObject {
  const h = headerOf(comp, file);
  return { type: h.type, data: inflateLoose(comp, h.len, h.size, file) };
}

/** A loose object's header: its type, size and length, from the first bytes of `comp` (the file, or its start). */
function headerOf(comp: Buffer, file: string): { type: BaseType; size: number; len: number } {
  // 65 bytes hold any header parseLooseHeader accepts (its NUL within the first 64)
  return parseLooseHeader(inflateLooseHead(comp.subarray(0, 512), 65, file), file);
}

export interface LooseHeader {
  type: BaseType;
  size: number;
  /** Length of `"<type> <size>\0"`. */
  len: number;
}

/** A loose object's header alone, from the first 512 bytes of its file (git's `unpack_loose_header`). */
export function readLooseHeader(file: string): LooseHeader {
  return asLooseError(file, () => {
    const fd = openSync(file, 'r');
    try {
      const start = Buffer.allocUnsafe(512);
      return headerOf(start.subarray(0, readSync(fd, start, 0, 512, 0)), file);
    } finally {
      closeSync(fd);
    }
  });
}

/**
 * A loose object whole when its file is at most `max` bytes, else its header alone (the caller
 * streams the rest): one open, one fstat and one read of the file.
 */
export function readLooseOrHeader(
  file: string,
  max: number,
): { object: LooseObject } | { header: LooseHeader } {
  return asLooseError(file, () => {
    const whole = kept.get(file);
    if (whole !== undefined && whole.comp.length <= max) {
      kept.delete(file);
      keptBytes -= whole.comp.length;
      const { comp, header: h } = whole;
      return { object: { type: h.type, data: inflateLoose(comp, h.len, h.size, file) } };
    }
    const fd = openSync(file, 'r');
    try {
      const size = fstatSync(fd).size;
      const comp = Buffer.allocUnsafe(Math.min(size, size > max ? 512 : size));
      let got = 0;
      for (let n = 1; got < comp.length && n > 0; got += n)
        n = readSync(fd, comp, got, comp.length - got, got);
      if (size > max) return { header: headerOf(comp.subarray(0, got), file) };
      return { object: decodeLoose(comp.subarray(0, got), file) };
    } finally {
      closeSync(fd);
    }
  });
}

/**
 * Inflates a loose object a chunk at a time (git's `open_istream_loose`) through `stages`, which
 * see its data after the header, exactly the `size` bytes the header declares (checked): an
 * object too large to hold is never held.
 */
export async function pipeLooseData(
  file: string,
  h: LooseHeader,
  ...stages: (NodeJS.ReadWriteStream | NodeJS.WritableStream)[]
): Promise<void> {
  let skip = h.len;
  let left = h.size;
  const data = new Transform({
    transform(chunk: Buffer, _enc, done): void {
      if (skip > 0) {
        const n = Math.min(skip, chunk.length);
        skip -= n;
        chunk = chunk.subarray(n);
      }
      if (chunk.length > left)
        return done(
          corrupt(
            'bad-object',
            file,
            0,
            `inflates to more than the ${h.size} bytes its header declares`,
          ),
        );
      left -= chunk.length;
      done(null, chunk.length > 0 ? chunk : undefined);
    },
    flush(done): void {
      done(
        left > 0
          ? corrupt(
              'bad-object',
              file,
              0,
              `loose object size does not match its header (${h.size})`,
            )
          : null,
      );
    },
  });
  try {
    await pipeline(
      createReadStream(file, { highWaterMark: 1 << 20 }),
      inflateStream(1 << 20),
      data,
      ...stages,
    );
  } catch (e) {
    const err = (e instanceof GitError ? undefined : looseStreamError(e, file)) ?? e;
    asLooseError(file, () => {
      throw err;
    });
  }
}

/** Every loose object id under `objectsDir` (`xx/yyyy…` files of the right length). */
export function listLoose(objectsDir: string, algo: HashAlgo): Buffer[] {
  const out: Buffer[] = [];
  const rest = algo.len * 2 - 2;
  const hexRe = new RegExp(`^[0-9a-f]{${rest}}$`);
  // Only the fan-out directories there are: a failed readdir of each of the 256 costs an
  // exception (jq, packed: 13-20 ms of CPU against 0.5, 40-50 ms of wall on a busy machine).
  let top: string[];
  try {
    top = readdirSync(objectsDir)
      .filter((d) => /^[0-9a-f]{2}$/.test(d))
      .sort();
  } catch {
    return out;
  }
  for (const dir of top) {
    let names: string[];
    try {
      names = readdirSync(join(objectsDir, dir));
    } catch {
      continue;
    }
    for (const n of names) if (hexRe.test(n)) out.push(Buffer.from(dir + n, 'hex'));
  }
  return out;
}
