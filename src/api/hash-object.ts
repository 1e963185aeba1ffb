import { dirname, resolve } from 'node:path';
import { hashObjects } from '../commands/hash-object/hash-object.js';
import { GitRepackError } from '../errors.js';
import { apiCall, apiEnv, callerEuid, checkOptions, directoryAt } from './common.js';

export interface HashObjectOptions {
  /** `-t`: the object type (default blob). */
  type?: string | undefined;
  /** `-w`: write the object into the repository. */
  write?: boolean | undefined;
  /** `--path`: hash as if the content were at this path (its attributes and filters). */
  path?: string | undefined;
  /** `--no-filters`: hash the file as it is. */
  noFilters?: boolean | undefined;
  /** `--literally`: any type, no format check. */
  literally?: boolean | undefined;
  /**
   * Where hash-object runs (`git -C`): the repository written to and whose config and attributes
   * apply. Default: the file's directory.
   */
  repository?: string | undefined;
  /** What a delegated `git hash-object` printed on stderr (the CLI passes it through). */
  onWarning?: ((message: string) => void) | undefined;
  signal?: AbortSignal | undefined;
}

const KNOWN = [
  'type',
  'write',
  'path',
  'noFilters',
  'literally',
  'repository',
  'onWarning',
  'signal',
] as const;

/** `git repack-ts hash-object [-t <type>] [-w] <file>`: resolves to the object id in hex. */
export async function hashObject(
  filePath: string,
  options: HashObjectOptions = {},
): Promise<string> {
  return apiCall(options?.signal, async () => {
    checkOptions(options, KNOWN, 'hashObject');
    if (typeof filePath !== 'string' || filePath === '')
      throw new GitRepackError('usage', 'hashObject: a file path is required');
    const file = resolve(filePath);
    let id: string | undefined;
    await hashObjects(
      {
        type: options.type ?? 'blob',
        write: options.write === true,
        literally: options.literally === true,
        noFilters: options.noFilters === true,
        path: options.path,
        stdin: 0,
        stdinPaths: false,
        files: [file],
        // A repository given must exist: a walk up from a mistyped one could write elsewhere.
        cwd: options.repository !== undefined ? directoryAt(options.repository) : dirname(file),
        gitDir: undefined,
        env: apiEnv(),
        // The command's own check: another user's repository is refused before anything is written.
        euid: callerEuid(),
      },
      {
        onIds: (lines) => (id = lines.split('\n')[0]),
        onStderr: (text) => options.onWarning?.(text.trimEnd()),
        signal: options.signal,
      },
    );
    if (id === undefined)
      throw new GitRepackError('internal', `hash-object gave no id for ${file}`, { file });
    return id;
  });
}
