/**
 * git 2.39's safe.directory rule (setup.c ensure_valid_ownership): every case runs stock git
 * (`git count-objects`, which discovers the repository the same way) and the tool on the same
 * chown'ed fixture copy, and compares exit code and message. Needs root to chown.
 */
import fs from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { git, gitEnv, objectSet } from './helpers/git.js';
import { useFixtureCopy } from './helpers/fixture-copy.js';
import { BIN, tool } from './helpers/tool.js';
import { hashObject } from '../src/api/hash-object.js';

const NOBODY = 65534;
const asRoot = process.geteuid?.() === 0;

type Env = Record<string, string | undefined>;

/** Stock git and the tool on the same directory: exit code and stderr side by side. */
function both(cwd: string, env: Env = {}, args: string[] = []) {
  const g = git([...args, 'count-objects'], { cwd, env });
  const t = tool([...args, 'inspect', '--json'], { cwd, env });
  return {
    git: { status: g.status, stderr: g.stderr },
    tool: { status: t.status, stderr: t.stderr },
  };
}

function chownTree(p: string, uid: number): void {
  const r = spawnSync('chown', ['-R', String(uid), p]);
  expect(r.status).toBe(0);
}

function dubious(dir: string): string {
  return `fatal: detected dubious ownership in repository at '${dir}'\nTo add an exception for this directory, call:\n\n\tgit config --global --add safe.directory ${dir}\n`;
}

function globalConfig(dir: string, lines: string[]): string {
  const f = path.join(dir, 'global.config');
  fs.writeFileSync(
    f,
    lines.length ? `[safe]\n${lines.map((l) => `\tdirectory = ${l}\n`).join('')}` : '',
  );
  return f;
}

describe.skipIf(!asRoot)('another user’s repository (safe.directory, as git 2.39)', () => {
  it('a work tree owned by another user: refused with git’s message, exit 128, nothing written', () => {
    const repo = useFixtureCopy('basic');
    chownTree(repo, NOBODY);
    const before = fs.readdirSync(path.join(repo, '.git/objects/pack')).sort();
    const r = both(repo);
    expect(r.git).toEqual({ status: 128, stderr: dubious(repo) });
    expect(r.tool).toEqual(r.git);
    // The rewrite itself, from a subdirectory, through the same discovery.
    const sub = path.join(repo, 'src');
    const w = tool(['--graph-compression=0'], { cwd: fs.existsSync(sub) ? sub : repo });
    expect(w.status).toBe(128);
    expect(w.stderr).toBe(dubious(repo));
    expect(fs.readdirSync(path.join(repo, '.git/objects/pack')).sort()).toEqual(before);
  });

  it('a bare repository owned by another user names the git dir', () => {
    const repo = useFixtureCopy('bare');
    chownTree(repo, NOBODY);
    const r = both(repo);
    expect(r.git).toEqual({ status: 128, stderr: dubious(repo) });
    expect(r.tool).toEqual(r.git);
  });

  it('only the .git directory owned by another user is enough to refuse', () => {
    const repo = useFixtureCopy('basic');
    fs.chownSync(path.join(repo, '.git'), NOBODY, 0);
    const r = both(repo);
    expect(r.git.status).toBe(128);
    expect(r.tool).toEqual(r.git);
  });

  it('a .git file whose target belongs to another user is refused; its own owner counts too', () => {
    const repo = useFixtureCopy('basic');
    const real = path.join(path.dirname(repo), 'real.git');
    fs.renameSync(path.join(repo, '.git'), real);
    fs.writeFileSync(path.join(repo, '.git'), `gitdir: ${real}\n`);
    expect(both(repo).tool).toEqual({ status: 0, stderr: '' });
    fs.chownSync(real, NOBODY, 0);
    let r = both(repo);
    expect(r.git).toEqual({ status: 128, stderr: dubious(repo) });
    expect(r.tool).toEqual(r.git);
    fs.chownSync(real, 0, 0);
    fs.lchownSync(path.join(repo, '.git'), NOBODY, 0);
    r = both(repo);
    expect(r.git.status).toBe(128);
    expect(r.tool).toEqual(r.git);
  });

  it('safe.directory from global config, in order: a path, *, and the empty value that resets', () => {
    const repo = useFixtureCopy('basic');
    chownTree(repo, NOBODY);
    const dir = path.dirname(repo);
    const cases: [string[], number][] = [
      [[repo], 0],
      [['/somewhere/else'], 128],
      [[repo + '/'], 128], // compared as a string, as fspathcmp does
      [['*'], 0],
      [['*', ''], 128],
      [['', repo], 0],
      [[repo, '""'], 128],
    ];
    for (const [values, status] of cases) {
      const env = { GIT_CONFIG_GLOBAL: globalConfig(dir, values) };
      const r = both(repo, env);
      expect(r.git.status, values.join(' | ')).toBe(status);
      expect(r.tool, values.join(' | ')).toEqual(r.git);
    }
  });

  it('~/ in safe.directory is the home directory, as git_config_pathname expands it', () => {
    const repo = useFixtureCopy('basic');
    chownTree(repo, NOBODY);
    const home = path.dirname(repo);
    const env = { HOME: home, GIT_CONFIG_GLOBAL: globalConfig(home, [`~/${path.basename(repo)}`]) };
    const r = both(repo, env);
    expect(r.git.status).toBe(0);
    expect(r.tool).toEqual(r.git);
  });

  it('the repository’s own config cannot declare itself safe', () => {
    const repo = useFixtureCopy('basic');
    fs.appendFileSync(
      path.join(repo, '.git/config'),
      `[safe]\n\tdirectory = *\n\tdirectory = ${repo}\n`,
    );
    chownTree(repo, NOBODY);
    const r = both(repo);
    expect(r.git.status).toBe(128);
    expect(r.tool).toEqual(r.git);
  });

  it('command-line config: GIT_CONFIG_PARAMETERS and GIT_CONFIG_COUNT', () => {
    const repo = useFixtureCopy('basic');
    chownTree(repo, NOBODY);
    for (const env of [
      { GIT_CONFIG_PARAMETERS: `'safe.directory'='${repo}'` },
      { GIT_CONFIG_COUNT: '1', GIT_CONFIG_KEY_0: 'safe.directory', GIT_CONFIG_VALUE_0: '*' },
      {
        GIT_CONFIG_COUNT: '2',
        GIT_CONFIG_KEY_0: 'safe.directory',
        GIT_CONFIG_VALUE_0: '*',
        GIT_CONFIG_KEY_1: 'safe.directory',
        GIT_CONFIG_VALUE_1: '',
      },
    ]) {
      const r = both(repo, env);
      expect(r.tool, JSON.stringify(env)).toEqual(r.git);
    }
  });

  it('`git -c safe.directory=… repack-ts` through the real git wrapper', () => {
    const repo = useFixtureCopy('basic');
    const before = objectSet(repo);
    chownTree(repo, NOBODY);
    const bin = fs.mkdtempSync(path.join(path.dirname(repo), 'bin-'));
    fs.symlinkSync(
      path.resolve(path.dirname(BIN), 'git-repack-ts'),
      path.join(bin, 'git-repack-ts'),
    );
    const env = gitEnv({ PATH: `${bin}:${process.env.PATH}` });
    const run = (args: string[]) => spawnSync('git', args, { cwd: repo, env, encoding: 'utf8' });
    const refused = run([
      '-c',
      'safe.directory=/elsewhere',
      'repack-ts',
      '--graph-compression=0',
      '-q',
    ]);
    expect(refused.status).toBe(128);
    expect(refused.stderr).toBe(dubious(repo));
    const gitRefused = run(['-c', 'safe.directory=/elsewhere', 'count-objects']);
    expect(gitRefused.stderr).toBe(refused.stderr);
    const ok = run(['-c', `safe.directory=${repo}`, 'repack-ts', '--graph-compression=0', '-q']);
    expect(ok.stderr).toBe('');
    expect(ok.status).toBe(0);
    expect(run(['-c', 'safe.directory=*', 'fsck', '--strict']).status).toBe(0);
    chownTree(repo, 0);
    expect(objectSet(repo)).toEqual(before);
  });

  it('root and SUDO_UID as git 2.39 reads them', () => {
    const repo = useFixtureCopy('basic');
    chownTree(repo, NOBODY);
    // euid 0: a root-owned repository is always fine; otherwise SUDO_UID stands for the user.
    for (const sudo of [String(NOBODY), ` ${NOBODY}`, '1000', `${NOBODY}x`, '', '-1']) {
      const r = both(repo, { SUDO_UID: sudo });
      expect(r.tool, `SUDO_UID=${JSON.stringify(sudo)}`).toEqual(r.git);
    }
    expect(both(repo, { SUDO_UID: String(NOBODY) }).tool.status).toBe(0);
    chownTree(repo, 0);
    expect(both(repo, { SUDO_UID: String(NOBODY) }).tool).toEqual({ status: 0, stderr: '' });
  });

  it('an explicit GIT_DIR or --git-dir is trusted, as git trusts it; hash-object without -w just runs outside', () => {
    const repo = useFixtureCopy('basic');
    chownTree(repo, NOBODY);
    const gitDir = path.join(repo, '.git');
    const r = both('/', { GIT_DIR: gitDir });
    expect(r.git.status).toBe(0);
    expect(r.tool).toEqual(r.git);
    expect(tool([`--git-dir=${gitDir}`, 'inspect', '--json'], { cwd: '/' }).status).toBe(0);
    const f = path.join(path.dirname(repo), 'file.txt');
    fs.writeFileSync(f, 'hello\n');
    const g = git(['hash-object', f], { cwd: repo });
    const t = tool(['hash-object', f], { cwd: repo });
    expect({ status: t.status, out: t.stdout, err: t.stderr }).toEqual({
      status: g.status,
      out: g.stdout.toString(),
      err: g.stderr,
    });
    const gw = git(['hash-object', '-w', f], { cwd: repo });
    const tw = tool(['hash-object', '-w', f], { cwd: repo });
    expect(gw.status).toBe(128);
    expect({ status: tw.status, err: tw.stderr }).toEqual({ status: gw.status, err: gw.stderr });
  });

  it('safe.directory in a relative GIT_CONFIG_GLOBAL is read from where the search starts, as git reads it (issue 31)', () => {
    const repo = useFixtureCopy('basic');
    const sub = path.join(repo, 'sub');
    fs.mkdirSync(sub);
    // From sub/, ../safe.cfg is the repository's own top; from the top it would be its parent.
    fs.writeFileSync(path.join(repo, 'safe.cfg'), `[safe]\n\tdirectory = ${repo}\n`);
    chownTree(repo, NOBODY);
    for (const cwd of [sub, repo]) {
      const r = both(cwd, { GIT_CONFIG_GLOBAL: '../safe.cfg' });
      expect(r.git.status, cwd).toBe(cwd === sub ? 0 : 128);
      expect(r.tool, cwd).toEqual(r.git);
    }
  });

  it('the library’s hashObject({ write: true, repository }) refuses another user’s repository and creates nothing (issue 30)', async () => {
    const repo = useFixtureCopy('basic');
    const file = path.join(path.dirname(repo), 'new-content.txt');
    fs.writeFileSync(file, `content no repository has ${repo}\n`);
    chownTree(repo, NOBODY);
    const tree = (): string[] => fs.readdirSync(repo, { recursive: true, encoding: 'utf8' }).sort();
    const before = tree();
    const g = git(['hash-object', '-w', file], { cwd: repo });
    expect(g.stderr).toBe(dubious(repo));
    await expect(hashObject(file, { write: true, repository: repo })).rejects.toMatchObject({
      code: 'dubious-ownership',
      message: dubious(repo).slice('fatal: '.length, -1),
    });
    expect(tree()).toEqual(before);
    // Without -w git hashes outside the repository it may not use; so does the library.
    expect(await hashObject(file, { repository: repo })).toBe(
      git(['hash-object', file], { cwd: repo }).stdout.toString().trim(),
    );
    expect(tree()).toEqual(before);
  });
});

// No chown and no root: git's own switch makes every repository another user's, so this runs
// wherever the suite runs.
describe('another user’s repository, as GIT_TEST_ASSUME_DIFFERENT_OWNER makes it', () => {
  it('refused as git refuses it, without chown', () => {
    const repo = useFixtureCopy('basic');
    const r = both(repo, { GIT_TEST_ASSUME_DIFFERENT_OWNER: '1' });
    expect(r.git.status).toBe(128);
    expect(r.git.stderr).toBe(dubious(repo));
    expect(r.tool).toEqual(r.git);
  });
});

describe('safe.bareRepository (git 2.38+): a bare repository found by walking up', () => {
  const cfg = (...values: string[]): Env => {
    const env: Env = { GIT_CONFIG_COUNT: String(values.length) };
    values.forEach((v, i) => {
      env[`GIT_CONFIG_KEY_${i}`] = 'safe.bareRepository';
      env[`GIT_CONFIG_VALUE_${i}`] = v;
    });
    return env;
  };
  const bareCopy = (): string => {
    const src = useFixtureCopy('basic');
    const bare = `${src}-bare.git`;
    expect(git(['clone', '-q', '--bare', src, bare]).status).toBe(0);
    return bare;
  };

  it('explicit: refused as git refuses it, from the git dir and below it; all (last wins) and the default allow it', () => {
    const bare = bareCopy();
    for (const cwd of [bare, path.join(bare, 'objects')]) {
      const r = both(cwd, cfg('explicit'));
      expect(r.git.status).toBe(128);
      expect(r.git.stderr).toMatch(/cannot use bare repository/);
      expect(r.tool).toEqual(r.git);
    }
    for (const env of [cfg('explicit', 'all'), cfg('all'), {}]) {
      const r = both(bare, env);
      expect(r.git.status).toBe(0);
      expect(r.tool.status).toBe(0);
    }
  });

  it('explicit: GIT_DIR names it, so it is used; a .git directory entered by cd is refused, as git 2.39 refuses it', () => {
    const bare = bareCopy();
    const named = both(path.join(bare, 'objects'), { ...cfg('explicit'), GIT_DIR: bare });
    expect(named.git.status).toBe(0);
    expect(named.tool.status).toBe(0);
    const repo = useFixtureCopy('basic');
    const inDotGit = both(path.join(repo, '.git'), cfg('explicit'));
    expect(inDotGit.git.status).toBe(128);
    expect(inDotGit.tool).toEqual(inDotGit.git);
  });

  it("the repository's own safe.bareRepository is not protected configuration: ignored by both; a global file's is obeyed", () => {
    const bare = bareCopy();
    expect(
      git(['config', 'safe.bareRepository', 'explicit'], { env: { GIT_DIR: bare } }).status,
    ).toBe(0);
    const local = both(bare);
    expect(local.git.status).toBe(0);
    expect(local.tool.status).toBe(0);
    const globalFile = `${bare}-global.gitconfig`;
    fs.writeFileSync(globalFile, '[safe]\n\tbareRepository = explicit\n');
    const global = both(bare, { GIT_CONFIG_GLOBAL: globalFile });
    expect(global.git.status).toBe(128);
    expect(global.tool).toEqual(global.git);
  });

  it('a value git cannot parse is fatal (128) for both, and names the key', () => {
    const bare = bareCopy();
    const r = both(bare, cfg('EXPLICIT'));
    expect(r.git.status).toBe(128);
    expect(r.tool.status).toBe(128);
    expect(r.tool.stderr).toMatch(/^fatal: unable to parse 'safe\.barerepository'/);
  });
});
