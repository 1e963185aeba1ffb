import { GitError } from '../errors.js';
import { fromHex, type HashAlgo } from '../hash/algo.js';
import { OBJ_COMMIT } from '../format/object-type.js';
import { isSettableRef } from '../format/refname.js';
import type { ObjectDatabase } from '../store/odb.js';
import { fault } from '../store/files.js';
import { pointHead, readHead, readRefs, updateRefs } from '../store/refs.js';
import type { Repository } from '../store/repo.js';

/**
 * The refs a zstd pack carries, restored as `git fetch <bundle> 'refs/*:refs/*'` and `git clone`
 * would: missing refs are created, an existing ref that differs is never moved unless forced,
 * HEAD is set only in a repository with no commit on its current branch. The zpack's refs are
 * untrusted input: names git's `check_refname_format` refuses, ids that are not objects here,
 * a branch that is not a commit are refused one by one. Everything accepted goes in one
 * `git update-ref --stdin` transaction, old values checked by git.
 */

/** What became of one ref of the zpack (`git fetch`'s display: `* [new branch]`, `! [rejected]` …). */
export interface RefUpdate {
  ref: string;
  /** The id the zpack gives it (hex; absent when the line was not `<id> <name>`). */
  id?: string | undefined;
  /** Its value here before, if it existed. */
  old?: string | undefined;
  status: 'new' | 'up-to-date' | 'forced' | 'rejected';
  /** Why it was rejected: `would clobber existing ref`, `invalid ref name`, `missing object` … */
  reason?: string | undefined;
}

/** What became of HEAD: pointed at a branch of the zpack, detached at its HEAD, or left as it was. */
export interface HeadUpdate {
  status: 'set' | 'detached' | 'unchanged';
  /** The branch HEAD now points at (`set`), or the id it is detached at. */
  ref?: string | undefined;
  id?: string | undefined;
}

export interface RefsResult {
  refs: RefUpdate[];
  head: HeadUpdate;
}

interface ZpackRefs {
  /** HEAD's id at export (the first line, when HEAD resolved). */
  head: string | undefined;
  lines: { ref: string; id: string | undefined }[];
}

/** The refs section: `<hex id> <refname>` lines, HEAD first when it resolved (zpack.ts). */
export function parseZpackRefs(text: string, algo: HashAlgo): ZpackRefs {
  const out: ZpackRefs = { head: undefined, lines: [] };
  const hexLen = algo.len * 2;
  text.split('\n').forEach((line, i, all) => {
    if (line === '' && i === all.length - 1) return;
    const sp = line.indexOf(' ');
    const hex = sp === hexLen ? line.slice(0, sp).toLowerCase() : undefined;
    const id = hex !== undefined && fromHex(hex, algo) !== undefined ? hex : undefined;
    const ref = sp < 0 ? line : line.slice(sp + 1);
    if (ref === 'HEAD' && i === 0 && id !== undefined) out.head = id;
    else out.lines.push({ ref, id });
  });
  return out;
}

/** Why a ref of the zpack cannot be set here, or undefined. */
function refusal(
  ref: string,
  id: string | undefined,
  odb: ObjectDatabase,
  algo: HashAlgo,
): string | undefined {
  if (!isSettableRef(ref)) return 'invalid ref name';
  if (id === undefined) return 'not an object id';
  const type = odb.typeOf(fromHex(id, algo)!);
  if (type === undefined) return 'missing object';
  // (git update-ref refuses a branch that is not a commit: "trying to write non-commit object")
  if (ref.startsWith('refs/heads/') && type !== OBJ_COMMIT) return 'not a commit';
  return undefined;
}

/** Would `ref` and a ref already taken be a file and a directory of each other (git's D/F conflict)? */
class RefNamespace {
  private readonly names = new Set<string>();
  private readonly dirs = new Set<string>();

  add(ref: string): void {
    this.names.add(ref);
    for (let i = ref.indexOf('/'); i >= 0; i = ref.indexOf('/', i + 1))
      this.dirs.add(ref.slice(0, i));
  }

  conflicts(ref: string): boolean {
    if (this.dirs.has(ref)) return true;
    for (let i = ref.indexOf('/'); i >= 0; i = ref.indexOf('/', i + 1))
      if (this.names.has(ref.slice(0, i))) return true;
    return false;
  }
}

/** Each ref of the zpack against the repository's refs: what to do with it. */
function planRefs(
  zrefs: ZpackRefs,
  current: Map<string, string>,
  force: boolean,
  odb: ObjectDatabase,
  algo: HashAlgo,
): RefUpdate[] {
  const taken = new RefNamespace();
  for (const r of current.keys()) taken.add(r);
  const seen = new Set<string>();
  return zrefs.lines.map(({ ref, id }) => {
    const old = current.get(ref);
    const base = { ref, id, old };
    const why = seen.has(ref) ? 'listed twice' : refusal(ref, id, odb, algo);
    seen.add(ref);
    if (why !== undefined) return { ...base, status: 'rejected', reason: why };
    if (old === id) return { ...base, status: 'up-to-date' };
    if (old !== undefined && !force)
      return {
        ...base,
        status: 'rejected',
        reason: ref.startsWith('refs/tags/')
          ? 'would clobber existing tag'
          : 'would clobber existing ref',
      };
    if (old === undefined && taken.conflicts(ref))
      return { ...base, status: 'rejected', reason: 'unable to update local ref' };
    taken.add(ref);
    return { ...base, status: old === undefined ? 'new' : 'forced' };
  });
}

/**
 * git clone's `guess_remote_head`: the branch HEAD pointed at, among the zpack's branches with
 * HEAD's id — init.defaultBranch, then master, then the first.
 */
function guessHead(
  zrefs: ZpackRefs,
  updates: RefUpdate[],
  defaultBranch: string | undefined,
): string | undefined {
  const candidates = updates
    .filter(
      (u) => u.ref.startsWith('refs/heads/') && u.id === zrefs.head && u.status !== 'rejected',
    )
    .map((u) => u.ref);
  for (const want of [defaultBranch, 'master'])
    if (want !== undefined && candidates.includes(`refs/heads/${want}`))
      return `refs/heads/${want}`;
  return candidates[0];
}

/** HEAD as clone leaves it, but only when the repository has no commit on its current branch. */
function planHead(
  repo: Repository,
  zrefs: ZpackRefs,
  updates: RefUpdate[],
): { head: HeadUpdate; commands: string } {
  const unchanged = { head: { status: 'unchanged' as const }, commands: '' };
  if (zrefs.head === undefined) return unchanged;
  const now = readHead(repo.gitDir, repo.env);
  // HEAD resolves, or is detached, or points outside refs/heads: never ours to move.
  if (now.id !== undefined || now.symref === undefined || !now.symref.startsWith('refs/heads/'))
    return unchanged;
  // Its branch comes with the zpack: HEAD resolves once it is created.
  if (updates.some((u) => u.ref === now.symref && u.status !== 'rejected')) return unchanged;
  const zero = '0'.repeat(repo.algo.len * 2);
  const branch = guessHead(zrefs, updates, repo.config.get('init.defaultbranch'));
  // (in the transaction: HEAD is still unborn when it commits)
  if (branch !== undefined)
    return { head: { status: 'set', ref: branch }, commands: `verify HEAD ${zero}\n` };
  return {
    head: { status: 'detached', id: zrefs.head },
    commands: `option no-deref\nupdate HEAD ${zrefs.head} ${zero}\n`,
  };
}

/**
 * Sets the zpack's refs (after its objects are installed). `force` replaces refs that differ,
 * as `git fetch --force`. A transaction git refuses (a ref moved meanwhile) is fatal: no ref is
 * set, the objects stay installed, and running the import again sets them.
 */
export function restoreRefs(
  repo: Repository,
  refsText: string,
  odb: ObjectDatabase,
  o: { force: boolean; file: string },
): RefsResult {
  const zrefs = parseZpackRefs(refsText, repo.algo);
  const updates = planRefs(zrefs, readRefs(repo.gitDir, repo.env), o.force, odb, repo.algo);
  const { head, commands: headCommands } = planHead(repo, zrefs, updates);
  let commands = headCommands;
  for (const u of updates) {
    if (u.status === 'new') commands += `option no-deref\ncreate ${u.ref} ${u.id}\n`;
    else if (u.status === 'forced')
      commands += `option no-deref\nupdate ${u.ref} ${u.id} ${u.old}\n`;
  }
  const message = `zstd-import: ${o.file}`;
  fault('phase:refs'); // planned: what another writer changes from here, git's old-value check sees
  if (commands !== '') {
    const refused = updateRefs(repo.gitDir, repo.env, commands, message);
    if (refused !== undefined)
      throw new GitError(
        'io',
        `${o.file}: git did not set the refs (${refused}); no ref was changed, the objects are installed: run the import again`,
      );
  }
  if (head.status === 'set') {
    const refused = pointHead(repo.gitDir, repo.env, head.ref!, message);
    if (refused !== undefined)
      throw new GitError(
        'io',
        `${o.file}: git did not point HEAD at ${head.ref} (${refused}); the refs are set`,
      );
  }
  return { refs: updates, head };
}
