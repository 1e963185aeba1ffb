import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { GitError } from '../errors.js';
import { isBaseType } from '../format/object-type.js';
import { toHex, type HashAlgo } from '../hash/algo.js';
import { zstdUnavailable } from '../codec/zstd.js';
import { proveWrittenPack } from '../repack/prove.js';
import { rewritePartition, type RewriteStats, type WrittenPack } from '../repack/rewrite.js';
import { forcedThreads } from '../repack/pool.js';
import type { Levels } from '../repack/levels.js';
import { guardLock, removeOnSignal } from '../cleanup.js';
import {
  fault,
  tmpPath,
  unlinkIfExists,
  withFaultPoints,
  writeFileDurable,
} from '../store/files.js';
import { runGitFsck, type FsckMode } from '../store/fsck.js';
import { acquireRepackLock } from '../store/lock.js';
import { ObjectDatabase } from '../store/odb.js';
import { Pack } from '../store/pack.js';
import {
  buildFsckView,
  cleanLeftovers,
  ensurePackDir,
  installPack,
  listPacks,
  makeViewDir,
  removeView,
  viewPack,
} from '../store/packdir.js';
import type { Repository } from '../store/repo.js';
import { sharedRepositoryOf } from '../store/shared-perm.js';
import { verifyPack } from './verify.js';
import { restoreRefs, type HeadUpdate, type RefUpdate } from './zstd-refs.js';

export type { HeadUpdate, RefUpdate } from './zstd-refs.js';

export interface ImportOptions {
  levels: Levels;
  autoFallback?: number | undefined;
  fsck: FsckMode;
  /** Replace refs of the repository that differ from the zpack's (`--force`, as `git fetch --force`). */
  force?: boolean | undefined;
  onProgress?: ((phase: string, done: number, total: number) => void) | undefined;
  onWarning?: ((message: string) => void) | undefined;
  signal?: AbortSignal | undefined;
}

export interface ImportResult {
  file: string;
  objects: number;
  newPack: string;
  promisor: boolean;
  alreadyPresent: boolean;
  stats: RewriteStats;
  /** Each ref of the zpack, and what became of it. */
  refs: RefUpdate[];
  head: HeadUpdate;
}

/** Objects of the zstd pack larger than this (or than core.bigFileThreshold) are streamed. */
const STREAM_ABOVE = 1 << 20;

/** git's default `core.bigFileThreshold`. */
const BIG_FILE_THRESHOLD = 512 << 20;

function bigFileThreshold(repo: Repository): number {
  const n = repo.config.getInt('core.bigfilethreshold');
  return n !== undefined && n >= 0 ? n : BIG_FILE_THRESHOLD;
}

/**
 * A zstd frame can declare far more than it holds (a 10 KB file, a 256 MiB object). A whole
 * object above `core.bigFileThreshold` (git's limit for holding an object in memory) is
 * streamed (rewrite.ts, `zstdStreaming`); a delta is re-encoded whole, so one whose data is
 * declared above the threshold is refused before anything is read or written.
 */
function checkDeclaredSizes(z: Pack, file: string, limit: number): void {
  for (let j = 0; j < z.count; j++) {
    const off = z.idx.offsets[j]!;
    const e = z.entryAt(off, Math.min(z.end(j), off + 64));
    if (e.hdr.size <= limit || isBaseType(e.hdr.type)) continue;
    throw new GitError(
      'unsupported',
      `${file}: delta ${toHex(z.idx.idAt(j))} at offset ${off} declares ${e.hdr.size} bytes, more than core.bigFileThreshold (${limit}); zstd-import holds each delta whole: raise core.bigFileThreshold to import it`,
      { file, offset: off },
    );
  }
}

/** The zstd pack `file`, opened and checked as far as can be before the repository is locked. */
function openZpack(repo: Repository, file: string, limit: number): Pack {
  const z = Pack.open(file, repo.algo);
  try {
    if (!z.isZpack) throw new GitError('usage', `${file} is not a zstd pack`);
    const why = zstdUnavailable();
    if (why !== undefined) throw new GitError('unsupported', why);
    checkDeclaredSizes(z, file, limit);
    return z;
  } catch (e) {
    z.close();
    throw e;
  }
}

/**
 * Every object of the new pack hashed (our verify: deltas resolved, each object's id computed)
 * before it is installed: the zpack's index names ids its content need not have, and the proof
 * compares ids only. A mismatch names the zpack's entry. (`git fsck` full hashes them itself.)
 */
async function hashEveryObject(
  w: WrittenPack,
  z: Pack,
  file: string,
  algo: HashAlgo,
  limit: number,
  onProgress: ImportOptions['onProgress'],
): Promise<void> {
  const v = await verifyPack(w.packPath, w.idxPath, algo, {
    bigFileThreshold: limit,
    onProgress: (phase, done, total) => onProgress?.(`hashing: ${phase}`, done, total),
  });
  if (v.ok) return;
  const p = v.problems[0]!;
  if (p.objectId !== undefined) {
    const j = z.idx.find(Buffer.from(p.objectId, 'hex'), 0);
    const offset = j >= 0 ? z.idx.offsets[j]! : undefined;
    throw new GitError(
      'bad-object',
      `${file}: object ${p.objectId} at offset ${offset} hashes to ${p.hashesTo}; nothing was installed`,
      { file, offset, objectId: p.objectId, detail: `hashes to ${p.hashesTo}` },
    );
  }
  throw new GitError(
    'verify-failed',
    `${file}: the pack made of it does not verify (${p.message} at offset ${p.offset}); nothing was installed`,
  );
}

/** One import: the repository locked, the zpack rewritten into temporary files, proven, hashed, checked, installed. */
class ImportRun {
  readonly shared: number;
  readonly packDir: string;
  readonly odb: ObjectDatabase;
  readonly tmp: { pack: string; idx: string; rev: string };
  readonly promisorTmp: string;
  private viewDir: string | undefined;
  private readonly lock: { release(): void };
  readonly onProgress: (phase: string, done: number, total: number) => void;

  constructor(
    readonly repo: Repository,
    readonly z: Pack,
    readonly file: string,
    readonly opts: ImportOptions,
    readonly limit: number,
  ) {
    this.onProgress = withFaultPoints(opts.onProgress);
    this.shared = sharedRepositoryOf(repo.config);
    this.lock = guardLock(acquireRepackLock(repo.commonDir, repo.objectsDir, this.shared));
    this.odb = new ObjectDatabase(repo.algo, [repo.objectsDir, ...repo.alternates]);
    try {
      cleanLeftovers(repo.objectsDir); // what killed runs left (ours only, their owner gone)
      this.packDir = ensurePackDir(repo.objectsDir, this.shared);
    } catch (e) {
      this.lock.release();
      throw e;
    }
    fault('phase:start');
    this.tmp = {
      pack: tmpPath(this.packDir, 'pack'),
      idx: tmpPath(this.packDir, 'idx'),
      rev: tmpPath(this.packDir, 'rev'),
    };
    this.promisorTmp = tmpPath(this.packDir, 'promisor');
    this.odb.maxObjectSize = limit; // a delta's result as well
    this.odb.addPack(z);
  }

  /** The zpack rewritten at the repository's levels into temporary files, and proven complete. */
  async write(): Promise<{ w: WrittenPack; stats: RewriteStats }> {
    const { repo, z, opts } = this;
    const { stats, written } = await rewritePartition(
      {
        kind: z.zpack!.promisor ? 'promisor' : 'normal',
        packs: [z],
        loose: [],
        looseDir: repo.objectsDir,
      },
      {
        algo: repo.algo,
        levels: opts.levels,
        autoFallback: opts.autoFallback,
        odb: this.odb,
        excluded: () => false,
        dryRun: false,
        tmp: this.tmp,
        writeRev: repo.config.getBool('pack.writeReverseIndex') ?? false,
        threads: forcedThreads(repo.env),
        onProgress: this.onProgress,
        signal: opts.signal,
        // Every object over 1 MiB, as the rewrite streams copies and loose objects: held, a 256 MiB
        // blob took 847 MB (decompressed, deflated, inflated again to compare: issue 21).
        streamAbove: Math.min(this.limit, STREAM_ABOVE),
      },
    );
    if (written === undefined || written.count === 0)
      throw new GitError('usage', `${this.file} holds no objects`);
    fault('phase:written');
    await proveWrittenPack(written, repo.algo, [z], [], () => false, this.onProgress);
    fault('phase:proved');
    return { w: written, stats };
  }

  /** Hashed (ours, or git fsck's full check) and checked by git as it will be, then installed. */
  async checkAndInstall(w: WrittenPack, hex: string): Promise<void> {
    const { repo, opts } = this;
    const promisor = this.z.zpack!.promisor;
    // (git fsck, but for --connectivity-only, hashes every object itself: verify_pack)
    if (opts.fsck === 'none' || opts.fsck === 'connectivity')
      await hashEveryObject(w, this.z, this.file, repo.algo, this.limit, this.onProgress);
    fault('phase:hashed');
    opts.signal?.throwIfAborted();
    if (promisor) writeFileDurable(this.promisorTmp, Buffer.alloc(0), 0o444); // as git repack makes it: fopen'd, then its write bits taken away
    if (opts.fsck !== 'none') {
      this.viewDir = removeOnSignal(makeViewDir(repo.objectsDir));
      buildFsckView(repo.objectsDir, this.viewDir, [
        {
          pack: w.packPath,
          idx: w.idxPath,
          rev: w.revPath,
          promisor: promisor ? this.promisorTmp : undefined,
          base: join(this.packDir, `pack-${hex}`),
        },
        ...listPacks(repo.objectsDir).map(viewPack),
      ]);
      const f = await runGitFsck(repo.gitDir, this.viewDir, opts.fsck, repo.env, {
        assumePromisor: promisor,
        onProgress: opts.onProgress && this.onProgress, // git's own progress, passed on
      });
      if (!f.ok)
        throw new GitError(
          'verify-failed',
          `git fsck found problems with the imported objects; nothing was changed:\n${f.output}`,
        );
    }
    fault('phase:install');
    installPack(
      this.packDir,
      hex,
      {
        pack: w.packPath,
        idx: w.idxPath,
        rev: w.revPath,
        promisor: promisor ? this.promisorTmp : undefined,
      },
      this.shared,
    );
  }

  cleanup(): void {
    this.odb.close();
    for (const f of [this.tmp.pack, this.tmp.idx, this.tmp.rev, this.promisorTmp])
      unlinkIfExists(f);
    if (this.viewDir !== undefined) removeView(this.viewDir);
    this.lock.release();
  }
}

/**
 * `git repack-ts zstd-import <file>`: a zstd pack back into a normal pack of the repository, at
 * the repository's levels, every delta kept. The same path as the rewrite: temporary files,
 * proof that every object of the file is in the new pack, every object hashed, git fsck of the
 * result, then `.pack`, `.rev`, `.promisor`, `.idx`; then the zpack's refs (zstd-refs.ts).
 * Nothing is removed.
 */
export async function importZpack(
  repo: Repository,
  file: string,
  opts: ImportOptions,
): Promise<ImportResult> {
  const limit = bigFileThreshold(repo);
  const z = openZpack(repo, file, limit);
  let run: ImportRun;
  try {
    run = new ImportRun(repo, z, file, opts, limit);
  } catch (e) {
    z.close();
    throw e;
  }
  try {
    const { w, stats } = await run.write();
    const hex = toHex(w.checksum);
    const alreadyPresent = existsSync(join(run.packDir, `pack-${hex}.idx`));
    if (!alreadyPresent) await run.checkAndInstall(w, hex);
    // The refs name objects now installed (ours, through a database that sees the new pack).
    const odb = ObjectDatabase.open(repo.algo, [repo.objectsDir, ...repo.alternates]);
    let refs: ReturnType<typeof restoreRefs>;
    try {
      refs = restoreRefs(repo, z.zpack!.refs, odb, { force: opts.force === true, file });
    } finally {
      odb.close();
    }
    return {
      file,
      objects: w.count,
      newPack: `pack-${hex}`,
      promisor: z.zpack!.promisor,
      alreadyPresent,
      stats,
      ...refs,
    };
  } finally {
    run.cleanup();
  }
}
