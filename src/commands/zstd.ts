import { listRefs } from '../store/refs.js';
import { forcedThreads } from '../repack/pool.js';
import { existsSync, renameSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { GitError, corrupt } from '../errors.js';
import { isBaseType } from '../format/object-type.js';
import { toHex } from '../hash/algo.js';
import { DICT_KINDS, kindOf, trainDictionary, typeOfKind } from '../codec/dict.js';
import { zstdUnavailable } from '../codec/zstd.js';
import { threadInflater } from '../codec/inflate.js';
import { STREAM_CHUNK } from '../repack/streamed.js';
import type { ZpackDict } from '../format/zpack.js';
import { proveWrittenPack } from '../repack/prove.js';
import { rewritePartition, type RewriteStats } from '../repack/rewrite.js';
import type { Levels } from '../repack/levels.js';
import { resolveChains } from '../store/chain.js';
import { fault, tmpPath, unlinkIfExists, writeFileDurable } from '../store/files.js';
import { runGitFsck, type FsckMode } from '../store/fsck.js';
import { acquireRepackLock } from '../store/lock.js';
import { guardLock, removeOnSignal } from '../cleanup.js';
import { listLoose } from '../store/loose.js';
import { ObjectDatabase, listPackFiles } from '../store/odb.js';
import { Pack } from '../store/pack.js';
import { NO_PARENT, scanPack } from '../store/pack-scan.js';
import { buildFsckView, ensurePackDir, installPack, listPacks, makeViewDir, removeView } from '../store/packdir.js';
import { sharedRepositoryOf } from '../store/shared-perm.js';
import type { Repository } from '../store/repo.js';
import { verifyPack } from './verify.js';

/** zstd level by default: as fast as zlib -6 to write, and smaller on every type (docs/benchmarks.md §5). */
export const DEFAULT_ZSTD_LEVEL = 10;
/** Samples per dictionary kind, and the bytes taken from each. */
const SAMPLES = 8000;
const SAMPLE_BYTES = 16 * 1024;

export interface ExportOptions {
  out: string;
  level: number;
  /** 0: no dictionaries. */
  dictSize: number;
  dictMethod: 'auto' | 'js';
  /** Object types stored plain, without a frame (those whose level is 0); no dictionary for them. */
  plainTypes?: ReadonlySet<number> | undefined;
  onProgress?: ((phase: string, done: number, total: number) => void) | undefined;
}

export interface ExportResult {
  path: string;
  objects: number;
  bytes: number;
  sourceBytes: number;
  level: number;
  dictionaries: { kind: string; bytes: number; method: string; samples: number }[];
  stats: RewriteStats;
}

/**
 * Samples per dictionary kind: evenly spread entries of each kind (at most SAMPLES per kind),
 * their data as stored before compression (whole objects, or delta data for deltas), at most
 * SAMPLE_BYTES each. Headers are scanned first (cheap) so that each kind gets its own stride.
 */
function sampleKinds(packs: Pack[], skip: (kind: number) => boolean = () => false): Buffer[][] {
  const out: Buffer[][] = DICT_KINDS.map(() => []);
  const kinds = packs.map((p) => {
    const scan = scanPack(p, {
      checkCrc: false,
      onProblem: (pr) => {
        throw corrupt('bad-pack', pr.file, pr.offset, pr.message);
      },
    });
    const { realType } = resolveChains(scan, p.order);
    const kind = new Int8Array(p.count);
    for (let j = 0; j < p.count; j++) kind[j] = realType[j] === 0 ? -1 : kindOf(realType[j]!, scan.parent[j] !== NO_PARENT);
    return { kind, realType };
  });
  const count = new Array<number>(DICT_KINDS.length).fill(0);
  for (const k of kinds) for (const v of k.kind) if (v >= 0) count[v]!++;
  const stride = count.map((c) => Math.max(1, Math.floor(c / SAMPLES)));
  const seen = new Array<number>(DICT_KINDS.length).fill(0);
  packs.forEach((p, pi) => {
    const { kind, realType } = kinds[pi]!;
    for (let j = 0; j < p.count; j++) {
      const k = kind[j]!;
      if (k < 0 || skip(k) || seen[k]!++ % stride[k]! !== 0 || out[k]!.length >= SAMPLES) continue;
      out[k]!.push(sampleOf(p, j, realType[j]!));
    }
    p.dropCaches();
  });
  return out;
}

/**
 * The first SAMPLE_BYTES of entry `j`'s data: of an entry over a chunk in a git pack, from its
 * first chunk only (a blob of 1.5 GiB was inflated whole for its first 16 KiB); the rewrite
 * checks every entry after. A stream zlib finds wrong there is read whole, for its message.
 */
function sampleOf(p: Pack, j: number, realType: number): Buffer {
  const off = p.idx.offsets[j]!;
  const end = p.end(j);
  if (!p.isZpack && end - off > STREAM_CHUNK) {
    const { headerLen } = p.entryHead(off, end);
    const first = p.read(off + headerLen, STREAM_CHUNK);
    const room = Buffer.allocUnsafe(SAMPLE_BYTES + 1);
    const r = threadInflater().inflatePieces([first], end - off - headerLen, room, SAMPLE_BYTES, () => undefined);
    if (r.error === undefined) return Buffer.from(room.subarray(0, Math.min(r.produced, SAMPLE_BYTES)));
  }
  return Buffer.from(p.inflate(p.entry(j), realType).subarray(0, SAMPLE_BYTES));
}

/**
 * `git repack-ts --zstd[=<level>] -o <file>`: every object of the repository (all its packs and
 * loose objects) into one zstd pack, with dictionaries trained on the repository's own objects.
 * The file is written next to its final name, read back and verified whole (every object
 * re-hashed), then renamed into place. Never inside the object directory: git must not see it.
 */
export async function exportZpack(repo: Repository, opts: ExportOptions): Promise<ExportResult> {
  const why = zstdUnavailable();
  if (why !== undefined) throw new GitError('unsupported', why);
  const out = resolve(opts.out);
  const rel = relative(resolve(repo.objectsDir), out);
  if (!rel.startsWith('..') && rel !== '') throw new GitError('usage', `a zstd pack must not be written inside the object directory (${repo.objectsDir})`);
  if (existsSync(out) && statSync(out).isDirectory()) throw new GitError('usage', `${opts.out} is a directory`);
  const algo = repo.algo;
  const infos = listPacks(repo.objectsDir);
  const odb = new ObjectDatabase(algo, [repo.objectsDir, ...repo.alternates]);
  // Each step a point of the fault harness, as the rewrite's (a stop there, then a signal: issue 20).
  const onProgress = (phase: string, done: number, total: number): void => {
    fault(`progress:${phase}`, `${done}/${total}`);
    opts.onProgress?.(phase, done, total);
  };
  const tmp = removeOnSignal(join(dirname(out), `.${Math.random().toString(16).slice(2)}.zpack.tmp`));
  try {
    const packs = infos.map((i) => Pack.open(i.base + '.pack', algo));
    for (const p of packs) odb.addPack(p);
    for (const alt of repo.alternates) for (const f of listPackFiles(alt)) odb.addPack(Pack.open(f, algo));
    const dictionaries: ExportResult['dictionaries'] = [];
    const dicts: ZpackDict[] = [];
    if (opts.dictSize > 0) {
      onProgress('training dictionaries', 0, DICT_KINDS.length);
      const plainKind = (k: number): boolean => opts.plainTypes?.has(typeOfKind(k)) === true;
      const samples = sampleKinds(packs, plainKind);
      samples.forEach((s, k) => {
        if (plainKind(k)) return; // never compressed: no dictionary
        const d = trainDictionary(s, opts.dictSize, opts.dictMethod);
        if (d !== undefined) {
          dicts.push({ kind: k, data: d.dict });
          dictionaries.push({ kind: DICT_KINDS[k]!, bytes: d.dict.length, method: d.method, samples: s.length });
        }
        onProgress('training dictionaries', k + 1, DICT_KINDS.length);
      });
    }
    const loose = listLoose(repo.objectsDir, algo);
    const promisor = infos.length > 0 && infos.every((i) => i.promisor) && loose.length === 0;
    const { stats, written } = await rewritePartition(
      { kind: 'normal', packs, loose, looseDir: repo.objectsDir },
      {
        algo,
        levels: { 1: 0, 2: 0, 3: 0, 4: 0 },
        odb,
        excluded: () => false,
        dryRun: false,
        tmp: { pack: tmp, idx: tmp, rev: tmp },
        writeRev: false,
        threads: forcedThreads(repo.env),
        zpack: { level: opts.level, plainTypes: opts.plainTypes, dicts, refs: listRefs(repo.gitDir, repo.env), promisor },
        onProgress,
      },
    );
    if (written === undefined) throw new GitError('verify-failed', 'nothing was written');
    // Read the whole file back: every object re-hashed through the zstd reader.
    onProgress('verifying', 0, 1);
    const v = await verifyPack(tmp, tmp, algo);
    if (!v.ok) throw new GitError('verify-failed', `the zstd pack does not verify: ${v.problems.map((p) => `${p.message} at offset ${p.offset}`).join('; ')}`);
    onProgress('verifying', 1, 1);
    renameSync(tmp, out);
    let sourceBytes = 0;
    for (const p of packs) sourceBytes += p.size;
    return { path: out, objects: written.count, bytes: statSync(out).size, sourceBytes, level: opts.level, dictionaries, stats };
  } finally {
    odb.close();
    unlinkIfExists(tmp);
  }
}

export interface ImportOptions {
  levels: Levels;
  autoFallback?: number | undefined;
  fsck: FsckMode;
  onProgress?: ((phase: string, done: number, total: number) => void) | undefined;
  onWarning?: ((message: string) => void) | undefined;
}

export interface ImportResult {
  file: string;
  objects: number;
  newPack: string;
  promisor: boolean;
  alreadyPresent: boolean;
  stats: RewriteStats;
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

/**
 * `git repack-ts zstd-import <file>`: a zstd pack back into a normal pack of the repository, at
 * the repository's levels, every delta kept. The same path as the rewrite: temporary files,
 * proof that every object of the file is in the new pack, git fsck of the result, then `.pack`,
 * `.rev`, `.promisor`, `.idx`. Nothing is removed.
 */
export async function importZpack(repo: Repository, file: string, opts: ImportOptions): Promise<ImportResult> {
  const algo = repo.algo;
  const z = Pack.open(file, algo);
  if (!z.isZpack) {
    z.close();
    throw new GitError('usage', `${file} is not a zstd pack`);
  }
  const why = zstdUnavailable();
  if (why !== undefined) {
    z.close();
    throw new GitError('unsupported', why);
  }
  const limit = bigFileThreshold(repo);
  try {
    checkDeclaredSizes(z, file, limit);
  } catch (e) {
    z.close();
    throw e;
  }
  const shared = sharedRepositoryOf(repo.config);
  const lock = guardLock(acquireRepackLock(repo.commonDir, repo.objectsDir, shared));
  let packDir: string;
  try {
    packDir = ensurePackDir(repo.objectsDir, shared);
  } catch (e) {
    lock.release();
    throw e;
  }
  const odb = new ObjectDatabase(algo, [repo.objectsDir, ...repo.alternates]);
  const tmp = { pack: tmpPath(packDir, 'pack'), idx: tmpPath(packDir, 'idx'), rev: tmpPath(packDir, 'rev') };
  const promisorTmp = tmpPath(packDir, 'promisor');
  odb.maxObjectSize = limit; // a delta's result as well
  let viewDir: string | undefined;
  try {
    odb.addPack(z);
    const { stats, written } = await rewritePartition(
      { kind: z.zpack!.promisor ? 'promisor' : 'normal', packs: [z], loose: [], looseDir: repo.objectsDir },
      {
        algo,
        levels: opts.levels,
        autoFallback: opts.autoFallback,
        odb,
        excluded: () => false,
        dryRun: false,
        tmp,
        writeRev: repo.config.getBool('pack.writeReverseIndex') ?? false,
        threads: forcedThreads(repo.env),
        onProgress: opts.onProgress,
        // Every object over 1 MiB, as the rewrite streams copies and loose objects: held, a 256 MiB
        // blob took 847 MB (decompressed, deflated, inflated again to compare: issue 21).
        streamAbove: Math.min(limit, STREAM_ABOVE),
      },
    );
    if (written === undefined || written.count === 0) throw new GitError('usage', `${file} holds no objects`);
    await proveWrittenPack(written, algo, [z], [], () => false, opts.onProgress);
    const hex = toHex(written.checksum);
    const promisor = z.zpack!.promisor;
    if (promisor) writeFileDurable(promisorTmp, Buffer.alloc(0), 0o444); // as git repack makes it: fopen'd, then its write bits taken away
    const exists = existsSync(join(packDir, `pack-${hex}.idx`));
    if (!exists && opts.fsck !== 'none') {
      viewDir = removeOnSignal(makeViewDir(repo.objectsDir));
      buildFsckView(repo.objectsDir, viewDir, [
        { pack: written.packPath, idx: written.idxPath, rev: written.revPath, promisor: promisor ? promisorTmp : undefined, base: join(packDir, `pack-${hex}`) },
        ...listPacks(repo.objectsDir).map((p) => ({ pack: p.base + '.pack', idx: p.base + '.idx', rev: p.rev ? p.base + '.rev' : undefined, promisor: p.promisor ? p.base + '.promisor' : undefined, base: p.base })),
      ]);
      const f = await runGitFsck(repo.gitDir, viewDir, opts.fsck, repo.env, { assumePromisor: promisor });
      if (!f.ok) throw new GitError('verify-failed', `git fsck found problems with the imported objects; nothing was changed:\n${f.output}`);
    }
    if (!exists) installPack(packDir, hex, { pack: written.packPath, idx: written.idxPath, rev: written.revPath, promisor: promisor ? promisorTmp : undefined }, shared);
    return { file, objects: written.count, newPack: `pack-${hex}`, promisor, alreadyPresent: exists, stats };
  } finally {
    odb.close();
    for (const f of [tmp.pack, tmp.idx, tmp.rev, promisorTmp]) unlinkIfExists(f);
    if (viewDir !== undefined) removeView(viewDir);
    lock.release();
  }
}
