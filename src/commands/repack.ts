import { existsSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { basename, join } from 'node:path';
import { GitError } from '../errors.js';
import { toHex } from '../hash/algo.js';
import { sortIds } from '../hash/sort.js';
import { listLoose, loosePath } from '../store/loose.js';
import { acquireRepackLock } from '../store/lock.js';
import { ObjectDatabase, listPackFiles } from '../store/odb.js';
import { Pack } from '../store/pack.js';
import { scanPack } from '../store/pack-scan.js';
import { buildFsckView, cleanLeftovers, installPack, listPacks, midxFiles, removeLoose, removePack, viewDirName, type PackInfo } from '../store/packdir.js';
import { fsyncDir, tmpPath, unlinkIfExists, writeFileDurable } from '../store/files.js';
import { runGitFsck, type FsckMode } from '../store/fsck.js';
import type { Repository } from '../store/repo.js';
import type { Level, Levels } from '../repack/levels.js';
import { rewritePartition, type RewriteStats, type WrittenPack } from '../repack/rewrite.js';

export interface RepackOptions {
  levels: Levels;
  /** The level `auto` compresses at (pack.compression, core.compression or -1). */
  autoFallback?: number | undefined;
  dryRun: boolean;
  fsck: FsckMode;
  /** Packs to leave alone besides those with a `.keep` (names with or without `.pack`). */
  keepPacks: string[];
  onProgress?: ((phase: string, done: number, total: number) => void) | undefined;
  signal?: AbortSignal | undefined;
  /** Warnings that do not stop the run (e.g. a midx that could not be rewritten). */
  onWarning?: ((message: string) => void) | undefined;
}

export interface PartitionResult {
  kind: 'normal' | 'promisor';
  sourcePacks: string[];
  looseObjects: number;
  stats: RewriteStats;
  /** `pack-<hash>` of the result; equal to a source pack's name when the rewrite changed nothing. */
  newPack: string | undefined;
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

const JOURNAL = 'repack-ts.journal';

interface Journal {
  installed: string[];
  remove: string[];
  midx: { rewrite: boolean; bitmap: boolean };
}

function normalizeKeep(name: string): string {
  return basename(name).replace(/\.(pack|idx)$/, '');
}

/** Finishes the removals of a run that was killed after installing its packs (see `JOURNAL`). */
function recoverJournal(repo: Repository, warn: (m: string) => void): string[] {
  const path = join(repo.commonDir, JOURNAL);
  unlinkIfExists(path + '.tmp'); // a journal never completed: no removal had begun
  if (!existsSync(path)) return [];
  let j: Journal;
  try {
    j = JSON.parse(readFileSync(path, 'utf8')) as Journal;
  } catch {
    unlinkIfExists(path); // torn write: it was written before any removal began
    return [];
  }
  const done: string[] = [];
  const installedOk = j.installed.every((b) => existsSync(b + '.idx') && existsSync(b + '.pack'));
  if (installedOk) {
    for (const b of j.remove) {
      if (j.installed.includes(b)) continue;
      if (existsSync(b + '.idx') || existsSync(b + '.pack')) {
        removePack(b);
        done.push(b);
      }
    }
    if (j.midx.rewrite) rewriteMidx(repo, j.midx.bitmap, warn);
  }
  unlinkIfExists(path);
  return done;
}

function rewriteMidx(repo: Repository, bitmap: boolean, warn: (m: string) => void): boolean {
  const args = ['multi-pack-index', 'write'];
  if (bitmap) args.push('--bitmap');
  const env: NodeJS.ProcessEnv = { ...process.env, GIT_DIR: repo.gitDir };
  delete env.GIT_OBJECT_DIRECTORY;
  let r = spawnSync('git', args, { cwd: repo.gitDir, env, encoding: 'utf8' });
  if (r.status !== 0 && bitmap) {
    warn(`could not write a multi-pack-index bitmap (${(r.stderr || '').trim()}); writing the multi-pack-index without one`);
    r = spawnSync('git', ['multi-pack-index', 'write'], { cwd: repo.gitDir, env, encoding: 'utf8' });
  }
  if (r.status !== 0) {
    warn(`could not rewrite the multi-pack-index: ${(r.stderr || '').trim()}`);
    return false;
  }
  return true;
}

/** Does the configuration name a promisor remote (`remote.<name>.promisor` or `extensions.partialClone`)? */
function hasPromisorRemote(repo: Repository): boolean {
  return repo.config.keys().some((k) => /^remote\..*\.promisor$/.test(k) && repo.config.getBool(k) === true);
}

/** The first id of sorted `want` that is neither in sorted `have` nor `elsewhere`, as hex. */
function firstMissing(want: Buffer, have: Buffer, len: number, elsewhere: (id: Uint8Array, pos: number) => boolean): string | undefined {
  const n = want.length / len;
  const m = have.length / len;
  let k = 0;
  for (let i = 0; i < n; i++) {
    let c = 1;
    while (k < m && (c = have.compare(want, i * len, (i + 1) * len, k * len, (k + 1) * len)) < 0) k++;
    if (k < m && c === 0) continue;
    if (!elsewhere(want, i * len)) return toHex(want, i * len, len);
  }
  return undefined;
}

/**
 * `git repack-ts`: every pack (but kept and cruft ones) and every loose object become one new pack
 * per partition (normal, promisor), with each type at its target level. Proven equal, checked by
 * git fsck, installed in git's order, and only then are the old files removed.
 */
export async function repack(repo: Repository, opts: RepackOptions): Promise<RepackResult> {
  const warn = opts.onWarning ?? (() => undefined);
  const algo = repo.algo;
  const len = algo.len;
  const packDir = join(repo.objectsDir, 'pack');
  const result: RepackResult = {
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
  const lock = opts.dryRun ? undefined : acquireRepackLock(repo.commonDir, repo.objectsDir);
  const tmpFiles: string[] = [];
  let viewDir: string | undefined;
  const odb = new ObjectDatabase(algo, [repo.objectsDir, ...repo.alternates]);
  try {
    if (!opts.dryRun) {
      result.leftoversCleaned.push(...recoverJournal(repo, warn));
      result.leftoversCleaned.push(...cleanLeftovers(repo.objectsDir));
    }
    const keepNames = new Set(opts.keepPacks.map(normalizeKeep));
    const infos = listPacks(repo.objectsDir);
    const retained: PackInfo[] = [];
    const parts: Record<'normal' | 'promisor', PackInfo[]> = { normal: [], promisor: [] };
    for (const p of infos) {
      if (p.keep || p.cruft || keepNames.has(p.name)) retained.push(p);
      else parts[p.promisor ? 'promisor' : 'normal'].push(p);
    }
    for (const k of keepNames) {
      if (!infos.some((p) => p.name === k)) throw new GitError('usage', `--keep-pack: no pack named '${k}' in ${packDir}`);
    }
    result.keptPacks = retained.map((p) => p.name);
    const opened = new Map<string, Pack>();
    for (const p of infos) {
      const pack = Pack.open(p.base + '.pack', algo);
      opened.set(p.base, pack);
      odb.addPack(pack);
    }
    for (const alt of repo.alternates) for (const f of listPackFiles(alt)) odb.addPack(Pack.open(f, algo));
    const retainedPacks = retained.map((p) => opened.get(p.base)!);
    const excluded = (id: Uint8Array, pos: number): boolean => retainedPacks.some((p) => p.idx.find(id, pos) >= 0);
    const looseIds = listLoose(repo.objectsDir, algo);
    const writeRev = (repo.config.getBool('pack.writeReverseIndex') ?? false) || infos.some((p) => p.rev);

    const written: { kind: 'normal' | 'promisor'; w: WrittenPack; sources: PackInfo[]; loose: Buffer[]; final: string; promisorTmp?: string }[] = [];
    for (const kind of ['normal', 'promisor'] as const) {
      const sources = parts[kind];
      const loose = kind === 'normal' ? looseIds : [];
      if (sources.length === 0 && loose.length === 0) continue;
      if (sources.length >= 0xffff) throw new GitError('unsupported', `too many packs (${sources.length})`);
      const tmp = { pack: tmpPath(packDir, 'pack'), idx: tmpPath(packDir, 'idx'), rev: tmpPath(packDir, 'rev') };
      tmpFiles.push(tmp.pack, tmp.idx, tmp.rev);
      const { stats, written: w } = await rewritePartition(
        { kind, packs: sources.map((p) => opened.get(p.base)!), loose, looseDir: repo.objectsDir },
        { algo, levels: opts.levels, autoFallback: opts.autoFallback, odb, excluded, dryRun: opts.dryRun, tmp, writeRev, onProgress: opts.onProgress, signal: opts.signal },
      );
      const pr: PartitionResult = { kind, sourcePacks: sources.map((p) => p.name), looseObjects: loose.length, stats, newPack: undefined, unchanged: false };
      result.partitions.push(pr);
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
      written.push({ kind, w, sources, loose, final });
    }
    if (opts.dryRun) return result;

    // Proof: each new pack as written on disk (trailer, every entry's CRC32 against the new idx),
    // and every object of every pack or loose file we will remove is in a new or retained pack.
    for (const x of written) {
      opts.signal?.throwIfAborted();
      const np = Pack.open(x.w.packPath, algo, x.w.idxPath);
      try {
        opts.onProgress?.('validating', 0, np.count);
        // One read of the whole file: the trailer hash, and every entry's CRC32 against the new idx.
        const h = algo.create();
        h.update(np.read(0, 12));
        scanPack(np, {
          checkCrc: true,
          onBytes: (b) => h.update(b),
          onProblem: (p) => {
            throw new GitError('verify-failed', `new pack does not read back as written: ${p.message} at offset ${p.offset}`);
          },
        });
        if (!h.digest().equals(np.idx.packChecksum)) throw new GitError('verify-failed', `new pack ${x.w.packPath} does not match its checksum`);
        if (!np.idx.ids.equals(x.w.sortedIds)) throw new GitError('verify-failed', 'new index does not list the planned objects');
        // Every old id is in the new pack or stays in a retained pack: a merge of sorted lists.
        for (const s of x.sources) {
          const missing = firstMissing(opened.get(s.base)!.idx.ids, np.idx.ids, len, excluded);
          if (missing !== undefined) throw new GitError('verify-failed', `object ${missing} of ${s.name} is missing from the new pack`);
        }
        const looseIds = Buffer.concat(x.loose);
        const sortedLoose = Buffer.allocUnsafe(looseIds.length);
        sortIds(looseIds, x.loose.length, len).forEach((i, r) => looseIds.copy(sortedLoose, r * len, i * len, (i + 1) * len));
        const missingLoose = firstMissing(sortedLoose, np.idx.ids, len, excluded);
        if (missingLoose !== undefined) throw new GitError('verify-failed', `loose object ${missingLoose} is missing from the new pack`);
        opts.onProgress?.('validating', np.count, np.count);
      } finally {
        np.close();
      }
      // The promisor marker carries over the contents of the old ones.
      if (x.kind === 'promisor') {
        const lines = new Set<string>();
        for (const s of x.sources) {
          const f = s.base + '.promisor';
          if (existsSync(f)) for (const l of readFileSync(f, 'utf8').split('\n')) if (l !== '') lines.add(l);
        }
        x.promisorTmp = tmpPath(packDir, 'promisor');
        tmpFiles.push(x.promisorTmp);
        writeFileDurable(x.promisorTmp, Buffer.from([...lines].map((l) => l + '\n').join('')), 0o644);
      }
    }

    const toInstall = written.filter((x) => !existsSync(join(packDir, x.final + '.idx')));
    const removing = new Set<string>();
    for (const x of written) for (const s of x.sources) if (s.name !== x.final) removing.add(s.base);

    // git fsck on the state after the rewrite, before anything is installed or removed.
    if (opts.fsck !== 'none' && (removing.size > 0 || toInstall.length > 0)) {
      opts.onProgress?.('checking with git fsck', 0, 1);
      viewDir = viewDirName(repo.objectsDir);
      const viewPacks = [
        ...toInstall.map((x) => ({ pack: x.w.packPath, idx: x.w.idxPath, rev: x.w.revPath, promisor: x.promisorTmp, base: join(packDir, x.final) })),
        ...listPacks(repo.objectsDir)
          .filter((p) => !removing.has(p.base))
          .map((p) => ({ pack: p.base + '.pack', idx: p.base + '.idx', rev: p.rev ? p.base + '.rev' : undefined, promisor: p.promisor ? p.base + '.promisor' : undefined, base: p.base })),
      ];
      buildFsckView(repo.objectsDir, viewDir, viewPacks);
      const hasPromisor = viewPacks.some((p) => p.promisor !== undefined);
      const promisorRemote = repo.config.get('extensions.partialclone') !== undefined || hasPromisorRemote(repo);
      if (hasPromisor && !promisorRemote) warn('promisor packs but no promisor remote configured: git fsck runs as for a partial clone');
      const f = runGitFsck(repo.gitDir, viewDir, opts.fsck, process.env, { assumePromisor: hasPromisor && !promisorRemote });
      if (!f.ok) throw new GitError('verify-failed', `git fsck found problems in the rewritten repository; nothing was changed:\n${f.output}`);
      rmSync(viewDir, { recursive: true, force: true });
      viewDir = undefined;
      opts.onProgress?.('checking with git fsck', 1, 1);
    }

    // Install: .pack, .rev, .promisor, then .idx last.
    const installed: string[] = [];
    for (const x of toInstall) {
      installed.push(installPack(packDir, toHex(x.w.checksum), { pack: x.w.packPath, idx: x.w.idxPath, rev: x.w.revPath, promisor: x.promisorTmp }));
    }
    const mf = midxFiles(repo.objectsDir);
    const journal: Journal = { installed, remove: [...removing], midx: { rewrite: mf.midx !== undefined && removing.size > 0, bitmap: mf.bitmap } };
    const journalPath = join(repo.commonDir, JOURNAL);
    if (removing.size > 0 || result.partitions.some((p) => p.looseObjects > 0)) {
      writeFileDurable(journalPath + '.tmp', Buffer.from(JSON.stringify(journal)), 0o644);
      fsyncDir(repo.commonDir);
      renameSync(journalPath + '.tmp', journalPath);
      fsyncDir(repo.commonDir);
    }
    // A multi-pack-index naming a pack we remove must go first (git's `remove_redundant_pack`).
    if (journal.midx.rewrite) {
      unlinkIfExists(mf.midx!);
      for (const e of mf.extras) unlinkIfExists(e);
      fsyncDir(packDir);
    }
    for (const p of opened.values()) p.close();
    for (const b of removing) {
      removePack(b);
      result.removedPacks.push(basename(b));
    }
    fsyncDir(packDir);
    const looseFiles = written.flatMap((x) => x.loose.map((id) => loosePath(repo.objectsDir, id)));
    result.removedLoose = removeLoose(repo.objectsDir, looseFiles);
    if (journal.midx.rewrite) result.midx = rewriteMidx(repo, journal.midx.bitmap, warn) ? 'rewritten' : 'removed';
    unlinkIfExists(journalPath);
    return result;
  } finally {
    odb.close();
    for (const f of tmpFiles) unlinkIfExists(f);
    if (viewDir !== undefined) rmSync(viewDir, { recursive: true, force: true });
    lock?.release();
  }
}
