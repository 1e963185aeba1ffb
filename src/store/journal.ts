import { getuid } from 'node:process';
import { hostname } from 'node:os';
import { basename, join } from 'node:path';
import { closeSync, fstatSync, readdirSync, readSync, statSync } from 'node:fs';
import { GitError } from '../errors.js';
import { toHex, type HashAlgo } from '../hash/algo.js';
import { parseIdx, type PackIndex } from '../format/idx.js';
import { fsyncDir, renameInto, unlinkIfExists, writeFileDurable } from './files.js';
import { deadHere, type RepoLock } from './lock.js';
import { midxFiles, removePack } from './packdir.js';
import { openRegular, readRegular, readSmallFile } from './regular.js';
import { adjustSharedPerm } from './shared-perm.js';

/**
 * `objects/repack-ts.journal`: written (atomically, fsynced) before the first new pack is
 * installed and removed once the old files are gone. The next run finds it after a kill or a
 * failure and either finishes the removals or takes back a partial install. It lives in the
 * object directory like everything we write; git ignores files it does not know there.
 *
 * A journal is acted on only when it is tied to the run that wrote it: our format, this host, this
 * uid (in the journal and as the file's owner), a pid that is no longer running, the nonce of the
 * lock that run held when that lock is what we took over, and every pack it names with the
 * checksums it recorded. Anything else (a stale or foreign journal, a restored backup, a damaged
 * file) is reported and left alone. Even then an old pack goes only when every id of its `.idx`
 * is in a pack the journal names and that checked, or in a kept pack, and never one with `.keep`.
 */
export const JOURNAL = 'repack-ts.journal';
const VERSION = 2;
/** Ours are a few hundred bytes per pack; 0xffff packs at most. */
const MAX_JOURNAL_BYTES = 16 << 20;
const PACK_NAME = /^pack-([0-9a-f]{40}|[0-9a-f]{64})$/;

export interface JournalPack {
  /** `pack-<hash>`: the hash is the pack's trailer. */
  name: string;
  /** The `.idx` file's own checksum (its last bytes). */
  idx: string;
}

export interface Journal {
  version: typeof VERSION;
  pid: number;
  host: string;
  uid: number;
  nonce: string;
  /** Every pack that holds the objects once the run is done: new (installed or already there) and retained. */
  packs: JournalPack[];
  /** Names of the new packs this run installs. */
  installed: string[];
  /** Names of the packs to remove once they are. */
  remove: string[];
  midx: { rewrite: boolean; bitmap: boolean };
}

export function journalPath(objectsDir: string): string {
  return join(objectsDir, JOURNAL);
}

/** A journal for this run (the lock's owner). */
export function newJournal(lock: RepoLock, packs: JournalPack[], installed: string[], remove: string[], midx: Journal['midx']): Journal {
  return { version: VERSION, pid: lock.owner.pid, host: lock.owner.host, uid: getuid?.() ?? -1, nonce: lock.owner.nonce, packs, installed, remove, midx };
}

/** A pack for the journal: its name and the checksum at the end of its `.idx` (wherever that is now). */
export function journalPack(name: string, idxPath: string, algo: HashAlgo): JournalPack {
  const fd = openRegular(idxPath);
  try {
    const size = fstatSync(fd).size;
    const sum = Buffer.alloc(algo.len);
    readSync(fd, sum, 0, algo.len, Math.max(0, size - algo.len));
    return { name, idx: toHex(sum) };
  } finally {
    closeSync(fd);
  }
}

/** Writes the journal; `adopting` one already there, a failure leaves that one in place. */
export function writeJournal(objectsDir: string, j: Journal, shared: number, adopting = false): void {
  const path = journalPath(objectsDir);
  try {
    unlinkIfExists(path + '.tmp');
    writeFileDurable(path + '.tmp', Buffer.from(JSON.stringify(j)), 0o666);
    adjustSharedPerm(path + '.tmp', shared);
    renameInto(path + '.tmp', path);
    fsyncDir(objectsDir);
  } catch (e) {
    // Nothing is installed yet: a journal that could not be completed is simply dropped.
    bestEffort(() => unlinkIfExists(path + '.tmp'));
    if (!adopting) bestEffort(() => unlinkIfExists(path));
    throw e;
  }
}

export function removeJournal(objectsDir: string): void {
  unlinkIfExists(journalPath(objectsDir));
}

/**
 * Takes back the files of an install that did not finish: a `.pack`, `.rev` or `.promisor`
 * without its `.idx` is invisible to git, so removing it cannot lose an object.
 */
export function rollbackInstall(packDir: string, names: string[]): string[] {
  const taken: string[] = [];
  for (const name of names) {
    const b = join(packDir, name);
    if (exists(b + '.idx')) continue;
    for (const ext of ['.pack', '.rev', '.bitmap', '.promisor']) if (unlinkIfExists(b + ext)) taken.push(b + ext);
  }
  if (taken.length > 0) fsyncDir(packDir);
  return taken;
}

export interface Recovery {
  objectsDir: string;
  algo: HashAlgo;
  lock: RepoLock;
  warn: (m: string) => void;
  /** core.sharedRepository (store/shared-perm.ts). */
  shared: number;
  /** `git multi-pack-index write`, as the run itself would have done. */
  rewriteMidx: (bitmap: boolean) => boolean;
}

/** Finishes, or rolls back, a run that was killed or failed after writing its journal. */
export function recoverJournal(r: Recovery): string[] {
  const path = journalPath(r.objectsDir);
  const packDir = join(r.objectsDir, 'pack');
  // A journal never completed (nothing had been installed); only a file of ours, links are not followed.
  const tmp = readSmallFile(path + '.tmp', 0);
  if (tmp !== undefined && 'st' in tmp && tmp.st.uid === (getuid?.() ?? tmp.st.uid)) unlinkIfExists(path + '.tmp');
  const found = readTiedJournal(path, r.lock, r.algo);
  if (found === undefined) return [];
  // Adopted before anything is done: a kill of this run leaves a journal tied to this run's lock.
  const j = { ...found.j, pid: r.lock.owner.pid, nonce: r.lock.owner.nonce };
  writeJournal(r.objectsDir, j, r.shared, true);
  const done: string[] = [];
  const installedOk = j.installed.every((b) => exists(join(packDir, b + '.idx')) && exists(join(packDir, b + '.pack')));
  if (installedOk) done.push(...finishRemovals(r, j, found.mtimeMs));
  else done.push(...rollbackInstall(packDir, j.installed));
  unlinkIfExists(path);
  return done;
}

/** The journal at `path` when it is tied to the killed or failed run of ours (see above); throws otherwise. */
function readTiedJournal(path: string, lock: RepoLock, algo: HashAlgo): { j: Journal; mtimeMs: number } | undefined {
  const f = readSmallFile(path, MAX_JOURNAL_BYTES);
  if (f === undefined) return undefined;
  const refuse = (why: string): never => {
    throw new GitError(
      'locked',
      `${path}: ${why}; it is not the journal of an interrupted run of ours, so it was left alone and nothing was changed.\n` +
        `If no other git repack-ts runs here, check the packs it names and remove it: the next run then repacks them again.`,
      { file: path },
    );
  };
  if ('why' in f) return refuse(f.why);
  if (f.st.size > MAX_JOURNAL_BYTES) return refuse(`larger than ${MAX_JOURNAL_BYTES} bytes`);
  let raw: Partial<Journal>;
  try {
    raw = JSON.parse(f.data.toString('utf8')) as Partial<Journal>;
  } catch {
    return refuse('not a journal (it does not parse)');
  }
  const j = parseJournal(raw, algo.len);
  if (j === undefined) return refuse('not a journal of this version of git repack-ts');
  const uid = getuid?.() ?? -1;
  if (j.host !== hostname()) return refuse(`written on host '${j.host}'`);
  if (j.uid !== uid || f.st.uid !== uid) return refuse(`written by uid ${j.uid} (file owned by ${f.st.uid}), not ${uid}`);
  if (!deadHere(j.pid, j.host)) return refuse(`its run (pid ${j.pid}) is still running`);
  const prev = lock.previous;
  if (prev !== undefined && (prev.pid !== j.pid || prev.nonce !== j.nonce)) {
    return refuse(`the lock we took over was left by pid ${prev.pid}, not by the run that wrote it (pid ${j.pid})`);
  }
  return { j, mtimeMs: f.st.mtimeMs };
}

function parseJournal(raw: Partial<Journal>, len: number): Journal | undefined {
  const names = (v: unknown): string[] | undefined => (Array.isArray(v) && v.every((b) => typeof b === 'string' && PACK_NAME.test(b) && b.length === 5 + 2 * len) ? (v as string[]) : undefined);
  const packs = Array.isArray(raw.packs) && raw.packs.every((p) => p !== null && typeof p === 'object' && names([p.name]) !== undefined && typeof p.idx === 'string' && /^[0-9a-f]+$/.test(p.idx) && p.idx.length === 2 * len) ? raw.packs : undefined;
  const installed = names(raw.installed);
  const remove = names(raw.remove);
  if (raw.version !== VERSION || packs === undefined || installed === undefined || remove === undefined) return undefined;
  if (!Number.isSafeInteger(raw.pid) || !Number.isSafeInteger(raw.uid) || typeof raw.host !== 'string' || typeof raw.nonce !== 'string' || !/^[0-9a-f]{32}$/.test(raw.nonce)) return undefined;
  if (!installed.every((n) => packs.some((p) => p.name === n))) return undefined;
  const midx = { rewrite: raw.midx?.rewrite === true, bitmap: raw.midx?.bitmap === true };
  return { version: VERSION, pid: raw.pid!, host: raw.host, uid: raw.uid!, nonce: raw.nonce, packs, installed, remove, midx };
}

/**
 * Removes the old packs of a run whose new packs are all installed: each only once every id of
 * its `.idx` is found in a pack the journal names and that still has the checksums it recorded,
 * or in a pack kept with `.keep`. Anything else stays, with a warning.
 */
function finishRemovals(r: Recovery, j: Journal, journalTime: number): string[] {
  const packDir = join(r.objectsDir, 'pack');
  const path = journalPath(r.objectsDir);
  const provers: PackIndex[] = [];
  for (const p of j.packs) {
    const idx = checkedIdx(join(packDir, p.name), r.algo, p.idx);
    if (idx !== undefined) provers.push(idx);
    else if (j.installed.includes(p.name)) r.warn(`${join(packDir, p.name)}.pack no longer has the checksums ${path} recorded; the old packs it lists are left alone`);
  }
  if (!j.installed.every((n) => provers.some((x) => x.file === join(packDir, n + '.idx')))) return [];
  for (const kept of keptPacks(packDir)) {
    const idx = checkedIdx(kept, r.algo);
    if (idx !== undefined) provers.push(idx);
  }
  const removable: string[] = [];
  for (const name of j.remove) {
    if (j.packs.some((p) => p.name === name)) continue;
    const b = join(packDir, name);
    if (exists(b + '.keep')) {
      r.warn(`${b}.pack has a .keep file: left alone`);
      continue;
    }
    if (!exists(b + '.idx')) {
      // What a kill between two unlinks left: a pack git no longer sees.
      removable.push(b);
      continue;
    }
    const missing = missingIn(b + '.idx', r.algo, provers);
    if (missing === 0) removable.push(b);
    else r.warn(`${b}.pack: ${missing < 0 ? 'its index cannot be read' : `${missing} of its objects are in no installed or kept pack`}; left alone`);
  }
  // As in the run itself: a multi-pack-index naming a pack we remove goes first.
  if (j.midx.rewrite && removable.length > 0) {
    const mf = midxFiles(r.objectsDir);
    if (mf.midx !== undefined) unlinkIfExists(mf.midx);
    for (const e of mf.extras) unlinkIfExists(e);
    fsyncDir(packDir);
  }
  // Whatever is left of each pack, not only its .idx or .pack: a kill may fall between two unlinks.
  const done = removable.filter((b) => removePack(b));
  fsyncDir(packDir);
  if (j.midx.rewrite) {
    // A run killed with its process group while git wrote the multi-pack-index leaves git's
    // lock behind (git removes it on any signal it can catch), and every later midx write
    // would fail on it. One no older than the journal was made during that run: ours.
    const lockPath = join(packDir, 'multi-pack-index.lock');
    const lockTime = statSync(lockPath, { throwIfNoEntry: false })?.mtimeMs;
    if (lockTime !== undefined && lockTime >= journalTime) {
      unlinkIfExists(lockPath);
      r.warn(`removed ${lockPath}, left by git multi-pack-index write in an interrupted run`);
    }
    r.rewriteMidx(j.midx.bitmap);
  }
  return done;
}

/**
 * The index of the pack at `base` when both files are regular and agree: the `.pack`'s trailer
 * is the hash in its name and the checksum the `.idx` records, and the `.idx` has the checksum
 * the journal recorded (when it did).
 */
function checkedIdx(base: string, algo: HashAlgo, idxSum?: string): PackIndex | undefined {
  try {
    const idx = parseIdx(readRegular(base + '.idx'), algo, base + '.idx');
    const want = PACK_NAME.exec(basename(base))?.[1];
    if (idxSum !== undefined && toHex(idx.idxChecksum) !== idxSum) return undefined;
    if (want === undefined || toHex(idx.packChecksum) !== want) return undefined;
    const fd = openRegular(base + '.pack');
    try {
      const size = statSync(base + '.pack').size;
      const trailer = Buffer.alloc(algo.len);
      if (size < algo.len || readSync(fd, trailer, 0, algo.len, size - algo.len) !== algo.len) return undefined;
      return trailer.equals(idx.packChecksum) ? idx : undefined;
    } finally {
      closeSync(fd);
    }
  } catch {
    return undefined;
  }
}

/** How many ids of the `.idx` at `file` no prover holds; -1 when it cannot be read. */
function missingIn(file: string, algo: HashAlgo, provers: PackIndex[]): number {
  let idx: PackIndex;
  try {
    idx = parseIdx(readRegular(file), algo, file);
  } catch {
    return -1;
  }
  const ids = idx.ids;
  let missing = 0;
  for (let i = 0; i < idx.count; i++) if (!provers.some((p) => p.find(ids, i * algo.len) >= 0)) missing++;
  return missing;
}

function keptPacks(packDir: string): string[] {
  let names: string[];
  try {
    names = readdirSync(packDir);
  } catch {
    return [];
  }
  return names.filter((n) => n.endsWith('.keep') && PACK_NAME.test(n.slice(0, -5))).map((n) => join(packDir, n.slice(0, -5)));
}

function exists(p: string): boolean {
  return statSync(p, { throwIfNoEntry: false }) !== undefined;
}

function bestEffort(f: () => unknown): void {
  try {
    f();
  } catch {
    // the next run's recovery and leftover cleaning finish this
  }
}
