import { closeSync, fstatSync, readSync } from 'node:fs';
import { join } from 'node:path';
import { toHex, type HashAlgo } from '../hash/algo.js';
import { fsyncDir, renameInto, unlinkIfExists, writeFileDurable } from './files.js';
import { openRegular, readSmallFile } from './regular.js';
import { adjustSharedPerm, mkdirShared } from './shared-perm.js';

/**
 * `objects/info/repack-ts.proven`: the packs a run of ours wrote or read whole and found at the
 * levels it was asked for, so that the next run with the same levels leaves them as they are
 * without scanning them again (issue 32: a run with nothing new must cost what is new).
 *
 * It is a cache, never an authority: an entry counts only for a pack whose `.pack` trailer,
 * `.idx` checksum and size are still the ones recorded, and only for the same targets. A damaged,
 * foreign or unreadable file is ignored (the packs are then scanned, as on a first run). Nothing
 * is ever removed because of it: it decides only which packs are left alone, as a `.keep` would.
 * It lives in `objects/info/`, where git neither reads it nor counts it as garbage
 * (`count-objects -v` reports strays in `objects/pack/` and in the fan-out directories only).
 */
export const PROVEN_FILE = 'repack-ts.proven';
const MAGIC = '# git-repack-ts proven packs v1';
/** A few hundred bytes per pack; far beyond any real repository's pack count. */
const MAX_BYTES = 4 << 20;

/** What a pack is recognised by: its trailer (also its name), its `.idx` checksum, its size. */
export interface PackIdentity {
  /** The `.pack` trailer in hex (`pack-<hex>`). */
  pack: string;
  /** The `.idx` trailer in hex. */
  idx: string;
  size: number;
}

export interface ProvenEntry extends PackIdentity {
  /** `targetsKey` of the levels the pack was proven at. */
  targets: string;
  /** Objects in the pack (for the geometric merge, without opening its `.idx`). */
  objects: number;
}

export function provenPath(objectsDir: string): string {
  return join(objectsDir, 'info', PROVEN_FILE);
}

/** Every well-formed entry of the file; none when it is absent, damaged or not a regular file. */
export function readProven(objectsDir: string, algo: HashAlgo): ProvenEntry[] {
  let f;
  try {
    f = readSmallFile(provenPath(objectsDir), MAX_BYTES + 1);
  } catch {
    return [];
  }
  if (f === undefined || 'why' in f || f.data.length > MAX_BYTES) return [];
  const lines = f.data.toString('utf8').split('\n');
  if (lines[0] !== MAGIC) return [];
  const hex = new RegExp(`^[0-9a-f]{${2 * algo.len}}$`);
  const out: ProvenEntry[] = [];
  for (const line of lines.slice(1)) {
    if (line === '') continue;
    const [pack, idx, size, objects, targets, extra] = line.split(' ');
    if (extra !== undefined || targets === undefined || !hex.test(pack!) || !hex.test(idx!))
      return [];
    if (!/^\d{1,15}$/.test(size!) || !/^\d{1,10}$/.test(objects!) || !/^[a-z]=[^ ]+$/.test(targets))
      return [];
    out.push({ pack: pack!, idx: idx!, size: Number(size), objects: Number(objects), targets });
  }
  return out;
}

/**
 * Replaces the file with `entries` (temporary file, fsync, rename), in core.sharedRepository's
 * mode. A failure to record is not a failure of the run: the next run scans again.
 */
export function writeProven(objectsDir: string, entries: ProvenEntry[], shared: number): void {
  const info = join(objectsDir, 'info');
  const path = provenPath(objectsDir);
  const tmp = `${path}.tmp`;
  mkdirShared(info, shared);
  const body =
    [MAGIC, ...entries.map((e) => `${e.pack} ${e.idx} ${e.size} ${e.objects} ${e.targets}`)].join(
      '\n',
    ) + '\n';
  try {
    unlinkIfExists(tmp);
    writeFileDurable(tmp, Buffer.from(body), 0o666);
    adjustSharedPerm(tmp, shared);
    renameInto(tmp, path);
    fsyncDir(info);
  } finally {
    unlinkIfExists(tmp);
  }
}

/**
 * The pack at `base` (path without extension) as it is on disk now: its trailer, its `.idx`'s
 * checksum and object count, and the `.pack`'s size, from a few bytes at the ends of each file
 * (no index is parsed). Undefined when either cannot be read as a regular file.
 */
export function identify(
  base: string,
  algo: HashAlgo,
): (PackIdentity & { objects: number }) | undefined {
  try {
    const pack = readEnds(base + '.pack', algo.len, 0);
    // The object count is the last fan-out entry, after the 8-byte header of an idx v2.
    const idx = readEnds(base + '.idx', algo.len, 8 + 256 * 4);
    if (idx.head.readUInt32BE(0) !== 0xff744f63 || idx.head.readUInt32BE(4) !== 2) return undefined;
    return {
      pack: toHex(pack.tail),
      idx: toHex(idx.tail),
      size: pack.size,
      objects: idx.head.readUInt32BE(8 + 255 * 4),
    };
  } catch {
    return undefined;
  }
}

/** The first `head` and last `tail` bytes of a regular file, and its size. */
function readEnds(
  path: string,
  tail: number,
  head: number,
): { head: Buffer; tail: Buffer; size: number } {
  const fd = openRegular(path);
  try {
    const size = fstatSync(fd).size;
    if (size < head + tail) throw new Error(`${path}: too short`);
    const h = Buffer.alloc(head);
    const t = Buffer.alloc(tail);
    if (readSync(fd, h, 0, head, 0) !== head || readSync(fd, t, 0, tail, size - tail) !== tail)
      throw new Error(`${path}: short read`);
    return { head: h, tail: t, size };
  } finally {
    closeSync(fd);
  }
}

/** The entries recorded for this pack as it is now (none when its files changed since). */
export function entriesOf(entries: readonly ProvenEntry[], id: PackIdentity): ProvenEntry[] {
  return entries.filter((e) => e.pack === id.pack && e.idx === id.idx && e.size === id.size);
}
