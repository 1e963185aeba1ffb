import crypto, { createHash, type Hash } from 'node:crypto';

/** The repository's object format (`extensions.objectFormat`). */
export interface HashAlgo {
  readonly name: 'sha1' | 'sha256';
  /** Raw id length in bytes: 20 or 32. */
  readonly len: number;
  /** Id used in `.rev` and midx headers (git's `hash_algo.format_id`: 1 for sha1, 2 for sha256). */
  readonly revId: number;
  create(): Hash;
  /** The hash of one buffer, without a Hash object (one native call). */
  digest(data: Uint8Array): Buffer;
  /** `digest` as lower-case hex, with no Buffer made on the way (many small files). */
  hexDigest(data: Uint8Array): string;
}

/** `crypto.hash` (Node 20.12+): one-shot, no Hash object per call; else createHash. */
const oneShot = (
  crypto as unknown as {
    hash?: <E extends 'buffer' | 'hex'>(
      algo: string,
      data: Uint8Array,
      enc: E,
    ) => E extends 'hex' ? string : Buffer;
  }
).hash;
function digestWith(name: 'sha1' | 'sha256'): (data: Uint8Array) => Buffer {
  if (oneShot !== undefined) return (data) => oneShot(name, data, 'buffer');
  return (data) => createHash(name).update(data).digest();
}
function hexDigestWith(name: 'sha1' | 'sha256'): (data: Uint8Array) => string {
  if (oneShot !== undefined) return (data) => oneShot(name, data, 'hex');
  return (data) => createHash(name).update(data).digest('hex');
}

export const SHA1: HashAlgo = {
  name: 'sha1',
  len: 20,
  revId: 1,
  create: () => createHash('sha1'),
  digest: digestWith('sha1'),
  hexDigest: hexDigestWith('sha1'),
};

export const SHA256: HashAlgo = {
  name: 'sha256',
  len: 32,
  revId: 2,
  create: () => createHash('sha256'),
  digest: digestWith('sha256'),
  hexDigest: hexDigestWith('sha256'),
};

export function hashAlgoByName(name: string): HashAlgo | undefined {
  const n = name.toLowerCase();
  if (n === 'sha1') return SHA1;
  if (n === 'sha256') return SHA256;
  return undefined;
}

const HEX = '0123456789abcdef';
const HEX_BYTE: string[] = [];
for (let i = 0; i < 256; i++) HEX_BYTE.push(HEX[i >> 4]! + HEX[i & 15]!);

/** Hex of `len` bytes of `buf` at `off`; only at the edges (output), never as a key. */
export function toHex(buf: Uint8Array, off = 0, len = buf.length - off): string {
  let s = '';
  for (let i = off; i < off + len; i++) s += HEX_BYTE[buf[i]!]!;
  return s;
}

/** Parses a full-length hex id; returns undefined when it is not one. */
export function fromHex(hex: string, algo: HashAlgo): Buffer | undefined {
  if (hex.length !== algo.len * 2 || !/^[0-9a-fA-F]+$/.test(hex)) return undefined;
  return Buffer.from(hex, 'hex');
}

/** Room for any object header before an object's data (`putObjectHeader`). */
export const OBJECT_HEADER_ROOM = 32;

/**
 * Writes `"<type> <size>\0"` so that it ends at `end` in `buf` and returns where it starts: with
 * the data right after it, one `digest` call hashes the object. `type` is a plain ASCII name.
 */
export function putObjectHeader(buf: Uint8Array, end: number, type: string, size: number): number {
  let p = end;
  buf[--p] = 0;
  let v = size;
  do {
    buf[--p] = 48 + (v % 10);
    v = Math.floor(v / 10);
  } while (v > 0);
  buf[--p] = 32;
  for (let i = type.length - 1; i >= 0; i--) buf[--p] = type.charCodeAt(i);
  return p;
}

/** `"<type> <size>\0"`: the header hashed in front of every object's content. */
export function objectHeader(type: string, size: number): Buffer {
  return Buffer.from(`${type} ${size}\0`, 'latin1');
}

/** Header and content of a small object, laid end to end for one `digest` call. */
const ONE_SHOT_MAX = 64 << 10;
let oneShotRoom: Buffer | undefined;

/**
 * The object id of `content` as `type` (git's `hash_object_file`). A small object is hashed in
 * one native call, without a Hash object (a loose object's check cost 28 µs with one, jq).
 */
export function hashObjectBuffer(algo: HashAlgo, type: string, content: Uint8Array): Buffer {
  const head = `${type} ${content.length}\0`;
  if (content.length <= ONE_SHOT_MAX && head.length <= 64) {
    const room = (oneShotRoom ??= Buffer.allocUnsafeSlow(ONE_SHOT_MAX + 64));
    const n = room.write(head, 0, 'latin1');
    room.set(content, n);
    return algo.digest(room.subarray(0, n + content.length));
  }
  const h = algo.create();
  h.update(Buffer.from(head, 'latin1'));
  h.update(content);
  return h.digest();
}
