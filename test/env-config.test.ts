/**
 * Issue 31: the configuration git would read, and its numbers as git reads them. Every case runs
 * stock git in the same directory with the same environment over the same files: `git var -l`
 * (the configuration any command sees; unlike `git config --list` it ignores GIT_CONFIG, as every
 * command but `git config` does), `git pack-objects` and `git hash-object -w` (what a level or a
 * threshold does, or git's fatal message), `git config --type=int`. Ours is read both ways: from
 * the files when they are plain, and from `git config`.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OBJ_BLOB } from '../src/format/object-type.js';
import { resolveLevels } from '../src/repack/levels.js';
import { loadConfig } from '../src/store/config-files.js';
import type { GitConfig } from '../src/store/config.js';
import { discoverRepository } from '../src/store/repo.js';
import { useFixtureCopy } from './helpers/fixture-copy.js';
import { git, gitEnv, gitOk, lines, listPacks, objectSet } from './helpers/git.js';
import { RepoBuilder } from './helpers/repo.js';
import { rooted, write, type Env } from './helpers/env-cases.js';
import { tool } from './helpers/tool.js';

type Listing = [string, (string | null)[]][];

let root: string;

/** `git var -l`'s configuration lines (`key=value`, or `key` alone), grouped by key in first-seen order. */
function gitListing(cwd: string, env: Env): Listing | { error: string } {
  const r = git(['var', '-l'], { cwd, env });
  if (r.status !== 0) return { error: r.stderr };
  const out = new Map<string, (string | null)[]>();
  for (const line of lines(r.stdout.toString())) {
    if (/^GIT_[A-Z_]+=/.test(line)) continue;
    const eq = line.indexOf('=');
    const [key, value] = eq < 0 ? [line, null] : [line.slice(0, eq), line.slice(eq + 1)];
    out.set(key, [...(out.get(key) ?? []), value]);
  }
  return [...out];
}

function listing(config: GitConfig): Listing {
  return config.keys().map((k) => [k, config.getRaw(k)]);
}

/** Ours, both ways: [read from plain files where it can, read through git config]. */
function ourListings(cwd: string, env: Env): (Listing | { error: string })[] {
  return [false, true].map((configFromGit) => {
    try {
      return listing(
        discoverRepository({ cwd, env: gitEnv(env), euid: process.geteuid!(), configFromGit })
          .config,
      );
    } catch (e) {
      return { error: `fatal: ${(e as Error).message}\n` };
    }
  });
}

beforeAll(() => {
  root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'rts-env-config-')));
  const w = RepoBuilder.init(path.join(root, 'w'), { tick: 100 });
  w.write('sub/f.txt', 'f\n');
  w.commit('one');
  RepoBuilder.init(path.join(root, 'other'), { tick: 200 }).config('other.only', 'common');
  // What ../g.cfg names from the top of w (root/g.cfg), and from w/sub (w/g.cfg).
  write(path.join(root, 'g.cfg'), '[pack]\n\tcompression = 3\n[user]\n\tname = from the top\n');
  write(path.join(root, 'w', 'g.cfg'), '[pack]\n\tcompression = 5\n[user]\n\tname = from sub\n');
  write(path.join(root, 'home', '.gitconfig'), '[core]\n\tcompression = 4\n');
  write(path.join(root, 'home', '.config', 'git', 'config'), '[core]\n\tlooseCompression = 2\n');
  write(path.join(root, 'xdg', 'git', 'config'), '[x]\n\ty = xdg\n');
  write(path.join(root, 'sys.cfg'), '[sys]\n\tv = 1\n');
  write(path.join(root, 'only.cfg'), '[only]\n\tthis = 1\n');
  write(
    path.join(root, 'inc-main.cfg'),
    `[include]\n\tpath = inc/part.cfg\n[includeIf "gitdir:${root}/w/"]\n\tpath = inc/gitdir.cfg\n[includeIf "onbranch:main"]\n\tpath = inc/branch.cfg\n[includeIf "gitdir:/elsewhere/"]\n\tpath = inc/never.cfg\n`,
  );
  write(path.join(root, 'inc', 'part.cfg'), '[inc]\n\tpart = 1\n');
  write(path.join(root, 'inc', 'gitdir.cfg'), '[inc]\n\tgitdir = 1\n');
  write(path.join(root, 'inc', 'branch.cfg'), '[inc]\n\tbranch = 1\n');
  write(path.join(root, 'inc', 'never.cfg'), '[inc]\n\tnever = 1\n');
  // Plain, but with what only git's isspace tells apart: VT and FF are not blanks to git.
  fs.appendFileSync(
    path.join(root, 'w', '.git', 'config'),
    '[plain]\n\tvt = 1\v\n\tff = \f2\n\ttabs = a \t b\n\tcrlf = c\r\n\tbare\n\tempty =\n\ttrail = x   \n[Plain "Sub.Sec"]\n\tKey = v\n',
  );
  // A linked worktree with its own config.worktree (extensions.worktreeConfig).
  const w2 = RepoBuilder.init(path.join(root, 'w2'), { tick: 300 });
  w2.write('f', 'f\n');
  w2.commit('one');
  w2.git(['worktree', 'add', '-q', '--detach', path.join(root, 'wt2')]);
  w2.config('extensions.worktreeConfig', 'true');
  gitOk(['config', '--worktree', 'wt.own', 'yes'], { cwd: path.join(root, 'wt2') });
}, 120_000);

afterAll(() => {
  fs.rmSync(root, { recursive: true, force: true });
});

const NOGLOBAL: Env = { GIT_CONFIG_GLOBAL: undefined, XDG_CONFIG_HOME: undefined };

/** [label, cwd relative to root, env]; `@` in a value stands for root. */
const CONFIG_CASES: [string, string, Env][] = [
  ['GIT_CONFIG_GLOBAL absolute', 'w/sub', { GIT_CONFIG_GLOBAL: '@/g.cfg' }],
  [
    'GIT_CONFIG_GLOBAL relative, from a subdirectory: read from the top (issue 31)',
    'w/sub',
    { GIT_CONFIG_GLOBAL: '../g.cfg' },
  ],
  ['GIT_CONFIG_GLOBAL relative, from the top', 'w', { GIT_CONFIG_GLOBAL: '../g.cfg' }],
  ['GIT_CONFIG_GLOBAL empty', 'w', { GIT_CONFIG_GLOBAL: '', HOME: '@/home' }],
  [
    'GIT_CONFIG=/dev/null is not the configuration (issue 31)',
    'w',
    { GIT_CONFIG: '/dev/null', GIT_CONFIG_GLOBAL: '@/g.cfg' },
  ],
  ['GIT_CONFIG naming a file', 'w/sub', { GIT_CONFIG: '@/only.cfg' }],
  ['HOME: XDG then ~/.gitconfig', 'w', { ...NOGLOBAL, HOME: '@/home' }],
  ['HOME relative, from a subdirectory', 'w/sub', { ...NOGLOBAL, HOME: '../home' }],
  ['XDG_CONFIG_HOME relative', 'w/sub', { ...NOGLOBAL, HOME: '@/home', XDG_CONFIG_HOME: '../xdg' }],
  ['XDG_CONFIG_HOME empty', 'w', { ...NOGLOBAL, HOME: '@/home', XDG_CONFIG_HOME: '' }],
  [
    'GIT_CONFIG_SYSTEM relative, system files read',
    'w/sub',
    { GIT_CONFIG_NOSYSTEM: undefined, GIT_CONFIG_SYSTEM: '../sys.cfg' },
  ],
  [
    'GIT_CONFIG_NOSYSTEM wins over GIT_CONFIG_SYSTEM',
    'w',
    { GIT_CONFIG_NOSYSTEM: 'yes', GIT_CONFIG_SYSTEM: '@/sys.cfg' },
  ],
  ['GIT_CONFIG_NOSYSTEM not a boolean', 'w', { GIT_CONFIG_NOSYSTEM: 'maybe' }],
  ['include, includeIf gitdir: and onbranch:', 'w/sub', { GIT_CONFIG_GLOBAL: '@/inc-main.cfg' }],
  [
    'GIT_CONFIG_COUNT',
    'w',
    {
      GIT_CONFIG_COUNT: '2',
      GIT_CONFIG_KEY_0: 'pack.compression',
      GIT_CONFIG_VALUE_0: '7',
      GIT_CONFIG_KEY_1: 'a.B.c',
      GIT_CONFIG_VALUE_1: 'x y',
    },
  ],
  [
    'GIT_CONFIG_PARAMETERS (git -c)',
    'w',
    { GIT_CONFIG_PARAMETERS: "'pack.compression'='6' 'core.bare'" },
  ],
  ['config.worktree of a linked worktree', 'wt2', {}],
  [
    'GIT_COMMON_DIR: the common directory’s configuration',
    'w',
    { GIT_DIR: '@/w/.git', GIT_COMMON_DIR: '@/other/.git' },
  ],
];

describe('issue 31: the configuration git reads, read the same', () => {
  it.each(CONFIG_CASES)('%s', (_label, where, rawEnv) => {
    const env = rooted(rawEnv, root);
    const cwd = path.join(root, where);
    const theirs = gitListing(cwd, env);
    const [plain, viaGit] = ourListings(cwd, env);
    expect(plain).toEqual(theirs);
    expect(viaGit).toEqual(theirs);
  });

  it('outside any repository (hash-object without one): system, global and command line, from the cwd', () => {
    const env = gitEnv({ GIT_CONFIG_GLOBAL: 'g.cfg', GIT_CEILING_DIRECTORIES: root });
    expect(git(['rev-parse'], { cwd: root, env }).status).toBe(128);
    expect(listing(loadConfig({ cwd: root, env }))).toEqual(gitListing(root, env));
  });
});

// ---------------------------------------------------------------------------------------------

/** Values for the numeric keys: bases, units, blanks git's parser keeps, ranges. */
const NUMBERS = [
  '0x1',
  '010',
  '08',
  '09',
  '0X9',
  '00',
  '-0',
  '+1',
  ' 1',
  '1 ',
  '1\v',
  '\f1',
  '1k',
  '1K',
  '1kb',
  '0x1k',
  '0x',
  '0xg',
  '-1',
  '-2',
  '10',
  '9',
  '0',
  '1g',
  '2147483647',
  '99999999999',
  '9999999999999999999999',
  '',
  'auto',
];

/** How a value can reach git: in the repository's file as written, quoted there, or from the command line. */
function placed(key: string, value: string, how: 'file' | 'quoted' | 'count', dir: string): Env {
  const [section, name] = key.split('.') as [string, string];
  if (how === 'count')
    return { GIT_CONFIG_COUNT: '1', GIT_CONFIG_KEY_0: key, GIT_CONFIG_VALUE_0: value };
  const text = how === 'quoted' ? `"${value}"` : value;
  fs.writeFileSync(
    path.join(dir, '.git', 'config'),
    `${BASE_CONFIG}[${section}]\n\t${name} = ${text}\n`,
  );
  return {};
}

let BASE_CONFIG = '';

/** git's `vreportf` (usage.c): control characters but tab and newline print as '?' (the CLI's part, not the reader's). */
function vreportf(message: string): string {
  // eslint-disable-next-line no-control-regex
  return message.replace(/[\x00-\x08\x0b-\x1f\x7f]/g, '?');
}

describe('issue 31: numbers as git reads them (git_parse_signed, strtoimax base 0, k/m/g)', () => {
  it.each(['pack.compression', 'core.compression'])(
    '%s: the level git packs at, or git’s fatal message',
    (key) => {
      const repo = useFixtureCopy('basic');
      BASE_CONFIG = fs.readFileSync(path.join(repo, '.git', 'config'), 'utf8');
      let compared = 0;
      for (const value of NUMBERS) {
        for (const how of ['file', 'quoted', 'count'] as const) {
          if (how === 'file' && /["\\#;\n]/.test(value)) continue;
          const env = placed(key, value, how, repo);
          const g = git(['pack-objects', '--stdout', '-q'], { cwd: repo, env, input: '' });
          const theirs =
            g.status === 0
              ? Number(gitOk(['config', '--type=int', key], { cwd: repo, env }).trim())
              : g.stderr;
          let ours: number | string;
          try {
            const repository = discoverRepository({
              cwd: repo,
              env: gitEnv(env),
              euid: process.geteuid!(),
            });
            ours = resolveLevels({}, repository.config)[OBJ_BLOB] as number;
          } catch (e) {
            ours = vreportf(`fatal: ${(e as Error).message}\n`);
          }
          expect(ours, `${key}=${JSON.stringify(value)} (${how})`).toEqual(theirs);
          compared++;
        }
      }
      expect(compared).toBeGreaterThan(NUMBERS.length * 2);
    },
  );

  it('pack.compression=0x1 and 010 through the command: the levels git would use (issue 31)', () => {
    const repo = useFixtureCopy('basic');
    for (const [value, level] of [
      ['0x1', 1],
      ['010', 8],
    ] as const) {
      const env = {
        GIT_CONFIG_COUNT: '1',
        GIT_CONFIG_KEY_0: 'pack.compression',
        GIT_CONFIG_VALUE_0: value,
      };
      expect(
        Number(gitOk(['config', '--type=int', 'pack.compression'], { cwd: repo, env }).trim()),
      ).toBe(level);
      const r = tool(['--dry-run', '--json'], { cwd: repo, env });
      expect(r.stderr).toBe('');
      expect(JSON.parse(r.stdout).levels).toEqual({
        commit: level,
        tree: level,
        blob: level,
        tag: level,
      });
    }
  });

  it('core.bigFileThreshold: the same objects loose or packed as git hash-object -w makes them', () => {
    const theirs = useFixtureCopy('basic');
    const ours = useFixtureCopy('basic');
    const file = path.join(root, 'blob-2048');
    fs.writeFileSync(file, Buffer.alloc(2048, 'x'));
    const where = (repo: string, id: string): string => {
      const loose = path.join(repo, '.git', 'objects', id.slice(0, 2), id.slice(2));
      return fs.existsSync(loose) ? 'loose' : 'packed';
    };
    const values = [
      '1k',
      '0x800',
      '0x7ff',
      '04000',
      '03777',
      '2k',
      '2K',
      '1 ',
      ' 2047',
      '-1',
      '0x',
      '08',
      '1kb',
      '99999999999',
      '0x100000',
      '010m',
      '',
    ];
    for (const value of values) {
      for (const repo of [theirs, ours])
        fs.rmSync(path.join(repo, '.git', 'objects', 'a0'), { recursive: true, force: true });
      const env = {
        GIT_CONFIG_COUNT: '1',
        GIT_CONFIG_KEY_0: 'core.bigFileThreshold',
        GIT_CONFIG_VALUE_0: value,
      };
      const g = git(['hash-object', '-w', file], { cwd: theirs, env });
      const t = tool(['hash-object', '-w', file], { cwd: ours, env });
      const label = `core.bigFileThreshold=${JSON.stringify(value)}`;
      expect({ status: t.status, stderr: t.stderr }, label).toEqual({
        status: g.status,
        stderr: g.stderr,
      });
      if (g.status !== 0) continue;
      const id = g.stdout.toString().trim();
      expect(t.stdout.trim(), label).toBe(id);
      expect(where(ours, id), label).toBe(where(theirs, id));
    }
    expect(objectSet(ours)).toEqual(objectSet(theirs));
  });

  it('core.bigFileThreshold=010m is 8 MiB: a 9 MiB file goes to a pack, as git puts it', () => {
    const theirs = useFixtureCopy('basic');
    const ours = useFixtureCopy('basic');
    const file = path.join(root, 'blob-9m');
    fs.writeFileSync(file, Buffer.alloc(9 << 20, 'y'));
    const env = {
      GIT_CONFIG_COUNT: '1',
      GIT_CONFIG_KEY_0: 'core.bigFileThreshold',
      GIT_CONFIG_VALUE_0: '010m',
    };
    const before = listPacks(theirs).length;
    expect(git(['hash-object', '-w', file], { cwd: theirs, env }).status).toBe(0);
    expect(tool(['hash-object', '-w', file], { cwd: ours, env }).status).toBe(0);
    expect(listPacks(theirs).length).toBe(before + 1);
    expect(listPacks(ours).length).toBe(listPacks(theirs).length);
  });

  it('core.looseCompression: the zlib level of the loose object git writes, or git’s fatal message', () => {
    const theirs = useFixtureCopy('basic');
    const ours = useFixtureCopy('basic');
    const file = path.join(root, 'blob-text');
    fs.writeFileSync(file, 'some text that deflates\n'.repeat(200));
    const flevel = (repo: string, id: string): number =>
      fs.readFileSync(path.join(repo, '.git', 'objects', id.slice(0, 2), id.slice(2)))[1]! >> 6;
    for (const value of ['0x1', '010', '011', '10', '0x', '1 ', ' 9', '-1']) {
      const env = {
        GIT_CONFIG_COUNT: '1',
        GIT_CONFIG_KEY_0: 'core.looseCompression',
        GIT_CONFIG_VALUE_0: value,
      };
      for (const repo of [theirs, ours])
        fs.rmSync(path.join(repo, '.git', 'objects', 'f5'), { recursive: true, force: true });
      const g = git(['hash-object', '-w', file], { cwd: theirs, env });
      const t = tool(['hash-object', '-w', file], { cwd: ours, env });
      const label = `core.looseCompression=${JSON.stringify(value)}`;
      expect({ status: t.status, stderr: t.stderr }, label).toEqual({
        status: g.status,
        stderr: g.stderr,
      });
      if (g.status !== 0) continue;
      const id = g.stdout.toString().trim();
      expect(flevel(ours, id), label).toBe(flevel(theirs, id));
      expect(
        zlib.inflateSync(
          fs.readFileSync(path.join(ours, '.git', 'objects', id.slice(0, 2), id.slice(2))),
        ),
      ).toEqual(
        zlib.inflateSync(
          fs.readFileSync(path.join(theirs, '.git', 'objects', id.slice(0, 2), id.slice(2))),
        ),
      );
    }
  });
});

describe('issue 31: GIT_CONFIG does not replace the configuration', () => {
  it('a SHA-256 repository with core.sharedRepository=group, rewritten with GIT_CONFIG=/dev/null: read as git reads it', () => {
    const ours = useFixtureCopy('sha256');
    const theirs = useFixtureCopy('sha256');
    for (const repo of [ours, theirs])
      gitOk(['config', 'core.sharedRepository', 'group'], { cwd: repo });
    const env = { GIT_CONFIG: '/dev/null' };
    const before = objectSet(ours);
    const r = tool(['--graph-compression=0', '-q'], { cwd: ours, env });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(gitOk(['repack', '-a', '-d', '-q'], { cwd: theirs, env })).toBe('');
    const mode = (repo: string): number => fs.statSync(listPacks(repo)[0]!).mode & 0o777;
    expect(listPacks(ours)).toHaveLength(1);
    expect(mode(ours)).toBe(mode(theirs));
    expect(objectSet(ours)).toEqual(before);
    expect(git(['fsck', '--strict'], { cwd: ours }).status).toBe(0);
  });
});

describe("issue 31: the system file of a distribution's git (/etc/gitconfig)", () => {
  // In a mount namespace of its own, /etc is an overlay whose upper layer holds the test's
  // gitconfig: the machine's own /etc is never touched.
  const BIN = path.resolve('bin/git-repack-ts.js');
  // `via: 'git'` runs the command as users type it, `git repack-ts` (bin/ first on PATH): git then
  // puts its exec path (/usr/lib/git-core) in the environment and first on PATH.
  const inNamespace = (
    content: string,
    repo: string,
    via: 'direct' | 'git' = 'direct',
  ): { git: string; ours: string; gitConfigRuns: number } => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rts-etc-'));
    try {
      for (const d of ['u', 'w']) fs.mkdirSync(path.join(dir, d));
      fs.writeFileSync(path.join(dir, 'u', 'gitconfig'), content);
      const script = [
        `mount -t overlay overlay -o lowerdir=/etc,upperdir=${dir}/u,workdir=${dir}/w /etc`,
        `git -C ${repo} config pack.compression > ${dir}/git.out 2>&1`,
        `strace -f -qq -e trace=execve -o ${dir}/trace ${
          via === 'git'
            ? `env PATH=${path.dirname(BIN)}:${path.dirname(process.execPath)}:$PATH git -C ${repo} repack-ts`
            : `${process.execPath} ${BIN} -C ${repo}`
        } --dry-run --json > ${dir}/ours.out 2>&1`,
      ].join(' && ');
      const env = gitEnv({ GIT_CONFIG_NOSYSTEM: undefined, GIT_CONFIG_SYSTEM: undefined });
      const r = spawnSync('unshare', ['--mount', '--propagation', 'private', 'sh', '-c', script], {
        env,
        encoding: 'utf8',
      });
      if (r.status !== 0)
        throw new Error(`unshare/overlay (root, util-linux and overlayfs are needed): ${r.stderr}`);
      const runs = fs
        .readFileSync(path.join(dir, 'trace'), 'utf8')
        .split('\n')
        .filter((l) => /execve\("[^"]*\/git", \["git", "config"/.test(l)).length;
      return {
        git: fs.readFileSync(path.join(dir, 'git.out'), 'utf8').trim(),
        ours: fs.readFileSync(path.join(dir, 'ours.out'), 'utf8'),
        gitConfigRuns: runs,
      };
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  };

  const plain = '[pack]\n\tcompression = 3\n[credential "https://example.com"]\n\thelper = store\n';
  it.each([
    ['plain: read without a git config process', plain, 0, 'direct'],
    ['plain, run as `git repack-ts`: read without a git config process', plain, 0, 'git'],
    ['not plain (a quoted value): git reads it', '[pack]\n\tcompression = "3"\n', 1, 'direct'],
  ] as const)('%s, with the levels git would use', (_, content, runs, via) => {
    const repo = useFixtureCopy('basic');
    const r = inNamespace(content, repo, via);
    expect(r.git).toBe('3');
    expect(JSON.parse(r.ours).levels.blob).toBe(Number(r.git));
    if (runs === 0) expect(r.gitConfigRuns).toBe(0);
    else expect(r.gitConfigRuns).toBeGreaterThanOrEqual(runs);
  });
});
