import { existsSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { verifyPack, type VerifyPackResult } from '../commands/verify.js';
import { GitRepackError } from '../errors.js';
import { SHA1, hashAlgoByName, type HashAlgo } from '../hash/algo.js';
import { discoverRepository } from '../store/repo.js';
import { shownPath, type FsPath } from '../store/fs-path.js';
import { apiCall, apiEnv, callerEuid, checkOptions, type ProgressCallback } from './common.js';

export interface VerifyOptions {
  /** `--object-format`: default the format of the repository holding the pack, else sha1. */
  objectFormat?: 'sha1' | 'sha256' | undefined;
  onProgress?: ProgressCallback | undefined;
  signal?: AbortSignal | undefined;
}

/** What `git repack-ts verify --json` prints; each pack's `pack` is its name as given. */
export interface VerifyReport {
  ok: boolean;
  packs: (VerifyPackResult & { entries?: VerboseEntry[] })[];
}

/** One object as `git verify-pack -v` lists it (`verify -v --json`). */
export interface VerboseEntry {
  id: string;
  type: string;
  size: number;
  packedSize: number;
  offset: number;
  depth?: number;
  base?: string;
}

/** `<id> <type> <size> <size-in-pack> <offset> [<depth> <base-id>]`, as git verify-pack -v prints it. */
function verboseEntry(line: string): VerboseEntry {
  const [id, type, size, packedSize, offset, depth, base] = line.trim().split(/\s+/);
  const e: VerboseEntry = {
    id: id!,
    type: type!,
    size: Number(size),
    packedSize: Number(packedSize),
    offset: Number(offset),
  };
  if (depth !== undefined && base !== undefined) Object.assign(e, { depth: Number(depth), base });
  return e;
}

/** One pack to verify: its files, and its name as the caller gave it. */
export interface VerifyTarget {
  /** Bytes where a name is not valid UTF-8 (a pack listed in objects/pack). */
  pack: FsPath;
  idx: FsPath;
  shown: string;
}

/** `foo`, `foo.idx` and `foo.pack` name the same pair, as in verify-pack; a `.zpack` is its own index. */
export function verifyTarget(arg: string, cwd: string): VerifyTarget {
  if (arg.endsWith('.zpack'))
    return { pack: resolve(cwd, arg), idx: resolve(cwd, arg), shown: arg };
  const base = arg.replace(/\.(idx|pack)$/, '');
  return {
    pack: resolve(cwd, base + '.pack'),
    idx: resolve(cwd, base + '.idx'),
    shown: base + '.pack',
  };
}

export interface VerifyRun {
  algo: HashAlgo;
  bigFileThreshold?: number | undefined;
  onProgress?: ProgressCallback | undefined;
  signal?: AbortSignal | undefined;
  /** `git verify-pack -v` lines of each pack, in pack order. */
  verboseLine?: ((line: string) => void) | undefined;
  /** Each pack's result as soon as it is known; `missing` when neither of its files exists. */
  onPack?: ((r: VerifyPackResult, missing: boolean) => void) | undefined;
  /** Every object of each pack as a record in its result (`verify -v --json`). */
  entries?: boolean | undefined;
}

/** Verifies the packs one after the other (the CLI's `verify`, printing through the hooks). */
export async function verifyTargets(
  targets: readonly VerifyTarget[],
  run: VerifyRun,
): Promise<VerifyReport> {
  const packs: VerifyReport['packs'] = [];
  for (const t of targets) {
    run.signal?.throwIfAborted();
    const missing = !existsSync(t.idx) && !existsSync(t.pack);
    const entries: VerboseEntry[] = [];
    const verboseLine =
      run.entries === true ? (l: string) => entries.push(verboseEntry(l)) : run.verboseLine;
    const r = missing
      ? {
          pack: t.shown,
          ok: false,
          objects: 0,
          nonDelta: 0,
          chainLengths: [],
          problems: [
            { file: shownPath(t.idx), offset: 0, message: 'cannot open existing pack file' },
          ],
          moreProblems: 0,
        }
      : {
          ...(await verifyPack(t.pack, t.idx, run.algo, { ...run, verboseLine })),
          pack: t.shown,
          ...(run.entries === true ? { entries } : {}),
        };
    packs.push(r);
    run.onPack?.(r, missing);
  }
  return { ok: packs.every((p) => p.ok), packs };
}

/** The format and threshold of the repository holding `pack`, as verify-pack takes them from its own. */
function repositoryOf(pack: string): { algo: HashAlgo; bigFileThreshold: number | undefined } {
  try {
    const repo = discoverRepository({ cwd: dirname(pack), env: apiEnv(), euid: callerEuid() });
    return { algo: repo.algo, bigFileThreshold: repo.config.getInt('core.bigFileThreshold') };
  } catch {
    return { algo: SHA1, bigFileThreshold: undefined };
  }
}

/**
 * `git repack-ts verify <pack>…` (git verify-pack): checksums, idx order, every entry's CRC32,
 * every object re-hashed. A damaged pack is a result (`ok: false`, its problems), not an error.
 */
export async function verify(
  packPath: string | readonly string[],
  options: VerifyOptions = {},
): Promise<VerifyReport> {
  return apiCall(options?.signal, () => {
    checkOptions(options, ['objectFormat', 'onProgress', 'signal'], 'verify');
    const paths = typeof packPath === 'string' ? [packPath] : packPath;
    if (
      !Array.isArray(paths) ||
      paths.length === 0 ||
      paths.some((p) => typeof p !== 'string' || p === '')
    )
      throw new GitRepackError('usage', 'verify: pack paths expected');
    const targets = paths.map((p) => verifyTarget(p, resolve('.')));
    let repo = repositoryOf(shownPath(targets[0]!.pack));
    if (options.objectFormat !== undefined) {
      const algo = hashAlgoByName(options.objectFormat);
      if (algo === undefined)
        throw new GitRepackError(
          'usage',
          `unknown hash algorithm '${String(options.objectFormat)}'`,
        );
      repo = { ...repo, algo };
    }
    return verifyTargets(targets, {
      ...repo,
      onProgress: options.onProgress,
      signal: options.signal,
    });
  });
}
