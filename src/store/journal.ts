import { getuid } from 'node:process';
import { hostname } from 'node:os';
import { basename, join } from 'node:path';
import { closeSync, fstatSync, readSync, statSync } from 'node:fs';
import { GitError } from '../errors.js';
import { toHex, type HashAlgo } from '../hash/algo.js';
import type { PackIndex } from '../format/idx.js';
import { fsyncDir, renameInto, unlinkIfExists, writeFileDurable } from './files.js';
import { checkedIdx, exists, missingFrom, packsWith } from './journal-proof.js';
import type { RepoLock } from './lock.js';
import { midxFiles, PACK_NAME, removePack, REMOVING_IDX } from './packdir.js';
import { openRegular, readSmallFile } from './regular.js';
import { adjustSharedPerm } from './shared-perm.js';

/**
 * `objects/repack-ts.journal`: written (atomically, fsynced) before the first new pack is
 * installed and removed once the old files are gone. The next run finds it after a kill or a
 * failure and either finishes the removals or takes back a partial install. It lives in the
 * object directory like everything we write; git ignores files it does not know there.
 *
 * A journal is acted on only by the run that took over the lock of the run that wrote it: our
 * format, this host, this uid (in the journal and as the file's owner), and the pid, host and
 * nonce of the stale lock this run took over (store/lock.ts; or that lock's `pending` nonce, when
 * its run took over the writer's lock and was killed before adopting the journal). So a run that
 * fails once its journal is down leaves its lock in place (`RepoLock.release`), and so does a
 * signal. Anything else (a journal with no such lock, a copied or restored one, a damaged file)
 * is reported, left alone, and the run stops before it changes anything. Even a tied journal
 * removes an old pack only when every id of its `.idx` is in a pack the journal names and that
 * checked, or in a kept pack, and never one with `.keep`; a `.pack` without `.idx` only with the
 * index that proves it (store/journal-proof.ts).
 */
export const JOURNAL = 'repack-ts.journal';
const VERSION = 2;
/** Ours are a few hundred bytes per pack; 0xffff packs at most. */
const MAX_JOURNAL_BYTES = 16 << 20;
/** A temporary index of ours in objects/pack (store/files.ts `tmpPath`). */
const TMP_IDX = /^tmp_idx_rts\d+_[0-9a-f]{8}$/;

export interface JournalPack {
  /** `pack-<hash>`: the hash is the pack's trailer. */
  name: string;
  /** The `.idx` file's own checksum (its last bytes). */
  idx: string;
  /** Where that `.idx` was when the journal was written, if not in place: a new pack's temporary index. */
  from?: string | undefined;
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
export function newJournal(
  lock: RepoLock,
  packs: JournalPack[],
  installed: string[],
  remove: string[],
  midx: Journal['midx'],
): Journal {
  return {
    version: VERSION,
    pid: lock.owner.pid,
    host: lock.owner.host,
    uid: getuid?.() ?? -1,
    nonce: lock.owner.nonce,
    packs,
    installed,
    remove,
    midx,
  };
}

/** A pack for the journal: its name and the checksum at the end of its `.idx` (wherever that is now). */
export function journalPack(name: string, idxPath: string, algo: HashAlgo): JournalPack {
  const fd = openRegular(idxPath);
  try {
    const size = fstatSync(fd).size;
    const sum = Buffer.alloc(algo.len);
    readSync(fd, sum, 0, algo.len, Math.max(0, size - algo.len));
    const from = basename(idxPath);
    return from === name + '.idx' ? { name, idx: toHex(sum) } : { name, idx: toHex(sum), from };
  } finally {
    closeSync(fd);
  }
}

/** Writes the journal; `adopting` one already there, a failure leaves that one in place. */
export function writeJournal(
  objectsDir: string,
  j: Journal,
  shared: number,
  adopting = false,
): void {
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

/** The nonce of the run the journal in `objectsDir` belongs to, whose lock must stay until the next run (store/lock.ts). */
export function journalNonce(objectsDir: string): string | undefined {
  const f = readSmallFile(journalPath(objectsDir), MAX_JOURNAL_BYTES);
  if (f === undefined || 'why' in f) return undefined;
  try {
    const nonce = (JSON.parse(f.data.toString('utf8')) as Partial<Journal>).nonce;
    return typeof nonce === 'string' && /^[0-9a-f]{32}$/.test(nonce) ? nonce : undefined;
  } catch {
    return undefined;
  }
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
    for (const ext of ['.pack', '.rev', '.bitmap', '.promisor'])
      if (unlinkIfExists(b + ext)) taken.push(b + ext);
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

/**
 * Finishes, or rolls back, a run that was killed or failed after writing its journal; throws,
 * having changed nothing, when the journal there is not tied to the lock this run took over.
 */
export function recoverJournal(r: Recovery): string[] {
  const path = journalPath(r.objectsDir);
  const found = readTiedJournal(path, r.lock, r.algo);
  // A journal never completed (nothing had been installed); only a file of ours, links are not followed.
  const tmp = readSmallFile(path + '.tmp', 0);
  if (tmp !== undefined && 'st' in tmp && tmp.st.uid === (getuid?.() ?? tmp.st.uid))
    unlinkIfExists(path + '.tmp');
  if (found === undefined) return [];
  // Adopted before anything is done: a kill of this run leaves a journal tied to this run's lock.
  const j = { ...found.j, pid: r.lock.owner.pid, nonce: r.lock.owner.nonce };
  writeJournal(r.objectsDir, j, r.shared, true);
  const packDir = join(r.objectsDir, 'pack');
  const installedOk = j.installed.every(
    (b) => exists(join(packDir, b + '.idx')) && exists(join(packDir, b + '.pack')),
  );
  const done = installedOk ? finishRemovals(r, j, found.mtimeMs) : rollBack(r, j);
  unlinkIfExists(path);
  return done;
}

/** The journal at `path` when it is tied to the killed or failed run of ours (see above); throws otherwise. */
function readTiedJournal(
  path: string,
  lock: RepoLock,
  algo: HashAlgo,
): { j: Journal; mtimeMs: number } | undefined {
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
  if (j.uid !== uid || f.st.uid !== uid)
    return refuse(`written by uid ${j.uid} (file owned by ${f.st.uid}), not ${uid}`);
  const prev = lock.previous;
  if (prev === undefined)
    return refuse(
      `its run (pid ${j.pid}) left no lock for this run to take over (a copied or restored journal?)`,
    );
  // The lock of the run that wrote it, or of a run that took that lock over and was killed before it adopted the journal.
  const tied =
    prev.host === j.host &&
    ((prev.pid === j.pid && prev.nonce === j.nonce) || prev.pending === j.nonce);
  if (!tied)
    return refuse(
      `the lock this run took over was another run's (pid ${prev.pid}), not the lock of the run that wrote it (pid ${j.pid})`,
    );
  return { j, mtimeMs: f.st.mtimeMs };
}

function parseJournal(raw: Partial<Journal>, len: number): Journal | undefined {
  const names = (v: unknown): string[] | undefined =>
    Array.isArray(v) &&
    v.every((b) => typeof b === 'string' && PACK_NAME.exec(b)?.[1]?.length === 2 * len)
      ? (v as string[])
      : undefined;
  const packOk = (p: JournalPack): boolean =>
    p !== null &&
    typeof p === 'object' &&
    names([p.name]) !== undefined &&
    typeof p.idx === 'string' &&
    /^[0-9a-f]+$/.test(p.idx) &&
    p.idx.length === 2 * len &&
    (p.from === undefined || (typeof p.from === 'string' && TMP_IDX.test(p.from)));
  const packs =
    Array.isArray(raw.packs) && raw.packs.every(packOk)
      ? raw.packs.map((p) => ({ name: p.name, idx: p.idx, from: p.from }))
      : undefined;
  const installed = names(raw.installed);
  const remove = names(raw.remove);
  if (
    raw.version !== VERSION ||
    packs === undefined ||
    installed === undefined ||
    remove === undefined
  )
    return undefined;
  if (
    !Number.isSafeInteger(raw.pid) ||
    !Number.isSafeInteger(raw.uid) ||
    typeof raw.host !== 'string' ||
    typeof raw.nonce !== 'string' ||
    !/^[0-9a-f]{32}$/.test(raw.nonce)
  )
    return undefined;
  if (!installed.every((n) => packs.some((p) => p.name === n))) return undefined;
  const midx = { rewrite: raw.midx?.rewrite === true, bitmap: raw.midx?.bitmap === true };
  return {
    version: VERSION,
    pid: raw.pid!,
    host: raw.host,
    uid: raw.uid!,
    nonce: raw.nonce,
    packs,
    installed,
    remove,
    midx,
  };
}

/** The warning for a `.pack` without `.idx` that nothing proves redundant. */
function idxlessLeft(b: string): string {
  return `${b}.pack has no .idx, so git does not see it (git count-objects -v counts it as garbage), and nothing proves its objects are in another pack: left alone. 'git index-pack ${b}.pack' makes it a pack git reads again.`;
}

/**
 * Takes back an install that did not finish: the new packs without their `.idx`. The old packs
 * are all still there (removal starts once every new pack is installed), so each new `.pack` goes
 * once its temporary index, as the journal recorded it, shows every object in it to be in another
 * pack or loose; one that nothing proves stays.
 */
function rollBack(r: Recovery, j: Journal): string[] {
  const packDir = join(r.objectsDir, 'pack');
  let provers: PackIndex[] | undefined;
  const taken: string[] = [];
  for (const name of j.installed) {
    const b = join(packDir, name);
    if (exists(b + '.idx')) continue;
    const rec = j.packs.find((p) => p.name === name);
    if (exists(b + '.pack')) {
      const idx =
        rec?.from === undefined
          ? undefined
          : checkedIdx(b, r.algo, rec.idx, join(packDir, rec.from));
      provers ??= packsWith(packDir, '.idx').flatMap((o) => checkedIdx(o, r.algo) ?? []);
      if (idx === undefined || missingFrom(idx, r.algo, provers, r.objectsDir) !== 0) {
        r.warn(idxlessLeft(b));
        continue;
      }
    }
    taken.push(...rollbackInstall(packDir, [name]));
  }
  return taken;
}

/**
 * Removes the old packs of a run whose new packs are all installed: each only once every id of
 * its `.idx` is found in a pack the journal names and that still has the checksums it recorded,
 * or in a pack kept with `.keep`. Anything else stays, with a warning.
 */
function finishRemovals(r: Recovery, j: Journal, journalTime: number): string[] {
  const packDir = join(r.objectsDir, 'pack');
  const provers = journalProvers(r, j);
  if (provers === undefined) return [];
  const removable = j.remove
    .filter((name) => !j.packs.some((p) => p.name === name))
    .map((name) => join(packDir, name))
    .filter((b) => redundant(r, b, provers));
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

/** The indexes of the packs the journal names that still check, and of the kept packs; undefined when an installed one does not. */
function journalProvers(r: Recovery, j: Journal): PackIndex[] | undefined {
  const packDir = join(r.objectsDir, 'pack');
  const provers: PackIndex[] = [];
  for (const p of j.packs) {
    const idx = checkedIdx(join(packDir, p.name), r.algo, p.idx);
    if (idx !== undefined) provers.push(idx);
    else if (j.installed.includes(p.name))
      r.warn(
        `${join(packDir, p.name)}.pack no longer has the checksums ${journalPath(r.objectsDir)} recorded; the old packs it lists are left alone`,
      );
  }
  if (!j.installed.every((n) => provers.some((x) => x.file === join(packDir, n + '.idx'))))
    return undefined;
  for (const kept of packsWith(packDir, '.keep')) {
    const idx = checkedIdx(kept, r.algo);
    if (idx !== undefined) provers.push(idx);
  }
  return provers;
}

/** May the old pack at `b` go: is every object in it in a prover? Warns why not. */
function redundant(r: Recovery, b: string, provers: PackIndex[]): boolean {
  if (exists(b + '.keep')) {
    r.warn(`${b}.pack has a .keep file: left alone`);
    return false;
  }
  // No .pack: what is left holds no object (a kill between two unlinks).
  if (!exists(b + '.pack')) return true;
  if (exists(b + '.idx')) {
    const idx = checkedIdx(b, r.algo);
    const missing = idx === undefined ? -1 : missingFrom(idx, r.algo, provers);
    if (missing !== 0)
      r.warn(
        `${b}.pack: ${missing < 0 ? 'its index cannot be read or does not match it' : `${missing} of its objects are in no installed or kept pack`}; left alone`,
      );
    return missing === 0;
  }
  // A .pack git does not see: ours, killed in `removePack`, with its index renamed aside; or not.
  const aside = checkedIdx(b, r.algo, undefined, b + REMOVING_IDX);
  if (aside !== undefined && missingFrom(aside, r.algo, provers) === 0) return true;
  r.warn(idxlessLeft(b));
  return false;
}

function bestEffort(f: () => unknown): void {
  try {
    f();
  } catch {
    // the next run's recovery and leftover cleaning finish this
  }
}
