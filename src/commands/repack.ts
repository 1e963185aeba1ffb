import { existsSync, mkdirSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { basename, join } from 'node:path';
import { GitError } from '../errors.js';
import { toHex } from '../hash/algo.js';
import { listLoose, loosePath } from '../store/loose.js';
import { acquireRepackLock } from '../store/lock.js';
import { journalPack, newJournal, recoverJournal, removeJournal, rollbackInstall, writeJournal, type JournalPack } from '../store/journal.js';
import { readSmallFile } from '../store/regular.js';
import { sharedRepositoryOf } from '../store/shared-perm.js';
import { guardLock, removeOnSignal } from '../cleanup.js';
import { ObjectDatabase, listPackFiles } from '../store/odb.js';
import { Pack } from '../store/pack.js';
import { buildFsckView, cleanLeftovers, ensurePackDir, installPack, listPacks, makeViewDir, midxFiles, removeLoose, removePack, removeView, type PackInfo } from '../store/packdir.js';
import { fault, fsyncDir, tmpPath, unlinkIfExists, writeFileDurable } from '../store/files.js';
import { indexPackCheck, onlyObjectsWrittenMeanwhile, runGitFsck, type FsckMode } from '../store/fsck.js';
import type { Repository } from '../store/repo.js';
import type { Level, Levels } from '../repack/levels.js';
import type { AutoRule } from '../repack/encoding.js';
import { proveWrittenPack } from '../repack/prove.js';
import { wholeNotIndexed, writeChangedPack } from '../repack/changed-pack.js';
import { OBJ_BLOB, OBJ_COMMIT, OBJ_TAG, OBJ_TREE } from '../format/object-type.js';
import { rewritePartition, type RewriteStats, type WrittenPack } from '../repack/rewrite.js';
import { verifyPack } from './verify.js';

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

/**
 * Where the objects git fsck complains about came from (a damaged source pack, say, whose entries
 * were copied byte for byte under a CRC that matched): the file and offset of each, for the message.
 */
function whereFrom(output: string, packs: Pack[], objectsDir: string, len: number): { text: string; suspects: Set<Pack> } {
  const ids = [...new Set(output.match(new RegExp(`\\b[0-9a-f]{${len * 2}}\\b`, 'g')) ?? [])].slice(0, 20);
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
  return { text: lines.length > 0 ? `\nThe objects it names come from:\n${lines.slice(0, 10).join('\n')}` : '', suspects };
}

/** Verifying more than this of old packs for an error message would take too long. */
const VERIFY_FOR_MESSAGE_BYTES = 256 << 20;

/**
 * What `verify` finds in the old packs, for the message of a failed fsck: the packs holding the
 * objects git named, or, when it named none (it may die on a hostile size), every old pack if
 * they are small enough. At most ten lines.
 */
async function verifySources(sources: Pack[], suspects: Set<Pack>, algo: Repository['algo']): Promise<string> {
  let packs = sources.filter((p) => suspects.has(p));
  if (packs.length === 0 && sources.reduce((n, p) => n + p.size, 0) <= VERIFY_FOR_MESSAGE_BYTES) packs = sources;
  const lines: string[] = [];
  for (const p of packs) {
    try {
      const r = await verifyPack(p.packPath, p.idxPath, algo);
      for (const pr of r.problems.slice(0, 5)) lines.push(`${pr.file}: ${pr.message} at offset ${pr.offset}`);
    } catch (e) {
      lines.push(`${p.packPath}: ${(e as Error).message}`);
    }
    if (lines.length >= 10) break;
  }
  return lines.length > 0 ? `\nverify of the old packs:\n${lines.slice(0, 10).join('\n')}` : '';
}

/** Runs cleanup that must not hide the error being reported. */
function bestEffort(f: () => unknown): void {
  try {
    f();
  } catch {
    // the next run's recovery and leftover cleaning finish this
  }
}

/** An error of the file system, as Node throws them. */
function isSystemError(e: unknown): e is NodeJS.ErrnoException {
  const err = e as NodeJS.ErrnoException;
  return !(e instanceof GitError) && err !== null && typeof err === 'object' && typeof err.code === 'string' && typeof err.syscall === 'string';
}

function rewriteMidx(repo: Repository, bitmap: boolean, warn: (m: string) => void): boolean {
  // The object directory we rewrote, which GIT_OBJECT_DIRECTORY may have put elsewhere.
  const args = ['multi-pack-index', '--object-dir', repo.objectsDir, 'write'];
  if (bitmap) args.push('--bitmap');
  // git finds --object-dir only among the object directories it knows: name ours as its own.
  const env: NodeJS.ProcessEnv = { ...process.env, GIT_DIR: repo.gitDir, GIT_OBJECT_DIRECTORY: repo.objectsDir };
  let r = spawnSync('git', args, { cwd: repo.gitDir, env, encoding: 'utf8' });
  if (r.status !== 0 && bitmap) {
    warn(`could not write a multi-pack-index bitmap (${(r.stderr || '').trim()}); writing the multi-pack-index without one`);
    r = spawnSync('git', args.slice(0, -1), { cwd: repo.gitDir, env, encoding: 'utf8' });
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

/** The object types a rewrite re-encoded entries of. */
function reencodedTypes(stats: RewriteStats): Set<number> {
  const r = stats.reencoded;
  const types = new Set<number>();
  if (r.commit > 0) types.add(OBJ_COMMIT);
  if (r.tree > 0) types.add(OBJ_TREE);
  if (r.blob > 0) types.add(OBJ_BLOB);
  if (r.tag > 0) types.add(OBJ_TAG);
  return types;
}

/**
 * `--fsck=changed`: git reads back every entry of the new pack whose bytes were written anew —
 * every entry of a type the rewrite re-encoded, every packed loose object, every delta written
 * whole — through `git index-pack` on a pack of just those (`writeChangedPack`): it inflates
 * each, hashes each whole object, and each of their ids must be in its index. Entries copied byte
 * for byte under a verified CRC32 are not read again. Rejects with a GitError naming the source.
 */
async function startChangedCheck(
  repo: Repository,
  x: { w: WrittenPack; stats: RewriteStats; loose: Buffer[] },
  scratchDirs: string[],
  sources: Pack[],
  onProgress: (phase: string, done: number, total: number) => void,
): Promise<void> {
  const sel = { types: reencodedTypes(x.stats), looseIds: x.loose, allWhole: x.stats.whole > 0 };
  if (sel.types.size === 0 && sel.looseIds.length === 0 && !sel.allWhole) return;
  // (Its phase is reported once, when git is done: it runs beside our own proof, whose
  // 'validating' line would otherwise come between its start and its end.)
  // One directory, removed whole (by the next run's leftover cleaning after a kill), holds all of
  // it: git's object directory for the check (empty) and, beside its pack/, the pack of changed
  // entries and git's index of it. A git index-pack orphaned by a kill then cannot leave an
  // index behind once the directory is gone.
  const dir = removeOnSignal(makeViewDir(repo.objectsDir));
  scratchDirs.push(dir);
  mkdirSync(join(dir, 'pack'), { recursive: true });
  const sub = { pack: join(dir, 'changed.pack'), idx: join(dir, 'changed.idx') };
  const cp = writeChangedPack(x.w, repo.algo, sel, sub.pack);
  fault('phase:fsck', sub.pack); // the moment git checks, whatever the mode (the reliability harness stops here)
  const r = await indexPackCheck(repo.gitDir, sub.pack, sub.idx, dir, process.env);
  const missing = r.ok ? wholeNotIndexed(sub.idx, cp, x.w.idxPath, repo.algo) : undefined;
  if (r.ok && missing === undefined) {
    onProgress('checking with git index-pack', 1, 1);
    return;
  }
  // Name what git could not read back: the objects it names, or the one whose id it did not find.
  const where = whereFrom(missing ?? r.output, sources, repo.objectsDir, repo.algo.len);
  const said = r.ok ? `${missing}: git index-pack hashed the rewritten entries to other ids` : `git index-pack said:\n${r.output}`;
  throw new GitError('verify-failed', `git could not read back the rewritten entries; nothing was changed.${where.text}${await verifySources(sources, where.suspects, repo.algo)}\n${said}`);
}

/**
 * `git repack-ts`: every pack (but kept and cruft ones) and every loose object become one new pack
 * per partition (normal, promisor), with each type at its target level. Proven equal, checked by
 * git (`FsckMode`), installed in git's order, and only then are the old files removed.
 */
export async function repack(repo: Repository, opts: RepackOptions): Promise<RepackResult> {
  const warn = opts.onWarning ?? (() => undefined);
  const algo = repo.algo;
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
  const shared = sharedRepositoryOf(repo.config);
  const lock = opts.dryRun ? undefined : guardLock(acquireRepackLock(repo.commonDir, repo.objectsDir, shared));
  const tmpFiles: string[] = [];
  const scratchDirs: string[] = [];
  let viewDir: string | undefined;
  // What a system error (ENOSPC, EROFS, EIO…) interrupted, and what state it left, for its message.
  let step = 'reading the packs';
  let state = 'nothing was changed';
  const onProgress = (phase: string, done: number, total: number): void => {
    fault(`progress:${phase}`, `${done}/${total}`);
    opts.onProgress?.(phase, done, total);
  };
  const odb = new ObjectDatabase(algo, [repo.objectsDir, ...repo.alternates]);
  try {
    if (!opts.dryRun) {
      step = 'finishing an interrupted run';
      state = 'the repository is as the interrupted run left it';
      result.leftoversCleaned.push(...recoverJournal({ objectsDir: repo.objectsDir, algo, lock: lock!, warn, shared, rewriteMidx: (bitmap) => rewriteMidx(repo, bitmap, warn) }));
      result.leftoversCleaned.push(...cleanLeftovers(repo.objectsDir));
      ensurePackDir(repo.objectsDir, shared);
      fault('phase:start');
      step = 'reading the packs';
      state = 'nothing was changed';
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
    fault('phase:listed');
    const writeRev = (repo.config.getBool('pack.writeReverseIndex') ?? false) || infos.some((p) => p.rev);

    const written: { kind: 'normal' | 'promisor'; w: WrittenPack; stats: RewriteStats; sources: PackInfo[]; loose: Buffer[]; final: string; promisorTmp?: string }[] = [];
    for (const kind of ['normal', 'promisor'] as const) {
      const sources = parts[kind];
      const loose = kind === 'normal' ? looseIds : [];
      if (sources.length === 0 && loose.length === 0) continue;
      if (sources.length >= 0xffff) throw new GitError('unsupported', `too many packs (${sources.length})`);
      const tmp = { pack: tmpPath(packDir, 'pack'), idx: tmpPath(packDir, 'idx'), rev: tmpPath(packDir, 'rev') };
      tmpFiles.push(tmp.pack, tmp.idx, tmp.rev);
      step = `writing the new pack ${tmp.pack}`;
      // One pack, nothing loose, and no file of it missing: it may already be the result.
      const skipIfUnchanged = !opts.dryRun && sources.length === 1 && loose.length === 0 && (!writeRev || sources[0]!.rev);
      const {
        stats,
        written: w,
        unchanged,
      } = await rewritePartition(
        { kind, packs: sources.map((p) => opened.get(p.base)!), loose, looseDir: repo.objectsDir },
        { algo, levels: opts.levels, autoFallback: opts.autoFallback, autoRule: opts.autoRule, odb, excluded, dryRun: opts.dryRun, tmp, writeRev, onProgress, signal: opts.signal, skipIfUnchanged },
      );
      const pr: PartitionResult = { kind, sourcePacks: sources.map((p) => p.name), looseObjects: loose.length, stats, newPack: undefined, unchanged: false };
      result.partitions.push(pr);
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
      written.push({ kind, w, stats, sources, loose, final });
    }
    if (opts.dryRun) return result;
    fault('phase:written');
    step = 'checking the new pack';

    // git reads back what was written anew (`--fsck=changed`), beside our own proof.
    const checks: Promise<void>[] = [];
    if (opts.fsck === 'changed') {
      step = 'checking the rewritten entries with git index-pack';
      for (const x of written) {
        const sources = x.sources.map((s) => opened.get(s.base)!);
        checks.push(startChangedCheck(repo, x, scratchDirs, sources, onProgress));
      }
      // A failure is reported once the proof is done (or has failed first).
      for (const c of checks) c.catch(() => undefined);
    }

    // Proof: each new pack as written on disk (trailer, every entry's CRC32 against the new idx),
    // and every object of every pack or loose file we will remove is in a new or retained pack.
    for (const x of written) {
      opts.signal?.throwIfAborted();
      // The sources' derived tables are no longer needed: give the memory back first.
      for (const p of opened.values()) p.dropCaches();
      await proveWrittenPack(x.w, algo, x.sources.map((s) => opened.get(s.base)!), x.loose, excluded, onProgress);
      // The promisor marker carries over the contents of the old ones.
      if (x.kind === 'promisor') {
        const lines = new Set<string>();
        for (const s of x.sources) {
          const f = s.base + '.promisor';
          const r = readSmallFile(f, MAX_PROMISOR_BYTES);
          if (r !== undefined && 'why' in r) warn(`${f}: ${r.why}; its content is not carried over`);
          else if (r !== undefined) for (const l of r.data.toString('utf8').split('\n')) if (l !== '') lines.add(l);
        }
        x.promisorTmp = tmpPath(packDir, 'promisor');
        tmpFiles.push(x.promisorTmp);
        writeFileDurable(x.promisorTmp, Buffer.from([...lines].map((l) => l + '\n').join('')), 0o444); // as git repack makes it: fopen'd, then its write bits taken away
      }
    }

    if (checks.length > 0) {
      step = 'checking the rewritten entries with git index-pack';
      await Promise.all(checks);
    }

    const toInstall = written.filter((x) => !existsSync(join(packDir, x.final + '.idx')));
    const removing = new Set<string>();
    for (const x of written) for (const s of x.sources) if (s.name !== x.final) removing.add(s.base);

    fault('phase:proved');

    // git fsck on the state after the rewrite, before anything is installed or removed.
    if ((opts.fsck === 'full' || opts.fsck === 'connectivity') && (removing.size > 0 || toInstall.length > 0)) {
      step = 'checking the rewritten repository with git fsck';
      onProgress('checking with git fsck', 0, 1);
      const hasPromisor = toInstall.some((x) => x.promisorTmp !== undefined) || listPacks(repo.objectsDir).some((p) => p.promisor && !removing.has(p.base));
      const promisorRemote = repo.config.get('extensions.partialclone') !== undefined || hasPromisorRemote(repo);
      if (hasPromisor && !promisorRemote) warn('promisor packs but no promisor remote configured: git fsck runs as for a partial clone');
      // Objects that git writes while we run (a commit, a fetch) are not in a view built before
      // they arrived, yet refs may already name them: when the objects changed while fsck ran,
      // build the view again and look once more.
      const objectsNow = (): string => `${listPacks(repo.objectsDir).map((p) => p.name).join(',')}|${listLoose(repo.objectsDir, algo).length}`;
      // Ids we listed at the start (in any pack, or loose): a complaint about one is never benign.
      const looseHex = new Set(looseIds.map((id) => toHex(id)));
      const listed = (hex: string): boolean => {
        if (looseHex.has(hex)) return true;
        const id = Buffer.from(hex, 'hex');
        return [...opened.values()].some((p) => p.findOffset(id) >= 0);
      };
      for (let attempt = 1; ; attempt++) {
        const before = objectsNow();
        viewDir = removeOnSignal(makeViewDir(repo.objectsDir));
        const viewPacks = [
          ...toInstall.map((x) => ({ pack: x.w.packPath, idx: x.w.idxPath, rev: x.w.revPath, promisor: x.promisorTmp, base: join(packDir, x.final) })),
          ...listPacks(repo.objectsDir)
            .filter((p) => !removing.has(p.base))
            .map((p) => ({ pack: p.base + '.pack', idx: p.base + '.idx', rev: p.rev ? p.base + '.rev' : undefined, promisor: p.promisor ? p.base + '.promisor' : undefined, base: p.base })),
        ];
        buildFsckView(repo.objectsDir, viewDir, viewPacks);
        fault('phase:fsck', viewDir);
        const f = runGitFsck(repo.gitDir, viewDir, opts.fsck, process.env, { assumePromisor: hasPromisor && !promisorRemote });
        removeView(viewDir);
        viewDir = undefined;
        if (f.ok) break;
        if (attempt < 3 && objectsNow() !== before) continue;
        if (onlyObjectsWrittenMeanwhile(f.output, algo.len * 2, listed, repo.gitDir, process.env)) break;
        // Entries are copied under their CRC32 without being inflated: damage that the CRC
        // covers (a delta that cannot apply, a wrong declared size) reaches git fsck. Name its
        // source: the objects git names, and what our verify finds in the old packs.
        const sources = [...removing].map((b) => opened.get(b)).filter((p): p is Pack => p !== undefined);
        const where = whereFrom(f.output, [...opened.values()], repo.objectsDir, algo.len);
        throw new GitError(
          'verify-failed',
          `git fsck found problems in the rewritten repository; nothing was changed.${where.text}${await verifySources(sources, where.suspects, algo)}\ngit fsck said:\n${f.output}`,
        );
      }
      onProgress('checking with git fsck', 1, 1);
    }

    // The journal goes down before anything is installed: a run killed from here on is finished
    // or rolled back by the next one (see `JOURNAL`).
    const mf = midxFiles(repo.objectsDir);
    const holders: JournalPack[] = [
      ...written.map((x) => journalPack(x.final, x.w.idxPath, algo)),
      ...retainedPacks.map((p) => journalPack(basename(p.packPath, '.pack'), p.idxPath, algo)),
    ];
    const journal = newJournal(lock!, holders, toInstall.map((x) => x.final), [...removing].map((b) => basename(b)), { rewrite: mf.midx !== undefined && removing.size > 0, bitmap: mf.bitmap });
    step = 'installing the new pack';
    if (toInstall.length > 0 || removing.size > 0 || written.some((x) => x.loose.length > 0)) writeJournal(repo.objectsDir, journal, shared);
    fault('phase:install');
    // Install: .pack, .rev, .promisor, then .idx last.
    try {
      for (const x of toInstall) {
        installPack(packDir, toHex(x.w.checksum), { pack: x.w.packPath, idx: x.w.idxPath, rev: x.w.revPath, promisor: x.promisorTmp }, shared);
      }
    } catch (e) {
      bestEffort(() => rollbackInstall(packDir, journal.installed));
      bestEffort(() => removeJournal(repo.objectsDir));
      throw e;
    }
    step = 'removing the old packs';
    state = 'the new pack is installed and holds every object; the next run finishes the removal';
    // Another git (a gc, a `git repack -A -d`, which do not take our lock) may remove the new
    // pack meanwhile; the old files may then hold the only copies (git's -A loosens unreachable
    // objects only when they are not loose already). So each removal first checks that every
    // new pack is still there, as git's prune-packed checks the pack before each loose object.
    const newPacksThere = (what: string): void => {
      for (const x of written) {
        const b = join(packDir, x.final);
        if (existsSync(b + '.idx') && existsSync(b + '.pack')) continue;
        state = 'the old files that remain are left in place';
        throw new GitError('verify-failed', `the new pack ${b}.pack vanished before the ${what} were removed (is another git gc or git repack running?); ${state}`, { file: b + '.pack' });
      }
    };
    fault('phase:remove');
    newPacksThere('old packs');
    // A multi-pack-index naming a pack we remove must go first (git's `remove_redundant_pack`).
    if (journal.midx.rewrite) {
      unlinkIfExists(mf.midx!);
      for (const e of mf.extras) unlinkIfExists(e);
      fsyncDir(packDir);
    }
    for (const p of opened.values()) p.close();
    for (const b of removing) {
      newPacksThere('old packs');
      removePack(b);
      result.removedPacks.push(basename(b));
    }
    fsyncDir(packDir);
    step = 'removing the packed loose objects';
    fault('phase:loose');
    const looseFiles = written.flatMap((x) => x.loose.map((id) => loosePath(repo.objectsDir, id)));
    result.removedLoose = removeLoose(repo.objectsDir, looseFiles, () => newPacksThere('loose objects'));
    fault('phase:midx');
    if (journal.midx.rewrite) result.midx = rewriteMidx(repo, journal.midx.bitmap, warn) ? 'rewritten' : 'removed';
    fault('phase:done');
    removeJournal(repo.objectsDir);
    return result;
  } catch (e) {
    if (isSystemError(e)) {
      // A file of the repository (not one of ours) that is gone: someone else is removing files.
      const vanished = e.code === 'ENOENT' && e.path !== undefined && e.path.startsWith(repo.objectsDir) && !basename(e.path).startsWith('tmp_');
      const why = vanished ? ' (it vanished while we were reading it: is another git gc or git repack running?)' : '';
      throw new GitError('io', `${step}: ${e.message}${why}; ${state}`, { file: e.path, cause: e });
    }
    throw e;
  } finally {
    bestEffort(() => odb.close());
    for (const f of tmpFiles) bestEffort(() => unlinkIfExists(f));
    for (const d of scratchDirs) bestEffort(() => removeView(d));
    const view = viewDir;
    if (view !== undefined) bestEffort(() => removeView(view));
    lock?.release();
  }
}
