import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { GitError } from '../errors.js';
import { objectHeader, toHex, type HashAlgo } from '../hash/algo.js';
import { inflatePiecesExact } from '../codec/zlib.js';
import { isBaseType, typeName } from '../format/object-type.js';
import { loosePath, readLooseFile, readLooseHeader } from '../store/loose.js';
import type { ObjectDatabase } from '../store/odb.js';
import type { Pack } from '../store/pack.js';
import type { ScanProblem } from '../store/pack-scan.js';

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
export function provePackedCopy(
  pack: Pack,
  j: number,
  odb: ObjectDatabase,
  algo: HashAlgo,
): CopyProof {
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
      const o = odb.readPacked(pack, off, true); // (hashed at once: the reused buffer will do)
      got = algo
        .create()
        .update(objectHeader(typeName(o.type), o.data.length))
        .update(o.data)
        .digest();
    }
    const want = pack.idx.ids.subarray(j * algo.len, (j + 1) * algo.len);
    return got.equals(want)
      ? { ok: true, ...proof }
      : { ok: false, ...proof, why: `hashes to ${toHex(got)}` };
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
      got = algo
        .create()
        .update(objectHeader(typeName(o.type), o.data.length))
        .update(o.data)
        .digest();
    }
    return got.equals(id)
      ? { ok: true, ...proof }
      : { ok: false, ...proof, why: `hashes to ${toHex(got)}` };
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
    inflatePiecesExact(
      pieces(),
      size,
      inflated,
      Buffer.allocUnsafe(CHUNK),
      (b) => h.update(b),
      file,
      0,
    );
    return h.digest();
  } finally {
    closeSync(fd);
  }
}

/** Every object of a pack hashed base first (`verify`), its problems listed: what `hashWholePack` gives. */
export type WholePackHasher = (
  pack: Pack,
) => Promise<{ problems: ScanProblem[]; moreProblems: number }>;

/** A pack holding at least this many copies to prove, a quarter of its entries or more, is hashed whole. */
const WHOLE_PACK_MIN = 256;

/**
 * Hashes copies given as (source pack, index) pairs (`pi` past the packs: loose object `j`).
 * Where most of a pack is to be proven (a pack repacked without -d, every object twice), the
 * pack is hashed whole base first, as verify does: each object resolved once and memory
 * bounded, instead of one delta chain per copy through the base cache (jq after `git repack -a`
 * without -d, every object held twice: 3.8 s of CPU and 127 MB, against 5.5 s and 312 MB one by
 * one; the rewrite without proofs 1.8 s and 76 MB).
 */
export async function proveCopies(
  packs: Pack[],
  looseDir: string,
  loose: Buffer[],
  copies: number[],
  odb: ObjectDatabase,
  algo: HashAlgo,
  hashWhole?: WholePackHasher,
): Promise<CopyProof[]> {
  const out = new Array<CopyProof>(copies.length / 2);
  const byPack = new Map<number, number[]>();
  for (let k = 0; k < out.length; k++) {
    const pi = copies[2 * k]!;
    if (pi >= packs.length) out[k] = proveLooseCopy(looseDir, loose[copies[2 * k + 1]!]!, algo);
    else {
      let ks = byPack.get(pi);
      if (ks === undefined) byPack.set(pi, (ks = []));
      ks.push(k);
    }
  }
  for (const [pi, ks] of byPack) {
    const pack = packs[pi]!;
    const whole =
      hashWhole !== undefined && ks.length >= WHOLE_PACK_MIN && ks.length * 4 >= pack.count
        ? await hashedWhole(pack, hashWhole)
        : undefined;
    for (const k of ks) {
      const j = copies[2 * k + 1]!;
      out[k] = whole?.(j) ?? provePackedCopy(pack, j, odb, algo);
    }
  }
  return out;
}

/** Per entry of a pack hashed whole: its proof, or undefined when the pack had damage of another kind (each copy is then proven alone). */
async function hashedWhole(
  pack: Pack,
  hashWhole: WholePackHasher,
): Promise<(j: number) => CopyProof | undefined> {
  const v = await hashWhole(pack);
  if (v.moreProblems > 0 || v.problems.some((p) => p.hashesTo === undefined))
    return () => undefined;
  const wrong = new Map(v.problems.map((p) => [p.offset, p.hashesTo!]));
  return (j) => {
    const offset = pack.idx.offsets[j]!;
    const got = wrong.get(offset);
    return got === undefined
      ? { ok: true, file: pack.packPath, offset }
      : { ok: false, file: pack.packPath, offset, why: `hashes to ${got}` };
  };
}

/** git's `packed object <id> ... is corrupt` for an id none of whose copies hashes right: nothing is changed. */
export function noGoodCopy(hex: string, proofs: CopyProof[]): GitError {
  const each = proofs
    .map((p) => `${p.file} at offset ${p.offset} ${p.why ?? ''}`.trimEnd())
    .join('; ');
  const first = proofs[0]!;
  return new GitError(
    'bad-object',
    `object ${hex}: no copy of it hashes to its id (${each}); nothing was changed`,
    { file: first.file, offset: first.offset, objectId: hex, detail: 'no copy hashes to its id' },
  );
}
