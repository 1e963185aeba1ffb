import {
  copyFileSync,
  cpSync,
  existsSync,
  linkSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { join, resolve } from 'node:path';
import type { Repository } from '../store/repo.js';

/**
 * A private, bare copy of a repository for the bench: refs and HEAD copied, loose objects copied,
 * pack files hard-linked where the filesystem allows (copied otherwise). Hard links are safe for
 * our rewriter: it never writes an input pack; it writes new files under temporary names,
 * renames them to new names and unlinks the old ones (src/commands/repack.ts), so the original's
 * inodes are only ever read. `.promisor` files are copied (they are small and the only pack
 * files that are not read-only). Left out on purpose: `.keep` files (a kept pack would stay at
 * its old levels and spoil the scenario), the multi-pack-index and bitmaps (rev-list without
 * --use-bitmap-index does not read them), and commit-graphs (the bench writes its own).
 */
export interface CopyResult {
  gitDir: string;
  linked: number;
  copied: number;
}

function linkOrCopyFile(from: string, to: string): 'linked' | 'copied' {
  try {
    linkSync(from, to);
    return 'linked';
  } catch {
    copyFileSync(from, to);
    return 'copied';
  }
}

/** The configuration of the copy: nothing of the original's (no remote, hence no lazy fetch). */
function copyConfig(repo: Repository): string {
  const sha256 = repo.algo.name !== 'sha1';
  const lines = [
    '[core]',
    `\trepositoryformatversion = ${sha256 ? 1 : 0}`,
    '\tbare = true',
    '[gc]',
    '\tauto = 0',
    '[maintenance]',
    '\tauto = false',
  ];
  if (sha256) lines.push('[extensions]', `\tobjectformat = ${repo.algo.name}`);
  return lines.join('\n') + '\n';
}

export function makePrivateCopy(repo: Repository, dest: string): CopyResult {
  const gitDir = resolve(dest);
  mkdirSync(join(gitDir, 'objects', 'pack'), { recursive: true });
  mkdirSync(join(gitDir, 'objects', 'info'), { recursive: true });
  mkdirSync(join(gitDir, 'refs'), { recursive: true });
  writeFileSync(join(gitDir, 'config'), copyConfig(repo));
  const headFile = join(repo.gitDir, 'HEAD');
  writeFileSync(
    join(gitDir, 'HEAD'),
    existsSync(headFile) ? readFileSync(headFile) : 'ref: refs/heads/main\n',
  );
  const common = repo.commonDir;
  if (existsSync(join(common, 'packed-refs')))
    copyFileSync(join(common, 'packed-refs'), join(gitDir, 'packed-refs'));
  if (existsSync(join(common, 'refs')))
    cpSync(join(common, 'refs'), join(gitDir, 'refs'), { recursive: true });
  if (existsSync(join(common, 'shallow')))
    copyFileSync(join(common, 'shallow'), join(gitDir, 'shallow'));
  let linked = 0;
  let copied = 0;
  const objects = repo.objectsDir;
  const packDir = join(objects, 'pack');
  const names = existsSync(packDir) ? readdirSync(packDir) : [];
  const set = new Set(names);
  for (const n of names) {
    if (!n.startsWith('pack-')) continue;
    const stem = n.replace(/\.[a-z]+$/, '');
    if (!set.has(stem + '.pack') || !set.has(stem + '.idx')) continue;
    const ext = n.slice(stem.length);
    const from = join(packDir, n);
    const to = join(gitDir, 'objects', 'pack', n);
    if (ext === '.pack' || ext === '.idx' || ext === '.rev' || ext === '.mtimes') {
      if (linkOrCopyFile(from, to) === 'linked') linked++;
      else copied++;
    } else if (ext === '.promisor') {
      copyFileSync(from, to);
      copied++;
    }
  }
  for (const d of existsSync(objects) ? readdirSync(objects) : []) {
    if (!/^[0-9a-f]{2}$/.test(d) || !statSync(join(objects, d)).isDirectory()) continue;
    cpSync(join(objects, d), join(gitDir, 'objects', d), {
      recursive: true,
      filter: (src) => !src.includes('tmp_obj_'),
    });
    copied++;
  }
  // Alternates are read, never written, by the rewriter and by git: name them absolutely.
  if (repo.alternates.length > 0)
    writeFileSync(join(gitDir, 'objects', 'info', 'alternates'), repo.alternates.join('\n') + '\n');
  return { gitDir, linked, copied };
}

/** Every regular file under `dir` with its size (for the size columns). */
export function dirBytes(dir: string): number {
  let total = 0;
  const walk = (d: string): void => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.isFile()) total += statSync(p).size;
    }
  };
  if (existsSync(dir)) walk(dir);
  return total;
}
