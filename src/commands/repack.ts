import { existsSync } from 'node:fs';
import { basename, join } from 'node:path';
import { GitError, systemCallText, systemFields, systemWhere } from '../errors.js';
import { toHex } from '../hash/algo.js';
import { acquireRepackLock, type RepoLock } from '../store/lock.js';
import { recoverJournal } from '../store/journal.js';
import { sharedRepositoryOf } from '../store/shared-perm.js';
import { guardLock } from '../cleanup.js';
import { ObjectDatabase } from '../store/odb.js';
import { pathKey } from '../store/fs-path.js';
import { cleanLeftovers, ensurePackDir, isPackName, removeView } from '../store/packdir.js';
import { fault, tmpPath, unlinkIfExists, writeFileDurable } from '../store/files.js';
import type { FsckMode } from '../store/fsck.js';
import type { Repository } from '../store/repo.js';
import type { Level, Levels } from '../repack/levels.js';
import type { AutoRule } from '../repack/encoding.js';
import type { RewriteStats } from '../repack/rewrite.js';
import { autoCheck, type AutoCheck } from './repack-auto.js';
import { recordProven, runTargets } from './repack-select.js';
import { openSources, promisorLines, selectSources, type Sources } from './repack-sources.js';
import type { ChangedCheck, WrittenPartition } from './repack-check.js';
import { bestEffort, installAndRemove, rewriteMidx, type Where } from './repack-install.js';
import { newPackBitmap, type BitmapContext } from './repack-bitmap.js';

export interface RepackOptions {
  levels: Levels;
  /** The level `auto` compresses at (pack.compression, core.compression or -1). */
  autoFallback?: number | undefined;
  /** The `auto` rule, when a benchmark tries another than DEFAULT_AUTO_RULE. */
  autoRule?: AutoRule | undefined;
  dryRun: boolean;
  fsck: FsckMode;
  /** Packs to leave alone besides those with a `.keep` (names with or without `.pack`). */
  keepPacks: string[];
  onProgress?: ((phase: string, done: number, total: number) => void) | undefined;
  signal?: AbortSignal | undefined;
  /** Warnings that do not stop the run (e.g. a midx that could not be rewritten). */
  onWarning?: ((message: string) => void) | undefined;
  /** The largest pack entry held whole (MAX_HELD_ENTRY, 2 GiB - 1; lowered by tests only). */
  maxHeldEntry?: number | undefined;
  /**
   * `-a`: every pack into one per partition, as a first run does. Without it, packs proven at
   * these levels by an earlier run (store/proven.ts) are left as they are unless the geometric
   * rule merges them (repack/select.ts), and only what is new is rewritten.
   */
  all?: boolean | undefined;
  /** `--auto`: first a cheap check (repack-auto.ts); the run goes ahead only when it says so. */
  auto?: boolean | undefined;
  /**
   * The reachability bitmap (git repack's `-b`): undefined keeps one where a source pack had one
   * (carried over to the new pack); true gives the normal partition one (carried over, or else
   * git's multi-pack-index bitmap); false writes none (`--no-write-bitmap-index`).
   */
  writeBitmap?: boolean | undefined;
}

export interface PartitionResult {
  kind: 'normal' | 'promisor';
  sourcePacks: string[];
  looseObjects: number;
  stats: RewriteStats;
  /**
   * `pack-<hash>` of the result; equal to a source pack's name when the rewrite changed nothing;
   * absent when no pack is written (a dry run, or every object in a kept pack).
   */
  newPack?: string | undefined;
  unchanged: boolean;
  /**
   * The new pack's reachability bitmap: `carried` over from a source pack's, or git's `midx`
   * bitmap written instead; absent when none was written.
   */
  bitmap?: 'carried' | 'midx' | undefined;
}

export interface RepackResult {
  dryRun: boolean;
  levels: { commit: Level; tree: Level; blob: Level; tag: Level };
  partitions: PartitionResult[];
  keptPacks: string[];
  /** Packs left as they are because an earlier run proved them at these levels. */
  provenPacks: string[];
  removedPacks: string[];
  removedLoose: number;
  /** Loose object files left as they are: of a type no pack can hold (`git hash-object --literally -t <type>`). */
  looseLeft: string[];
  midx: 'none' | 'rewritten' | 'removed';
  fsck: FsckMode;
  leftoversCleaned: string[];
  /** With `--auto`: what the check found, and whether the run went ahead. */
  auto?: AutoCheck | undefined;
}

/** One run of `git repack-ts`: its lock, its temporary files, and what it has done so far. */
class RepackRun {
  readonly result: RepackResult;
  readonly where: Where = { step: 'reading the packs', state: 'nothing was changed' };
  readonly tmpFiles: string[] = [];
  /** Directories of ours (git's views, the check's pack): removed whatever happens. */
  readonly scratchDirs: string[] = [];
  /** git reading back what each partition writes anew (`--fsck=changed`), stopped if the run fails. */
  readonly checks: ChangedCheck[] = [];
  readonly packDir: string;
  readonly shared: number;
  readonly lock: RepoLock | undefined;
  readonly odb: ObjectDatabase;
  readonly warn: (message: string) => void;
  /** ` (pack 1/2)` while one of two partitions is written: each round of progress says which. */
  private partitionLabel = '';
  readonly onProgress = (phase: string, done: number, total: number): void => {
    fault(`progress:${phase}`, `${done}/${total}`);
    this.opts.onProgress?.(phase + this.partitionLabel, done, total);
  };

  constructor(
    readonly repo: Repository,
    readonly opts: RepackOptions,
  ) {
    this.warn = opts.onWarning ?? (() => undefined);
    this.packDir = join(repo.objectsDir, 'pack');
    this.result = emptyResult(opts);
    this.shared = sharedRepositoryOf(repo.config);
    this.lock = opts.dryRun
      ? undefined
      : guardLock(acquireRepackLock(repo.commonDir, repo.objectsDir, this.shared));
    this.odb = new ObjectDatabase(repo.algo, [repo.objectsDir, ...repo.alternates]);
  }

  async run(): Promise<RepackResult> {
    const { opts, repo } = this;
    if (!opts.dryRun) this.recover();
    const sel = selectSources(this);
    // Nothing new and nothing to merge: no pack is opened (issue 32: a run with nothing to do).
    if (
      sel.parts.normal.length === 0 &&
      sel.parts.promisor.length === 0 &&
      sel.looseIds.length === 0
    )
      return this.result;
    const src = openSources(this, sel);
    const written = await this.writePartitions(src);
    if (opts.dryRun) return this.result;
    fault('phase:written');
    this.where.step = 'checking the new pack';
    await this.proveAndCheck(src, written);
    const toInstall = written.filter((x) => !existsSync(join(this.packDir, x.final + '.idx')));
    const midxBitmap = this.carryBitmaps(src, written, toInstall);
    const removing = new Set<string>();
    for (const x of written)
      for (const s of x.sources) if (s.name !== x.final) removing.add(s.base);
    fault('phase:proved');
    if (
      (opts.fsck === 'full' || opts.fsck === 'connectivity') &&
      (removing.size > 0 || toInstall.length > 0)
    ) {
      this.where.step = 'checking the rewritten repository with git fsck';
      await (
        await import('./repack-check.js')
      ).checkWithGitFsck(repo, {
        onProgress: opts.onProgress && this.onProgress, // git's own progress, passed on
        mode: opts.fsck,
        toInstall,
        removing,
        opened: src.opened,
        looseIds: src.looseIds,
        scratchDirs: this.scratchDirs,
        warn: this.warn,
      });
    }
    // The journal's provers: a pack not named by its checksum cannot be one (see `recoverJournal`).
    const retainedPacks = src.retainedPacks.filter((p) => isPackName(p.name));
    const done = installAndRemove(repo, {
      lock: this.lock!,
      shared: this.shared,
      written,
      toInstall,
      removing,
      retainedPacks,
      opened: src.opened,
      warn: this.warn,
      where: this.where,
      midxBitmap,
    });
    Object.assign(this.result, done);
    recordProven(repo, sel, this.result.partitions, this.shared, this.warn);
    return this.result;
  }

  /** Finishes or rolls back an interrupted run, and removes what killed runs left behind. */
  private recover(): void {
    const { repo } = this;
    this.where.step = 'finishing an interrupted run';
    this.where.state = 'the repository is as the interrupted run left it';
    this.result.leftoversCleaned.push(
      ...recoverJournal({
        objectsDir: repo.objectsDir,
        algo: repo.algo,
        lock: this.lock!,
        warn: this.warn,
        shared: this.shared,
        rewriteMidx: (bitmap) => rewriteMidx(repo, bitmap, this.warn),
      }),
    );
    this.result.leftoversCleaned.push(...cleanLeftovers(repo.objectsDir));
    ensurePackDir(repo.objectsDir, this.shared);
    fault('phase:start');
    this.where.step = 'reading the packs';
    this.where.state = 'nothing was changed';
  }

  /** One new pack per partition (normal, promisor), written to temporary files; nothing installed. */
  private async writePartitions(src: Sources): Promise<WrittenPartition[]> {
    const { repo, opts } = this;
    // The rewrite's code is loaded only when there is something to rewrite (issue 35: a run with
    // nothing to do, --auto's and the no-op, starts without it).
    const [{ rewritePartition }, { startChangedCheck }, { verifyPack }, { forcedThreads }] =
      await Promise.all([
        import('../repack/rewrite.js'),
        import('./repack-check.js'),
        import('./verify.js'),
        import('../repack/pool.js'),
      ]);
    const written: WrittenPartition[] = [];
    const kinds = (['normal', 'promisor'] as const).filter(
      (k) => src.parts[k].length > 0 || (k === 'normal' && src.looseIds.length > 0),
    );
    for (const [i, kind] of kinds.entries()) {
      const sources = src.parts[kind];
      const loose = kind === 'normal' ? src.looseIds : [];
      this.partitionLabel = kinds.length > 1 ? ` (pack ${i + 1}/${kinds.length})` : '';
      if (sources.length >= 0xffff)
        throw new GitError('unsupported', `too many packs (${sources.length})`);
      const tmp = {
        pack: tmpPath(this.packDir, 'pack'),
        idx: tmpPath(this.packDir, 'idx'),
        rev: tmpPath(this.packDir, 'rev'),
      };
      this.tmpFiles.push(tmp.pack, tmp.idx, tmp.rev);
      this.where.step = `writing the new pack ${tmp.pack}`;
      // One pack, nothing loose, and no file of it missing: it may already be the result.
      const skipIfUnchanged =
        !opts.dryRun &&
        sources.length === 1 &&
        loose.length === 0 &&
        (!src.writeRev || sources[0]!.rev);
      let check: ChangedCheck | undefined;
      const changedCheck =
        opts.fsck === 'changed' && !opts.dryRun
          ? (): ChangedCheck['dest'] => (
              this.checks.push((check = startChangedCheck(repo, this.scratchDirs))),
              check.dest
            )
          : undefined;
      const {
        stats,
        written: w,
        unchanged,
      } = await rewritePartition(
        {
          kind,
          packs: sources.map((p) => src.opened.get(pathKey(p.fsBase))!),
          loose,
          looseDir: repo.objectsDir,
        },
        {
          algo: repo.algo,
          levels: opts.levels,
          autoFallback: opts.autoFallback,
          autoRule: opts.autoRule,
          odb: this.odb,
          excluded: src.excluded,
          proveExcluded: src.proveExcluded,
          hashWholePack: (p) => verifyPack(p.packPath, p.idxPath, repo.algo),
          dryRun: opts.dryRun,
          tmp,
          writeRev: src.writeRev,
          onProgress: this.onProgress,
          signal: opts.signal,
          skipIfUnchanged,
          threads: forcedThreads(repo.env),
          maxHeldEntry: opts.maxHeldEntry,
          changedCheck,
        },
      );
      const pr: PartitionResult = {
        kind,
        sourcePacks: sources.map((p) => p.name),
        looseObjects: loose.length,
        stats,
        newPack: undefined,
        unchanged: false,
      };
      this.result.partitions.push(pr);
      if (unchanged === true) {
        pr.newPack = sources[0]!.name;
        pr.unchanged = true;
        continue;
      }
      if (w === undefined) continue;
      const final = `pack-${toHex(w.checksum)}`;
      pr.newPack = final;
      pr.unchanged = sources.length === 1 && loose.length === 0 && sources[0]!.name === final;
      if (w.count === 0) {
        // Nothing to pack (everything excluded): no empty pack is installed.
        pr.newPack = undefined;
        pr.unchanged = true;
        continue;
      }
      written.push({ kind, w, stats, sources, loose, final, check });
    }
    this.partitionLabel = '';
    return written;
  }

  /**
   * Our proof of each new pack as written on disk (trailer, every entry's CRC32 against the new
   * idx; every object of what will be removed is in a new or retained pack), with git reading back
   * what was written anew beside it (`--fsck=changed`). Writes the `.promisor` markers.
   */
  private async proveAndCheck(src: Sources, written: WrittenPartition[]): Promise<void> {
    const { repo, opts } = this;
    const { proveWrittenPack } = await import('../repack/prove.js');
    const sourcePacks = written.map((x) => x.sources.map((s) => src.opened.get(s.base)!)); // sources are `pack-<hash>`: their base is their key
    const checks: Promise<void>[] = [];
    written.forEach(
      (x, i) =>
        x.check !== undefined &&
        checks.push(x.check.finish(x.w.idxPath, sourcePacks[i]!, this.onProgress)),
    );
    // A failure is reported once the proof is done (or has failed first).
    for (const c of checks) c.catch(() => undefined);
    for (const [i, x] of written.entries()) {
      opts.signal?.throwIfAborted();
      // The sources' derived tables are no longer needed: give the memory back first.
      for (const p of src.opened.values()) p.dropCaches();
      await proveWrittenPack(
        x.w,
        repo.algo,
        sourcePacks[i]!,
        x.loose,
        src.excluded,
        this.onProgress,
      );
      if (x.kind === 'promisor') x.promisorTmp = this.writePromisorMarker(x);
    }
    if (checks.length > 0) {
      this.where.step = 'checking the rewritten entries with git index-pack';
      await Promise.all(checks);
    }
  }

  /**
   * The reachability bitmap of each new pack (repack-bitmap.ts), in a temporary file installed
   * with it; returns whether git must write a multi-pack-index bitmap instead for one of them.
   */
  private carryBitmaps(
    src: Sources,
    written: WrittenPartition[],
    toInstall: WrittenPartition[],
  ): boolean {
    const c: BitmapContext = {
      algo: this.repo.algo,
      packDir: this.packDir,
      opened: src.opened,
      writeBitmap: this.opts.writeBitmap,
      retainedBitmap: src.retainedBitmap,
      tmpFiles: this.tmpFiles,
      onProgress: this.onProgress,
    };
    let midx = false;
    for (const x of written) {
      this.where.step = `writing the bitmap of the new pack ${x.w.packPath}`;
      const r = newPackBitmap(x, toInstall.includes(x), c);
      if (r.warning !== undefined) this.warn(r.warning);
      const pr = this.result.partitions.find((p) => p.kind === x.kind)!;
      if (r.kind === 'carried') ((x.bitmapTmp = r.tmp), (pr.bitmap = 'carried'));
      else if (r.kind === 'midx') ((pr.bitmap = 'midx'), (midx = true));
    }
    return midx;
  }

  /** The promisor marker carries over the lines of the old ones; returns its temporary file. */
  private writePromisorMarker(x: WrittenPartition): string {
    const lines = promisorLines(x.sources, this.warn);
    const tmp = tmpPath(this.packDir, 'promisor');
    this.tmpFiles.push(tmp);
    writeFileDurable(tmp, Buffer.from([...lines].map((l) => l + '\n').join('')), 0o444); // as git repack makes it: fopen'd, then its write bits taken away
    return tmp;
  }

  /** A system error (ENOSPC, EROFS, EIO…) as a GitError saying what it interrupted and what state it left. */
  explain(err: unknown): unknown {
    const e = systemFields(err);
    if (e === undefined) return err;
    // A file of the repository (not one of ours) that is gone: someone else is removing files.
    const vanished =
      e.code === 'ENOENT' &&
      e.path !== undefined &&
      e.path.startsWith(this.repo.objectsDir) &&
      !basename(e.path).startsWith('tmp_');
    const why = vanished
      ? ' (it vanished while we were reading it: is another git gc or git repack running?)'
      : '';
    const what = `${this.where.step}: ${systemCallText(e)}${why}; ${this.where.state}`;
    return new GitError('io', what, { file: e.path, ...systemWhere(e) });
  }

  /**
   * Temporary files and directories go, the lock is let go; errors here hide nothing. True when
   * the lock stays: a journal of this run is down, and the next run must take this lock over to
   * act on it (store/journal.ts).
   */
  cleanup(): boolean {
    bestEffort(() => this.odb.close());
    for (const f of this.tmpFiles) bestEffort(() => unlinkIfExists(f));
    for (const c of this.checks) bestEffort(() => c.dest.abort());
    for (const d of this.scratchDirs) bestEffort(() => removeView(d));
    return this.lock?.release() ?? false;
  }
}

/** A failure that leaves the lock in place says so, and what lifts it. */
function lockStays(e: unknown, lock: string): unknown {
  if (!(e instanceof GitError)) return e;
  const why = `${lock} is left in place: the next git repack-ts takes it over and finishes this run (until then git maintenance skips this repository).`;
  return e.withAdvice(why);
}

/**
 * `git repack-ts`: every pack (but kept and cruft ones) and every loose object become one new pack
 * per partition (normal, promisor), with each type at its target level. Proven equal, checked by
 * git (`FsckMode`), installed in git's order, and only then are the old files removed.
 */
export async function repack(repo: Repository, opts: RepackOptions): Promise<RepackResult> {
  let auto: AutoCheck | undefined;
  if (opts.auto === true) {
    auto = autoCheck(repo, opts.levels, runTargets(opts));
    if (!auto.run) return { ...emptyResult(opts), auto };
  }
  let run: RepackRun;
  try {
    run = new RepackRun(repo, opts);
  } catch (e) {
    // As git gc --auto when another gc holds the repository: quietly nothing (gc.c, lock_repo_for_gc).
    if (auto === undefined || !(e instanceof GitError) || e.code !== 'locked') throw e;
    return {
      ...emptyResult(opts),
      auto: { ...auto, run: false, reason: e.message.split('\n')[0]! },
    };
  }
  let result: RepackResult;
  try {
    result = await run.run();
  } catch (e) {
    const failure = run.explain(e);
    throw run.cleanup() ? lockStays(failure, run.lock!.path) : failure;
  }
  run.cleanup();
  return auto === undefined ? result : { ...result, auto };
}

/** The result of a run that has done nothing yet. */
function emptyResult(opts: RepackOptions): RepackResult {
  return {
    dryRun: opts.dryRun,
    levels: {
      commit: opts.levels[1],
      tree: opts.levels[2],
      blob: opts.levels[3],
      tag: opts.levels[4],
    },
    partitions: [],
    keptPacks: [],
    provenPacks: [],
    removedPacks: [],
    removedLoose: 0,
    looseLeft: [],
    midx: 'none',
    fsck: opts.fsck,
    leftoversCleaned: [],
  };
}
