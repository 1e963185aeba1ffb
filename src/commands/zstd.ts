import { listRefs } from '../store/refs.js';
import { forcedThreads } from '../repack/pool.js';
import { existsSync, renameSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { outsideRepositories } from '../store/outside.js';
import { GitError, corrupt } from '../errors.js';
import { DICT_KINDS, kindOf, trainDictionary, typeOfKind } from '../codec/dict.js';
import { zstdUnavailable } from '../codec/zstd.js';
import { threadInflater } from '../codec/zlib.js';
import { STREAM_CHUNK } from '../repack/streamed.js';
import type { ZpackDict } from '../format/zpack.js';
import { rewritePartition, type RewriteStats } from '../repack/rewrite.js';
import { resolveChains } from '../store/chain.js';
import { unlinkIfExists, withFaultPoints } from '../store/files.js';
import { removeOnSignal } from '../cleanup.js';
import { listLoose } from '../store/loose.js';
import { ObjectDatabase, listPackFiles } from '../store/odb.js';
import { withExt } from '../store/fs-path.js';
import { Pack } from '../store/pack.js';
import { NO_PARENT, scanPack } from '../store/pack-scan.js';
import { listPacks } from '../store/packdir.js';
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
  signal?: AbortSignal | undefined;
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
    for (let j = 0; j < p.count; j++)
      kind[j] = realType[j] === 0 ? -1 : kindOf(realType[j]!, scan.parent[j] !== NO_PARENT);
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
    const r = threadInflater().inflatePieces(
      [first],
      end - off - headerLen,
      room,
      SAMPLE_BYTES,
      () => undefined,
    );
    if (r.error === undefined)
      return Buffer.from(room.subarray(0, Math.min(r.produced, SAMPLE_BYTES)));
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
  // Links resolved first: the directory as typed may lead into objects/pack (issue 30).
  const out = outsideRepositories(opts.out, [repo.objectsDir, ...repo.alternates]);
  if (existsSync(out) && statSync(out).isDirectory())
    throw new GitError('usage', `${opts.out} is a directory`);
  const algo = repo.algo;
  const infos = listPacks(repo.objectsDir);
  const odb = new ObjectDatabase(algo, [repo.objectsDir, ...repo.alternates]);
  // Each step a point of the fault harness, as the rewrite's (a stop there, then a signal: issue 20).
  const onProgress = withFaultPoints(opts.onProgress);
  const tmp = removeOnSignal(
    join(dirname(out), `.${Math.random().toString(16).slice(2)}.zpack.tmp`),
  );
  try {
    const packs = infos.map((i) => Pack.open(withExt(i.fsBase, '.pack'), algo));
    for (const p of packs) odb.addPack(p);
    for (const alt of repo.alternates)
      for (const f of listPackFiles(alt)) odb.addPack(Pack.open(f, algo));
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
          dictionaries.push({
            kind: DICT_KINDS[k]!,
            bytes: d.dict.length,
            method: d.method,
            samples: s.length,
          });
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
        zpack: {
          level: opts.level,
          plainTypes: opts.plainTypes,
          dicts,
          refs: listRefs(repo.gitDir, repo.env),
          promisor,
        },
        onProgress,
        signal: opts.signal,
      },
    );
    if (written === undefined) throw new GitError('verify-failed', 'nothing was written');
    // Read the whole file back: every object re-hashed through the zstd reader.
    onProgress('verifying', 0, 1);
    const v = await verifyPack(tmp, tmp, algo);
    if (!v.ok)
      throw new GitError(
        'verify-failed',
        `the zstd pack does not verify: ${v.problems.map((p) => `${p.message} at offset ${p.offset}`).join('; ')}`,
      );
    onProgress('verifying', 1, 1);
    renameSync(tmp, out);
    let sourceBytes = 0;
    for (const p of packs) sourceBytes += p.size;
    return {
      path: out,
      objects: written.count,
      bytes: statSync(out).size,
      sourceBytes,
      level: opts.level,
      dictionaries,
      stats,
    };
  } finally {
    odb.close();
    unlinkIfExists(tmp);
  }
}
