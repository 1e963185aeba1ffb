/**
 * The package as a user gets it: `npm pack` in a copy of the working tree (what a fresh clone
 * plus `npm ci` holds), `npm install -g <tarball>` into a temporary prefix with no TypeScript on
 * PATH, then `git repack-ts`, `git help repack-ts` and the library API from another directory, all
 * on the Node.js line running this file (CI runs it on each supported line: scripts/test-lines.mjs).
 * Installed twice: with optional dependencies (the default) and without them plus zstd-napi beside
 * the package (what Node 20 needs for zstd); the zstd commands are run through both.
 * Each API result is compared with what the installed command prints with --json, a TypeScript
 * consumer is checked with `strict`, `types: []` and no skipLibCheck against the installed
 * declarations, the man page against every command's -h, and every
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
  it('holds the code once (the bundle), its declarations, the launcher, the man page, LICENSE and CHANGELOG', () => {
    const entries = runOk('tar', ['-tzf', tarball], { cwd: work, env: gitEnv() })
      .split('\n')
      .filter((l) => l !== '' && !l.endsWith('/'));
    const unexpected = entries.filter(
      (e) =>
        !/^package\/(package\.json|README\.md|LICENSE|CHANGELOG\.md|bin\/git-repack-ts(\.js)?|docs\/git-repack-ts\.1|dist\/bundle\/[^/]+\.js|dist\/.+\.d\.ts)$/.test(
          e,
        ),
    );
    expect(unexpected).toEqual([]);
    for (const f of [
      'dist/bundle/index.js',
      'dist/bundle/main.js',
      // Each worker the sources start by `new URL('./<name>.js', import.meta.url)`, beside them.
      'dist/bundle/reencode-worker.js',
      'dist/bundle/pre-hash-worker.js',
      'dist/bundle/pack-writer-thread.js',
      'dist/index.d.ts',
      'bin/git-repack-ts',
      'docs/git-repack-ts.1',
      'LICENSE',
      'CHANGELOG.md',
    ])
      expect(entries).toContain(`package/${f}`);
    const installed = path.join(prefix, 'lib', 'node_modules', 'git-repack-ts');
    expect(fs.readFileSync(path.join(installed, 'LICENSE'), 'utf8')).toMatch(
      /^MIT License\n\nCopyright \(c\) 2026 the git-repack-ts authors\n/,
    );
    const pkg = JSON.parse(fs.readFileSync(path.join(installed, 'package.json'), 'utf8')) as {
      license: string;
      repository: { url: string };
      homepage: string;
      bugs: { url: string };
    };
    expect(pkg.license).toBe('MIT');
    expect(pkg.repository.url).toMatch(
      /^git\+https:\/\/github\.com\/git-repack-ts\/git-repack-ts\.git$/,
    );
    expect(pkg.homepage).toMatch(/^https:\/\/github\.com\/git-repack-ts\/git-repack-ts/);
    expect(pkg.bugs.url).toBe('https://github.com/git-repack-ts/git-repack-ts/issues');
    // The registry shows the README without the repository beside it: no link may be relative.
    const readme = fs.readFileSync(path.join(installed, 'README.md'), 'utf8');
    expect(
      [...readme.matchAll(/\]\(([^)]+)\)/g)]
        .map((m) => m[1])
        .filter((u) => !/^https?:\/\//.test(u!)),
    ).toEqual([]);
  });

  it("CHANGELOG's newest release is the package's version, dated, under an Unreleased section; the man page says the same version", () => {
    const installed = path.join(prefix, 'lib', 'node_modules', 'git-repack-ts');
    const log = fs.readFileSync(path.join(installed, 'CHANGELOG.md'), 'utf8');
    const headings = [...log.matchAll(/^## (.+)$/gm)].map((m) => m[1]!);
    expect(headings[0]).toBe('Unreleased');
    expect(headings[1]).toMatch(
      new RegExp(`^${VERSION.replaceAll('.', '\\.')} — \\d{4}-\\d{2}-\\d{2}$`),
    );
    const page = fs.readFileSync(path.join(installed, 'docs', 'git-repack-ts.1'), 'utf8');
    expect(page.split('\n')[0]).toContain(`"git-repack-ts ${VERSION}"`);
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
    // Where man is, git shows our page, and so does `--help` run directly where man's search
    // path does not hold it (the bundled page, with nothing of man's "No manual entry"); where
    // there is no man (a minimal CI image), `--help` prints the usage.
    const pager = { MANPAGER: 'cat', PAGER: 'cat', MANWIDTH: '80' };
    const launcher = path.join(
      prefix,
      'lib',
      'node_modules',
      'git-repack-ts',
      'bin',
      'git-repack-ts',
    );
    const elsewhere = userEnv({ ...pager, MANPATH: path.join(work, 'no-pages') }, work);
    const direct = run(launcher, ['verify', '--help'], { cwd: work, env: elsewhere });
    expect(direct.stderr).toBe('');
    expect(direct.status).toBe(0);
    if (run('sh', ['-c', 'command -v man'], { cwd: work, env: userEnv() }).status === 0) {
      const man = runOk('git', ['help', 'repack-ts'], { cwd: work, env: userEnv(pager) });
      expect(man).toContain('GIT-REPACK-TS(1)');
      expect(man).toMatch(/git-repack-ts\s+-\s+rewrite\s+packfiles/);
      expect(direct.stdout).toMatch(/git-repack-ts\s+-\s+rewrite\s+packfiles/);
    } else expect(direct.stdout).toMatch(/^usage: git repack-ts /);
  });

  it("describes in the man page every option that each command's -h lists", () => {
    const page = fs.readFileSync(
      path.join(prefix, 'share', 'man', 'man1', 'git-repack-ts.1'),
      'utf8',
    );
    const help = (args: string[]): string => {
      const r = run('git', ['repack-ts', ...args, '-h'], { cwd: work, env: userEnv() });
      expect({ args, status: r.status, stderr: r.stderr }).toEqual({
        args,
        status: 129,
        stderr: '',
      });
      return r.stdout;
    };
    const main = help([]);
    const commands = [
      ...new Set(
        [...main.matchAll(/^(?:usage:| {3}or:) git repack-ts ([a-z][a-z-]*)/gm)].map((m) => m[1]!),
      ),
    ];
    expect(commands.length).toBeGreaterThan(5);
    const undescribed: string[] = [];
    for (const command of ['repack', ...commands]) {
      // The main usage's lines for subcommands are checked with the subcommand's own -h.
      const text =
        command === 'repack'
          ? main.replace(/^(?:usage:| {3}or:) git repack-ts [a-z].*\n/gm, '')
          : help([command]);
      const options = helpOptions(text);
      expect({ command, options: options.length > 0 }).toEqual({ command, options: true });
      const section = manSection(page, command);
      for (const o of options)
        if (!new RegExp(`(?<![\\w-])${o}(?![\\w-])`).test(section))
          undescribed.push(`${command} ${o}`);
    }
    expect(undescribed).toEqual([]);
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

/**
 * The options a `-h` text names: every option of its usage lines, and the first column of its
 * option list (a description, which may cite git's own options, is not read).
 */
function helpOptions(text: string): string[] {
  const found = new Set<string>();
  for (const line of text.split('\n')) {
    let spec: string | undefined;
    if (/^(usage:| {3}or:)/.test(line)) spec = line;
    else if (/^ {4}-/.test(line)) spec = line.slice(4).split(/ {2,}/)[0];
    for (const m of (spec ?? '').matchAll(/(?<![\w<-])--?[A-Za-z][A-Za-z0-9-]*/g)) found.add(m[0]);
  }
  return [...found];
}

/** The page's text (roff source, fonts and escapes undone) where a command's options are described. */
function manSection(roff: string, command: string): string {
  const text = roff
    .replace(/\\f[BIRP]/g, '')
    .replace(/\\-/g, '-')
    .replace(/\\\(em/g, '—');
  const sections = text.split(/^\.SH /m);
  const named = (name: string): string => sections.find((s) => s.startsWith(name)) ?? '';
  if (command === 'repack') return named('OPTIONS') + named('ENVIRONMENT') + named('EXIT STATUS');
  // A subcommand's entry under SUBCOMMANDS: from its `.TP` to the next command's.
  const entries = named('SUBCOMMANDS').split(/^\.TP\n(?=[a-z][a-z-]*(?: start)?\b)/m);
  return entries.find((e) => e.startsWith(`${command}`)) ?? '';
}

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
    // A strict project with TypeScript 7's defaults: no global types of its own (`types: []`;
    // Buffer, NodeJS and process come from the package's reference to @types/node) and every
    // declaration checked (no skipLibCheck).
    fs.writeFileSync(
      path.join(consumer, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          strict: true,
          noUncheckedIndexedAccess: true,
          target: 'es2022',
          module: 'nodenext',
          moduleResolution: 'nodenext',
          types: [],
          skipLibCheck: false,
          outDir: 'out',
        },
        files: ['consumer.ts'],
      }),
    );
    const checked = run(process.execPath, [tsc, '-p', 'tsconfig.json'], {
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
