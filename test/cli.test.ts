import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { FIXTURES, fixtureGitDir, fixtureLinkedWorktree, fixturePath } from './fixtures/index.js';
import { useFixtureCopy } from './helpers/fixture-copy.js';
import { spawnSync } from 'node:child_process';
import { fsckStrict, git, gitEnv, gitOk, objectSet } from './helpers/git.js';
import { BIN, tool } from './helpers/tool.js';
import { Options, parseOptions } from '../src/cli/args.js';
import { UsageError } from '../src/cli/io.js';

function inspectJson(args: string[], cwd: string, env?: Record<string, string | undefined>) {
  const r = tool([...args, 'inspect', '--json'], { cwd, env });
  expect(r.stderr).toBe('');
  expect(r.status).toBe(0);
  return JSON.parse(r.stdout) as {
    objectFormat: string;
    packs: { pack: string }[];
    total: { objects: number };
  };
}

describe("git's CLI contract", () => {
  it('-h prints the usage on stdout and exits 129, for the tool and each subcommand', () => {
    const cwd = fixturePath('basic');
    for (const args of [['-h'], ['verify', '-h'], ['inspect', '-h'], ['repack', '-h']]) {
      const r = tool(args, { cwd });
      expect(r.status).toBe(129);
      expect(r.stdout).toMatch(/^usage: git repack-ts/);
    }
  });

  it('an unknown subcommand is a usage error', () => {
    const r = tool(['frobnicate'], { cwd: fixturePath('basic') });
    expect(r.status).toBe(129);
    expect(r.stderr).toMatch(/^error: unknown command 'frobnicate'/);
  });

  it('--version', () => {
    expect(tool(['--version'], { cwd: '/' }).stdout).toMatch(
      /^git-repack-ts version \d+\.\d+\.\d+\n$/,
    );
  });

  it('-C changes directory first (cumulatively, like git)', () => {
    const repo = fixturePath('basic');
    const parent = path.dirname(repo);
    const j = inspectJson(['-C', parent, '-C', path.basename(repo)], '/');
    expect(j.total.objects).toBeGreaterThan(0);
    const bad = tool(['-C', '/nonexistent-dir', 'inspect'], { cwd: '/' });
    expect(bad.status).toBe(128);
    expect(bad.stderr).toBe(
      "fatal: cannot change to '/nonexistent-dir': No such file or directory\n",
    );
  });

  it('--git-dir and GIT_DIR name the repository', () => {
    const gitDir = fixtureGitDir('basic');
    const a = inspectJson([`--git-dir=${gitDir}`], '/');
    const b = inspectJson([], '/', { GIT_DIR: gitDir });
    const c = inspectJson(['--git-dir', gitDir], '/');
    expect(a.total.objects).toBeGreaterThan(0);
    expect(b).toEqual(a);
    expect(c).toEqual(a);
    const r = tool(['--git-dir=/tmp', 'inspect'], { cwd: '/' });
    expect(r.status).toBe(128);
    expect(r.stderr).toBe("fatal: not a git repository: '/tmp'\n");
  });

  it('-- ends options: a pack named like an option', () => {
    const repo = useFixtureCopy('basic');
    const pack = fs
      .readdirSync(path.join(repo, '.git/objects/pack'))
      .find((f) => f.endsWith('.pack'))!;
    const dir = path.join(repo, '.git/objects/pack');
    fs.renameSync(path.join(dir, pack), path.join(dir, '-v.pack'));
    fs.renameSync(path.join(dir, pack.replace('.pack', '.idx')), path.join(dir, '-v.idx'));
    const r = tool(['verify', '--', '-v.idx'], { cwd: dir });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
  });

  it('progress goes to stderr only when asked (no terminal here) and never to stdout', () => {
    const repo = useFixtureCopy('basic');
    const quiet = tool(['verify'], { cwd: repo });
    expect(quiet.stderr).toBe('');
    const forced = tool(['verify', '--progress'], { cwd: repo });
    expect(forced.status).toBe(0);
    expect(forced.stdout).toBe('');
    expect(forced.stderr).toMatch(/Indexing objects: 100% \(\d+\/\d+\), done\.\n/);
    expect(forced.stderr).toMatch(/Resolving deltas: 100% \(\d+\/\d+\), done\.\n/);
    const rp = tool(['--graph-compression=0', '--progress', '-q'], { cwd: repo });
    expect(rp.status).toBe(0);
    expect(rp.stderr).toMatch(/Writing objects: 100% \(\d+\/\d+\), done\./);
    expect(rp.stdout).toBe('');
  });

  it("shows git fsck's own progress with its moving counts, and labels each partition's rounds", () => {
    const repo = useFixtureCopy('promisor');
    // A loose object makes a normal partition beside the promisor one: two rounds of counting.
    gitOk(['hash-object', '-w', '--stdin'], { cwd: repo, input: 'loose, for a second pack\n' });
    const env = { GIT_PROGRESS_DELAY: '0' };
    const r = tool(['--graph-compression=0', '--fsck=full', '--progress'], { cwd: repo, env });
    expect(r.status, r.stderr).toBe(0);
    const records = r.stderr.split(/[\r\n]/).filter((l) => l !== '');
    const done = records.filter((l) => l.endsWith(', done.'));
    expect(done.filter((l) => l.startsWith('Counting objects'))).toEqual([
      expect.stringMatching(/^Counting objects \(pack 1\/2\): 100% \(\d+\/\d+\), done\.$/),
      expect.stringMatching(/^Counting objects \(pack 2\/2\): 100% \(\d+\/\d+\), done\.$/),
    ]);
    expect(done).not.toContain('Checking with git fsck: 100% (1/1), done.');
    // git's own lines: what git fsck --progress shows on the repository as it now is.
    const g = git(['fsck', '--no-dangling', '--progress'], { cwd: repo, env });
    const gitDone = g.stderr.split(/[\r\n]/).filter((l) => l.endsWith(', done.'));
    expect(gitDone).toContain('Checking object directories: 100% (256/256), done.');
    for (const line of gitDone) expect(done).toContain(line);
    // The count moves: git's check starts at 0 % and ends at its total.
    const objects = records.filter((l) => l.startsWith('Checking objects:'));
    expect(objects[0]).toMatch(/^Checking objects: +0% \(0\/\d+\)$/);
    expect(objects.at(-1)).toMatch(/^Checking objects: 100% \((\d+)\/\1\), done\.$/);

    // A count without a total, as git shows it: `Checking connectivity: <n>, done.`
    const c = useFixtureCopy('basic');
    gitOk(['hash-object', '-w', '--stdin'], { cwd: c, input: 'loose, to be packed\n' });
    const rc = tool(['--graph-compression=0', '--fsck=connectivity', '--progress', '-q'], {
      cwd: c,
      env,
    });
    expect(rc.status, rc.stderr).toBe(0);
    const gc = git(['fsck', '--connectivity-only', '--no-dangling', '--progress'], { cwd: c, env });
    const gcDone = gc.stderr.split(/[\r\n]/).filter((l) => l.endsWith(', done.'));
    expect(gcDone).toEqual([expect.stringMatching(/^Checking connectivity: \d+, done\.$/)]);
    expect(rc.stderr.split(/[\r\n]/)).toContain(gcDone[0]);
  });
});

describe('repository discovery like git', () => {
  it('finds the repository from a subdirectory of the work tree', () => {
    const repo = fixturePath('basic');
    const sub = fs
      .readdirSync(repo)
      .find((f) => !f.startsWith('.') && fs.statSync(path.join(repo, f)).isDirectory())!;
    expect(inspectJson([], path.join(repo, sub)).total.objects).toBe(
      inspectJson([], repo).total.objects,
    );
  });

  it('reads a bare repository', () => {
    expect(FIXTURES.bare.bare).toBe(true);
    expect(inspectJson([], fixturePath('bare')).total.objects).toBeGreaterThan(0);
  });

  it('follows a linked worktree to the common objects directory', () => {
    const repo = useFixtureCopy('worktree');
    const wt = fixtureLinkedWorktree('worktree', repo);
    expect(fs.statSync(path.join(wt, '.git')).isFile()).toBe(true);
    const fromWt = inspectJson([], wt);
    const fromMain = inspectJson([], repo);
    expect(fromWt.total.objects).toBe(fromMain.total.objects);
    // and the rewrite from inside the linked worktree keeps its HEAD's objects
    const before = objectSet(wt);
    const r = tool(['-q', '--graph-compression=0'], { cwd: wt });
    expect(r.stderr).toBe('');
    expect(objectSet(wt)).toEqual(before);
    expect(fsckStrict(wt).status).toBe(0);
  });

  it('uses objects through alternates but never rewrites them', () => {
    const repo = useFixtureCopy('alternates');
    const alt = fs.readFileSync(path.join(repo, '.git/objects/info/alternates'), 'utf8').trim();
    const altPacks = fs
      .readdirSync(path.join(alt, 'pack'))
      .map((f) => [f, fs.statSync(path.join(alt, 'pack', f)).mtimeMs]);
    const before = objectSet(repo);
    expect(tool(['-q', '--graph-compression=0'], { cwd: repo }).status).toBe(0);
    expect(objectSet(repo)).toEqual(before);
    expect(
      fs
        .readdirSync(path.join(alt, 'pack'))
        .map((f) => [f, fs.statSync(path.join(alt, 'pack', f)).mtimeMs]),
    ).toEqual(altPacks);
    expect(fsckStrict(repo).status).toBe(0);
  });

  it('knows a SHA-256 repository by extensions.objectFormat', () => {
    expect(inspectJson([], fixturePath('sha256')).objectFormat).toBe('sha256');
    expect(inspectJson([], fixturePath('basic')).objectFormat).toBe('sha1');
  });

  it('reads a snapshot without a config file (as public snapshots arrive)', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rts-noconfig-'));
    try {
      gitOk(
        ['clone', '-q', '--bare', '--no-local', fixturePath('basic'), path.join(dir, 'r.git')],
        { cwd: dir },
      );
      fs.rmSync(path.join(dir, 'r.git', 'config'));
      expect(inspectJson([], path.join(dir, 'r.git')).total.objects).toBeGreaterThan(0);
      expect(tool(['verify'], { cwd: path.join(dir, 'r.git') }).status).toBe(0);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it("outside any repository: fatal with git's message, exit 128", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rts-none-'));
    try {
      const r = tool(['inspect'], {
        cwd: dir,
        env: { GIT_CEILING_DIRECTORIES: path.dirname(dir) },
      });
      expect(r.status).toBe(128);
      expect(r.stderr).toBe(
        'fatal: not a git repository (or any of the parent directories): .git\n',
      );
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('the launcher (bin/git-repack-ts, what `git repack-ts` runs)', () => {
  const LAUNCHER = path.resolve(path.dirname(BIN), 'git-repack-ts');
  /** A directory with `name` as a script that logs the malloc variables it was given, then runs `then`. */
  const fakeBin = (dir: string, name: string, then: string): string => {
    const log = path.join(dir, `${name}.log`);
    const show = [
      'MALLOC_MMAP_THRESHOLD_',
      'MALLOC_TRIM_THRESHOLD_',
      'MALLOC_ARENA_MAX',
      'GIT_REPACK_TS_MALLOC',
    ]
      .map((v) => `\${${v}-unset}`)
      .join('|');
    fs.writeFileSync(path.join(dir, name), `#!/bin/sh\necho "${show} $*" >> '${log}'\n${then}\n`, {
      mode: 0o755,
    });
    return log;
  };
  const run = (
    cmd: string,
    args: string[],
    cwd: string,
    env: Record<string, string | undefined>,
  ) => {
    const r = spawnSync(cmd, args, { cwd, env: gitEnv(env), encoding: 'utf8' });
    if (r.error) throw r.error;
    return r;
  };

  it('runs the CLI through a symbolic link (as npm installs it), with its exit status and output', () => {
    const repo = useFixtureCopy('basic');
    const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'rts-launcher-'));
    try {
      fs.symlinkSync(LAUNCHER, path.join(tmp, 'git-repack-ts'));
      fs.writeFileSync(path.join(tmp, 'a file'), 'hello\n');
      const ok = run(
        path.join(tmp, 'git-repack-ts'),
        ['hash-object', path.join(tmp, 'a file')],
        repo,
        {},
      );
      expect(ok.stderr).toBe('');
      expect(ok.status).toBe(0);
      expect(ok.stdout).toBe(gitOk(['hash-object', path.join(tmp, 'a file')], { cwd: repo }));
      const bad = run(path.join(tmp, 'git-repack-ts'), ['--frobnicate'], repo, {});
      expect(bad.status).toBe(129);
      expect(bad.stderr).toMatch(/unknown option/);
      // A chain of relative links, and a directory name with a space.
      fs.mkdirSync(path.join(tmp, 'a b', 'c'), { recursive: true });
      fs.symlinkSync(path.join('..', '..', 'git-repack-ts'), path.join(tmp, 'a b', 'c', 'link2'));
      fs.symlinkSync(path.join('c', 'link2'), path.join(tmp, 'a b', 'link1'));
      expect(
        run(path.join(tmp, 'a b', 'link1'), ['hash-object', path.join(tmp, 'a file')], repo, {})
          .stdout,
      ).toBe(ok.stdout);
      // And as git runs it: `git repack-ts` finds it on PATH.
      const viaGit = run('git', ['repack-ts', 'hash-object', path.join(tmp, 'a file')], repo, {
        PATH: `${tmp}:${process.env.PATH}`,
      });
      expect(viaGit.stdout).toBe(ok.stdout);
    } finally {
      fs.rmSync(tmp, { recursive: true, force: true });
    }
  });

  it('sets the malloc variables for node only (not for hash-object), keeps each one the user set, passes arguments intact, and starts node with its single-threaded collector and one V8 platform thread', () => {
    const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'rts-launcher-'));
    try {
      const log = fakeBin(tmp, 'node', 'exit 3');
      const env = { PATH: `${tmp}:${process.env.PATH}` };
      const a = run(LAUNCHER, ['two words', '--x=1'], tmp, env);
      expect(a.status).toBe(3);
      const b = run(LAUNCHER, ['y'], tmp, { ...env, MALLOC_MMAP_THRESHOLD_: '65536' });
      expect(b.status).toBe(3);
      // Set but empty is set: the user's choice too.
      const c = run(LAUNCHER, ['z'], tmp, {
        ...env,
        MALLOC_TRIM_THRESHOLD_: '4096',
        MALLOC_ARENA_MAX: '',
      });
      expect(c.status).toBe(3);
      // hash-object (after git's -C and --git-dir) gets glibc's own thresholds.
      const d = run(LAUNCHER, ['-C', tmp, '--git-dir=x', 'hash-object', '-w'], tmp, env);
      expect(d.status).toBe(3);
      const e = run(LAUNCHER, ['-C', 'hash-object', 'verify'], tmp, env);
      expect(e.status).toBe(3);
      const js = path.join(path.dirname(BIN), 'git-repack-ts.js');
      expect(fs.readFileSync(log, 'utf8')).toBe(
        `131072|8388608|1|MALLOC_MMAP_THRESHOLD_ MALLOC_TRIM_THRESHOLD_ MALLOC_ARENA_MAX --single-threaded-gc --v8-pool-size=1 ${js} two words --x=1\n` +
          `65536|8388608|1|MALLOC_TRIM_THRESHOLD_ MALLOC_ARENA_MAX --single-threaded-gc --v8-pool-size=1 ${js} y\n` +
          `131072|4096||MALLOC_MMAP_THRESHOLD_ --single-threaded-gc --v8-pool-size=1 ${js} z\n` +
          `unset|unset|unset| --single-threaded-gc --v8-pool-size=1 ${js} -C ${tmp} --git-dir=x hash-object -w\n` +
          `131072|8388608|1|MALLOC_MMAP_THRESHOLD_ MALLOC_TRIM_THRESHOLD_ MALLOC_ARENA_MAX --single-threaded-gc --v8-pool-size=1 ${js} -C hash-object verify\n`,
      );
    } finally {
      fs.rmSync(tmp, { recursive: true, force: true });
    }
  });

  it('the git commands the tool runs get the environment the user gave', () => {
    const repo = useFixtureCopy('basic');
    const before = objectSet(repo);
    const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'rts-launcher-'));
    try {
      const realGit = spawnSync('sh', ['-c', 'command -v git'], { encoding: 'utf8' }).stdout.trim();
      const log = fakeBin(tmp, 'git', `exec '${realGit}' "$@"`);
      const env = { PATH: `${tmp}:${process.env.PATH}` };
      // A rewrite checked by git: the launcher set the threshold, git never sees it.
      const r = run(LAUNCHER, ['--graph-compression=0', '-q'], repo, env);
      expect(r.stderr).toBe('');
      expect(r.status).toBe(0);
      const calls = fs.readFileSync(log, 'utf8').trim().split('\n');
      expect(calls.some((l) => / index-pack /.test(` ${l} `))).toBe(true);
      for (const l of calls) expect(l).toMatch(/^unset\|unset\|unset\|unset /);
      // A variable the user set is theirs: git gets it too.
      fs.rmSync(log);
      const u = run(LAUNCHER, ['--graph-compression=-1', '-q'], repo, {
        ...env,
        MALLOC_MMAP_THRESHOLD_: '65536',
        MALLOC_ARENA_MAX: '2',
      });
      expect(u.status).toBe(0);
      for (const l of fs.readFileSync(log, 'utf8').trim().split('\n'))
        expect(l).toMatch(/^65536\|unset\|2\|unset /);
      expect(objectSet(repo)).toEqual(before);
      expect(fsckStrict(repo).status).toBe(0);
    } finally {
      fs.rmSync(tmp, { recursive: true, force: true });
    }
  });

  it('ends as soon as its work is done, yet output a slow pipe has not read yet is all delivered', () => {
    const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'rts-launcher-'));
    try {
      // 3000 lines of 41 bytes: about twice a pipe's buffer, read only after a pause.
      const paths = Array.from({ length: 3000 }, (_, i) => path.join(tmp, `f${i}`));
      paths.forEach((p, i) => fs.writeFileSync(p, `${i}\n`));
      fs.writeFileSync(path.join(tmp, 'paths'), paths.join('\n') + '\n');
      const r = run(
        'sh',
        ['-c', `'${LAUNCHER}' hash-object --stdin-paths < paths | (sleep 1; cat)`],
        tmp,
        {},
      );
      expect(r.status).toBe(0);
      const want = spawnSync('git', ['hash-object', '--stdin-paths'], {
        cwd: tmp,
        input: fs.readFileSync(path.join(tmp, 'paths')),
        encoding: 'utf8',
      }).stdout;
      expect(want.split('\n').length).toBe(3001);
      expect(r.stdout).toBe(want);
    } finally {
      fs.rmSync(tmp, { recursive: true, force: true });
    }
  });

  it('ends even when a V8 background task waits for a collection at exit (nodejs/node#54918)', () => {
    // --stress-concurrent-allocation keeps background threads allocating, each asking the main
    // thread for a collection: a process that waits for them in Node's DrainTasks (an empty event
    // loop) never ends. The build before this test hung in every one of 12 `walk`s so; 3 here.
    const repo = fixturePath('basic');
    const counts = (out: string) => out.replace(/ in [0-9.]+ s$/m, ''); // walk's line ends with its time
    const want = spawnSync(process.execPath, [BIN, 'walk'], {
      cwd: repo,
      env: gitEnv(),
      encoding: 'utf8',
    });
    expect(want.status).toBe(0);
    expect(counts(want.stdout)).toMatch(/^70 commits, 167 trees, 108 blobs, 4 tags, 0 missing; /);
    for (let i = 0; i < 3; i++) {
      const r = spawnSync(process.execPath, ['--stress-concurrent-allocation', BIN, 'walk'], {
        cwd: repo,
        env: gitEnv(),
        encoding: 'utf8',
        timeout: 20_000,
        killSignal: 'SIGKILL',
      });
      expect(r.signal).toBe(null);
      expect(r.status).toBe(0);
      expect(counts(r.stdout)).toBe(counts(want.stdout));
    }
  }, 90_000);

  it('node starts without NODE_EXTRA_CA_CERTS (it would read the file first); git gets it back as given', () => {
    const repo = useFixtureCopy('basic');
    const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'rts-launcher-'));
    try {
      const certs = path.join(tmp, 'my certs.pem');
      const log = path.join(tmp, 'env.log');
      const shim = (name: string, then: string) =>
        fs.writeFileSync(
          path.join(tmp, name),
          `#!/bin/sh\necho "${name} \${NODE_EXTRA_CA_CERTS-unset}|\${GIT_REPACK_TS_CA_CERTS-unset}" >> '${log}'\n${then}\n`,
          { mode: 0o755 },
        );
      const which = (cmd: string) =>
        spawnSync('sh', ['-c', `command -v ${cmd}`], { encoding: 'utf8' }).stdout.trim();
      shim('node', `exec '${which('node')}' "$@"`);
      shim('git', `exec '${which('git')}' "$@"`);
      const env = { PATH: `${tmp}:${process.env.PATH}` };
      const r = run(LAUNCHER, ['--graph-compression=0', '-q'], repo, {
        ...env,
        NODE_EXTRA_CA_CERTS: certs,
      });
      expect(r.stderr).toBe('');
      expect(r.status).toBe(0);
      const lines = fs.readFileSync(log, 'utf8').trim().split('\n');
      expect(lines[0]).toBe(`node unset|${certs}`);
      const gits = lines.slice(1);
      expect(gits.some((l) => l.startsWith('git '))).toBe(true);
      for (const l of gits) expect(l).toBe(`git ${certs}|unset`);
      // Unset stays unset, for node and for git.
      fs.rmSync(log);
      expect(
        run(LAUNCHER, ['--graph-compression=0', '-q'], repo, {
          ...env,
          NODE_EXTRA_CA_CERTS: undefined,
        }).status,
      ).toBe(0);
      for (const l of fs.readFileSync(log, 'utf8').trim().split('\n'))
        expect(l).toMatch(/^(node|git) unset\|unset$/);
    } finally {
      fs.rmSync(tmp, { recursive: true, force: true });
    }
  });
});

describe("the subcommands' option parser (git's conventions)", () => {
  const specs = new Options()
    .option('graph-compression', { type: 'string' })
    .option('fsck', { type: 'string', negatable: true })
    .option('svg', { type: 'string' })
    .option('zstd', { type: 'string', optionalValue: true })
    .option('keep-pack', { type: 'string', array: true })
    .option('json', { type: 'boolean', default: false })
    .option('dict', { type: 'boolean', default: true })
    .option('quiet', { alias: 'q', type: 'boolean' })
    .option('dry-run', { alias: 'n', type: 'boolean', default: false })
    .option('output', { alias: 'o', type: 'string' }).specs;
  const parse = (args: string[]) => parseOptions(args, 'usage: x\n', specs);
  const refused = (args: string[]): string => {
    try {
      parse(args);
    } catch (e) {
      expect(e).toBeInstanceOf(UsageError);
      return (e as UsageError).message;
    }
    throw new Error(`accepted ${JSON.stringify(args)}`);
  };

  it.each([
    [[], { json: false, dict: true, 'dry-run': false, _: [], '--': [] }],
    [['--graph-compression=0'], { 'graph-compression': '0' }],
    [['--graph-compression', '-1'], { 'graph-compression': '-1' }], // a value is the next argument, whatever it looks like
    [['--graph-compression=1', '--graph-compression=9'], { 'graph-compression': '9' }], // the last one wins
    [['--keep-pack=a', '--keep-pack', 'b'], { 'keep-pack': ['a', 'b'] }],
    [['--json', '--no-dict'], { json: true, dict: false }],
    [['--json', '--no-json'], { json: false }],
    [['--no-fsck'], { fsck: false }],
    [['--fsck=connectivity'], { fsck: 'connectivity' }],
    [['--zstd'], { zstd: '' }],
    [['--zstd=5'], { zstd: '5' }],
    [['--zstd', '5'], { zstd: '', _: ['5'] }], // an optional value only stuck, as in git
    [['-qn'], { quiet: true, 'dry-run': true }],
    [['-ofile'], { output: 'file' }],
    [['-qo', 'file', 'pos'], { quiet: true, output: 'file', _: ['pos'] }],
    [['a', '--', '--json', '-q'], { json: false, _: ['a'], '--': ['--json', '-q'] }],
    [['-'], { _: ['-'] }],
  ])('%j', (args, want) => {
    expect(parse(args)).toMatchObject(want);
  });

  it.each([
    [['--frobnicate'], "unknown option `frobnicate'"],
    [['--no-svg'], "unknown option `no-svg'"], // a string option that cannot be turned off
    [['--json=yes'], "option `json' takes no value"],
    [['--no-fsck=x'], "option `no-fsck' takes no value"],
    [['--svg'], "option `svg' requires a value"],
    [['-x'], "unknown switch `x'"],
    [['-qx'], "unknown switch `x'"],
    [['-o'], "switch `o' requires a value"],
    [['--json', '-h'], ''], // -h: the usage alone
  ])('%j is refused: %s', (args, message) => {
    expect(refused(args)).toBe(message);
  });

  it('-h after -- is an argument', () => {
    expect(parse(['--', '-h'])['--']).toEqual(['-h']);
  });
});
