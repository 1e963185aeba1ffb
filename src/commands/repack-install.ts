import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { basename, join } from 'node:path';
import { GitError } from '../errors.js';
import { toHex } from '../hash/algo.js';
import { loosePath } from '../store/loose.js';
import type { RepoLock } from '../store/lock.js';
import {
  journalPack,
  newJournal,
  removeJournal,
  rollbackInstall,
  writeJournal,
  type JournalPack,
} from '../store/journal.js';
import type { Pack } from '../store/pack.js';
import { installPack, midxFiles, removeLoose, removePack } from '../store/packdir.js';
import { fault, fsyncDir, unlinkIfExists } from '../store/files.js';
import type { Repository } from '../store/repo.js';
import type { WrittenPartition } from './repack-check.js';

/**
 * The end of `git repack-ts`, once every new pack is proven and checked: a journal, the new packs
 * installed in git's order, then the old packs, the packed loose objects and the multi-pack-index
 * (git's `remove_redundant_pack`, `prune_packed_objects`, `write_midx_file`).
 */

/** What a system error interrupted, and the state it left: the run's message if one comes. */
export interface Where {
  step: string;
  state: string;
}

export interface Installation {
  lock: RepoLock;
  /** core.sharedRepository's permission rule. */
  shared: number;
  written: WrittenPartition[];
  /** The written packs not already installed under their name. */
  toInstall: WrittenPartition[];
  /** Bases (paths without `.pack`) of the old packs to remove. */
  removing: Set<string>;
  /** Packs kept as they are: they hold objects too, for the journal's proof. */
  retainedPacks: Pack[];
  /** Every pack the run opened (closed before the removals). */
  opened: Map<string, Pack>;
  warn: (message: string) => void;
  where: Where;
  /** A bitmap could not be carried over: git writes a multi-pack-index bitmap once the old packs are gone. */
  midxBitmap: boolean;
}

/** Runs cleanup that must not hide the error being reported. */
export function bestEffort(f: () => unknown): void {
  try {
    f();
  } catch {
    // the next run's recovery and leftover cleaning finish this
  }
}

/**
 * `git multi-pack-index write`, with `--bitmap` when asked; a midx without its bitmap when that
 * fails, unless `plain` is false (a midx written only for its bitmap is not wanted without one).
 */
export function rewriteMidx(
  repo: Repository,
  bitmap: boolean,
  warn: (m: string) => void,
  plain = true,
): boolean {
  // The object directory we rewrote, which GIT_OBJECT_DIRECTORY may have put elsewhere.
  const args = ['multi-pack-index', '--object-dir', repo.objectsDir, 'write'];
  if (bitmap) args.push('--bitmap');
  // git finds --object-dir only among the object directories it knows: name ours as its own.
  const env: NodeJS.ProcessEnv = {
    ...repo.env,
    GIT_DIR: repo.gitDir,
    GIT_OBJECT_DIRECTORY: repo.objectsDir,
  };
  let r = spawnSync('git', args, { cwd: repo.gitDir, env, encoding: 'utf8' });
  if (r.status !== 0 && bitmap) {
    if (!plain) {
      warn(
        `could not write a multi-pack-index bitmap: ${(r.stderr || '').trim()}; the repository has no bitmap`,
      );
      return false;
    }
    warn(
      `could not write a multi-pack-index bitmap (${(r.stderr || '').trim()}); writing the multi-pack-index without one`,
    );
    r = spawnSync('git', args.slice(0, -1), { cwd: repo.gitDir, env, encoding: 'utf8' });
  }
  if (r.status !== 0) {
    warn(`could not rewrite the multi-pack-index: ${(r.stderr || '').trim()}`);
    return false;
  }
  return true;
}

/** Installs the new packs and removes what they replace; returns what was removed. */
export function installAndRemove(
  repo: Repository,
  i: Installation,
): { removedPacks: string[]; removedLoose: number; midx: 'none' | 'rewritten' | 'removed' } {
  const { algo, objectsDir } = repo;
  const packDir = join(objectsDir, 'pack');
  // The journal goes down before anything is installed: a run killed from here on is finished
  // or rolled back by the next one (see `JOURNAL`).
  const mf = midxFiles(objectsDir);
  const holders: JournalPack[] = [
    ...i.written.map((x) => journalPack(x.final, x.w.idxPath, algo)),
    ...i.retainedPacks.map((p) => journalPack(basename(p.packPath, '.pack'), p.idxPath, algo)),
  ];
  // A bitmap that could not be carried over comes back as git's multi-pack-index bitmap (the
  // journal asks the next run to write it if this one is killed before).
  const midxPlan = {
    rewrite: (mf.midx !== undefined && i.removing.size > 0) || i.midxBitmap,
    bitmap: mf.bitmap || i.midxBitmap,
  };
  const journal = newJournal(
    i.lock,
    holders,
    i.toInstall.map((x) => x.final),
    [...i.removing].map((b) => basename(b)),
    midxPlan,
  );
  i.where.step = 'installing the new pack';
  if (i.toInstall.length > 0 || i.removing.size > 0 || i.written.some((x) => x.loose.length > 0))
    writeJournal(objectsDir, journal, i.shared);
  fault('phase:install');
  // Install: .pack, .rev, .bitmap, .promisor, then .idx last.
  try {
    for (const x of i.toInstall) {
      installPack(
        packDir,
        toHex(x.w.checksum),
        {
          pack: x.w.packPath,
          idx: x.w.idxPath,
          rev: x.w.revPath,
          bitmap: x.bitmapTmp,
          promisor: x.promisorTmp,
        },
        i.shared,
      );
    }
  } catch (e) {
    bestEffort(() => rollbackInstall(packDir, journal.installed));
    bestEffort(() => removeJournal(objectsDir));
    throw e;
  }
  i.where.step = 'removing the old packs';
  i.where.state =
    'the new pack is installed and holds every object; the next run finishes the removal';
  // Another git (a gc, a `git repack -A -d`, which do not take our lock) may remove the new
  // pack meanwhile; the old files may then hold the only copies (git's -A loosens unreachable
  // objects only when they are not loose already). So each removal first checks that every
  // new pack is still there (loose objects: before each fan-out directory, see removeLoose).
  const newPacksThere = (what: string): void => {
    for (const x of i.written) {
      const b = join(packDir, x.final);
      if (existsSync(b + '.idx') && existsSync(b + '.pack')) continue;
      i.where.state = 'the old files that remain are left in place';
      throw new GitError(
        'verify-failed',
        `the new pack ${b}.pack vanished before the ${what} were removed (is another git gc or git repack running?); ${i.where.state}`,
        { file: b + '.pack' },
      );
    }
  };
  fault('phase:remove');
  newPacksThere('old packs');
  // A multi-pack-index naming a pack we remove must go first (git's `remove_redundant_pack`).
  if (journal.midx.rewrite && mf.midx !== undefined) {
    unlinkIfExists(mf.midx);
    for (const e of mf.extras) unlinkIfExists(e);
    fsyncDir(packDir);
  }
  for (const p of i.opened.values()) p.close();
  const removedPacks: string[] = [];
  for (const b of i.removing) {
    newPacksThere('old packs');
    removePack(b);
    removedPacks.push(basename(b));
  }
  fsyncDir(packDir);
  i.where.step = 'removing the packed loose objects';
  fault('phase:loose');
  const looseFiles = i.written.flatMap((x) => x.loose.map((id) => loosePath(objectsDir, id)));
  const removedLoose = removeLoose(objectsDir, looseFiles, () => newPacksThere('loose objects'));
  fault('phase:midx');
  const midx = journal.midx.rewrite
    ? rewriteMidx(repo, journal.midx.bitmap, i.warn, mf.midx !== undefined)
      ? 'rewritten'
      : 'removed'
    : 'none';
  fault('phase:done');
  removeJournal(objectsDir);
  return { removedPacks, removedLoose, midx };
}
