import { isUtf8 } from 'node:buffer';
import { join } from 'node:path';

/**
 * A path as the file system takes it: a string, or bytes when a name in it is not valid UTF-8.
 * Node turns a string path into UTF-8, so a directory entry read as a string has its other bytes
 * replaced (U+FFFD) and names a file that does not exist; git reads and writes names as bytes.
 */
export type FsPath = string | Buffer;

/** The directory entry `name` (its bytes, from readdir's `buffer` encoding) of `dir`. */
export function entryPath(dir: string, name: Buffer): FsPath {
  if (isUtf8(name)) return join(dir, name.toString('utf8'));
  return Buffer.concat([Buffer.from(join(dir, '/')), name]);
}

/** `p` with `ext` appended. */
export function withExt(p: FsPath, ext: string): FsPath {
  return typeof p === 'string' ? p + ext : Buffer.concat([p, Buffer.from(ext)]);
}

/** `p` with its extension `from` (which it has) replaced by `to`. */
export function swapExt(p: FsPath, from: string, to: string): FsPath {
  return typeof p === 'string'
    ? p.slice(0, -from.length) + to
    : Buffer.concat([p.subarray(0, p.length - from.length), Buffer.from(to)]);
}

/** Does `p` end with `ext` (an ASCII extension)? */
export function hasExt(p: FsPath, ext: string): boolean {
  return typeof p === 'string'
    ? p.endsWith(ext)
    : p.subarray(p.length - ext.length).toString('latin1') === ext;
}

/** `p` for messages: itself, or its bytes read as UTF-8 (U+FFFD for each byte that is not). */
export function shownPath(p: FsPath): string {
  return typeof p === 'string' ? p : p.toString('utf8');
}

/** A string naming exactly the file `p` names (a Map's key): the path, or a NUL (which no path holds) and its bytes one char each. */
export function pathKey(p: FsPath): string {
  return typeof p === 'string' ? p : '\0' + p.toString('latin1');
}
