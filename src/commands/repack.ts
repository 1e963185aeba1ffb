import { existsSync } from 'node:fs';
import { basename, join } from 'node:path';
import { GitError } from '../errors.js';
import { toHex } from '../hash/algo.js';
import { listLoose } from '../store/loose.js';
import { acquireRepackLock, type RepoLock } from '../store/lock.js';
import { recoverJournal } from '../store/journal.js';
import { readSmallFile } from '../store/regular.js';
import { sharedRepositoryOf } from '../store/shared-perm.js';
import { guardLock } from '../cleanup.js';
import { ObjectDatabase, listPackFiles } from '../store/odb.js';
import { Pack } from '../store/pack.js';
import { cleanLeftovers, ensurePackDir, listPacks, removeView, type PackInfo } from '../store/packdir.js';
import { fault, tmpPath, unlinkIfExists, writeFileDurable } from '../store/files.js';
import type { FsckMode } from '../store/fsck.js';
import type { Repository } from '../store/repo.js';
import type { Level, Levels } from '../repack/levels.js';
import type { AutoRule } from '../repack/encoding.js';
import { proveWrittenPack } from '../repack/prove.js';
import { provePackedCopy, type CopyProof } from '../repack/duplicates.js';
import { rewritePartition, type RewriteStats } from '../repack/rewrite.js';
import { forcedThreads } from '../repack/pool.js';
import { verifyPack } from './verify.js';
import { checkWithGitFsck, startChangedCheck, type ChangedCheck, type WrittenPartition } from './repack-check.js';
import { bestEffort, installAndRemove, rewriteMidx, type Where } from './repack-install.js';

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
}

export interface RepackResult {
  dryRun: boolean;
  levels: { commit: Level; tree: Level; blob: Level; tag: Level };
  partitions: PartitionResult[];
  keptPacks: string[];
  removedPacks: string[];
  removedLoose: number;
  midx: 'none' | 'rewritten' | 'removed';
  fsck: FsckMode;
  leftoversCleaned: string[];
}

function normalizeKeep(name: string): string {
  return basename(name).replace(/\.(pack|idx)$/, '');
}

/** A `.promisor`'s lines: never through a link, regular files only, at most this much. */
const MAX_PROMISOR_BYTES = 64 << 20;

/** An error of the file system, as Node throws them. */
function isSystemError(e: unknown): e is NodeJS.ErrnoException {
  const err = e as NodeJS.ErrnoException;
  return !(e instanceof GitError) && err !== null && typeof err === 'object' && typeof err.code === 'string' && typeof err.syscall === 'string';
}

/** The packs and loose objects a run starts from, opened. */
interface Sources {
  /** The packs to rewrite, by partition. */
  parts: Record<'normal' | 'promisor', PackInfo[]>;
  /** Packs left as they are (`.keep`, cruft, --keep-pack). */
  retainedPacks: Pack[];
  /** Every pack of the repository, opened, by base (path without `.pack`). */
  opened: Map<string, Pack>;
  /** Is an object in a retained pack (then it is not written again)? */
  excluded: (id: Uint8Array, pos: number) => boolean;
  proveExcluded: (id: Uint8Array, pos: number) => CopyProof;
  looseIds: Buffer[];
  /** Write a `.rev` (pack.writeReverseIndex, or an old pack had one). */
  writeRev: boolean;
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
    this.result = {
      dryRun: opts.dryRun,
      levels: { commit: opts.levels[1], tree: opts.levels[2], blob: opts.levels[3], tag: opts.levels[4] },
      partitions: [],
      keptPacks: [],
      removedPacks: [],
      removedLoose: 0,
      midx: 'none',
      fsck: opts.fsck,
      leftoversCleaned: [],
    };
    this.shared = sharedRepositoryOf(repo.config);
    this.lock = opts.dryRun ? undefined : guardLock(acquireRepackLock(repo.commonDir, repo.objectsDir, this.shared));
    this.odb = new ObjectDatabase(repo.algo, [repo.objectsDir, ...repo.alternates]);
  }

  async run(): Promise<RepackResult> {
    const { opts, repo } = this;
    if (!opts.dryRun) this.recover();
    const src = this.openSources();
    const written = await this.writePartitions(src);
    if (opts.dryRun) return this.result;
    fault('phase:written');
    this.where.step = 'checking the new pack';
    await this.proveAndCheck(src, written);
    const toInstall = written.filter((x) => !existsSync(join(this.packDir, x.final + '.idx')));
    const removing = new Set<string>();
    for (const x of written) for (const s of x.sources) if (s.name !== x.final) removing.add(s.base);
    fault('phase:proved');
    if ((opts.fsck === 'full' || opts.fsck === 'connectivity') && (removing.size > 0 || toInstall.length > 0)) {
      this.where.step = 'checking the rewritten repository with git fsck';
      this.onProgress('checking with git fsck', 0, 1);
      await checkWithGitFsck(repo, { mode: opts.fsck, toInstall, removing, opened: src.opened, looseIds: src.looseIds, scratchDirs: this.scratchDirs, warn: this.warn });
      this.onProgress('checking with git fsck', 1, 1);
    }
    const done = installAndRemove(repo, { lock: this.lock!, shared: this.shared, written, toInstall, removing, retainedPacks: src.retainedPacks, opened: src.opened, warn: this.warn, where: this.where });
    Object.assign(this.result, done);
    return this.result;
  }

  /** Finishes or rolls back an interrupted run, and removes what killed runs left behind. */
  private recover(): void {
    const { repo } = this;
    this.where.step = 'finishing an interrupted run';
    this.where.state = 'the repository is as the interrupted run left it';
    this.result.leftoversCleaned.push(
      ...recoverJournal({ objectsDir: repo.objectsDir, algo: repo.algo, lock: this.lock!, warn: this.warn, shared: this.shared, rewriteMidx: (bitmap) => rewriteMidx(repo, bitmap, this.warn) }),
    );
    this.result.leftoversCleaned.push(...cleanLeftovers(repo.objectsDir));
    ensurePackDir(repo.objectsDir, this.shared);
    fault('phase:start');
    this.where.step = 'reading the packs';
    this.where.state = 'nothing was changed';
  }

  private openSources(): Sources {
    const { repo, opts } = this;
    const keepNames = new Set(opts.keepPacks.map(normalizeKeep));
    const infos = listPacks(repo.objectsDir);
    const retained: PackInfo[] = [];
    const parts: Sources['parts'] = { normal: [], promisor: [] };
    for (const p of infos) {
      if (p.keep || p.cruft || keepNames.has(p.name)) retained.push(p);
      else parts[p.promisor ? 'promisor' : 'normal'].push(p);
    }
    for (const k of keepNames) {
      if (!infos.some((p) => p.name === k)) throw new GitError('usage', `--keep-pack: no pack named '${k}' in ${this.packDir}`);
    }
    this.result.keptPacks = retained.map((p) => p.name);
    const opened = new Map<string, Pack>();
    for (const p of infos) {
      const pack = Pack.open(p.base + '.pack', repo.algo);
      opened.set(p.base, pack);
      this.odb.addPack(pack);
    }
    for (const alt of repo.alternates) for (const f of listPackFiles(alt)) this.odb.addPack(Pack.open(f, repo.algo));
    const retainedPacks = retained.map((p) => opened.get(p.base)!);
    const excluded = (id: Uint8Array, pos: number): boolean => retainedPacks.some((p) => p.idx.find(id, pos) >= 0);
    // The copy that stays must hash to its id before the rewritten one goes (issue 30).
    const proveExcluded = (id: Uint8Array, pos: number): CopyProof => {
      for (const p of retainedPacks) {
        const j = p.idx.find(id, pos);
        if (j >= 0) return provePackedCopy(p, j, this.odb, repo.algo);
      }
      throw new GitError('internal', `excluded object ${toHex(id, pos, repo.algo.len)} is in no retained pack`);
    };
    const looseIds = listLoose(repo.objectsDir, repo.algo);
    fault('phase:listed');
    const writeRev = (repo.config.getBool('pack.writeReverseIndex') ?? false) || infos.some((p) => p.rev);
    return { parts, retainedPacks, opened, excluded, proveExcluded, looseIds, writeRev };
  }

  /** One new pack per partition (normal, promisor), written to temporary files; nothing installed. */
  private async writePartitions(src: Sources): Promise<WrittenPartition[]> {
    const { repo, opts } = this;
    const written: WrittenPartition[] = [];
    for (const kind of ['normal', 'promisor'] as const) {
      const sources = src.parts[kind];
      const loose = kind === 'normal' ? src.looseIds : [];
      if (sources.length === 0 && loose.length === 0) continue;
      if (sources.length >= 0xffff) throw new GitError('unsupported', `too many packs (${sources.length})`);
      const tmp = { pack: tmpPath(this.packDir, 'pack'), idx: tmpPath(this.packDir, 'idx'), rev: tmpPath(this.packDir, 'rev') };
      this.tmpFiles.push(tmp.pack, tmp.idx, tmp.rev);
      this.where.step = `writing the new pack ${tmp.pack}`;
      // One pack, nothing loose, and no file of it missing: it may already be the result.
      const skipIfUnchanged = !opts.dryRun && sources.length === 1 && loose.length === 0 && (!src.writeRev || sources[0]!.rev);
      let check: ChangedCheck | undefined;
      const changedCheck = opts.fsck === 'changed' && !opts.dryRun ? (): ChangedCheck['dest'] => (this.checks.push((check = startChangedCheck(repo, this.scratchDirs))), check.dest) : undefined;
      const { stats, written: w, unchanged } = await rewritePartition(
        { kind, packs: sources.map((p) => src.opened.get(p.base)!), loose, looseDir: repo.objectsDir },
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
      const pr: PartitionResult = { kind, sourcePacks: sources.map((p) => p.name), looseObjects: loose.length, stats, newPack: undefined, unchanged: false };
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
    const sourcePacks = written.map((x) => x.sources.map((s) => src.opened.get(s.base)!));
    const checks: Promise<void>[] = [];
    written.forEach((x, i) => x.check !== undefined && checks.push(x.check.finish(x.w.idxPath, sourcePacks[i]!, this.onProgress)));
    // A failure is reported once the proof is done (or has failed first).
    for (const c of checks) c.catch(() => undefined);
    for (const [i, x] of written.entries()) {
      opts.signal?.throwIfAborted();
      // The sources' derived tables are no longer needed: give the memory back first.
      for (const p of src.opened.values()) p.dropCaches();
      await proveWrittenPack(x.w, repo.algo, sourcePacks[i]!, x.loose, src.excluded, this.onProgress);
      if (x.kind === 'promisor') x.promisorTmp = this.writePromisorMarker(x);
    }
    if (checks.length > 0) {
      this.where.step = 'checking the rewritten entries with git index-pack';
      await Promise.all(checks);
    }
  }

  /** The promisor marker carries over the lines of the old ones; returns its temporary file. */
  private writePromisorMarker(x: WrittenPartition): string {
    const lines = new Set<string>();
    for (const s of x.sources) {
      const f = s.base + '.promisor';
      const r = readSmallFile(f, MAX_PROMISOR_BYTES);
      if (r !== undefined && 'why' in r) this.warn(`${f}: ${r.why}; its content is not carried over`);
      else if (r !== undefined) for (const l of r.data.toString('utf8').split('\n')) if (l !== '') lines.add(l);
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
    const vanished = e.code === 'ENOENT' && e.path !== undefined && e.path.startsWith(this.repo.objectsDir) && !basename(e.path).startsWith('tmp_');
    const why = vanished ? ' (it vanished while we were reading it: is another git gc or git repack running?)' : '';
    return new GitError('io', `${this.where.step}: ${e.message}${why}; ${this.where.state}`, { file: e.path, cause: e });
  }

  /** Temporary files and directories go, the lock is released; errors here hide nothing. */
  cleanup(): void {
    bestEffort(() => this.odb.close());
    for (const f of this.tmpFiles) bestEffort(() => unlinkIfExists(f));
    for (const c of this.checks) bestEffort(() => c.dest.abort());
    for (const d of this.scratchDirs) bestEffort(() => removeView(d));
    this.lock?.release();
  }
}

/**
 * `git repack-ts`: every pack (but kept and cruft ones) and every loose object become one new pack
 * per partition (normal, promisor), with each type at its target level. Proven equal, checked by
 * git (`FsckMode`), installed in git's order, and only then are the old files removed.
 */
export async function repack(repo: Repository, opts: RepackOptions): Promise<RepackResult> {
  const run = new RepackRun(repo, opts);
  try {
    return await run.run();
  } catch (e) {
    throw run.explain(e);
  } finally {
    run.cleanup();
  }
}
