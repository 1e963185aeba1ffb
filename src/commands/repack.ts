import { existsSync } from 'node:fs';
import { basename, join } from 'node:path';
import { GitError, systemCallText, systemWhere } from '../errors.js';
import { toHex } from '../hash/algo.js';
import { listLoose, loosePath, unknownLooseType } from '../store/loose.js';
import { acquireRepackLock, type RepoLock } from '../store/lock.js';
import { recoverJournal } from '../store/journal.js';
import { readSmallFile } from '../store/regular.js';
import { sharedRepositoryOf } from '../store/shared-perm.js';
import { guardLock } from '../cleanup.js';
import { ObjectDatabase, listPackFiles } from '../store/odb.js';
import { Pack } from '../store/pack.js';
import { pathKey, withExt } from '../store/fs-path.js';
import {
  cleanLeftovers,
  ensurePackDir,
  isPackName,
  listPacks,
  removeView,
  type PackInfo,
} from '../store/packdir.js';
import { fault, tmpPath, unlinkIfExists, writeFileDurable } from '../store/files.js';
import type { FsckMode } from '../store/fsck.js';
import type { Repository } from '../store/repo.js';
import type { Level, Levels } from '../repack/levels.js';
import type { AutoRule } from '../repack/encoding.js';
import { proveWrittenPack } from '../repack/prove.js';
import { provePackedCopy, type CopyProof } from '../repack/duplicates.js';
import { rewritePartition, type RewriteStats } from '../repack/rewrite.js';
import { forcedThreads } from '../repack/pool.js';
import { autoCheck, type AutoCheck } from './repack-auto.js';
import { recordProven, runTargets, selectPacks, type Selection } from './repack-select.js';
import { verifyPack } from './verify.js';
import {
  checkWithGitFsck,
  startChangedCheck,
  type ChangedCheck,
  type WrittenPartition,
} from './repack-check.js';
import { bestEffort, installAndRemove, rewriteMidx, type Where } from './repack-install.js';
import { bitmapSource, newPackBitmap, type BitmapContext } from './repack-bitmap.js';

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

function normalizeKeep(name: string): string {
  return basename(name).replace(/\.(pack|idx)$/, '');
}

/** A `.promisor`'s lines: never through a link, regular files only, at most this much. */
const MAX_PROMISOR_BYTES = 64 << 20;

/** An error of the file system, as Node throws them. */
function isSystemError(e: unknown): e is NodeJS.ErrnoException {
  const err = e as NodeJS.ErrnoException;
  return (
    !(e instanceof GitError) &&
    err !== null &&
    typeof err === 'object' &&
    typeof err.code === 'string' &&
    typeof err.syscall === 'string'
  );
}

/** The packs and loose objects a run starts from, opened. */
interface Sources {
  /** The packs to rewrite, by partition. */
  parts: Record<'normal' | 'promisor', PackInfo[]>;
  /** Packs left as they are (`.keep`, cruft, --keep-pack). */
  retainedPacks: Pack[];
  /** Every pack of the repository, opened, by `pathKey` of its base (path without `.pack`; the base itself for a `pack-<hash>`). */
  opened: Map<string, Pack>;
  /** Is an object in a retained pack (then it is not written again)? */
  excluded: (id: Uint8Array, pos: number) => boolean;
  proveExcluded: (id: Uint8Array, pos: number) => CopyProof;
  looseIds: Buffer[];
  /** Write a `.rev` (pack.writeReverseIndex, or an old pack had one). */
  writeRev: boolean;
  /** A retained pack with a `.bitmap` (base), if any. */
  retainedBitmap: string | undefined;
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
  readonly onProgress = (phase: string, done: number, total: number): void => {
    fault(`progress:${phase}`, `${done}/${total}`);
    this.opts.onProgress?.(phase, done, total);
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
    const sel = this.select();
    // Nothing new and nothing to merge: no pack is opened (issue 32: a run with nothing to do).
    if (
      sel.parts.normal.length === 0 &&
      sel.parts.promisor.length === 0 &&
      sel.looseIds.length === 0
    )
      return this.result;
    const src = this.openSources(sel);
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
      this.onProgress('checking with git fsck', 0, 1);
      await checkWithGitFsck(repo, {
        mode: opts.fsck,
        toInstall,
        removing,
        opened: src.opened,
        looseIds: src.looseIds,
        scratchDirs: this.scratchDirs,
        warn: this.warn,
      });
      this.onProgress('checking with git fsck', 1, 1);
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

  /** Which packs this run rewrites, before any is opened (repack-select.ts). */
  private select(): Selection {
    const { repo, opts } = this;
    const keepNames = new Set(opts.keepPacks.map(normalizeKeep));
    const infos = listPacks(repo.objectsDir);
    for (const k of keepNames) {
      if (!infos.some((p) => p.name === k))
        throw new GitError('usage', `--keep-pack: no pack named '${k}' in ${this.packDir}`);
    }
    const looseIds = this.packableLoose(listLoose(repo.objectsDir, repo.algo));
    return selectPacks(
      repo,
      infos,
      looseIds,
      { keepNames, all: opts.all === true, targets: runTargets(opts) },
      this.result,
      this.warn,
    );
  }

  /** Every pack opened (the retained ones hold objects the new packs leave out), loose ids listed. */
  private openSources(sel: Selection): Sources {
    const { repo } = this;
    const opened = new Map<string, Pack>();
    for (const p of sel.infos) {
      const pack = Pack.open(withExt(p.fsBase, '.pack'), repo.algo);
      opened.set(pathKey(p.fsBase), pack);
      this.odb.addPack(pack);
    }
    for (const alt of repo.alternates)
      for (const f of listPackFiles(alt)) this.odb.addPack(Pack.open(f, repo.algo));
    // The pack whose bitmap is carried over goes first: its objects keep their places in the new
    // pack (as a multi-pack-index's preferred pack), so its commit bitmaps are copied as they are.
    if (this.opts.writeBitmap !== false) {
      for (const part of Object.values(sel.parts)) {
        const b = bitmapSource(part, opened);
        if (b !== undefined) part.unshift(...part.splice(part.indexOf(b), 1));
      }
    }
    const retainedPacks = sel.retained.map((p) => opened.get(pathKey(p.fsBase))!);
    const excluded = (id: Uint8Array, pos: number): boolean =>
      retainedPacks.some((p) => p.idx.find(id, pos) >= 0);
    // The copy that stays must hash to its id before the rewritten one goes (issue 30).
    const proveExcluded = (id: Uint8Array, pos: number): CopyProof => {
      for (const p of retainedPacks) {
        const j = p.idx.find(id, pos);
        if (j >= 0) return provePackedCopy(p, j, this.odb, repo.algo);
      }
      throw new GitError(
        'internal',
        `excluded object ${toHex(id, pos, repo.algo.len)} is in no retained pack`,
      );
    };
    fault('phase:listed');
    return {
      parts: sel.parts,
      retainedPacks,
      opened,
      excluded,
      proveExcluded,
      looseIds: sel.looseIds,
      writeRev: sel.writeRev,
      retainedBitmap: sel.retained.find((p) => p.bitmap)?.base,
    };
  }

  /**
   * The loose objects a pack can hold. One of a type git does not know stays loose, as with `git
   * repack -a -d` (which packs only what is reachable, and nothing can reach it): never packed, never removed.
   */
  private packableLoose(ids: Buffer[]): Buffer[] {
    return ids.filter((id) => {
      const file = loosePath(this.repo.objectsDir, id);
      const type = unknownLooseType(file);
      if (type === undefined) return true;
      this.result.looseLeft.push(file);
      this.warn(
        `${file}: loose object of unknown type '${type}' left as it is (no pack can hold it)`,
      );
      return false;
    });
  }

  /** One new pack per partition (normal, promisor), written to temporary files; nothing installed. */
  private async writePartitions(src: Sources): Promise<WrittenPartition[]> {
    const { repo, opts } = this;
    const written: WrittenPartition[] = [];
    for (const kind of ['normal', 'promisor'] as const) {
      const sources = src.parts[kind];
      const loose = kind === 'normal' ? src.looseIds : [];
      if (sources.length === 0 && loose.length === 0) continue;
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
    return written;
  }

  /**
   * Our proof of each new pack as written on disk (trailer, every entry's CRC32 against the new
   * idx; every object of what will be removed is in a new or retained pack), with git reading back
   * what was written anew beside it (`--fsck=changed`). Writes the `.promisor` markers.
   */
  private async proveAndCheck(src: Sources, written: WrittenPartition[]): Promise<void> {
    const { repo, opts } = this;
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
    const lines = new Set<string>();
    for (const s of x.sources) {
      const f = s.base + '.promisor';
      const r = readSmallFile(f, MAX_PROMISOR_BYTES);
      if (r !== undefined && 'why' in r)
        this.warn(`${f}: ${r.why}; its content is not carried over`);
      else if (r !== undefined)
        for (const l of r.data.toString('utf8').split('\n')) if (l !== '') lines.add(l);
    }
    const tmp = tmpPath(this.packDir, 'promisor');
    this.tmpFiles.push(tmp);
    writeFileDurable(tmp, Buffer.from([...lines].map((l) => l + '\n').join('')), 0o444); // as git repack makes it: fopen'd, then its write bits taken away
    return tmp;
  }

  /** A system error (ENOSPC, EROFS, EIO…) as a GitError saying what it interrupted and what state it left. */
  explain(e: unknown): unknown {
    if (!isSystemError(e)) return e;
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
