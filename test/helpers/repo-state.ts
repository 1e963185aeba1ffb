/** The repository as git describes it, for before/after comparisons of a run that must change nothing. */
import fs from 'node:fs';
import path from 'node:path';
import { gitOk, listPacks, objectSet } from './git.js';

/** What git says the repository holds: objects, refs, HEAD and the pack files. */
export function repoState(repo: string): {
  objects: string[];
  refs: string;
  head: string;
  packs: string[];
} {
  return {
    objects: objectSet(repo),
    refs: gitOk(['for-each-ref', '--format=%(objectname) %(refname) %(symref)'], { cwd: repo }),
    head: fs.readFileSync(
      path.join(gitOk(['rev-parse', '--absolute-git-dir'], { cwd: repo }).trim(), 'HEAD'),
      'utf8',
    ),
    packs: listPacks(repo).map((p) => path.basename(p)),
  };
}
