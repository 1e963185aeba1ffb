/**
 * `git repack-ts hash-object` against `git hash-object` (2.39): same ids, same output, same exit
 * codes, for a table of inputs and options, with and without -w, SHA-1 and SHA-256, inside and
 * outside a repository. What -w writes is read back with git (cat-file, verify-pack, fsck --strict).
 * The CLI runs as `git repack-ts` (the compiled bin on PATH), so `git -c` reaches it as git passes it.
 */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Readable } from 'node:stream';
import { constants, deflateSync, inflateSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HASH_OBJECT_USAGE, parseHashObjectArgs } from '../src/cli/hash-object.js';
import type { Io } from '../src/cli/io.js';
import { main } from '../src/cli/main.js';
import { ParallelDeflate, zlibHeader } from '../src/codec/parallel-deflate.js';
import { adler32 } from '../src/codec/zlib.js';
import { attrsAreIdentity, unquoteCStyle } from '../src/commands/hash-object/hash-object.js';
import { fsyncLooseObjects, parseFsyncComponents } from '../src/commands/hash-object/config.js';
import { parsePlainConfig, readPlainConfig as readPlain } from '../src/store/config-files.js';
import { GitConfig, parseConfigList } from '../src/store/config.js';
import { SHA1, SHA256 } from '../src/hash/algo.js';
import { ContentSizeError, ObjectHasher, hashFdSync, hashObject } from '../src/hash/hash-object.js';
import { git, gitEnv, gitOk, lines } from './helpers/git.js';
import { Prng } from './helpers/prng.js';
import { BIN } from './helpers/tool.js';

let root: string;
let binDir: string;

beforeAll(() => {
  root = fs.mkdtempSync(path.join(fs.realpathSync(os.tmpdir()), 'repack-ts-hash-object-'));
  // `git repack-ts` finds the compiled bin as git-repack-ts on PATH, like an installed one.
  binDir = path.join(root, 'bin');
  fs.mkdirSync(binDir);
  fs.symlinkSync(BIN, path.join(binDir, 'git-repack-ts'));
});

afterAll(() => {
  if (process.env.REPACK_TS_KEEP_COPIES !== '1') fs.rmSync(root, { recursive: true, force: true });
});

interface Run {
  status: number;
  stdout: Buffer;
  stderr: string;
}

interface RunOpts {
  cwd: string;
  input?: string | Buffer;
  /** Options for git itself, before the command (`-c k=v`). */
  pre?: string[];
  env?: Record<string, string | undefined>;
  /** A file to use as standard input (a regular file, not a pipe). */
  stdinFile?: string;
  /** Run ours as its own process even when it does not read stdin. */
  subprocess?: boolean;
}

function pathEnv(): string {
  return `${binDir}${path.delimiter}${path.dirname(process.execPath)}${path.delimiter}${process.env.PATH ?? ''}`;
}

/** `git -c a=b -c c=d` as git hands it to a subcommand (GIT_CONFIG_PARAMETERS). */
function configParameters(pre: string[] | undefined): string | undefined {
  const kv: string[] = [];
  for (let i = 0; pre && i < pre.length; i++) {
    if (pre[i] !== '-c') throw new Error(`unsupported git option ${pre[i]}`);
    const [k, ...v] = pre[++i]!.split('=');
    kv.push(`'${k}'='${v.join('=')}'`);
  }
  return kv.length ? kv.join(' ') : undefined;
}

/** Does this command line read standard input (then it runs as a process of its own)? */
function readsStdin(args: string[], o: RunOpts): boolean {
  return (
    o.input !== undefined || o.stdinFile !== undefined || args.some((a) => /^--(no-)?std/.test(a))
  );
}

async function run(which: 'git' | 'ours', args: string[], o: RunOpts): Promise<Run> {
  if (which === 'ours' && !readsStdin(args, o) && !o.subprocess) return runInProcess(args, o);
  const env = gitEnv({ PATH: pathEnv(), ...o.env });
  const cmd = which === 'git' ? ['hash-object'] : ['repack-ts', 'hash-object'];
  const fd = o.stdinFile !== undefined ? fs.openSync(o.stdinFile, 'r') : undefined;
  try {
    const r = spawnSync('git', [...(o.pre ?? []), ...cmd, ...args], {
      cwd: o.cwd,
      env,
      ...(fd !== undefined ? { stdio: [fd, 'pipe', 'pipe'] } : { input: o.input ?? '' }),
      maxBuffer: 1 << 30,
    });
    // A command that exits without reading its input makes the write fail with EPIPE: not an error here.
    if (r.error && !((r.error as NodeJS.ErrnoException).code === 'EPIPE' && r.status !== null))
      throw r.error;
    return { status: r.status ?? -1, stdout: r.stdout, stderr: r.stderr.toString('utf8') };
  } finally {
    if (fd !== undefined) fs.closeSync(fd);
  }
}

/**
 * The CLI's `main` in this process, with the environment `git repack-ts` would give it: node's
 * start-up (most of a run's time) is paid once. Commands that read stdin run as processes.
 */
async function runInProcess(args: string[], o: RunOpts): Promise<Run> {
  const params = configParameters(o.pre);
  const env = gitEnv({
    PATH: pathEnv(),
    ...o.env,
    ...(params !== undefined ? { GIT_CONFIG_PARAMETERS: params } : {}),
  });
  let out = '';
  let err = '';
  const io: Io = {
    out: (t) => void (out += t),
    err: (t) => void (err += t),
    stderrIsTty: false,
    env,
    cwd: o.cwd,
  };
  const status = await main(['hash-object', ...args], io);
  return { status, stdout: Buffer.from(out, 'latin1'), stderr: err };
}

/** git's usage text, as our command spells its name. */
function asOurs(text: string): string {
  return text
    .replace(/git hash-object/g, 'git repack-ts hash-object')
    .replace(/^ {23}\[/gm, ' '.repeat(33) + '[');
}

/** Runs both and expects the same stdout, stderr and exit code; returns ours. */
async function same(args: string[], o: RunOpts): Promise<Run> {
  const g = await run('git', args, o);
  const ours = await run('ours', args, o);
  const what = `hash-object ${args.join(' ')} in ${o.cwd}`;
  expect(ours.stderr, what).toBe(asOurs(g.stderr));
  expect(asOurs(ours.stdout.toString('latin1')), what).toBe(asOurs(g.stdout.toString('latin1')));
  expect(ours.status, what).toBe(g.status);
  return ours;
}

function write(p: string, content: string | Buffer): string {
  fs.mkdirSync(path.dirname(p), { recursive: true });
  fs.writeFileSync(p, content);
  return p;
}

function initRepo(name: string, format: 'sha1' | 'sha256' = 'sha1', bare = false): string {
  const dir = path.join(root, name);
  gitOk([
    'init',
    '-q',
    '--template=',
    ...(bare ? ['--bare'] : []),
    `--object-format=${format}`,
    dir,
  ]);
  gitOk(['config', 'gc.auto', '0'], { cwd: dir });
  return dir;
}

const prng = new Prng(1007);
function randomBytes(n: number): Buffer {
  const b = Buffer.allocUnsafe(n);
  for (let i = 0; i < n; i += 4) b.writeUInt32LE(prng.u32(), Math.min(i, n - 4));
  return n < 4 ? Buffer.from([1, 2, 3].slice(0, n)) : b;
}

/** The inputs every table runs over (names relative to the work tree). */
function populate(dir: string): string[] {
  const files: [string, string | Buffer][] = [
    ['empty', ''],
    ['one', 'x'],
    ['lf.txt', 'one\ntwo\n'],
    ['crlf.txt', 'one\r\ntwo\r\n'],
    ['nul.bin', Buffer.from([0, 1, 0, 2, 0])],
    ['random.bin', randomBytes(70_000)],
    ['big.txt', 'line of text\n'.repeat(5000)],
    ['sub/dir/deep.txt', 'deep\n'],
    ['name with spaces', 'spaces\n'],
  ];
  for (const [n, c] of files) write(path.join(dir, n), c);
  return files.map(([n]) => n);
}

const TREE_SHA1 = Buffer.concat([
  Buffer.from('100644 a\0'),
  Buffer.alloc(20, 0xab),
  Buffer.from('40000 d\0'),
  Buffer.alloc(20, 0xcd),
]);
const TREE_SHA256 = Buffer.concat([Buffer.from('100644 a\0'), Buffer.alloc(32, 0xab)]);
const EMPTY_TREE_SHA1 = '4b825dc642cb6eb9a060e54bf8d69288fbee4904';
const COMMIT = `tree ${EMPTY_TREE_SHA1}\nparent ${'1'.repeat(40)}\nauthor A <a@b> 1 +0000\ncommitter A <a@b> 1 +0000\n\nmsg\n`;
const TAG = `object ${EMPTY_TREE_SHA1}\ntype tree\ntag v1\ntagger A <a@b> 1 +0000\n\nmsg\n`;

describe('hash-object: options parsed as git parse-options does', () => {
  // Each of these ends in parse_options (or in hash-object's own usage checks) in git.
  const exits: string[][] = [
    ['-h'],
    ['-h', 'f'],
    ['-wh'],
    ['--help-all'],
    ['--bogus'],
    ['--no-bogus'],
    ['-x'],
    ['-wx'],
    ['-é'],
    ['---x'],
    ['-t'],
    ['--path'],
    ['--std'],
    ['--n'],
    ['--no'],
    ['--stdin=1'],
    ['--no-stdin=1'],
    ['--literally=yes'],
    ['--lit=3'],
    ['-stdin'],
    ['-no-filters'],
  ];
  it.each(exits.map((a) => [a.join(' '), a]))('%s', async (_, args) => {
    const g = await run('git', args as string[], { cwd: root });
    const p = parseHashObjectArgs(args as string[], HASH_OBJECT_USAGE);
    expect(p.kind).toBe('exit');
    if (p.kind !== 'exit') return;
    expect(p.code).toBe(g.status);
    expect(p.stdout).toBe(asOurs(g.stdout.toString()));
    expect(p.stderr).toBe(asOurs(g.stderr));
  });

  const ok: [string[], Partial<ReturnType<typeof okArgs>>][] = [
    [['-t', 'commit', 'f'], { type: 'commit', files: ['f'] }],
    [['-tcommit'], { type: 'commit' }],
    [['-wtblob', 'f'], { write: true, type: 'blob', files: ['f'] }],
    [['-t', '-w'], { type: '-w' }],
    [['--path=x', 'f'], { path: 'x', files: ['f'] }],
    [['--path', 'x'], { path: 'x' }],
    [['--pa=x'], { path: 'x' }],
    [['--path=x', '--no-path'], { path: undefined }],
    [['--no-f'], { noFilters: true }],
    [['--no-filters', '--filters'], { noFilters: false }],
    [['--no-filters', '--fil'], { noFilters: false }],
    [['--stdin', '--stdin'], { stdin: 2 }],
    [['--stdin', '--no-stdin'], { stdin: 0 }],
    [['--stdin-p'], { stdinPaths: true }],
    [['--lit'], { literally: true }],
    [['f', '-w', 'g'], { write: true, files: ['f', 'g'] }],
    [['--', '-w', '--stdin'], { files: ['-w', '--stdin'] }],
    [['--end-of-options', '-w'], { files: ['-w'] }],
    [['-'], { files: ['-'] }],
  ];
  function okArgs(args: string[]) {
    const p = parseHashObjectArgs(args);
    if (p.kind !== 'ok') throw new Error(`${args.join(' ')}: ${p.stderr}`);
    return p.args;
  }
  it.each(ok.map(([a, want]) => [a.join(' '), a, want]))('%s', async (_, args, want) => {
    expect(okArgs(args as string[])).toMatchObject(want as object);
  });
});

describe('hash-object: ids and messages identical to git', () => {
  it.each([['sha1'], ['sha256']] as const)(
    'files, options and types in a %s repository',
    async (format) => {
      const repo = initRepo(`ids-${format}`, format);
      const files = populate(repo);
      await same(files, { cwd: repo });
      await same(['--no-filters', ...files], { cwd: repo });
      await same(['--literally', ...files], { cwd: repo });
      await same(['--literally', '-t', 'foo', ...files], { cwd: repo });
      await same(['--path=x.bin', 'crlf.txt', 'random.bin'], { cwd: repo });
      await same(['--stdin', 'one', 'lf.txt'], { cwd: repo, input: 'from stdin\n' });
      await same(['--stdin'], { cwd: repo, stdinFile: path.join(repo, 'random.bin') });
      await same(['--stdin-paths'], {
        cwd: repo,
        input: 'one\n"name with spaces"\n"sub/dir/deep.txt"trailing\ncrlf.txt\r\nrandom.bin',
      });
      // -t with valid and invalid content (the commit's parent is not looked up, only parsed).
      write(path.join(repo, 'tree.bin'), format === 'sha1' ? TREE_SHA1 : TREE_SHA256);
      write(
        path.join(repo, 'commit.txt'),
        format === 'sha1' ? COMMIT : COMMIT.replace(/[0-9a-f]{40}/g, (h) => h + h.slice(0, 24)),
      );
      write(
        path.join(repo, 'tag.txt'),
        format === 'sha1' ? TAG : TAG.replace(/[0-9a-f]{40}/g, (h) => h + h.slice(0, 24)),
      );
      await same(['-t', 'tree', 'tree.bin', 'empty'], { cwd: repo });
      await same(['-t', 'commit', 'commit.txt'], { cwd: repo });
      await same(['-t', 'tag', 'tag.txt'], { cwd: repo });
      for (const t of ['commit', 'tree', 'tag']) {
        expect((await same(['-t', t, 'lf.txt'], { cwd: repo })).status).toBe(128);
      }
    },
  );

  it('format checks: git prints the same errors, and remembers types across files', async () => {
    const repo = initRepo('format');
    const bad: Record<string, string | Buffer> = {
      c1: `tree ${'0'.repeat(40)}\n`,
      c2: `tree ${EMPTY_TREE_SHA1}\nparent ${EMPTY_TREE_SHA1}\n`,
      c3: `tree ${EMPTY_TREE_SHA1}\nparent ${EMPTY_TREE_SHA1}\n\n`,
      c4: `tree ${'G'.repeat(40)}\n\n`,
      c5: `tree ${EMPTY_TREE_SHA1.toUpperCase()}\n\n`,
      t1: `object ${EMPTY_TREE_SHA1}\ntype tree\ntag x\n`,
      t2: `object ${EMPTY_TREE_SHA1}\ntype blob\ntag x\n`,
      t3: `object ${EMPTY_TREE_SHA1}\ntype bogus\ntag x\n`,
      t4: `object ${EMPTY_TREE_SHA1}\ntype tree\ntagx\n`,
      r1: Buffer.from('100644 \0' + 'x'.repeat(20)),
      r2: Buffer.from('1006a4 a\0' + 'x'.repeat(20)),
      r3: Buffer.from(' 100644 a\0' + 'x'.repeat(20)),
      r4: Buffer.from('100644 a\0' + 'x'.repeat(19)),
    };
    for (const [n, c] of Object.entries(bad)) write(path.join(repo, n), c);
    for (const n of ['c1', 'c2', 'c3', 'c4', 'c5']) await same(['-t', 'commit', n], { cwd: repo });
    await same(['-t', 'tag', 't1', 't2'], { cwd: repo });
    await same(['-t', 'tag', 't3'], { cwd: repo });
    await same(['-t', 'tag', 't4'], { cwd: repo });
    for (const n of ['r1', 'r2', 'r3', 'r4']) await same(['-t', 'tree', n], { cwd: repo });
    await same(['--literally', '-t', 'commit', 'c1', 'r1'], { cwd: repo });
  });

  it('errors and exit codes', async () => {
    const repo = initRepo('errors');
    populate(repo);
    for (const args of [
      ['missing'],
      ['one', 'missing', 'lf.txt'],
      ['.'],
      ['--no-filters', '.'],
      ['--literally', '.'],
      ['--path=zz', 'sub'],
      ['-t', 'bogus', 'one'],
      ['-t', 'bogus'],
      ['-t', 'bogus', 'missing'],
      ['--literally', '-t', 'bogus', 'one'],
      ['-t', ''],
      ['-t', '', 'one'],
      ['--stdin', '--stdin'],
      ['--stdin', '--stdin-paths'],
      ['--stdin-paths', 'one'],
      ['--stdin-paths', '--path=x'],
      ['--path=x', '--no-filters', 'one'],
      ['-', '--', '-w'],
      ['/dev/null'],
    ]) {
      await same(args, { cwd: repo });
    }
    await same(['--stdin-paths'], { cwd: repo, input: '"one\n' });
    await same(['--stdin-paths'], { cwd: repo, input: 'one\n\nlf.txt\n' });
    await same(['--stdin'], { cwd: repo, input: 'x', pre: ['-c', 'core.compression=12'] });
    await same(['-w', 'one'], { cwd: repo, pre: ['-c', 'core.looseCompression=10'] });
    await same(['-w', 'one'], { cwd: repo, pre: ['-c', 'pack.compression=-2'] });
  });

  it('from a subdirectory: arguments are relative to it, --stdin-paths to the top', async () => {
    const repo = initRepo('subdir');
    populate(repo);
    write(path.join(repo, 'sub/one'), 'the other one\n');
    const cwd = path.join(repo, 'sub');
    await same(['one', '../lf.txt', 'dir/deep.txt', 'missing'], { cwd });
    await same(['--stdin-paths'], { cwd, input: 'one\nsub/one\n' });
    await same(['--path=zz', '.'], { cwd });
  });

  it('outside any repository: SHA-1, and -w refused', async () => {
    const dir = path.join(root, 'nongit', 'work');
    populate(dir);
    const env = { GIT_CEILING_DIRECTORIES: path.join(root, 'nongit') };
    await same(['one', 'crlf.txt', 'random.bin'], { cwd: dir, env });
    await same(['--stdin'], { cwd: dir, env, input: 'abc' });
    await same(['-w', 'one'], { cwd: dir, env });
    await same(['one'], { cwd: dir, env: { GIT_DIR: path.join(root, 'no-such-dir') } });
    await same(['-w', 'one'], { cwd: dir, env: { GIT_DIR: path.join(root, 'no-such-dir') } });
  });
});

describe('hash-object: content conversion is git’s, never guessed', () => {
  it('core.autocrlf, attributes, filters, ident, --stdin --path, --stdin-paths', async () => {
    const repo = initRepo('convert');
    const files = populate(repo);
    write(path.join(repo, 'id.txt'), 'x $Id$ y\r\n');
    write(path.join(repo, 'crlf.bin'), 'a\r\nb\r\n');
    write(path.join(repo, 'mixed.txt'), 'a\nb\r\n');
    write(path.join(repo, 'sub/x.dat'), 'a\r\n');
    const all = [...files, 'id.txt', 'crlf.bin', 'mixed.txt', 'sub/x.dat'];
    for (const v of ['true', 'input', 'false'])
      await same(all, { cwd: repo, pre: ['-c', `core.autocrlf=${v}`] });
    await same(['mixed.txt'], {
      cwd: repo,
      pre: ['-c', 'core.autocrlf=true', '-c', 'core.safecrlf=true'],
    });
    write(
      path.join(repo, '.gitattributes'),
      '*.txt text\n*.bin -text\nid.txt ident\n*.dat filter=tr\n',
    );
    write(path.join(repo, 'sub/.gitattributes'), 'x.dat eol=crlf\n');
    await same(all, { cwd: repo });
    await same(all, { cwd: repo, pre: ['-c', 'core.autocrlf=true'] });
    await same(['sub/x.dat', 'crlf.bin'], { cwd: repo, pre: ['-c', 'filter.tr.clean=tr a b'] });
    await same(['sub/x.dat'], {
      cwd: repo,
      pre: ['-c', 'filter.tr.clean=false', '-c', 'filter.tr.required=true'],
    });
    await same(['--path=foo.txt', 'crlf.bin'], { cwd: repo });
    await same(['--path=foo.bin', 'crlf.txt'], { cwd: repo });
    await same(['--stdin', '--path=foo.txt'], { cwd: repo, input: 'a\r\n' });
    await same(['--stdin'], { cwd: repo, input: 'a\r\n' });
    await same(['--stdin-paths'], {
      cwd: repo,
      input: 'crlf.txt\ncrlf.bin\nsub/x.dat\n',
      pre: ['-c', 'filter.tr.clean=tr a b'],
    });
    await same(['--no-filters', ...all], { cwd: repo, pre: ['-c', 'core.autocrlf=true'] });
    // A path outside the work tree still gets the top-level attributes in git.
    const outside = write(path.join(root, 'elsewhere', 'a.txt'), 'a\r\n');
    await same([outside, path.join(repo, 'crlf.txt')], { cwd: repo });
    // working-tree-encoding: git converts (or dies); either way it is git's answer.
    fs.appendFileSync(path.join(repo, '.gitattributes'), 'crlf.bin working-tree-encoding=UTF-16\n');
    await same(['crlf.bin'], { cwd: repo });
  });

  it('a .gitattributes that only the index has does not apply (hash-object reads no index)', async () => {
    const repo = initRepo('index-attrs');
    write(path.join(repo, 'crlf.txt'), 'a\r\n');
    write(path.join(repo, '.gitattributes'), '*.txt text\n');
    gitOk(['add', '.gitattributes'], { cwd: repo });
    fs.rmSync(path.join(repo, '.gitattributes'));
    await same(['crlf.txt'], { cwd: repo });
  });

  it('a bare repository (info/attributes), and one named by --git-dir / GIT_DIR', async () => {
    const bare = initRepo('bare-attrs.git', 'sha1', true);
    write(path.join(bare, 'info', 'attributes'), '*.txt text\n');
    write(path.join(bare, 'a.txt'), 'a\r\n');
    write(path.join(bare, 'a.bin'), 'a\r\n');
    await same(['a.txt', 'a.bin'], { cwd: bare });
    await same(['-w', 'a.txt', 'a.bin'], { cwd: bare });
    const work = path.join(root, 'git-dir-work');
    write(path.join(work, 'a.txt'), 'a\r\n');
    await same(['a.txt'], { cwd: work, env: { GIT_DIR: bare } });
    const g = await run('git', ['a.txt'], { cwd: work, env: { GIT_DIR: bare } });
    let out = '';
    let err = '';
    const io: Io = {
      out: (t) => void (out += t),
      err: (t) => void (err += t),
      stderrIsTty: false,
      env: gitEnv(),
      cwd: root,
    };
    expect(await main(['-C', work, '--git-dir', bare, 'hash-object', 'a.txt'], io)).toBe(0);
    expect(err).toBe('');
    expect(out).toBe(g.stdout.toString());
  });

  it('outside a repository: core.autocrlf and the global attributes file apply', async () => {
    const dir = path.join(root, 'nongit-conv', 'work');
    write(path.join(dir, 'a.txt'), 'a\r\n');
    write(path.join(dir, '.gitattributes'), '*.txt -text\n');
    const attrs = write(path.join(root, 'nongit-conv', 'attributes'), '*.txt text\n');
    const env = { GIT_CEILING_DIRECTORIES: path.join(root, 'nongit-conv') };
    await same(['a.txt'], { cwd: dir, env });
    await same(['a.txt'], { cwd: dir, env, pre: ['-c', 'core.autocrlf=true'] });
    await same(['a.txt'], { cwd: dir, env, pre: ['-c', `core.attributesFile=${attrs}`] });
  });

  it('git.git-style attributes: eol=lf/crlf text converted here, auto and mixed left to git, in batches', async () => {
    const repo = initRepo('eol-batch');
    write(
      path.join(repo, '.gitattributes'),
      '*.sh text eol=lf\n*.bat text eol=crlf\n*.c diff=cpp\n*.auto text=auto\n*.txt text\nsub/* -text\n',
    );
    write(path.join(repo, 'sub/.gitattributes'), '*.sh eol=crlf\n');
    const contents: [string, string | Buffer][] = [
      ['lf', 'a\nb\n'],
      ['crlf', 'a\r\nb\r\n'],
      ['mixed', 'a\nb\r\nc'],
      ['lonecr', 'a\rb\r\n\r'],
      ['nulcr', Buffer.from([0, 13, 10, 13, 10, 0])],
      ['empty', ''],
    ];
    const names: string[] = [];
    const exts = ['sh', 'bat', 'c', 'auto', 'txt'];
    // Every kind of content under every attribute, in the work tree's top and in sub/ ...
    for (const [kind, c] of contents) {
      for (const ext of exts) {
        for (const dir of ['', 'sub/'])
          names.push(write(path.join(repo, `${dir}${kind}.${ext}`), c).slice(repo.length + 1));
      }
    }
    // ... amid enough plain files that the batch is shared with a second thread.
    for (let i = 0; i < 520; i++)
      names.splice(
        (i * 7) % names.length,
        0,
        write(path.join(repo, `p/${i}.${exts[i % 5]}`), `${i}\n`).slice(repo.length + 1),
      );
    const list = write(path.join(root, 'eol-batch.paths'), names.join('\n') + '\n');
    // More than 512 paths: the second thread takes part; a regular file and a pipe as input.
    await same(['--stdin-paths'], { cwd: repo, stdinFile: list });
    await same(['--stdin-paths'], { cwd: repo, input: names.join('\n') + '\n' });
    for (const pre of [
      ['-c', 'core.autocrlf=true'],
      ['-c', 'core.autocrlf=input'],
      ['-c', 'core.eol=crlf'],
    ]) {
      await same(['--stdin-paths'], { cwd: repo, stdinFile: list, pre });
    }
    const special = names.filter((n) => !n.startsWith('p/'));
    await same(special, { cwd: repo });
    // -w: git's safecrlf warnings for CRLF content and eol=crlf paths come from git itself.
    await same(['-w', ...special.filter((n) => /^(lf|crlf|mixed)\.(sh|bat|auto)$/.test(n))], {
      cwd: repo,
    });
    // Text paths (eol=lf, eol=crlf, text) with or without CRs never need git: no delegated run.
    const trace = path.join(root, 'eol-batch.trace');
    const text = names.filter((n) => /\.(sh|bat|txt)$/.test(n) && !n.startsWith('sub/'));
    expect(text.filter((n) => /crlf|mixed|lonecr/.test(n)).length).toBe(9);
    const r = await run('ours', ['--stdin-paths'], {
      cwd: repo,
      input: text.join('\n') + '\n',
      env: { GIT_TRACE: trace },
    });
    expect(r.stdout.toString()).toBe(
      gitOk(['hash-object', '--stdin-paths'], { cwd: repo, input: text.join('\n') + '\n' }),
    );
    expect(fs.readFileSync(trace, 'utf8')).not.toMatch(/built-in: git hash-object/);
    // "set" and "unset" spelled as values are strings to git (CRLF kept), which check-attr cannot show.
    write(path.join(repo, 'spelled/.gitattributes'), '*.txt text=set\n*.sh text=unset eol=lf\n');
    const spelled = ['spelled/a.txt', 'spelled/a.sh', 'crlf.txt'];
    for (const n of spelled) write(path.join(repo, n), 'a\r\nb\r\n');
    await same(['--stdin-paths'], { cwd: repo, input: spelled.join('\n') + '\n' });
  }, 240_000);

  it('--stdin-paths: content without a CR asks git for attributes only where ident, an encoding, a filter or a macro may apply', async () => {
    const repo = initRepo('cr-free');
    const utf16 = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('text\n', 'utf16le')]);
    const files: [string, string | Buffer][] = [
      ['id.txt', 'x $Id: 0123 $ y\n'],
      ['enc.txt', utf16],
      ['f.dat', 'aaa\n'],
      ['sub/plain.sh', 'echo $Id: 1 $\n'],
      ['crlf.sh', 'a\r\nb\r\n'],
    ];
    for (const [n, c] of files) write(path.join(repo, n), c);
    const list = files.map(([n]) => n).join('\n') + '\n';
    const trace = path.join(root, 'cr-free.trace');
    const checkAttrRuns = async (o: Partial<RunOpts> = {}): Promise<number> => {
      fs.rmSync(trace, { force: true });
      await run('ours', ['--stdin-paths'], {
        cwd: repo,
        input: list,
        ...o,
        env: { ...o.env, GIT_TRACE: trace },
      });
      return (fs.readFileSync(trace, 'utf8').match(/built-in: git check-attr/g) ?? []).length;
    };
    // Line endings alone: git is asked about the one path with a CR, not the others.
    write(path.join(repo, '.gitattributes'), '*.sh text eol=lf\n*.txt -text\n');
    await same(['--stdin-paths'], { cwd: repo, input: list });
    expect(await checkAttrRuns()).toBe(1);
    expect(await checkAttrRuns({ input: list.replace('crlf.sh\n', '') })).toBe(0);
    // Each of these changes content that has no CR (or may): git's answer for every path.
    const attrs = [
      'id.txt ident\n',
      'enc.txt working-tree-encoding=UTF-16\n',
      '[attr]tagged ident\nid.txt tagged\n',
      'sub/* -ident\n',
    ];
    for (const a of attrs) {
      write(path.join(repo, '.gitattributes'), a);
      await same(['--stdin-paths'], { cwd: repo, input: list });
    }
    write(path.join(repo, '.gitattributes'), '*.dat filter=tr\n');
    await same(['--stdin-paths'], {
      cwd: repo,
      input: list,
      pre: ['-c', 'filter.tr.clean=tr a b'],
    });
    expect(await checkAttrRuns({ pre: ['-c', 'filter.tr.clean=tr a b'] })).toBe(1);
    // A filter nobody configured changes nothing: only the CR path is asked about.
    expect(await checkAttrRuns()).toBe(1);
    // In a subdirectory's attributes file, in info/attributes, in the global file.
    fs.rmSync(path.join(repo, '.gitattributes'));
    write(path.join(repo, 'sub/.gitattributes'), 'plain.sh ident\n');
    await same(['--stdin-paths'], { cwd: repo, input: list });
    fs.rmSync(path.join(repo, 'sub/.gitattributes'));
    write(path.join(repo, '.git/info/attributes'), 'id.txt ident\n');
    await same(['--stdin-paths'], { cwd: repo, input: list });
    fs.rmSync(path.join(repo, '.git/info/attributes'));
    const global = write(path.join(root, 'cr-free.attributes'), 'id.txt ident\n');
    await same(['--stdin-paths'], {
      cwd: repo,
      input: list,
      pre: ['-c', `core.attributesFile=${global}`],
    });
  });

  it('files on the command line: a batch that asks git about CR content only, and opens a named pipe once', async () => {
    const repo = initRepo('cmdline-batch');
    write(path.join(repo, '.gitattributes'), '*.sh text eol=lf\n');
    write(path.join(repo, 'sub/.gitattributes'), '*.id ident\n');
    write(path.join(repo, 'a.sh'), 'echo $Id: 1 $\n');
    write(path.join(repo, 'b.txt'), 'x\n');
    write(path.join(repo, 'c.sh'), 'a\r\nb\r\n');
    write(path.join(repo, 'sub/d.id'), 'x $Id: 2 $\n');
    await same(['a.sh', 'b.txt', 'c.sh', 'sub/d.id'], { cwd: repo });
    await same(['a.sh', 'missing', 'b.txt'], { cwd: repo });
    await same(['../b.txt', 'd.id', '../c.sh'], { cwd: path.join(repo, 'sub') });
    const trace = path.join(root, 'cmdline-batch.trace');
    const checkAttrRuns = async (files: string[]): Promise<number> => {
      fs.rmSync(trace, { force: true });
      await run('ours', files, { cwd: repo, env: { GIT_TRACE: trace } });
      // No git run at all leaves no trace file.
      const text = fs.existsSync(trace) ? fs.readFileSync(trace, 'utf8') : '';
      return (text.match(/built-in: git check-attr/g) ?? []).length;
    };
    expect(await checkAttrRuns(['a.sh', 'b.txt'])).toBe(0);
    expect(await checkAttrRuns(['a.sh', 'b.txt', 'c.sh'])).toBe(1);
    expect(await checkAttrRuns(['a.sh', 'sub/d.id'])).toBe(1);
    // A writer blocked on opening a FIFO is let go by any open: the pipe must be opened once, in order.
    const fifo = path.join(repo, 'fifo');
    expect(spawnSync('mkfifo', [fifo]).status).toBe(0);
    const writer = spawnSync(
      'sh',
      ['-c', `(printf 'piped\\n' > '${fifo}' &) ; exec git repack-ts hash-object b.txt fifo`],
      {
        cwd: repo,
        env: gitEnv({ PATH: pathEnv() }),
        timeout: 30_000,
      },
    );
    expect(writer.stdout.toString()).toBe(
      gitOk(['hash-object', 'b.txt'], { cwd: repo }) +
        gitOk(['hash-object', '--stdin'], { cwd: repo, input: 'piped\n' }),
    );
  });

  it('attribute reports that could be strings are read both ways', async () => {
    const none = () => false;
    const rep = (o: Record<string, string>) => new Map(Object.entries(o));
    expect(attrsAreIdentity(rep({}), false, none)).toBe(true);
    expect(attrsAreIdentity(rep({}), true, none)).toBe(false);
    expect(attrsAreIdentity(rep({}), 'input', none)).toBe(false);
    expect(attrsAreIdentity(rep({ text: 'unset' }), false, none)).toBe(true);
    // `text=unset` (a string) leaves autocrlf in charge: not provably unchanged.
    expect(attrsAreIdentity(rep({ text: 'unset' }), true, none)).toBe(false);
    expect(attrsAreIdentity(rep({ text: 'set' }), false, none)).toBe(false);
    expect(attrsAreIdentity(rep({ text: 'auto' }), false, none)).toBe(false);
    expect(attrsAreIdentity(rep({ eol: 'lf' }), false, none)).toBe(false);
    // `-text` ignores eol=, but a string "unset" would not: not provable.
    expect(attrsAreIdentity(rep({ text: 'unset', eol: 'lf' }), false, none)).toBe(false);
    expect(attrsAreIdentity(rep({ crlf: 'input' }), false, none)).toBe(false);
    expect(attrsAreIdentity(rep({ ident: 'set' }), false, none)).toBe(false);
    expect(attrsAreIdentity(rep({ ident: 'unset' }), false, none)).toBe(true);
    expect(attrsAreIdentity(rep({ filter: 'lfs' }), false, none)).toBe(true);
    expect(attrsAreIdentity(rep({ filter: 'lfs' }), false, (n) => n === 'lfs')).toBe(false);
    expect(attrsAreIdentity(rep({ filter: 'set' }), false, (n) => n === 'set')).toBe(false);
    expect(attrsAreIdentity(rep({ 'working-tree-encoding': 'unspecified' }), false, none)).toBe(
      false,
    );
    expect(attrsAreIdentity(rep({ diff: 'set', merge: 'unset' }), false, none)).toBe(true);
  });

  it('unquote_c_style', async () => {
    const u = (s: string) => unquoteCStyle(Buffer.from(s, 'latin1'))?.toString('latin1');
    expect(u('"a b"')).toBe('a b');
    expect(u('"a\\tb\\n\\\\\\""rest')).toBe('a\tb\n\\"');
    expect(u('"\\303\\251"')).toBe('\xc3\xa9');
    expect(u('"\\400"')).toBe(undefined);
    expect(u('"\\q"')).toBe(undefined);
    expect(u('"open')).toBe(undefined);
  });
});

interface Written {
  loose: string[];
  packs: string[];
}

function objectFiles(repo: string, bare = false): Written {
  const objects = path.join(repo, bare ? '' : '.git', 'objects');
  const loose: string[] = [];
  for (const d of fs.readdirSync(objects)) {
    if (!/^[0-9a-f]{2}$/.test(d)) continue;
    for (const f of fs.readdirSync(path.join(objects, d))) loose.push(d + f);
  }
  const packDir = path.join(objects, 'pack');
  const packs = fs.existsSync(packDir)
    ? fs.readdirSync(packDir).filter((f) => f.endsWith('.pack'))
    : [];
  return { loose: loose.sort(), packs: packs.sort() };
}

describe('hash-object: configuration read without git config when it is plain', () => {
  function gitOutput(gitDir: string | undefined, env: Record<string, string>): Buffer {
    const where = gitDir ? { GIT_DIR: gitDir } : { GIT_CEILING_DIRECTORIES: '/' };
    return spawnSync('git', ['config', '--list', '-z'], {
      env: { ...env, ...where },
      cwd: gitDir ?? '/',
    }).stdout;
  }
  const listed = (c: GitConfig | undefined) => c?.keys().map((k) => [k, c.getAll(k)]);
  const gitList = (gitDir: string | undefined, env: Record<string, string>) =>
    listed(new GitConfig(parseConfigList(gitOutput(gitDir, env))));
  const readPlainConfig = (commonDir: string | undefined, env: Record<string, string>) =>
    readPlain({
      cwd: commonDir ?? '/',
      repo:
        commonDir === undefined
          ? undefined
          : { gitDir: commonDir, commonDir, worktreeConfig: false },
      env,
    });
  const ours = (commonDir: string | undefined, env: Record<string, string>) =>
    listed(readPlainConfig(commonDir, env));

  it('plain files: the same entries as git config --list, in git’s order (global, then the repository)', () => {
    const repo = initRepo('plain-config');
    const globalFile = write(
      path.join(root, 'plain-config.global'),
      [
        '# comment',
        '[user]',
        '\tname =  A  B\tC  ',
        '[Alias "Sub.Dir"]',
        '  Lg = log --oneline=x',
        '[flags]',
        '\tBare',
        '\tempty =',
        '[core]\r',
        '\tcompression = 3\r',
        ';other comment',
        '',
      ].join('\n'),
    );
    fs.appendFileSync(
      path.join(repo, '.git', 'config'),
      '[core]\n\tlooseCompression = 5\n[flags]\n\tbare = false\n',
    );
    const env = { ...gitEnv(), GIT_CONFIG_GLOBAL: globalFile, GIT_CONFIG_NOSYSTEM: '1' };
    expect(ours(path.join(repo, '.git'), env)).toEqual(gitList(path.join(repo, '.git'), env));
    // Bare keys (null) and empty values ('') apart, as git prints them.
    const parsed = new Map<string, (string | null)[]>();
    expect(
      parsePlainConfig(
        fs.readFileSync(globalFile, 'utf8') +
          fs.readFileSync(path.join(repo, '.git', 'config'), 'utf8'),
        parsed,
      ),
    ).toBe(true);
    expect([...parsed]).toEqual([...parseConfigList(gitOutput(path.join(repo, '.git'), env))]);
    expect(parsed.get('flags.bare')).toEqual([null, 'false']);
    expect(ours(undefined, env)).toEqual(gitList(undefined, env));
    // XDG and ~/.gitconfig, in that order, when GIT_CONFIG_GLOBAL is not set.
    const home = path.join(root, 'plain-config-home');
    write(path.join(home, '.gitconfig'), '[core]\n\tcompression = 4\n');
    write(path.join(home, '.config', 'git', 'config'), '[core]\n\tcompression = 2\n');
    const homeEnv = { ...gitEnv(), HOME: home, GIT_CONFIG_NOSYSTEM: '1' };
    delete (homeEnv as Record<string, string | undefined>).GIT_CONFIG_GLOBAL;
    delete (homeEnv as Record<string, string | undefined>).XDG_CONFIG_HOME;
    expect(ours(path.join(repo, '.git'), homeEnv)).toEqual(
      gitList(path.join(repo, '.git'), homeEnv),
    );
  });

  it('anything else is left to git: quotes, escapes, comments after values, includes, git -c, a system file', () => {
    const repo = initRepo('unplain-config');
    const env = { ...gitEnv(), GIT_CONFIG_GLOBAL: '/dev/null', GIT_CONFIG_NOSYSTEM: '1' };
    const cfg = path.join(repo, '.git', 'config');
    const base = fs.readFileSync(cfg, 'utf8');
    expect(ours(path.join(repo, '.git'), env)).toBeDefined();
    for (const extra of [
      '[a]\n\tb = "q"\n',
      '[a]\n\tb = x\\\n y\n',
      '[a]\n\tb = x # c\n',
      '[include]\n\tpath = x\n',
      '[a.B]\n\tc = 1\n',
      '[a] b = 1\n',
      '[a "x\\"y"]\n\tb = 1\n',
      '[a]\n\tb = 1 ; c\n',
    ]) {
      fs.writeFileSync(cfg, base + extra);
      expect(readPlainConfig(path.join(repo, '.git'), env), extra).toBeUndefined();
    }
    fs.writeFileSync(cfg, 'b = 1\n' + base);
    expect(readPlainConfig(path.join(repo, '.git'), env)).toBeUndefined();
    fs.writeFileSync(cfg, base);
    expect(
      readPlainConfig(path.join(repo, '.git'), { ...env, GIT_CONFIG_PARAMETERS: "'a.b'='1'" }),
    ).toBeUndefined();
    // Without GIT_CONFIG_SYSTEM the system file is wherever git was built to look (here one of
    // the places it may be, <prefix>/etc/gitconfig of GIT_EXEC_PATH, holds one): git is asked.
    const prefix = path.join(root, 'unplain-prefix');
    write(path.join(prefix, 'etc', 'gitconfig'), '[a]\n\tb = 1\n');
    const noSystemPath: Record<string, string> = {
      ...env,
      GIT_CONFIG_NOSYSTEM: '0',
      GIT_EXEC_PATH: path.join(prefix, 'libexec', 'git-core'),
    };
    delete noSystemPath.GIT_CONFIG_SYSTEM;
    expect(readPlainConfig(path.join(repo, '.git'), noSystemPath)).toBeUndefined();
    // GIT_CONFIG_SYSTEM names it: read like any other file.
    const named = { ...env, GIT_CONFIG_NOSYSTEM: '0', GIT_CONFIG_SYSTEM: cfg };
    expect(ours(path.join(repo, '.git'), named)).toEqual(gitList(path.join(repo, '.git'), named));
  });
});

describe('hash-object -w', () => {
  it("an object directory that cannot hold the object: git's two lines, exit 128, nothing written", async () => {
    const ours = initRepo('w-ours-notdir', 'sha1');
    const theirs = initRepo('w-git-notdir', 'sha1');
    for (const r of [ours, theirs]) write(path.join(r, 'f'), 'hello\n');
    const id = gitOk(['hash-object', 'f'], { cwd: theirs }).trim();
    // objects/ce is a file: creating the temporary file in it fails with ENOTDIR in both.
    for (const r of [ours, theirs]) write(path.join(r, '.git', 'objects', id.slice(0, 2)), '');
    const tree = (): string[] =>
      (fs.readdirSync(path.join(ours, '.git', 'objects'), { recursive: true }) as string[]).sort();
    const before = tree();
    const a = await run('ours', ['-w', 'f'], { cwd: ours });
    const b = await run('git', ['-w', 'f'], { cwd: theirs });
    expect(tree()).toEqual(before);
    expect(b.stderr).toContain('unable to create temporary file');
    expect([a.status, a.stderr, a.stdout.toString()]).toEqual([
      b.status,
      b.stderr,
      b.stdout.toString(),
    ]);
    expect(a.status).toBe(128);
  });

  it.each([['sha1'], ['sha256']] as const)(
    'loose and bulk-checkin objects in a %s repository, as git places them',
    async (format) => {
      const ours = initRepo(`w-ours-${format}`, format);
      const theirs = initRepo(`w-git-${format}`, format);
      const files = populate(ours);
      for (const f of files) write(path.join(theirs, f), fs.readFileSync(path.join(ours, f)));
      // 3 MiB: several deflate blocks, above a 1 MiB bigFileThreshold (a pack) and below the default (loose).
      const big = randomBytes(3 << 20);
      write(path.join(ours, 'big.bin'), big);
      write(path.join(theirs, 'big.bin'), big);
      const all = [...files, 'big.bin'];
      const a = await run('ours', ['-w', ...all], { cwd: ours });
      const b = await run('git', ['-w', ...all], { cwd: theirs });
      expect(a.stderr).toBe('');
      expect(a.stdout.toString()).toBe(b.stdout.toString());
      expect(objectFiles(ours)).toEqual(objectFiles(theirs));
      const ids = lines(a.stdout.toString());
      for (let i = 0; i < all.length; i++) {
        expect(gitOk(['cat-file', '-t', ids[i]!], { cwd: ours }).trim()).toBe('blob');
        expect(gitOk(['cat-file', '-s', ids[i]!], { cwd: ours }).trim()).toBe(
          String(fs.statSync(path.join(ours, all[i]!)).size),
        );
        expect(
          git(['cat-file', '-p', ids[i]!], { cwd: ours }).stdout.equals(
            fs.readFileSync(path.join(ours, all[i]!)),
          ),
        ).toBe(true);
      }
      const loose = path.join(ours, '.git', 'objects', ids[0]!.slice(0, 2), ids[0]!.slice(2));
      expect(fs.statSync(loose).mode & 0o777).toBe(0o444);

      // Above core.bigFileThreshold: a pack of its own, with an .idx v2; git's -w then finds it.
      const pre = ['-c', 'core.bigFileThreshold=1m'];
      const bigId = ids[all.length - 1]!;
      fs.rmSync(path.join(ours, '.git', 'objects', bigId.slice(0, 2), bigId.slice(2)));
      const c = await run('ours', ['-w', 'big.bin', 'big.txt'], { cwd: ours, pre });
      expect(c.stderr).toBe('');
      expect(lines(c.stdout.toString())).toEqual([
        ids[all.length - 1],
        ids[all.indexOf('big.txt')],
      ]);
      const packs = objectFiles(ours).packs;
      expect(packs).toHaveLength(1);
      const pack = path.join(ours, '.git', 'objects', 'pack', packs[0]!);
      const v = lines(gitOk(['verify-pack', '-v', pack], { cwd: ours }));
      expect(v[0]).toMatch(new RegExp(`^${ids[all.length - 1]} blob\\s+${big.length} `));
      expect(fs.statSync(pack).mode & 0o777).toBe(0o444);
      expect(git(['cat-file', '-p', ids[all.length - 1]!], { cwd: ours }).stdout.equals(big)).toBe(
        true,
      );
      // git's own -w now finds the blob in our pack and writes nothing.
      const d = await run('git', ['-w', 'big.bin'], { cwd: ours, pre });
      expect(d.status).toBe(0);
      expect(objectFiles(ours).packs).toEqual(packs);
      const fsck = git(['fsck', '--strict', '--no-dangling'], { cwd: ours });
      expect(fsck.status, fsck.stderr).toBe(0);
    },
  );

  it('an object that exists is not rewritten (loose: freshened; packed: left alone)', async () => {
    const repo = initRepo('w-exists');
    write(path.join(repo, 'f'), 'content\n');
    const id = (await run('ours', ['-w', 'f'], { cwd: repo })).stdout.toString().trim();
    const file = path.join(repo, '.git', 'objects', id.slice(0, 2), id.slice(2));
    const old = new Date(2001, 1, 1);
    fs.utimesSync(file, old, old);
    const ino = fs.statSync(file).ino;
    expect((await run('ours', ['-w', 'f'], { cwd: repo })).stdout.toString().trim()).toBe(id);
    expect(fs.statSync(file).ino).toBe(ino);
    expect(fs.statSync(file).mtimeMs).toBeGreaterThan(old.getTime());
    // Once packed, -w touches the pack and writes no loose copy (git's freshen_packed_object).
    gitOk(['pack-objects', '-q', '.git/objects/pack/pack'], { cwd: repo, input: id + '\n' });
    gitOk(['prune-packed'], { cwd: repo });
    expect(objectFiles(repo).loose).toEqual([]);
    await run('ours', ['-w', 'f'], { cwd: repo });
    expect(objectFiles(repo).loose).toEqual([]);
    // bulk check-in: present in a pack, so no new pack.
    const before = objectFiles(repo).packs;
    await run('ours', ['-w', 'f'], { cwd: repo, pre: ['-c', 'core.bigFileThreshold=1'] });
    expect(objectFiles(repo).packs).toEqual(before);
  });

  it('--stdin, --literally and -t write loose objects whatever their size, like git', async () => {
    const ours = initRepo('w-kinds-ours');
    const theirs = initRepo('w-kinds-git');
    const big = randomBytes(2 << 20);
    const pre = ['-c', 'core.bigFileThreshold=1k'];
    for (const repo of [ours, theirs]) {
      write(path.join(repo, 'big'), big);
      write(path.join(repo, 'commit.txt'), COMMIT);
    }
    const cases: string[][] = [
      ['--stdin'],
      ['--literally', '-t', 'weird', 'big'],
      ['-t', 'commit', 'commit.txt'],
      ['--literally', 'big'],
    ];
    for (const args of cases) {
      const a = await run('ours', ['-w', ...args], { cwd: ours, pre, input: big });
      const b = await run('git', ['-w', ...args], { cwd: theirs, pre, input: big });
      expect(a.stderr).toBe(b.stderr);
      expect(a.stdout.toString()).toBe(b.stdout.toString());
    }
    expect(objectFiles(ours)).toEqual(objectFiles(theirs));
    expect(objectFiles(ours).packs).toEqual([]);
    const weird = lines(
      (await run('git', ['--literally', '-t', 'weird', 'big'], { cwd: ours })).stdout.toString(),
    )[0]!;
    const raw = inflateSync(
      fs.readFileSync(path.join(ours, '.git', 'objects', weird.slice(0, 2), weird.slice(2))),
    );
    expect(raw.subarray(0, raw.indexOf(0)).toString()).toBe(`weird ${big.length}`);
  });

  it('honours core.looseCompression, pack.compression and core.sharedRepository', async () => {
    const repo = initRepo('w-config');
    const text = Buffer.from('compressible text\n'.repeat(200_000));
    write(path.join(repo, 'text'), text);
    const id = (
      await run('ours', ['-w', 'text'], { cwd: repo, pre: ['-c', 'core.looseCompression=0'] })
    ).stdout
      .toString()
      .trim();
    const file = path.join(repo, '.git', 'objects', id.slice(0, 2), id.slice(2));
    const stored = fs.statSync(file).size;
    expect(stored).toBeGreaterThan(text.length);
    expect(fs.readFileSync(file).subarray(0, 2)).toEqual(zlibHeader(0));
    fs.rmSync(file, { force: true });
    await run('ours', ['-w', 'text'], { cwd: repo, pre: ['-c', 'core.compression=9'] });
    expect(fs.statSync(file).size).toBeLessThan(text.length / 50);
    expect(fs.readFileSync(file).subarray(0, 2)).toEqual(zlibHeader(9));
    fs.rmSync(file, { force: true });
    await run('ours', ['-w', 'text'], {
      cwd: repo,
      pre: ['-c', 'core.bigFileThreshold=1k', '-c', 'pack.compression=0'],
    });
    const pack = objectFiles(repo).packs[0]!;
    expect(fs.statSync(path.join(repo, '.git', 'objects', 'pack', pack)).size).toBeGreaterThan(
      text.length,
    );

    // core.sharedRepository: the same modes as git's on the new fan-out directory and file.
    const ours = initRepo('w-shared-ours');
    const theirs = initRepo('w-shared-git');
    for (const r of [ours, theirs]) {
      gitOk(['config', 'core.sharedRepository', 'group'], { cwd: r });
      write(path.join(r, 'f'), 'shared\n');
    }
    const sid = (await run('ours', ['-w', 'f'], { cwd: ours })).stdout.toString().trim();
    await run('git', ['-w', 'f'], { cwd: theirs });
    const mode = (r: string, rel: string) =>
      fs.statSync(path.join(r, '.git', 'objects', rel)).mode & 0o7777;
    expect(mode(ours, sid.slice(0, 2))).toBe(mode(theirs, sid.slice(0, 2)));
    expect(mode(ours, `${sid.slice(0, 2)}/${sid.slice(2)}`)).toBe(
      mode(theirs, `${sid.slice(0, 2)}/${sid.slice(2)}`),
    );
  });

  it('conversion with -w: git writes the converted object', async () => {
    const repo = initRepo('w-convert');
    write(path.join(repo, 'crlf.txt'), 'a\r\nb\r\n');
    const id = (
      await run('ours', ['-w', 'crlf.txt'], { cwd: repo, pre: ['-c', 'core.autocrlf=true'] })
    ).stdout
      .toString()
      .trim();
    expect(id).toBe(gitOk(['hash-object', '--stdin'], { cwd: repo, input: 'a\nb\n' }).trim());
    expect(gitOk(['cat-file', '-p', id], { cwd: repo })).toBe('a\nb\n');
  });
});

describe('hash-object -w: durability as git 2.39 configures it', () => {
  it('core.fsync and core.fsyncObjectFiles: loose objects fsynced only when named (cache.h, config.c)', () => {
    // FSYNC_COMPONENTS_DEFAULT leaves loose objects out; names match as prefixes (strncmp), "-" removes.
    const loose = (v: string) => (parseFsyncComponents(v) & 1) !== 0;
    const table: [string, boolean][] = [
      ['loose-object', true],
      ['objects', true],
      ['committed', true],
      ['added', true],
      ['all', true],
      // (current & ~negative) | positive: a component named positively wins over its negation.
      ['all,-loose-object', true],
      ['-loose-object', false],
      ['pack', false],
      ['reference, index', false],
      ['loose', true],
      ['none', false],
      // "none" resets only the base set (and only as the last word); named components are added after.
      ['loose-object,none', true],
      ['objects,-loose-object', true],
    ];
    for (const [v, want] of table) expect(loose(v), v).toBe(want);
    const cfg = (entries: Record<string, string>) =>
      new GitConfig(new Map(Object.entries(entries).map(([k, v]) => [k, [v]])));
    expect(fsyncLooseObjects(cfg({}))).toBe(false);
    expect(fsyncLooseObjects(cfg({ 'core.fsyncobjectfiles': 'true' }))).toBe(true);
    expect(fsyncLooseObjects(cfg({ 'core.fsync': 'objects' }))).toBe(true);
    expect(fsyncLooseObjects(cfg({ 'core.fsync': 'pack' }))).toBe(false);
  });

  it("with and without fsync the objects are git's", async () => {
    const repo = initRepo('w-fsync');
    write(path.join(repo, 'a.txt'), 'text\n'.repeat(300_000));
    for (const pre of [
      [],
      ['-c', 'core.fsync=loose-object'],
      ['-c', 'core.fsyncObjectFiles=true'],
    ]) {
      fs.rmSync(path.join(repo, '.git', 'objects'), { recursive: true, force: true });
      fs.mkdirSync(path.join(repo, '.git', 'objects', 'pack'), { recursive: true });
      const r = await run('ours', ['-w', 'a.txt'], { cwd: repo, pre, subprocess: true });
      const id = r.stdout.toString().trim();
      expect(id).toBe(gitOk(['hash-object', 'a.txt'], { cwd: repo }).trim());
      gitOk(['fsck', '--strict'], { cwd: repo });
      expect(gitOk(['cat-file', '-s', id], { cwd: repo }).trim()).toBe(String(5 * 300_000));
    }
  });
});

describe('hash-object: large files', () => {
  it('a 3 GiB sparse file is hashed in constant memory', async () => {
    const file = path.join(root, 'sparse.bin');
    const size = 3 * 1024 ** 3 + 12345;
    const fd = fs.openSync(file, 'w');
    fs.ftruncateSync(fd, size);
    // Some data so that it is not all zeros: at 0, across 2 GiB (int32 territory) and at the end.
    const marks: [number, Buffer][] = [
      [0, Buffer.from('start')],
      [2 ** 31 - 2, Buffer.from('2GiB')],
      [size - 3, Buffer.from('end')],
    ];
    for (const [at, b] of marks) fs.writeSync(fd, b, 0, b.length, at);
    fs.closeSync(fd);
    const repo = initRepo('sparse');
    const timeBin = fs.existsSync('/usr/bin/time') ? '/usr/bin/time' : undefined;
    const rssFile = path.join(root, 'sparse.rss');
    const argv = [BIN, 'hash-object', file];
    const r = spawnSync(
      timeBin ?? process.execPath,
      timeBin ? ['-f', '%M', '-o', rssFile, process.execPath, ...argv] : argv,
      {
        cwd: repo,
        env: gitEnv(),
      },
    );
    expect(r.stderr.toString()).toBe('');
    // Computed independently when this test was written, and agreed on by both
    // `git -c core.bigFileThreshold=8g hash-object` and `(printf 'blob %d\0' N; cat f) | sha1sum`:
    // hashing 3 GiB twice per run would double the test's time.
    expect(r.stdout.toString()).toBe('137f538d9fd9b5f2e2ff6d20b633bd5d3a49923e\n');
    if (timeBin) {
      const maxRssKb = Number(fs.readFileSync(rssFile, 'utf8').trim().split('\n').pop());
      expect(maxRssKb).toBeLessThan(100 * 1024);
    }
    fs.rmSync(file);
  }, 120_000);

  it('a file that shrinks or grows while it is hashed is refused', async () => {
    const file = write(path.join(root, 'changing'), 'twelve bytes');
    const fd = fs.openSync(file, 'r');
    try {
      expect(hashFdSync(fd, 'blob', 12, SHA1, 'changing').toString('hex')).toBe(
        gitOk(['hash-object', file], { cwd: root }).trim(),
      );
      // As if fstat had said 20 (it shrank) or 5 (it grew) before the reads.
      const failure = (size: number): ContentSizeError => {
        try {
          hashFdSync(fd, 'blob', size, SHA1, 'changing');
        } catch (e) {
          if (e instanceof ContentSizeError) return e;
        }
        throw new Error('not refused');
      };
      expect(failure(20).details).toEqual(['short read while indexing changing']);
      expect(failure(5).details[0]).toMatch(/grew/);
      expect(failure(5).message).toBe('Unable to hash changing');
    } finally {
      fs.closeSync(fd);
    }
  });
});

describe('hashObject (library)', () => {
  it('streams with a known size, buffers without, and checks the size', async () => {
    const content = randomBytes(300_000);
    const want = gitOk(['hash-object', '--stdin'], { cwd: root, input: content }).trim();
    const chunks = [
      content.subarray(0, 1),
      content.subarray(1, 100_000),
      content.subarray(100_000),
    ];
    expect(
      (await hashObject(Readable.from(chunks), 'blob', { size: content.length })).toString('hex'),
    ).toBe(want);
    expect((await hashObject(chunks, 'blob')).toString('hex')).toBe(want);
    await expect(hashObject(chunks, 'blob', { size: content.length + 1 })).rejects.toThrow(
      ContentSizeError,
    );
    await expect(hashObject(chunks, 'blob', { size: content.length - 1 })).rejects.toThrow(
      ContentSizeError,
    );
    const sha256 = gitOk(['hash-object', '--stdin'], {
      cwd: initRepo('lib-sha256', 'sha256'),
      input: content,
    }).trim();
    expect((await hashObject(chunks, 'blob', { algo: SHA256 })).toString('hex')).toBe(sha256);
    const h = new ObjectHasher(SHA1, 'blob', 0);
    expect(h.digest().toString('hex')).toBe('e69de29bb2d1d6434b8b29ae775ad8c2e48c5391');
  });
});

describe('parallel deflate (pigz-style, one zlib stream)', () => {
  it('zlib headers and adler32 as zlib writes them', async () => {
    const data = randomBytes(100_000);
    for (const level of [-1, 0, 1, 2, 5, 6, 7, 9]) {
      const z = deflateSync(data, { level });
      expect(zlibHeader(level)).toEqual(z.subarray(0, 2));
      expect(adler32(data)).toBe(z.readUInt32BE(z.length - 4));
    }
    expect(adler32(Buffer.alloc(0))).toBe(1);
  });

  it.each([
    [0, 1],
    [1, 2],
    [6, 3],
    [9, 2],
  ])('level %i with %i jobs in flight inflates back to the input', async (level, concurrency) => {
    const block = 1 << 20;
    const text = Buffer.from('some text that repeats itself, more or less\n'.repeat(60_000));
    for (const input of [
      Buffer.alloc(0),
      randomBytes(block),
      Buffer.concat([randomBytes(block + 7), text]),
      text.subarray(0, 3 * block),
    ]) {
      const out: Buffer[] = [];
      const pd = new ParallelDeflate({
        level,
        concurrency,
        onOutput: (p) => out.push(Buffer.from(p)),
      });
      let pos = 0;
      do {
        const n = Math.min(block, input.length - pos);
        const b = pd.acquire().subarray(0, n);
        input.copy(b, 0, pos, pos + n);
        pos += n;
        await pd.push(b, pos >= input.length);
      } while (pos < input.length);
      await pd.end();
      const stream = Buffer.concat(out);
      expect(stream.subarray(0, 2)).toEqual(zlibHeader(level));
      expect(inflateSync(stream, { finishFlush: constants.Z_FINISH }).equals(input)).toBe(true);
      if (level >= 6 && input === text) expect(stream.length).toBeLessThan(input.length / 20);
    }
  });
});
