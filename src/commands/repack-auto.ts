import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { GitError } from '../errors.js';
import { targetsCover } from '../repack/encoding.js';
import { journalPath } from '../store/journal.js';
import { listPacks } from '../store/packdir.js';
import { entriesOf, identify, readProven } from '../store/proven.js';
import type { Repository } from '../store/repo.js';
import type { Levels } from '../repack/levels.js';

/**
 * `git repack-ts --auto`, as `git gc --auto`: a cheap look at the object directory that says
 * whether a run is worth starting. Nothing is opened but the proven-packs file and the ends of
 * each pack's files, and loose objects are counted until there are enough.
 */

/** `repackTs.auto`'s default: objects not yet at the levels (in new packs or loose) that make a run worth it. */
export const DEFAULT_AUTO_THRESHOLD = 1000;

export interface AutoCheck {
  /** Whether a run should go ahead. */
  run: boolean;
  /** Why (or why not), in words. */
  reason: string;
  /** Objects in packs not proven at the levels, plus loose ones (counted up to the threshold). */
  pending: number;
  threshold: number;
}

/** `repackTs.auto`: 0 turns --auto off (as gc.auto=0 does for git gc --auto). */
export function autoThreshold(repo: Repository): number {
  const n = repo.config.getInt('repackts.auto');
  if (n === undefined) return DEFAULT_AUTO_THRESHOLD;
  if (n < 0)
    throw new GitError(
      'bad-config',
      `bad repackTs.auto value ${n}: a number of objects, 0 to turn --auto off`,
    );
  return n;
}

/**
 * Loose objects, counted up to `enough` (then the count stops). git's `too_many_loose_objects`
 * estimates from `objects/17` alone, which says 0 for most small repositories; reading each
 * fan-out directory there is costs a few milliseconds.
 */
export function countLoose(objectsDir: string, hexLen: number, enough: number): number {
  let top: string[];
  try {
    top = readdirSync(objectsDir).filter((d) => /^[0-9a-f]{2}$/.test(d));
  } catch {
    return 0;
  }
  const re = new RegExp(`^[0-9a-f]{${hexLen - 2}}$`);
  let n = 0;
  for (const d of top) {
    try {
      for (const name of readdirSync(join(objectsDir, d))) if (re.test(name)) n++;
    } catch {
      // gone or not a directory
    }
    if (n >= enough) break;
  }
  return n;
}

/**
 * Whether `git repack-ts --auto` has enough to do at `levels` (`targets`: their `targetsKey`). A
 * repository where no level is set is left alone: the schedule runs in every repository `git
 * maintenance` knows, and a rewrite that changes no level only merges packs.
 */
export function autoCheck(repo: Repository, levels: Levels, targets: string): AutoCheck {
  const threshold = autoThreshold(repo);
  if (threshold === 0) return { run: false, reason: 'repackTs.auto is 0', pending: 0, threshold };
  if ([levels[1], levels[2], levels[3], levels[4]].every((l) => l === 'keep'))
    return { run: false, reason: 'no zlib level is set', pending: 0, threshold };
  if (existsSync(journalPath(repo.objectsDir)))
    return { run: true, reason: 'an interrupted run is to be finished', pending: 0, threshold };
  const state = readProven(repo.objectsDir, repo.algo);
  let pending = countLoose(repo.objectsDir, repo.algo.len * 2, threshold);
  for (const p of listPacks(repo.objectsDir)) {
    if (p.keep || p.cruft) continue;
    const id = identify(p.base, repo.algo);
    if (id === undefined) continue; // unreadable: the run proper reports it
    if (!entriesOf(state, id).some((e) => targetsCover(e.targets, targets))) pending += id.objects;
  }
  const run = pending >= threshold;
  const reason = `${pending} object${pending === 1 ? '' : 's'} not yet at these levels (repackTs.auto: ${threshold})`;
  return { run, reason, pending, threshold };
}
