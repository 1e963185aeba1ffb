import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { listRefs } from '../store/refs.js';
import { walkObjects, type WalkResult } from '../commands/walk.js';
import { ObjectDatabase } from '../store/odb.js';
import type { Repository } from '../store/repo.js';
import { apiCall, checkOptions, repositoryAt } from './common.js';

export interface WalkOptions {
  /** `--read-blobs`: inflate every blob as well. */
  readBlobs?: boolean | undefined;
  /** Checked before the walk starts (the walk itself runs to its end). */
  signal?: AbortSignal | undefined;
}

/** The repository's `shallow` file (git's `git_path_shallow`: in the common directory), if any. */
export function readShallow(repo: Repository): string | undefined {
  try {
    return readFileSync(join(repo.commonDir, 'shallow'), 'latin1');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw e;
  }
}

/** Every object reachable from the refs of an opened repository, through our own reader. */
export function walkRepo(repo: Repository, options: WalkOptions = {}): WalkResult {
  const odb = ObjectDatabase.open(repo.algo, [repo.objectsDir, ...repo.alternates]);
  try {
    return walkObjects(odb, repo.algo, listRefs(repo.gitDir, repo.env), {
      readBlobs: options.readBlobs === true,
      shallow: readShallow(repo),
    });
  } finally {
    odb.close();
  }
}

/**
 * `git repack-ts walk`: `git rev-list --objects --all` through git-repack-ts's reader, counted and
 * timed. Rejects with a GitRepackError `missing-object` where git's rev-list dies on a missing
 * object (one no promisor pack promises), its message git's.
 */
export async function walk(repoPath: string, options: WalkOptions = {}): Promise<WalkResult> {
  return apiCall(options?.signal, () => {
    checkOptions(options, ['readBlobs', 'signal'], 'walk');
    return walkRepo(repositoryAt(repoPath), options);
  });
}
