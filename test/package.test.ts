/**
 * The package as a user gets it: `npm pack` in a copy of the working tree (what a fresh clone
 * plus `npm ci` holds), `npm install -g <tarball>` into a temporary prefix with no TypeScript on
 * PATH, then `git repack-ts`, `git help repack-ts` and the library API from another directory, all
 * on the Node.js line running this file (CI runs it on each supported line: scripts/test-lines.mjs).
 * Installed twice: with optional dependencies (the default) and without them plus zstd-napi beside
 * the package (what Node 20 needs for zstd); the zstd commands are run through both.
 * Each API result is compared with what the installed command prints with --json, a TypeScript
 * consumer is checked with `tsc --strict` against the installed declarations, and every
 * repository touched is checked by `git fsck --strict` and its object set.
 */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { copyFixture, removeCopy } from './fixtures/index.js';
import { fsckStrict, gitEnv, gitOk, listPacks, objectSet } from './helpers/git.js';
import { BUILT_IN_ZSTD, zstdMissing } from './helpers/node-zstd.js';
import { runningLine, type NodeLine } from '../scripts/node-lines.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const VERSION = (
  JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string }
).version;

let work: string;
let prefix: string;
/** The second install: --omit=optional, and zstd-napi beside the package. */
let prefixNapi: string;
/** What npm printed for the first install. */
let npmSaid: string;
let consumer: string;
let tarball: string;
const copies: string[] = [];

interface Run {
  status: number;
  stdout: string;
  stderr: string;
}

function run(
  cmd: string,
  args: string[],
  opts: { cwd: string; env: Record<string, string | undefined> },
): Run {
  // A bound, so that a process that never ends is named (a synchronous spawn outlives vitest's timeout).
  const r = spawnSync(cmd, args, {
    cwd: opts.cwd,
    env: opts.env,
    encoding: 'utf8',
    maxBuffer: 1 << 28,
    timeout: 300_000,
    killSignal: 'SIGKILL',
  });
  if (r.error) throw new Error(`${cmd} ${args.join(' ')}: ${r.error.message}`);
  return { status: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
}

function runOk(
  cmd: string,
  args: string[],
  opts: { cwd: string; env: Record<string, string | undefined> },
): string {
  const r = run(cmd, args, opts);
  if (r.status !== 0)
    throw new Error(`${cmd} ${args.join(' ')} exited ${r.status}\n${r.stdout}\n${r.stderr}`);
  return r.stdout;
}

/** This node's directory, then PATH without any node_modules/.bin (npm test puts the clone's tsc there). */
function plainPath(): string {
  return [
    path.dirname(process.execPath),
    ...(process.env.PATH ?? '').split(':').filter((d) => d !== '' && !d.includes('node_modules')),
  ].join(':');
}

/** npm's environment: none of the npm_* variables of the `npm test` running us. */
function npmEnv(): Record<string, string | undefined> {
  const env: Record<string, string | undefined> = {};
  for (const [k, v] of Object.entries(process.env)) if (!/^npm_/i.test(k)) env[k] = v;
  return {
    ...env,
    PATH: plainPath(),
    npm_config_cache: path.join(work, 'npm-cache'),
    npm_config_update_notifier: 'false',
  };
}

/** The user's machine: the pinned git environment, the install prefix first on PATH, node and git, no TypeScript. */
function userEnv(
  extra: Record<string, string | undefined> = {},
  at = prefix,
): Record<string, string> {
  return gitEnv({ PATH: `${path.join(at, 'bin')}:${plainPath()}`, NODE_PATH: undefined, ...extra });
}

/** `git repack-ts …` as installed (in `at`), through git. */
function tool(args: string[], cwd: string, at = prefix): string {
  return runOk('git', ['repack-ts', ...args], { cwd, env: userEnv({}, at) });
}

function copy(name: Parameters<typeof copyFixture>[0]): string {
  const c = copyFixture(name);
  copies.push(c);
  return c;
}

beforeAll(() => {
  work = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'git-repack-ts-package-')));
  // The working tree as a clone has it (tracked and new files, nothing ignored), with the
  // development dependencies `npm ci` would install.
  const clone = path.join(work, 'clone');
  const files = runOk('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], {
    cwd: ROOT,
    env: gitEnv(),
  }).split('\0');
  for (const f of files) {
    // (node_modules is linked below; a work tree's own may be a symbolic link, which `node_modules/` does not ignore)
    if (f === '' || f === 'node_modules' || !fs.existsSync(path.join(ROOT, f))) continue;
    fs.mkdirSync(path.dirname(path.join(clone, f)), { recursive: true });
    fs.copyFileSync(path.join(ROOT, f), path.join(clone, f));
    fs.chmodSync(path.join(clone, f), fs.statSync(path.join(ROOT, f)).mode);
  }
  fs.symlinkSync(path.join(ROOT, 'node_modules'), path.join(clone, 'node_modules'));
  expect(fs.existsSync(path.join(clone, 'dist'))).toBe(false);
  const name = runOk('npm', ['pack', '--silent', '--pack-destination', work], {
    cwd: clone,
    env: npmEnv(),
  })
    .trim()
    .split('\n')
    .pop()!;
  tarball = path.join(work, name);

  prefix = path.join(work, 'prefix');
  // No registry: the package has no dependency to fetch, optional or not (zstd-napi is an
  // optional peer: never installed for it), and nothing to build.
  const install = (at: string, ...opts: string[]): string => {
    const r = run(
      'npm',
      ['install', '-g', '--prefix', at, '--offline', '--no-audit', '--no-fund', ...opts, tarball],
      { cwd: work, env: { ...npmEnv(), PATH: userEnv({}, at).PATH } },
    );
    if (r.status !== 0)
      throw new Error(`npm install ${opts.join(' ')} exited ${r.status}\n${r.stdout}\n${r.stderr}`);
    return r.stdout + r.stderr;
  };
  npmSaid = install(prefix);
  // zstd-napi beside the package, as `npm install -g zstd-napi` leaves it (built by this clone's
  // npm ci, from source; a user's npm takes its prebuilt binary): where Node 20 finds zstd.
  prefixNapi = path.join(work, 'prefix-napi');
  install(prefixNapi, '--omit=optional');
  fs.cpSync(
    fs.realpathSync(path.join(ROOT, 'node_modules', 'zstd-napi')),
    path.join(prefixNapi, 'lib', 'node_modules', 'zstd-napi'),
    { recursive: true },
  );

  // A project of the user's, elsewhere, depending on the installed package (what `npm link
  // git-repack-ts` makes), with the @types/node a TypeScript user has.
  consumer = path.join(work, 'consumer');
  fs.mkdirSync(path.join(consumer, 'node_modules', '@types'), { recursive: true });
  fs.writeFileSync(
    path.join(consumer, 'package.json'),
    JSON.stringify({ type: 'module', private: true }),
  );
  fs.symlinkSync(
    path.join(prefix, 'lib', 'node_modules', 'git-repack-ts'),
    path.join(consumer, 'node_modules', 'git-repack-ts'),
  );
  fs.symlinkSync(
    path.join(ROOT, 'node_modules', '@types', 'node'),
    path.join(consumer, 'node_modules', '@types', 'node'),
  );
}, 240_000);

afterAll(() => {
  for (const c of copies) removeCopy(c);
  if (work !== undefined && process.env.REPACK_TS_KEEP_COPIES !== '1')
    fs.rmSync(work, { recursive: true, force: true });
});

describe('the packed tarball', () => {
  it('holds only run-time files: the launcher, compiled JavaScript with its declarations, the man page', () => {
    const entries = runOk('tar', ['-tzf', tarball], { cwd: work, env: gitEnv() })
      .split('\n')
      .filter((l) => l !== '' && !l.endsWith('/'));
    const unexpected = entries.filter(
      (e) =>
        !/^package\/(package\.json|README\.md|bin\/git-repack-ts(\.js)?|docs\/git-repack-ts\.1|dist\/.+\.(js|d\.ts))$/.test(
          e,
        ),
    );
    expect(unexpected).toEqual([]);
    for (const f of [
      'dist/index.js',
      'dist/index.d.ts',
      'dist/cli/main.js',
      'bin/git-repack-ts',
      'docs/git-repack-ts.1',
    ])
      expect(entries).toContain(`package/${f}`);
  });

  it('installs as a copy without TypeScript and runs as a git subcommand, with its man page', () => {
    const installed = path.join(prefix, 'lib', 'node_modules', 'git-repack-ts');
    expect(fs.lstatSync(installed).isSymbolicLink()).toBe(false);
    expect(fs.existsSync(path.join(installed, 'node_modules'))).toBe(false);
    // Nothing on this PATH could have built it, and nothing of TypeScript is installed with it.
    expect(run('sh', ['-c', 'command -v tsc'], { cwd: work, env: userEnv() }).status).not.toBe(0);
    expect(
      run(
        process.execPath,
        ['-e', "import('typescript').then(() => process.exit(0), () => process.exit(3))"],
        { cwd: installed, env: userEnv() },
      ).status,
    ).toBe(3);

    expect(tool(['--version'], work)).toBe(`git-repack-ts version ${VERSION}\n`);
    // Where man looks for the pages of commands in <prefix>/bin (man-db's PATH rule).
    expect(
      fs.readFileSync(path.join(prefix, 'share', 'man', 'man1', 'git-repack-ts.1'), 'utf8'),
    ).toMatch(/^\.TH GIT-REPACK-TS 1 /);
    // A machine without man (a minimal CI image) cannot show any page; where man is, git shows ours.
    if (run('sh', ['-c', 'command -v man'], { cwd: work, env: userEnv() }).status !== 0) return;
    const man = runOk('git', ['help', 'repack-ts'], {
      cwd: work,
      env: userEnv({ MANPAGER: 'cat', PAGER: 'cat', MANWIDTH: '80' }),
    });
    expect(man).toContain('GIT-REPACK-TS(1)');
    expect(man).toMatch(/git-repack-ts\s+-\s+rewrite\s+packfiles/);
  });

  it('installs alike with optional dependencies or without: nothing else installed, no install script, nothing said of one; on this line', () => {
    // npm 11 warned on every install: "1 package has install scripts not yet covered by allowScripts: zstd-napi".
    expect(npmSaid).not.toMatch(/install script|allowScripts/i);
    expect(npmSaid).toMatch(/added 1 package/);
    expect(fs.readdirSync(path.join(prefix, 'lib', 'node_modules'))).toEqual(['git-repack-ts']);
    expect(fs.readdirSync(path.join(prefixNapi, 'lib', 'node_modules')).sort()).toEqual([
      'git-repack-ts',
      'zstd-napi',
    ]);
    // The launcher runs the first node on PATH: the one running these tests.
    expect(runOk('node', ['--version'], { cwd: work, env: userEnv() }).trim()).toBe(
      process.version,
    );
  });

  it('zstd: node:zlib where this line has it, zstd-napi beside the package, else one fatal line saying what to install', () => {
    const line = runningLine() as NodeLine;
    expect(Object.keys(BUILT_IN_ZSTD), `Node.js ${line} is not a supported line`).toContain(
      String(line),
    );
    const repo = copy('basic');
    const objects = objectSet(repo);
    for (const [at, works] of [
      [prefix, BUILT_IN_ZSTD[line]],
      [prefixNapi, true],
    ] as const) {
      const file = path.join(work, `${path.basename(at)}.zpack`);
      const r = run('git', ['repack-ts', '-q', '--zstd', '-o', file], {
        cwd: repo,
        env: userEnv({}, at),
      });
      if (!works) {
        expect(r).toEqual({
          status: 128,
          stdout: '',
          stderr: `fatal: ${zstdMissing(process.version)}\n`,
        });
        continue;
      }
      expect({ at, r }).toEqual({ at, r: { status: 0, stdout: '', stderr: '' } });
      expect(tool(['verify', '-v', file], repo, at)).toContain(`${file}: ok`);
      expect(
        (
          JSON.parse(tool(['walk', '--json', '--read-blobs', file], repo, at)) as {
            missing: number;
          }
        ).missing,
      ).toBe(0);
      const target = path.join(work, `${path.basename(at)}-target`);
      gitOk(['init', '-q', '--bare', target], { cwd: work });
      tool(['zstd-import', '-q', file], target, at);
      expect(objectSet(target)).toEqual(objects);
      expect(fsckStrict(target).status).toBe(0);
    }
  });
});

/** A TypeScript script of the user's: type-checked with --strict, then run. */
const CONSUMER_TS = `
import { inspect, repack, verify, hashObject, walk, GitRepackError } from 'git-repack-ts';
import type { ErrorCode, InspectReport, RepackOptions, RepackResult, VerifyReport, WalkResult } from 'git-repack-ts';

const [repo, pack, file] = process.argv.slice(2) as [string, string, string];
const phases = new Set<string>();
const options: RepackOptions = { graphCompression: 0, onProgress: (phase: string) => void phases.add(phase) };

const inspected: InspectReport = await inspect(repo);
const verified: VerifyReport = await verify(pack);
const walked: WalkResult = await walk(repo);
const repacked: RepackResult = await repack(repo, options);
const id: string = await hashObject(file, { write: true, repository: repo });
let code: ErrorCode | undefined;
try {
  await repack(repo + '/no-such-directory');
} catch (e) {
  if (e instanceof GitRepackError) code = e.code;
}

/** Never called: the declarations must refuse these. */
export function typesAreChecked(r: RepackResult, e: GitRepackError): void {
  // @ts-expect-error a level is -1..9, 'auto' or 'keep'
  void repack(repo, { graphCompression: 'fast' });
  // @ts-expect-error no such option
  void repack(repo, { graphcompression: 0 });
  // @ts-expect-error the result is typed
  const n: string = r.partitions[0]!.stats.bytesOut;
  // @ts-expect-error codes are a closed set
  const c: ErrorCode = 'no-such-code';
  const where: [string | undefined, number | undefined, string | undefined] = [e.file, e.offset, e.objectId];
  void [n, c, where];
}

process.stdout.write(JSON.stringify({ inspected, verified, walked, repacked, id, code, phases: [...phases] }) + '\\n');
`;

describe('the installed library API, from another directory', () => {
  it('resolves to what the command prints with --json, and leaves repositories git fsck --strict accepts', () => {
    const a = copy('basic');
    const b = copy('basic');
    const before = objectSet(a);
    const pack = listPacks(a)[0]!;
    const file = path.join(consumer, 'hello.txt');
    fs.writeFileSync(file, 'hello from a maintenance script\n');

    // The command on the same repository first (these read only), on the twin for the rewrite.
    const cliInspect = JSON.parse(tool(['inspect', '--json'], a)) as unknown;
    const cliVerify = JSON.parse(tool(['verify', '--json', pack], a)) as unknown;
    const cliWalk = JSON.parse(tool(['walk', '--json'], a)) as Record<string, unknown>;
    const cliRepack = JSON.parse(tool(['--graph-compression=0', '--json'], b)) as unknown;
    const cliId = tool(['hash-object', '-w', file], b).trim();

    fs.writeFileSync(path.join(consumer, 'consumer.ts'), CONSUMER_TS);
    const tsc = path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
    const flags = [
      '--strict',
      '--noUncheckedIndexedAccess',
      '--target',
      'es2022',
      '--module',
      'nodenext',
      '--moduleResolution',
      'nodenext',
      '--types',
      'node',
      '--outDir',
      'out',
    ];
    const checked = run(process.execPath, [tsc, ...flags, 'consumer.ts'], {
      cwd: consumer,
      env: userEnv(),
    });
    expect(checked.stdout + checked.stderr).toBe('');
    expect(checked.status).toBe(0);

    const r = run(process.execPath, ['out/consumer.js', a, pack, file], {
      cwd: consumer,
      env: userEnv(),
    });
    expect(r.stderr).toBe(''); // the library wrote nothing of its own
    expect(r.status).toBe(0);
    const api = JSON.parse(r.stdout) as {
      inspected: unknown;
      verified: unknown;
      walked: Record<string, unknown>;
      repacked: unknown;
      id: string;
      code: string;
      phases: string[];
    };

    expect(api.inspected).toStrictEqual(cliInspect);
    expect(api.verified).toStrictEqual(cliVerify);
    expect({ ...api.walked, ms: 0 }).toStrictEqual({ ...cliWalk, ms: 0 });
    expect(api.repacked).toStrictEqual(cliRepack);
    expect(api.id).toBe(cliId);
    expect(api.id).toBe(gitOk(['hash-object', file], { cwd: work }).trim());
    expect(api.code).toBe('not-a-repository');
    expect(api.phases.length).toBeGreaterThan(0);

    for (const repo of [a, b]) expect(fsckStrict(repo)).toEqual({ status: 0, output: '' });
    const written = `${api.id} blob ${fs.statSync(file).size}`;
    expect(objectSet(a)).toEqual([...before, written].sort());
    expect(objectSet(b)).toEqual(objectSet(a));
    expect(listPacks(a).map((p) => path.basename(p))).toEqual(
      listPacks(b).map((p) => path.basename(p)),
    );
  }, 180_000); // tsc checking the declarations with @types/node takes 7 s of CPU alone; 41 s in all at load 20 on 2 cores

  it('runs the maintenance script of docs/api.md over every maintenance.repo', () => {
    const doc = fs.readFileSync(path.join(ROOT, 'docs', 'api.md'), 'utf8');
    const script = /<!-- maintenance\.mjs -->\n```js\n([\s\S]*?)\n```/.exec(doc)?.[1];
    expect(script).toBeDefined();
    fs.writeFileSync(path.join(consumer, 'maintenance.mjs'), script!);
    const repos = [copy('multi-pack'), path.join(work, 'not-a-repository'), copy('ref-delta')];
    fs.mkdirSync(repos[1]!);
    const objects = repos.map((r, i) => (i === 1 ? [] : objectSet(r)));
    const global = path.join(work, 'gitconfig');
    for (const r of repos)
      gitOk(['config', '--file', global, '--add', 'maintenance.repo', r], { cwd: work });

    const r = run(process.execPath, ['maintenance.mjs'], {
      cwd: consumer,
      env: userEnv({ GIT_CONFIG_GLOBAL: global }),
    });
    expect(r.stderr).toMatch(new RegExp(`^${repos[1]}: not-a-repository: .+\\n$`));
    expect(r.status).toBe(1);
    const out = r.stdout.split('\n').filter((l) => l !== '');
    expect(out).toHaveLength(2);
    for (const [line, repo] of [
      [out[0]!, repos[0]!],
      [out[1]!, repos[2]!],
    ] as const) {
      const m =
        /^(.+): (\d+) commits and trees stored, (\d+) -> (\d+) bytes, walk of (\d+) commits \d+ -> \d+ ms$/.exec(
          line,
        );
      expect(m?.[1]).toBe(repo);
      expect(Number(m![2])).toBeGreaterThan(0);
      // What it reports is what is on disk, and the walk saw every commit git sees.
      expect(Number(m![4])).toBe(listPacks(repo).reduce((n, p) => n + fs.statSync(p).size, 0));
      expect(Number(m![5])).toBe(
        Number(gitOk(['rev-list', '--all', '--count'], { cwd: repo }).trim()),
      );
      expect(fsckStrict(repo)).toEqual({ status: 0, output: '' });
    }
    expect(objectSet(repos[0]!)).toEqual(objects[0]);
    expect(objectSet(repos[2]!)).toEqual(objects[2]);
  });
});
