import { createHash, type Hash } from 'node:crypto';

/** The repository's object format (`extensions.objectFormat`). */
export interface HashAlgo {
  readonly name: 'sha1' | 'sha256';
  /** Raw id length in bytes: 20 or 32. */
  readonly len: number;
  /** Id used in `.rev` and midx headers (git's `hash_algo.format_id`: 1 for sha1, 2 for sha256). */
  readonly revId: number;
  create(): Hash;
}

export const SHA1: HashAlgo = {
  name: 'sha1',
  len: 20,
  revId: 1,
  create: () => createHash('sha1'),
};

export const SHA256: HashAlgo = {
  name: 'sha256',
  len: 32,
  revId: 2,
  create: () => createHash('sha256'),
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

/** `"<type> <size>\0"`: the header hashed in front of every object's content. */
export function objectHeader(type: string, size: number): Buffer {
  return Buffer.from(`${type} ${size}\0`, 'latin1');
}

/** The object id of `content` as `type` (git's `hash_object_file`). */
export function hashObjectBuffer(algo: HashAlgo, type: string, content: Uint8Array): Buffer {
  const h = algo.create();
  h.update(objectHeader(type, content.length));
  h.update(content);
  return h.digest();
}
