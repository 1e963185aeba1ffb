/**
 * Issue 31: the repository git would act on. Every case runs stock git and our discovery in the
 * same directory with the same environment, over the same files, and compares what each found:
 * `git rev-parse --path-format=absolute --git-dir --git-common-dir --git-path objects`,
 * `--show-toplevel`, the `alternate:` lines of `git count-objects -v`, or git's fatal message.
 * The cases cross GIT_DIR, GIT_WORK_TREE, GIT_COMMON_DIR, GIT_OBJECT_DIRECTORY,
 * GIT_ALTERNATE_OBJECT_DIRECTORIES, GIT_CEILING_DIRECTORIES, GIT_DISCOVERY_ACROSS_FILESYSTEM,
 * core.worktree, .git files, linked worktrees and repository formats, relative and absolute,
 * from the top, a subdirectory, a git directory and outside.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { discoverRepository } from '../src/store/repo.js';
import { git, gitEnv, gitOk, lines, listPacks, objectSet } from './helpers/git.js';
import { RepoBuilder } from './helpers/repo.js';
import { rooted, write, type Env } from './helpers/env-cases.js';
import { tool } from './helpers/tool.js';

let root: string;

/** git's strbuf_realpath_forgiving: the longest existing prefix made real, the rest appended. */
function forgiving(p: string): string {
  let head = p;
  const tail: string[] = [];
  for (;;) {
    try {
      return path.join(fs.realpathSync(head), ...tail.reverse());
    } catch {
      if (head === '/') return p;
      tail.push(path.basename(head));
      head = path.dirname(head);
    }
  }
}

interface View {
  error?: string;
  gitDir?: string;
  commonDir?: string;
  objectsDir?: string;
  workTree?: string | undefined;
  alternates?: string[];
}

/** What stock git acts on from `cwd` with `env`. */
function gitView(cwd: string, env: Env): View {
  const r = git(
    [
      'rev-parse',
      '--path-format=absolute',
      '--git-dir',
      '--git-common-dir',
      '--git-path',
      'objects',
    ],
    { cwd, env },
  );
  if (r.status !== 0) return { error: r.stderr };
  const [gitDir, commonDir, objectsDir] = lines(r.stdout.toString());
  const top = git(['rev-parse', '--show-toplevel'], { cwd, env });
  const counted = git(['count-objects', '-v'], { cwd, env });
  expect(counted.status, counted.stderr).toBe(0);
  const alternates = lines(counted.stdout.toString())
    .filter((l) => l.startsWith('alternate: '))
    .map((l) => l.slice('alternate: '.length));
  return {
    gitDir,
    commonDir,
    objectsDir,
    workTree: top.status === 0 ? top.stdout.toString().trim() : undefined,
    alternates,
  };
}

/** What our discovery opens from `cwd` with `env` (git's pinned environment below it, as for git). */
function ourView(cwd: string, env: Env): View {
  try {
    const repo = discoverRepository({ cwd, env: gitEnv(env), euid: process.geteuid!() });
    return {
      gitDir: forgiving(repo.gitDir),
      commonDir: forgiving(repo.commonDir),
      objectsDir: forgiving(repo.objectsDir),
      workTree: repo.workTree,
      alternates: repo.alternates,
    };
  } catch (e) {
    return { error: `fatal: ${(e as Error).message}\n` };
  }
}

function repoWithCommit(dir: string, tick: number, opts: { bare?: boolean } = {}): RepoBuilder {
  const r = RepoBuilder.init(dir, { tick, ...opts });
  if (opts.bare) return r;
  r.write('sub/deeper/f.txt', `content ${tick}\n`);
  r.commit(`commit ${tick}`);
  return r;
}

beforeAll(() => {
  root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'rts-env-setup-')));
  const w = repoWithCommit(path.join(root, 'w'), 100);
  w.repack(['-a', '-d', '-q']);
  repoWithCommit(path.join(root, 'other'), 200);
  gitOk(['clone', '-q', '--bare', path.join(root, 'w'), path.join(root, 'b.git')]);
  w.git(['worktree', 'add', '-q', '--detach', path.join(root, 'wt')]);
  // A work tree whose .git is a file naming its git directory relatively.
  repoWithCommit(path.join(root, 'g'), 300);
  fs.renameSync(path.join(root, 'g', '.git'), path.join(root, 'g-real.git'));
  write(path.join(root, 'g', '.git'), 'gitdir: ../g-real.git\n');
  // A git directory apart from its work tree, joined by a relative core.worktree.
  repoWithCommit(path.join(root, 'sepsrc'), 400);
  fs.renameSync(path.join(root, 'sepsrc', '.git'), path.join(root, 'sep.git'));
  gitOk(['config', 'core.worktree', '../sepwt'], { env: { GIT_DIR: path.join(root, 'sep.git') } });
  fs.mkdirSync(path.join(root, 'sepwt', 'x'), { recursive: true });
  // Repository formats git refuses.
  const ext1 = repoWithCommit(path.join(root, 'ext1'), 500);
  ext1.config('core.repositoryformatversion', '1');
  ext1.config('extensions.futurething', 'on');
  const ext0 = repoWithCommit(path.join(root, 'ext0'), 600);
  ext0.config('extensions.objectformat', 'sha1');
  const ext2 = repoWithCommit(path.join(root, 'ext2'), 700);
  ext2.config('core.repositoryformatversion', '2');
  // Alternates: a relative entry, a comment, a missing directory, and the repository itself.
  const alt = repoWithCommit(path.join(root, 'alt'), 800);
  write(
    path.join(alt.gitDir(), 'objects', 'info', 'alternates'),
    `# a comment\n../../../other/.git/objects\n${root}/nowhere\n${root}/alt/.git/objects\n`,
  );
  // A symbolic link to w: git works from the physical directory.
  fs.symlinkSync(path.join(root, 'w'), path.join(root, 'link'));
  // A .git directory whose configuration says bare.
  repoWithCommit(path.join(root, 'cb'), 900).config('core.bare', 'true');
  // safe.directory for w, in a file named relatively from w/sub (git reads it from there while looking).
  write(path.join(root, 'w', 'safe.cfg'), `[safe]\n\tdirectory = ${root}/w\n`);
}, 120_000);

afterAll(() => {
  fs.rmSync(root, { recursive: true, force: true });
});

/** Cases as [label, cwd relative to root, env]; `@` in a value stands for root. */
const CASES: [string, string, Env][] = [
  ['top of a work tree', 'w', {}],
  ['a subdirectory', 'w/sub/deeper', {}],
  ['inside .git', 'w/.git', {}],
  ['inside .git/objects', 'w/.git/objects', {}],
  ['a bare repository', 'b.git', {}],
  ['below a bare repository', 'b.git/refs', {}],
  ['outside any repository', '.', {}],
  ['a linked worktree', 'wt/sub', {}],
  ['a .git file, relative', 'g/sub', {}],
  ['core.worktree, relative', 'sepwt/x', { GIT_DIR: '../../sep.git' }],
  ['core.worktree from its top', 'sepwt', { GIT_DIR: '@/sep.git' }],
  ['core.worktree from outside it', '.', { GIT_DIR: 'sep.git' }],
  ['GIT_DIR relative', '.', { GIT_DIR: 'w/.git' }],
  ['GIT_DIR relative from a subdirectory', 'w/sub', { GIT_DIR: '../.git' }],
  ['GIT_DIR naming a .git file', '.', { GIT_DIR: 'g/.git' }],
  ['GIT_DIR naming a linked worktree', 'wt', { GIT_DIR: '@/w/.git/worktrees/wt' }],
  ['GIT_DIR empty', 'w', { GIT_DIR: '' }],
  ['GIT_DIR missing', 'w', { GIT_DIR: 'nowhere' }],
  ['GIT_DIR and GIT_WORK_TREE', '.', { GIT_DIR: 'w/.git', GIT_WORK_TREE: 'w' }],
  ['GIT_WORK_TREE relative, inside it', 'w/sub', { GIT_DIR: '@/w/.git', GIT_WORK_TREE: '..' }],
  ['GIT_WORK_TREE alone', 'w/sub', { GIT_WORK_TREE: '..' }],
  [
    'GIT_COMMON_DIR to a bare repository (issue 31)',
    '.',
    { GIT_DIR: 'w/.git', GIT_COMMON_DIR: 'b.git' },
  ],
  [
    'GIT_COMMON_DIR to a work tree (not a git directory)',
    '.',
    { GIT_DIR: 'w/.git', GIT_COMMON_DIR: 'other' },
  ],
  ['GIT_COMMON_DIR absolute', 'w', { GIT_COMMON_DIR: '@/other/.git' }],
  ['GIT_COMMON_DIR relative from a subdirectory', 'w/sub', { GIT_COMMON_DIR: '../../other/.git' }],
  ['GIT_COMMON_DIR relative, found from the top', 'w/sub', { GIT_COMMON_DIR: '../other/.git' }],
  [
    'GIT_OBJECT_DIRECTORY relative from a subdirectory (issue 31)',
    'w/sub',
    { GIT_OBJECT_DIRECTORY: '../.git/objects' },
  ],
  ['GIT_OBJECT_DIRECTORY relative from the top', 'w', { GIT_OBJECT_DIRECTORY: '.git/objects' }],
  ['GIT_OBJECT_DIRECTORY absolute', 'w/sub', { GIT_OBJECT_DIRECTORY: '@/other/.git/objects' }],
  [
    'GIT_OBJECT_DIRECTORY relative with GIT_DIR, outside the work tree',
    '.',
    { GIT_DIR: 'w/.git', GIT_WORK_TREE: 'other', GIT_OBJECT_DIRECTORY: 'other/.git/objects' },
  ],
  ['GIT_OBJECT_DIRECTORY missing', 'w', { GIT_OBJECT_DIRECTORY: 'nowhere' }],
  [
    'GIT_ALTERNATE_OBJECT_DIRECTORIES relative',
    'w/sub',
    { GIT_ALTERNATE_OBJECT_DIRECTORIES: '../other/.git/objects:../b.git/objects::#x' },
  ],
  [
    'GIT_ALTERNATE_OBJECT_DIRECTORIES absolute, one listed twice',
    'w',
    { GIT_ALTERNATE_OBJECT_DIRECTORIES: '@/other/.git/objects:@/other/.git/objects/' },
  ],
  ['info/alternates: relative, a comment, missing, itself', 'alt/sub', {}],
  ['GIT_CEILING_DIRECTORIES at the work tree', 'w/sub/deeper', { GIT_CEILING_DIRECTORIES: '@/w' }],
  [
    'GIT_CEILING_DIRECTORIES at a subdirectory',
    'w/sub/deeper',
    { GIT_CEILING_DIRECTORIES: '@/w/sub' },
  ],
  ['GIT_CEILING_DIRECTORIES at the cwd itself', 'w/sub', { GIT_CEILING_DIRECTORIES: '@/w/sub' }],
  [
    'GIT_CEILING_DIRECTORIES with a trailing slash',
    'w/sub/deeper',
    { GIT_CEILING_DIRECTORIES: '@/w/sub/' },
  ],
  [
    'GIT_CEILING_DIRECTORIES: relative entries ignored',
    'w/sub/deeper',
    { GIT_CEILING_DIRECTORIES: 'w:sub' },
  ],
  [
    'GIT_CEILING_DIRECTORIES: after an empty entry, not made real',
    'w/sub/deeper',
    { GIT_CEILING_DIRECTORIES: ':@/w//sub' },
  ],
  ['GIT_CEILING_DIRECTORIES: /', 'w/sub', { GIT_CEILING_DIRECTORIES: '/' }],
  [
    'GIT_CEILING_DIRECTORIES through a symbolic link, made real',
    'w/sub/deeper',
    { GIT_CEILING_DIRECTORIES: '@/link/sub' },
  ],
  [
    'GIT_CEILING_DIRECTORIES through a symbolic link after an empty entry, as written',
    'w/sub/deeper',
    { GIT_CEILING_DIRECTORIES: ':@/link/sub' },
  ],
  ['a cwd through a symbolic link', 'link/sub', {}],
  ['core.bare=true in a .git directory found from a subdirectory', 'cb/sub', {}],
  ['GIT_DIR naming a bare repository from inside it', 'b.git/refs', { GIT_DIR: '..' }],
  ['GIT_WORK_TREE empty', 'w', { GIT_DIR: '.git', GIT_WORK_TREE: '' }],
  ['GIT_DISCOVERY_ACROSS_FILESYSTEM true', 'w/sub', { GIT_DISCOVERY_ACROSS_FILESYSTEM: 'true' }],
  [
    'GIT_DISCOVERY_ACROSS_FILESYSTEM not a boolean',
    'w/sub',
    { GIT_DISCOVERY_ACROSS_FILESYSTEM: 'sometimes' },
  ],
  ['repository format 1 with an unknown extension', 'ext1', {}],
  ['repository format 0 with a format-1 extension', 'ext0', {}],
  ['repository format 2', 'ext2/sub', {}],
  [
    'safe.directory in a relative GIT_CONFIG_GLOBAL, read from where discovery starts',
    'w/sub',
    { GIT_TEST_ASSUME_DIFFERENT_OWNER: '1', GIT_CONFIG_GLOBAL: '../safe.cfg' },
  ],
  [
    'the same file named from the top is not found there',
    'w',
    { GIT_TEST_ASSUME_DIFFERENT_OWNER: '1', GIT_CONFIG_GLOBAL: '../safe.cfg' },
  ],
];

describe('issue 31: the repository git finds, found the same way', () => {
  it.each(CASES)('%s', (_label, where, rawEnv) => {
    const env = rooted(rawEnv, root);
    const cwd = path.join(root, where);
    const theirs = gitView(cwd, env);
    expect(ourView(cwd, env)).toEqual(theirs);
  });
});

/** Can this process mount a tmpfs (root with the capability)? */
function canMount(): boolean {
  if (process.geteuid?.() !== 0) return false;
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'rts-env-mount-'));
  const ok = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=64k', 'tmpfs', d]).status === 0;
  if (ok) spawnSync('umount', [d]);
  fs.rmdirSync(d);
  return ok;
}

describe.skipIf(!canMount())(
  'issue 31: a file-system boundary (GIT_DISCOVERY_ACROSS_FILESYSTEM)',
  () => {
    it('a tmpfs mounted inside a work tree: the search stops at it, as git’s does, unless the variable says to cross', () => {
      const mnt = path.join(root, 'w', 'mnt');
      fs.mkdirSync(mnt);
      expect(spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=64k', 'tmpfs', mnt]).status).toBe(0);
      try {
        fs.mkdirSync(path.join(mnt, 'sub'));
        const cases: Env[] = [
          {},
          { GIT_DISCOVERY_ACROSS_FILESYSTEM: '1' },
          { GIT_DISCOVERY_ACROSS_FILESYSTEM: 'false' },
        ];
        for (const env of cases) {
          const theirs = gitView(path.join(mnt, 'sub'), env);
          expect(ourView(path.join(mnt, 'sub'), env), JSON.stringify(env)).toEqual(theirs);
        }
        expect(gitView(path.join(mnt, 'sub'), {}).error).toMatch(/Stopping at filesystem boundary/);
      } finally {
        spawnSync('umount', [mnt]);
        fs.rmdirSync(mnt);
      }
    });
  },
);

describe('issue 31: a rewrite acts on the objects git would', () => {
  it('GIT_DIR=a/.git GIT_COMMON_DIR=b: b is the repository (git sees none of a’s objects); a is left alone', () => {
    const env = { GIT_DIR: path.join(root, 'w', '.git'), GIT_COMMON_DIR: path.join(root, 'b.git') };
    const wPacks = listPacks(path.join(root, 'w'));
    const before = objectSet(path.join(root, 'w'));
    const counted = git(['count-objects', '-v'], {
      cwd: root,
      env: { GIT_DIR: 'w/.git', GIT_COMMON_DIR: 'b.git' },
    });
    const inPack = /in-pack: (\d+)/.exec(counted.stdout.toString())![1];
    const inspected = tool(['inspect', '--json'], {
      cwd: root,
      env: { GIT_DIR: 'w/.git', GIT_COMMON_DIR: 'b.git' },
    });
    expect(inspected.stderr).toBe('');
    expect(String(JSON.parse(inspected.stdout).total.objects)).toBe(inPack);
    const r = tool(['--graph-compression=0', '-q'], {
      cwd: root,
      env: { GIT_DIR: 'w/.git', GIT_COMMON_DIR: 'b.git' },
    });
    expect(r.status, r.stderr).toBe(0);
    expect(listPacks(path.join(root, 'w'))).toEqual(wPacks);
    expect(objectSet(path.join(root, 'w'))).toEqual(before);
    expect(git(['fsck', '--strict'], { env }).status).toBe(0);
  });

  it('GIT_OBJECT_DIRECTORY=../.git/objects from a subdirectory names a directory above the work tree, as git reads it', () => {
    const cwd = path.join(root, 'w', 'sub');
    const env = { GIT_OBJECT_DIRECTORY: '../.git/objects' };
    const wPacks = listPacks(path.join(root, 'w'));
    const counted = git(['count-objects', '-v'], { cwd, env });
    const inPack = /in-pack: (\d+)/.exec(counted.stdout.toString())![1];
    const inspected = tool(['inspect', '--json'], { cwd, env });
    expect(String(JSON.parse(inspected.stdout).total.objects)).toBe(inPack);
    tool(['--graph-compression=0', '-q'], { cwd, env });
    expect(listPacks(path.join(root, 'w'))).toEqual(wPacks);
    expect(fs.existsSync(path.join(root, '.git'))).toBe(false);
  });
});
