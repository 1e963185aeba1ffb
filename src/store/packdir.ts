import {
  closeSync,
  constants,
  copyFileSync,
  existsSync,
  fstatSync,
  linkSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  rmdirSync,
  statSync,
  symlinkSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { getuid } from 'node:process';
import { createHash } from 'node:crypto';
import { basename, dirname, join } from 'node:path';
import { fsyncDir, pidAlive, renameInto, tmpOwner, unlinkIfExists, TMP_TAG } from './files.js';
import { entryPath, shownPath, withExt, type FsPath } from './fs-path.js';
import { adjustSharedPerm, mkdirShared } from './shared-perm.js';

/** A pack in objects/pack and the files that belong to it. */
export interface PackInfo {
  /** Path without extension, `<objects>/pack/pack-<hash>`, for messages (see `fsBase`). */
  base: string;
  /** The same path as the file system names it: `base`, or its bytes when the name is not valid UTF-8. */
  fsBase: FsPath;
  name: string;
  /** Named `pack-<hash>` or `loose-<hash>`, as git names the packs it writes: the only packs the rewrite removes (see `isPackName`). */
  canonical: boolean;
  keep: boolean;
  promisor: boolean;
  /** Cruft packs (`.mtimes`) hold unreachable objects with their ages; we leave them alone. */
  cruft: boolean;
  bitmap: boolean;
  rev: boolean;
  mtimeMs: number;
}

/**
 * `pack-<hash>`, or `loose-<hash>` (git maintenance's loose-objects task, gc.c `pack_loose`): the
 * names git gives the packs it writes, `<hash>` the pack's trailer; the only names our journal
 * records, and proves a pack by (the trailer must be the name's hash).
 */
export const PACK_NAME = /^(?:pack|loose)-([0-9a-f]{40}|[0-9a-f]{64})$/;

export function isPackName(name: string): boolean {
  return PACK_NAME.test(name);
}

/**
 * Every pack in `<objects>/pack`: any `<name>.idx` beside a `<name>.pack`, whatever the name, as
 * git's `prepare_pack` and `add_packed_git` take them (a `.tmp-*` pack a killed `git repack`
 * left, a pack renamed by hand, a name that is not UTF-8: git reads their objects).
 */
export function listPacks(objectsDir: string): PackInfo[] {
  const dir = join(objectsDir, 'pack');
  let entries: Buffer[];
  try {
    entries = readdirSync(dir, { encoding: 'buffer' });
  } catch {
    return [];
  }
  // One char per byte: a name that is not valid UTF-8 keeps its bytes.
  const set = new Set(entries.map((n) => n.toString('latin1')));
  const out: PackInfo[] = [];
  for (const n of set) {
    if (!n.endsWith('.idx')) continue;
    const stem = n.slice(0, -4);
    const fsBase = entryPath(dir, Buffer.from(stem, 'latin1'));
    // Regular files only, as git's add_packed_git: a FIFO or device named like a pack is skipped.
    const st = set.has(stem + '.pack') ? regularStat(withExt(fsBase, '.pack')) : undefined;
    if (st === undefined || regularStat(withExt(fsBase, '.idx')) === undefined) continue;
    const name = Buffer.from(stem, 'latin1').toString('utf8');
    out.push({
      base: shownPath(fsBase),
      fsBase,
      name,
      canonical: isPackName(name),
      keep: set.has(stem + '.keep'),
      promisor: set.has(stem + '.promisor'),
      cruft: set.has(stem + '.mtimes'),
      bitmap: set.has(stem + '.bitmap'),
      rev: set.has(stem + '.rev'),
      mtimeMs: st.mtimeMs,
    });
  }
  // Newest first, like git's preference when the same object is in several packs.
  out.sort((a, b) => b.mtimeMs - a.mtimeMs || a.name.localeCompare(b.name));
  return out;
}

function regularStat(path: FsPath): { mtimeMs: number } | undefined {
  const st = statSync(path, { throwIfNoEntry: false });
  return st?.isFile() === true ? st : undefined;
}

/** `objects/pack`, created as git's pack-objects creates it when only loose objects exist. */
export function ensurePackDir(objectsDir: string, shared: number): string {
  const dir = join(objectsDir, 'pack');
  if (mkdirShared(dir, shared)) fsyncDir(objectsDir);
  return dir;
}

/**
 * Makes a written pack visible the way git's `finish_tmp_packfile` and repack's `exts` order do:
 * `.pack`, `.rev`, `.bitmap`, `.promisor`, and the `.idx` last, since the idx is what makes a
 * pack exist for git.
 */
export function installPack(
  packDir: string,
  hex: string,
  tmp: {
    pack: string;
    idx: string;
    rev?: string | undefined;
    bitmap?: string | undefined;
    promisor?: string | undefined;
  },
  shared = 0,
): string {
  const base = join(packDir, `pack-${hex}`);
  // core.sharedRepository, on the temporary files as `finish_tmp_packfile` does.
  for (const f of [tmp.pack, tmp.rev, tmp.bitmap, tmp.promisor, tmp.idx])
    if (f !== undefined) adjustSharedPerm(f, shared);
  renameInto(tmp.pack, base + '.pack');
  if (tmp.rev !== undefined) renameInto(tmp.rev, base + '.rev');
  if (tmp.bitmap !== undefined) renameInto(tmp.bitmap, base + '.bitmap');
  if (tmp.promisor !== undefined) renameInto(tmp.promisor, base + '.promisor');
  fsyncDir(packDir);
  renameInto(tmp.idx, base + '.idx');
  fsyncDir(packDir);
  return base;
}

/** What a pack's `.idx` becomes while `removePack` removes the pack (store/journal-proof.ts). */
export const REMOVING_IDX = '.idx.removing';

/**
 * Removes a pack and what belongs to it, `.idx` first so that git stops seeing the pack before
 * its data goes (git's `unlink_pack_path` since 0dd1324a73, 2023: 2.39's `.pack` first can leave
 * an `.idx` without its `.pack`, which a later `git repack` fails on). The `.idx` is renamed
 * aside, not unlinked, until the rest is gone: a kill in between leaves the next run the index
 * that proves what the `.pack` holds, never an idx-less pack to guess about. `.keep` is never ours.
 */
export function removePack(base: string): boolean {
  let any = renameIfExists(base + '.idx', base + REMOVING_IDX);
  for (const ext of ['.pack', '.rev', '.bitmap', '.promisor', '.mtimes'])
    if (unlinkIfExists(base + ext)) any = true;
  return unlinkIfExists(base + REMOVING_IDX) || any;
}

function renameIfExists(from: string, to: string): boolean {
  try {
    renameInto(from, to);
    return true;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw e;
  }
}

/** The multi-pack-index and the files that belong to it. */
export function midxFiles(objectsDir: string): {
  midx: string | undefined;
  extras: string[];
  bitmap: boolean;
} {
  const dir = join(objectsDir, 'pack');
  const midx = join(dir, 'multi-pack-index');
  let names: string[] = [];
  try {
    names = readdirSync(dir);
  } catch {
    names = [];
  }
  const extras = names
    .filter(
      (n) => n.startsWith('multi-pack-index-') && (n.endsWith('.bitmap') || n.endsWith('.rev')),
    )
    .map((n) => join(dir, n));
  return {
    midx: existsSync(midx) ? midx : undefined,
    extras,
    bitmap: extras.some((e) => e.endsWith('.bitmap')),
  };
}

/**
 * Our temporary files and fsck views left by runs that are no longer alive: only entries owned
 * by this uid, never through a link (a co-user who can write `objects/` could swap one in).
 */
export function cleanLeftovers(objectsDir: string): string[] {
  const removed: string[] = [];
  const packDir = join(objectsDir, 'pack');
  const uid = getuid?.();
  for (const [dir, names] of [
    [packDir, safeList(packDir)],
    [objectsDir, safeList(objectsDir)],
  ] as const) {
    for (const n of names) {
      const pid = tmpOwner(n);
      if (pid === undefined || pidAlive(pid)) continue;
      const p = join(dir, n);
      const st = lstatSync(p, { throwIfNoEntry: false });
      if (st === undefined || (uid !== undefined && st.uid !== uid)) continue;
      try {
        if (st.isDirectory()) removeView(p);
        else unlinkSync(p); // a file or a link: unlink never follows
      } catch {
        continue; // changed under us: not ours to chase
      }
      removed.push(p);
    }
  }
  return removed;
}

const { O_RDONLY, O_DIRECTORY, O_NOFOLLOW } = constants;

/**
 * Removes an fsck view: links, and the few directories `buildFsckView` makes. Each directory is
 * opened without following links and then named through /proc/self/fd, so a directory swapped
 * for a link after it was checked is never entered; the view itself is 0700 (mkdtemp), so what
 * is inside cannot be swapped by anyone else. Without /proc, by path.
 */
export function removeView(dir: string, depth = 0): void {
  const fd = openSync(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
  try {
    const uid = getuid?.();
    if (uid !== undefined && fstatSync(fd).uid !== uid) throw new Error(`${dir}: not ours`);
    const via = existsSync(`/proc/self/fd/${fd}`) ? `/proc/self/fd/${fd}` : dir;
    for (const n of readdirSync(via)) {
      const p = join(via, n);
      const st = lstatSync(p);
      if (st.isDirectory() && depth < 3) {
        removeView(p, depth + 1);
      } else unlinkSync(p);
    }
  } finally {
    closeSync(fd);
  }
  rmdirSync(dir);
}

function safeList(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

/** Hard link, or a symlink where the filesystem has no hard links, or a copy as the last resort. */
export function linkOrCopy(from: FsPath, to: string): void {
  try {
    linkSync(from, to);
  } catch {
    try {
      symlinkSync(from, to);
    } catch {
      copyFileSync(from, to);
    }
  }
}

/** A pack's files, linked into a view as `<basename of base>.pack` and so on. */
export interface ViewPack {
  pack: FsPath;
  idx: FsPath;
  rev?: FsPath | undefined;
  promisor?: FsPath | undefined;
  base: string;
}

/**
 * A pack of the repository as the view links it: under its own name, or, when that is not valid
 * UTF-8, under one made from its bytes (git fsck reads a pack whatever its name).
 */
export function viewPack(p: PackInfo): ViewPack {
  const f = (ext: string): FsPath => withExt(p.fsBase, ext);
  const base =
    typeof p.fsBase === 'string'
      ? p.base
      : join(dirname(p.base), `pack-name-${createHash('sha1').update(p.fsBase).digest('hex')}`);
  return {
    pack: f('.pack'),
    idx: f('.idx'),
    rev: p.rev ? f('.rev') : undefined,
    promisor: p.promisor ? f('.promisor') : undefined,
    base,
  };
}

/**
 * An object directory that shows exactly the state the repository will have after the rewrite
 * (new packs, packs that stay, current loose objects, alternates, commit-graph), built from links
 * so that `git fsck` can check that state before anything is removed. Removing it (rmSync,
 * recursive) removes the symlinks, never what they point to.
 */
export function buildFsckView(objectsDir: string, viewDir: string, packs: ViewPack[]): void {
  mkdirSync(join(viewDir, 'pack'), { recursive: true });
  mkdirSync(join(viewDir, 'info'), { recursive: true });
  for (const p of packs) {
    const to = join(viewDir, 'pack', basename(p.base));
    linkOrCopy(p.pack, to + '.pack');
    if (p.rev) linkOrCopy(p.rev, to + '.rev');
    if (p.promisor) linkOrCopy(p.promisor, to + '.promisor');
    linkOrCopy(p.idx, to + '.idx');
  }
  // Loose objects stay where they are: each fan-out directory of the view is a symlink to the
  // repository's own (all 256, existing or not), so that objects git writes while fsck runs (a
  // commit whose ref fsck then reads) are seen. Without symlinks, a link per file.
  for (let b = 0; b < 256; b++) {
    const d = b.toString(16).padStart(2, '0');
    try {
      symlinkSync(join(objectsDir, d), join(viewDir, d), 'dir');
      continue;
    } catch {
      // no symlinks here
    }
    const names = safeList(join(objectsDir, d));
    if (names.length === 0) continue;
    mkdirSync(join(viewDir, d), { recursive: true });
    for (const n of names) {
      if (n.startsWith('tmp_')) continue;
      linkOrCopy(join(objectsDir, d, n), join(viewDir, d, n));
    }
  }
  const info = join(objectsDir, 'info');
  const alt = join(info, 'alternates');
  if (existsSync(alt)) {
    // Relative alternates are relative to the objects directory: rewrite them absolute.
    const lines = readFileSync(alt, 'utf8')
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l !== '' && !l.startsWith('#'))
      .map((l) => (l.startsWith('/') ? l : join(objectsDir, l)));
    writeFileSync(join(viewDir, 'info', 'alternates'), lines.join('\n') + '\n');
  }
  if (existsSync(join(info, 'commit-graph')))
    linkOrCopy(join(info, 'commit-graph'), join(viewDir, 'info', 'commit-graph'));
  const chain = join(info, 'commit-graphs');
  if (existsSync(chain)) {
    mkdirSync(join(viewDir, 'info', 'commit-graphs'), { recursive: true });
    for (const n of safeList(chain))
      linkOrCopy(join(chain, n), join(viewDir, 'info', 'commit-graphs', n));
  }
}

/** A new, empty fsck view directory: mkdtemp's (0700, a fresh name nobody could have prepared). */
export function makeViewDir(objectsDir: string): string {
  return mkdtempSync(join(objectsDir, `tmp_view_${TMP_TAG}${process.pid}_`));
}

/** rmdir refuses a directory that is not empty: no listing first (prune-packed's prune_subdir). */
function removeIfEmpty(dir: string): void {
  try {
    rmdirSync(dir);
  } catch {
    // not empty or gone: fine
  }
}

/** Files removed between two calls of removeLoose's `beforeEach` at most. */
const LOOSE_CHECK_EVERY = 32;

/**
 * Removes loose object files that are now packed, a fan-out directory after another, each
 * directory as soon as its files are gone if that leaves it empty (`prune-packed`'s
 * prune_subdir, which follows each directory's files). `beforeEach` may throw to stop (the pack
 * holding them vanished); it runs before each directory's first file and every
 * LOOSE_CHECK_EVERY files: two existence checks per file were a third of the removal's system
 * calls (git's prune_packed_objects checks the pack it has open, never the files).
 */
export function removeLoose(objectsDir: string, files: string[], beforeEach?: () => void): number {
  let n = 0;
  let since = LOOSE_CHECK_EVERY;
  let dir: string | undefined;
  for (const f of [...files].sort()) {
    const d = dirname(f);
    if (d !== dir || since >= LOOSE_CHECK_EVERY) {
      if (d !== dir && dir !== undefined) removeIfEmpty(dir);
      beforeEach?.();
      since = 0;
    }
    dir = d;
    since++;
    if (unlinkIfExists(f)) n++;
  }
  if (dir !== undefined) removeIfEmpty(dir);
  fsyncDir(objectsDir);
  return n;
}
