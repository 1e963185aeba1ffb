import { basename } from 'node:path';
import { GitError } from '../errors.js';
import { toHex } from '../hash/algo.js';
import { listLoose, loosePath, unknownLooseType } from '../store/loose.js';
import { ObjectDatabase, listPackFiles } from '../store/odb.js';
import { Pack } from '../store/pack.js';
import { pathKey, withExt } from '../store/fs-path.js';
import { fault } from '../store/files.js';
import { listPacks, type PackInfo } from '../store/packdir.js';
import { readSmallFile } from '../store/regular.js';
import type { Repository } from '../store/repo.js';
import { provePackedCopy, type CopyProof } from '../repack/duplicates.js';
import { runTargets, selectPacks, type Selection } from './repack-select.js';
import { bitmapSource } from './repack-bitmap.js';
import type { RepackOptions, RepackResult } from './repack.js';

/**
 * What a rewrite starts from: which packs it rewrites (repack-select.ts chooses), every pack
 * opened, and the loose objects a pack can hold.
 */

/** What of the run choosing and opening its sources reads and reports to. */
export interface SourceRun {
  readonly repo: Repository;
  readonly opts: RepackOptions;
  readonly packDir: string;
  readonly odb: ObjectDatabase;
  readonly result: RepackResult;
  readonly warn: (message: string) => void;
}

function normalizeKeep(name: string): string {
  return basename(name).replace(/\.(pack|idx)$/, '');
}

/** The packs and loose objects a run starts from, opened. */
export interface Sources {
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

/** Which packs this run rewrites, before any is opened (repack-select.ts). */
export function selectSources(run: SourceRun): Selection {
  const { repo, opts } = run;
  const keepNames = new Set(opts.keepPacks.map(normalizeKeep));
  const infos = listPacks(repo.objectsDir);
  for (const k of keepNames) {
    if (!infos.some((p) => p.name === k))
      throw new GitError('usage', `--keep-pack: no pack named '${k}' in ${run.packDir}`);
  }
  const looseIds = packableLoose(run, listLoose(repo.objectsDir, repo.algo));
  return selectPacks(
    repo,
    infos,
    looseIds,
    { keepNames, all: opts.all === true, targets: runTargets(opts) },
    run.result,
    run.warn,
  );
}

/** Every pack opened (the retained ones hold objects the new packs leave out), loose ids listed. */
export function openSources(run: SourceRun, sel: Selection): Sources {
  const { repo, odb } = run;
  const opened = new Map<string, Pack>();
  for (const p of sel.infos) {
    const pack = Pack.open(withExt(p.fsBase, '.pack'), repo.algo);
    opened.set(pathKey(p.fsBase), pack);
    odb.addPack(pack);
  }
  for (const alt of repo.alternates)
    for (const f of listPackFiles(alt)) odb.addPack(Pack.open(f, repo.algo));
  // The pack whose bitmap is carried over goes first: its objects keep their places in the new
  // pack (as a multi-pack-index's preferred pack), so its commit bitmaps are copied as they are.
  if (run.opts.writeBitmap !== false) {
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
      if (j >= 0) return provePackedCopy(p, j, odb, repo.algo);
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
function packableLoose(run: SourceRun, ids: Buffer[]): Buffer[] {
  return ids.filter((id) => {
    const file = loosePath(run.repo.objectsDir, id);
    const type = unknownLooseType(file);
    if (type === undefined) return true;
    run.result.looseLeft.push(file);
    run.warn(`${file}: loose object of unknown type '${type}' left as it is (no pack can hold it)`);
    return false;
  });
}

/** A `.promisor`'s lines: never through a link, regular files only, at most this much. */
const MAX_PROMISOR_BYTES = 64 << 20;

/** The lines of the source packs' `.promisor` files, each once, for the new pack's. */
export function promisorLines(
  sources: readonly { base: string }[],
  warn: (message: string) => void,
): Set<string> {
  const lines = new Set<string>();
  for (const s of sources) {
    const f = s.base + '.promisor';
    const r = readSmallFile(f, MAX_PROMISOR_BYTES);
    if (r !== undefined && 'why' in r) warn(`${f}: ${r.why}; its content is not carried over`);
    else if (r !== undefined)
      for (const l of r.data.toString('utf8').split('\n')) if (l !== '') lines.add(l);
  }
  return lines;
}
