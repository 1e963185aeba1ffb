import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { GitError } from '../errors.js';
import { objectHeader, toHex, type HashAlgo } from '../hash/algo.js';
import { inflatePiecesExact } from '../codec/inflate.js';
import { isBaseType, typeName } from '../format/object-type.js';
import { loosePath, readLooseFile, readLooseHeader } from '../store/loose.js';
import type { ObjectDatabase } from '../store/odb.js';
import type { Pack } from '../store/pack.js';

/**
 * Proofs for ids held twice (issue 30): the rewrite keeps one copy of each id and drops the
 * others, so the copy kept must hash to its id, or a forged copy would replace the genuine one
 * for good. Only duplicated ids pay for this; every other entry is checked as the rewrite
 * copies it (CRC32 against the idx git wrote when it hashed the object).
 */

/** What hashing one copy found: `ok`, or what it hashes to (or why it could not be read). */
export interface CopyProof {
  ok: boolean;
  file: string;
  offset: number;
  /** When not ok: `hashes to <id>`, or the reader's complaint. */
  why?: string | undefined;
}

/** Entries and loose objects larger than this are hashed a chunk at a time, never held. */
const CHUNK = 1 << 20;

/**
 * Hashes entry `j` of `pack` (resolving its delta chain through `odb`, as git's `unpack_entry`)
 * and compares it with its id in the pack's index (git's `check_object_signature`).
 */
export function provePackedCopy(pack: Pack, j: number, odb: ObjectDatabase, algo: HashAlgo): CopyProof {
  const off = pack.idx.offsets[j]!;
  const proof = { file: pack.packPath, offset: off };
  try {
    const end = pack.end(j);
    const head = pack.entryAt(off, Math.min(end, off + 64));
    let got: Buffer;
    if (isBaseType(head.hdr.type) && end - off > CHUNK) {
      // A big object is hashed as it streams out of zlib (or zstd), as verify does.
      const h = algo.create();
      h.update(objectHeader(typeName(head.hdr.type), head.hdr.size));
      pack.inflateChunked(off, end, (bytes) => h.update(bytes));
      got = h.digest();
    } else {
      const o = odb.readPacked(pack, off);
      got = algo.create().update(objectHeader(typeName(o.type), o.data.length)).update(o.data).digest();
    }
    const want = pack.idx.ids.subarray(j * algo.len, (j + 1) * algo.len);
    return got.equals(want) ? { ok: true, ...proof } : { ok: false, ...proof, why: `hashes to ${toHex(got)}` };
  } catch (e) {
    if (!(e instanceof GitError)) throw e;
    return { ok: false, ...proof, why: e.detail };
  }
}

/** Hashes the loose object `id` of `objectsDir` (its whole inflated file: header and data). */
export function proveLooseCopy(objectsDir: string, id: Uint8Array, algo: HashAlgo): CopyProof {
  const file = loosePath(objectsDir, id);
  const proof = { file, offset: 0 };
  try {
    const h = readLooseHeader(file);
    let got: Buffer;
    if (h.size > CHUNK) got = hashLooseChunked(file, h.len + h.size, algo);
    else {
      const o = readLooseFile(file);
      got = algo.create().update(objectHeader(typeName(o.type), o.data.length)).update(o.data).digest();
    }
    return got.equals(id) ? { ok: true, ...proof } : { ok: false, ...proof, why: `hashes to ${toHex(got)}` };
  } catch (e) {
    if (!(e instanceof GitError)) throw e;
    return { ok: false, ...proof, why: e.detail };
  }
}

/** The hash of a loose file's inflated bytes (`<type> <size>\0<data>`: its id), read a chunk at a time. */
function hashLooseChunked(file: string, inflated: number, algo: HashAlgo): Buffer {
  const fd = openSync(file, 'r');
  try {
    const size = fstatSync(fd).size;
    const buf = Buffer.allocUnsafe(CHUNK);
    const pieces = function* (): Generator<Buffer> {
      for (let pos = 0, n = 0; pos < size; pos += n) {
        n = readSync(fd, buf, 0, Math.min(CHUNK, size - pos), pos);
        if (n === 0) return;
        yield buf.subarray(0, n);
      }
    };
    const h = algo.create();
    inflatePiecesExact(pieces(), size, inflated, Buffer.allocUnsafe(CHUNK), (b) => h.update(b), file, 0);
    return h.digest();
  } finally {
    closeSync(fd);
  }
}

/** git's `packed object <id> ... is corrupt` for an id none of whose copies hashes right: nothing is changed. */
export function noGoodCopy(hex: string, proofs: CopyProof[]): GitError {
  const each = proofs.map((p) => `${p.file} at offset ${p.offset} ${p.why ?? ''}`.trimEnd()).join('; ');
  const first = proofs[0]!;
  return new GitError('bad-object', `object ${hex}: no copy of it hashes to its id (${each}); nothing was changed`, { file: first.file, offset: first.offset, objectId: hex, detail: 'no copy hashes to its id' });
}
