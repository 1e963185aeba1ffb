import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { GitError, errorDetail } from '../errors.js';
import { toHex } from '../hash/algo.js';
import { listLoose, loosePath } from '../store/loose.js';
import { removeOnSignal } from '../cleanup.js';
import { Pack } from '../store/pack.js';
import { buildFsckView, listPacks, makeViewDir, removeView, viewPack } from '../store/packdir.js';
import { fault } from '../store/files.js';
import {
  indexPackStream,
  onlyObjectsWrittenMeanwhile,
  runGitFsck,
  type FsckMode,
  type GitProgress,
} from '../store/fsck.js';
import type { Repository } from '../store/repo.js';
import {
  wholeNotIndexed,
  type ChangedDestination,
  type ChangedPack,
} from '../repack/changed-pack.js';
import type { RewriteStats, WrittenPack } from '../repack/rewrite.js';
import { verifyPack } from './verify.js';

/**
 * How `git repack-ts` has git check what it wrote, before anything is installed: `--fsck=changed`
 * (git index-pack on the entries written anew, beside our own proof) and `--fsck=full|connectivity`
 * (git fsck on a view of the repository as it will be). A failure names where the damage came from.
 */

/** A partition's new pack, written and not yet installed. */
export interface WrittenPartition {
  kind: 'normal' | 'promisor';
  w: WrittenPack;
  stats: RewriteStats;
  /** The old packs it replaces (and whether each has a `.bitmap`). */
  sources: { name: string; base: string; bitmap?: boolean }[];
  /** The loose objects it packs. */
  loose: Buffer[];
  /** `pack-<checksum>`: its name once installed. */
  final: string;
  /** Its `.promisor` marker, written beside it (promisor partitions). */
  promisorTmp?: string;
  /** Its `.bitmap`, carried over from a source pack's (repack-bitmap.ts). */
  bitmapTmp?: string;
  /** git reading back what was written anew (`--fsck=changed`), when anything was. */
  check?: ChangedCheck | undefined;
}

/**
 * Where the objects git fsck complains about came from (a damaged source pack, say, whose entries
 * were copied byte for byte under a CRC that matched): the file and offset of each, for the message.
 */
function whereFrom(
  output: string,
  packs: Pack[],
  objectsDir: string,
  len: number,
): { text: string; suspects: Set<Pack> } {
  const ids = [...new Set(output.match(new RegExp(`\\b[0-9a-f]{${len * 2}}\\b`, 'g')) ?? [])].slice(
    0,
    20,
  );
  const lines: string[] = [];
  const suspects = new Set<Pack>();
  for (const hex of ids) {
    const id = Buffer.from(hex, 'hex');
    for (const p of packs) {
      const off = p.findOffset(id);
      if (off < 0) continue;
      lines.push(`${p.packPath}: object ${hex} at offset ${off}`);
      suspects.add(p);
    }
    const loose = loosePath(objectsDir, id);
    if (existsSync(loose)) lines.push(`${loose}: loose object ${hex} at offset 0`);
  }
  return {
    text:
      lines.length > 0 ? `\nThe objects it names come from:\n${lines.slice(0, 10).join('\n')}` : '',
    suspects,
  };
}

/** Verifying more than this of old packs for an error message would take too long. */
const VERIFY_FOR_MESSAGE_BYTES = 256 << 20;

/**
 * What `verify` finds in the old packs, for the message of a failed fsck: the packs holding the
 * objects git named, or, when it named none (it may die on a hostile size), every old pack if
 * they are small enough. At most ten lines.
 */
async function verifySources(
  sources: Pack[],
  suspects: Set<Pack>,
  algo: Repository['algo'],
): Promise<string> {
  let packs = sources.filter((p) => suspects.has(p));
  if (packs.length === 0 && sources.reduce((n, p) => n + p.size, 0) <= VERIFY_FOR_MESSAGE_BYTES)
    packs = sources;
  const lines: string[] = [];
  for (const p of packs) {
    try {
      const r = await verifyPack(p.packPath, p.idxPath, algo);
      for (const pr of r.problems.slice(0, 5))
        lines.push(`${pr.file}: ${pr.message} at offset ${pr.offset}`);
    } catch (e) {
      // one of ours names its file already; anything else gets the pack's name
      lines.push(
        e instanceof GitError && e.file !== undefined
          ? e.message
          : `${p.packPath}: ${errorDetail(e)}`,
      );
    }
    if (lines.length >= 10) break;
  }
  return lines.length > 0 ? `\nverify of the old packs:\n${lines.slice(0, 10).join('\n')}` : '';
}

/** Does the configuration name a promisor remote (`remote.<name>.promisor` or `extensions.partialClone`)? */
function hasPromisorRemote(repo: Repository): boolean {
  return repo.config
    .keys()
    .some((k) => /^remote\..*\.promisor$/.test(k) && repo.config.getBool(k) === true);
}

/** A `--fsck=changed` check under way (`startChangedCheck`). */
export interface ChangedCheck {
  /** Where the rewrite sends the entries it writes anew. */
  dest: ChangedDestination;
  /**
   * Once the new pack and its idx are written: git's verdict. Rejects with a GitError naming
   * where what git could not read back came from.
   */
  finish(
    newIdxPath: string,
    sources: Pack[],
    onProgress: (phase: string, done: number, total: number) => void,
  ): Promise<void>;
}

/**
 * `--fsck=changed`: git reads back every entry of the new pack whose bytes were written anew —
 * every entry re-encoded, every packed loose object, every delta written whole — through `git
 * index-pack --stdin` on a pack of just those, sent while the rewrite writes them
 * (changed-pack.ts): it inflates each, hashes each whole object, and each of their ids must be in
 * its index. Entries copied byte for byte under a verified CRC32 are not read again.
 */
export function startChangedCheck(repo: Repository, scratchDirs: string[]): ChangedCheck {
  // One directory, removed whole (by the next run's leftover cleaning after a kill), holds all of
  // it: git's object directory for the check (empty) and, beside its pack/, the pack of changed
  // entries and git's index of it. A git index-pack orphaned by a kill then cannot leave an
  // index behind once the directory is gone.
  const dir = removeOnSignal(makeViewDir(repo.objectsDir));
  scratchDirs.push(dir);
  mkdirSync(join(dir, 'pack'), { recursive: true });
  const sub = { pack: join(dir, 'changed.pack'), idx: join(dir, 'changed.idx') };
  fault('phase:fsck', sub.pack); // the moment git checks, whatever the mode (the reliability harness stops here)
  const git = indexPackStream(repo.gitDir, sub.pack, sub.idx, dir, repo.env);
  git.result.catch(() => undefined); // (awaited by finish; a run that fails first never asks)
  let sent: ChangedPack | undefined;
  return {
    dest: {
      write: git.write,
      ready: git.ready,
      drained: git.drained,
      end: (s) => ((sent = s), git.end()),
      abort: git.kill,
    },
    async finish(newIdxPath, sources, onProgress) {
      const r = await git.result;
      if (sent === undefined) throw new Error('the pack of changed entries was not finished');
      const missing = r.ok ? wholeNotIndexed(sub.idx, sent, newIdxPath, repo.algo) : undefined;
      if (r.ok && missing === undefined) {
        // (Its phase is reported once, when git is done: it runs beside our own proof, whose
        // 'validating' line would otherwise come between its start and its end.)
        onProgress('checking with git index-pack', 1, 1);
        return;
      }
      // Name what git could not read back: the objects it names, or the one whose id it did not find.
      const where = whereFrom(missing ?? r.output, sources, repo.objectsDir, repo.algo.len);
      const said = r.ok
        ? `${missing}: git index-pack hashed the rewritten entries to other ids`
        : `git index-pack said:\n${r.output}`;
      throw new GitError(
        'verify-failed',
        `git could not read back the rewritten entries; nothing was changed.${where.text}${await verifySources(sources, where.suspects, repo.algo)}\n${said}`,
      );
    },
  };
}

/** What the git fsck check needs to know of the run. */
export interface FsckCheck {
  mode: FsckMode;
  /** git fsck's own progress (`--progress`), when wanted. */
  onProgress?: GitProgress | undefined;
  toInstall: WrittenPartition[];
  /** Bases (paths without `.pack`) of the packs the run will remove. */
  removing: Set<string>;
  /** Every pack the run opened, by base. */
  opened: Map<string, Pack>;
  /** The loose objects listed at the start. */
  looseIds: Buffer[];
  /** Each view made is recorded here at once, so that the caller removes it whatever happens. */
  scratchDirs: string[];
  warn: (message: string) => void;
}

/**
 * git fsck on the state after the rewrite, before anything is installed or removed: a view of the
 * objects directory with the new packs in place of the old ones. Rejects with a GitError naming
 * what git found and where it came from.
 */
export async function checkWithGitFsck(repo: Repository, c: FsckCheck): Promise<void> {
  const { algo, objectsDir } = repo;
  const packDir = join(objectsDir, 'pack');
  const hasPromisor =
    c.toInstall.some((x) => x.promisorTmp !== undefined) ||
    listPacks(objectsDir).some((p) => p.promisor && !c.removing.has(p.base));
  const promisorRemote =
    repo.config.get('extensions.partialclone') !== undefined || hasPromisorRemote(repo);
  if (hasPromisor && !promisorRemote)
    c.warn(
      'promisor packs but no promisor remote configured: git fsck runs as for a partial clone',
    );
  // Objects that git writes while we run (a commit, a fetch) are not in a view built before
  // they arrived, yet refs may already name them: when the objects changed while fsck ran,
  // build the view again and look once more.
  const objectsNow = (): string =>
    `${listPacks(objectsDir)
      .map((p) => p.name)
      .join(',')}|${listLoose(objectsDir, algo).length}`;
  // Ids we listed at the start (in any pack, or loose): a complaint about one is never benign.
  const looseHex = new Set(c.looseIds.map((id) => toHex(id)));
  const listed = (hex: string): boolean => {
    if (looseHex.has(hex)) return true;
    const id = Buffer.from(hex, 'hex');
    return [...c.opened.values()].some((p) => p.findOffset(id) >= 0);
  };
  for (let attempt = 1; ; attempt++) {
    const before = objectsNow();
    const viewDir = removeOnSignal(makeViewDir(objectsDir));
    c.scratchDirs.push(viewDir);
    const viewPacks = [
      ...c.toInstall.map((x) => ({
        pack: x.w.packPath,
        idx: x.w.idxPath,
        rev: x.w.revPath,
        promisor: x.promisorTmp,
        base: join(packDir, x.final),
      })),
      ...listPacks(objectsDir)
        .filter((p) => !c.removing.has(p.base))
        .map(viewPack),
    ];
    buildFsckView(objectsDir, viewDir, viewPacks);
    fault('phase:fsck', viewDir);
    const f = await runGitFsck(repo.gitDir, viewDir, c.mode, repo.env, {
      assumePromisor: hasPromisor && !promisorRemote,
      onProgress: c.onProgress,
    });
    removeView(viewDir);
    if (f.ok) return;
    if (attempt < 3 && objectsNow() !== before) continue;
    if (onlyObjectsWrittenMeanwhile(f.output, algo.len * 2, listed, repo.gitDir, repo.env)) return;
    // Entries are copied under their CRC32 without being inflated: damage that the CRC
    // covers (a delta that cannot apply, a wrong declared size) reaches git fsck. Name its
    // source: the objects git names, and what our verify finds in the old packs.
    const sources = [...c.removing]
      .map((b) => c.opened.get(b))
      .filter((p): p is Pack => p !== undefined);
    const where = whereFrom(f.output, [...c.opened.values()], objectsDir, algo.len);
    throw new GitError(
      'verify-failed',
      `git fsck found problems in the rewritten repository; nothing was changed.${where.text}${await verifySources(sources, where.suspects, algo)}\ngit fsck said:\n${f.output}`,
    );
  }
}
