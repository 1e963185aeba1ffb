import { inspectRepository, type InspectResult } from '../commands/inspect.js';
import { listPackFiles } from '../store/odb.js';
import type { Repository } from '../store/repo.js';
import { apiCall, checkOptions, repositoryAt, type ProgressCallback } from './common.js';

export interface InspectOptions {
  onProgress?: ProgressCallback | undefined;
  signal?: AbortSignal | undefined;
}

/** What `git repack-ts inspect --json` prints: the census of every pack, and the object format. */
export interface InspectReport extends InspectResult {
  objectFormat: 'sha1' | 'sha256';
}

/** The census of an opened repository (the CLI's `inspect`, which found the repository itself). */
export function inspectRepo(repo: Repository, options: InspectOptions = {}): InspectReport {
  const r = inspectRepository(listPackFiles(repo.objectsDir), repo.objectsDir, repo.algo, options);
  return { objectFormat: repo.algo.name, ...r };
}

/** Per-type census of the repository at or above `repoPath`: deltas, depths, sizes, zlib levels. */
export async function inspect(
  repoPath: string,
  options: InspectOptions = {},
): Promise<InspectReport> {
  return apiCall(options?.signal, () => {
    checkOptions(options, ['onProgress', 'signal'], 'inspect');
    return inspectRepo(repositoryAt(repoPath), options);
  });
}
