/**
 * git's command-line contract, each case beside stock git on the same input: `-h` on stdout with
 * exit 129, `--help` as the man page, unique prefixes of long options, parse-options' messages,
 * and errors in strerror's words.
 */
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { fixturePath } from './fixtures/index.js';
import { useFixtureCopy } from './helpers/fixture-copy.js';
import { git, objectSet } from './helpers/git.js';
import { tool } from './helpers/tool.js';
import { MAIN_USAGE } from '../src/cli/main.js';
import type { Io } from '../src/cli/io.js';
import { phaseReporter, warn } from '../src/cli/progress.js';

const USAGE_THEN_OPTIONS = /^usage: git repack-ts[^\n]*\n(?:[^\n]*\n)*\n {4}-/;

describe('help as git gives it', () => {
  it('-h prints the option list on stdout and exits 129, for the tool and every subcommand', () => {
    const cwd = fixturePath('basic');
    const g = git(['repack', '-h'], { cwd });
    expect({ status: g.status, stderr: g.stderr }).toEqual({ status: 129, stderr: '' });
    expect(g.stdout.toString()).toMatch(/^usage: git repack \[<options>\]\n\n {4}-/);
    for (const sub of [
      [],
      ['repack'],
      ['verify'],
      ['inspect'],
      ['walk'],
      ['bench'],
      ['zstd-import'],
      ['hash-object'],
    ]) {
      const r = tool([...sub, '-h'], { cwd });
      expect({ status: r.status, stderr: r.stderr }, sub.join(' ')).toEqual({
        status: 129,
        stderr: '',
      });
      expect(r.stdout, sub.join(' ')).toMatch(
        sub[0] === 'hash-object' ? /^usage: git repack-ts hash-object/ : USAGE_THEN_OPTIONS,
      );
    }
  });

  it('<command> --help shows the manual page, exit 0', () => {
    for (const sub of [['verify'], ['inspect'], ['bench'], []]) {
      const r = tool([...sub, '--help'], {
        cwd: fixturePath('basic'),
        env: { MANPAGER: 'cat', MANWIDTH: '80' },
      });
      expect(r.status, sub.join(' ')).toBe(0);
      expect(r.stdout, sub.join(' ')).toMatch(/NAME\s+git-repack-ts/);
    }
  });

  it('the forms in the usage are the man page’s SYNOPSIS', () => {
    const man = fs.readFileSync(path.resolve(__dirname, '../docs/git-repack-ts.1'), 'utf8');
    const synopsis = /^\.SH SYNOPSIS\n\.nf\n([\s\S]*?)\n\.fi/m.exec(man)![1]!;
    const plain = synopsis
      .replace(/\\f[BRI]/g, '')
      .replace(/\\-/g, '-')
      .replace(/\n +/g, ' ')
      .split('\n');
    const forms = MAIN_USAGE.split('\n\n')[0]!
      .split('\n')
      .map((l) => l.replace(/^(usage|   or): /, ''));
    // The usage's first form stands for the page's first two: the global options, then the repack ones.
    expect(forms[0]).toBe('git repack-ts [-C <path>] [--git-dir=<path>] [<repack-options>]');
    expect(plain[0]).toMatch(/^git repack-ts \[-C <path>\] \[--git-dir=<path>\]/);
    expect(plain[1]).toMatch(/^git repack-ts \[--graph-compression=<n>\]/);
    expect(forms.slice(1).sort()).toEqual(plain.slice(2).sort());
  });
});

describe('long options as parse-options reads them', () => {
  it('a unique prefix is the option (--dry, --graph=, --no-fs)', () => {
    const cwd = fixturePath('basic');
    const full = tool(['--dry-run', '--graph-compression=0', '--no-fsck', '--json'], { cwd });
    const short = tool(['--dry', '--graph=0', '--no-fs', '--js'], { cwd });
    expect(full.status).toBe(0);
    expect(short).toEqual(full);
  });

  it('an ambiguous prefix names two candidates, exit 129, as git repack --de', () => {
    const cwd = fixturePath('basic');
    // git 2.39 prints this usage on stdout (parse_long_opt returns PARSE_OPT_HELP).
    const shape = /^error: ambiguous option: (\S+) \(could be --\S+ or --\S+\)\n$/;
    const g = git(['repack', '--de'], { cwd });
    const t = tool(['--d'], { cwd });
    expect(g.status).toBe(129);
    expect(g.stderr).toMatch(shape);
    expect(g.stdout.toString()).toMatch(/^usage: git repack /);
    expect(t.status).toBe(g.status);
    expect(t.stderr).toMatch(shape);
    expect(t.stdout).toMatch(/^usage: git repack-ts /);
    expect(t.stderr).toMatch(/^error: ambiguous option: d \(could be --dry-run or --dict-size\)\n/);
  });

  it.each([
    [['--nonsense'], ['repack', '--nonsense'], "error: unknown option `nonsense'"],
    [['--quiet=3'], ['repack', '--quiet=3'], "error: option `quiet' takes no value"],
    [['--qui=3'], ['repack', '--qui=3'], "error: option `quiet' takes no value"],
  ])('%j: the message git gives', (ours, theirs, first) => {
    const cwd = fixturePath('basic');
    const g = git(theirs, { cwd });
    const t = tool(ours, { cwd });
    expect(g.stderr.split('\n')[0]).toBe(first);
    expect({ status: t.status, first: t.stderr.split('\n')[0] }).toEqual({
      status: g.status,
      first,
    });
    // The usage follows an unknown option, not a bad value (parse-options' get_value).
    expect(/\nusage: /.test(t.stderr)).toBe(/\nusage: /.test(g.stderr));
  });
});

describe('errors in git’s words', () => {
  it('-C <a file> says "Not a directory", like git', () => {
    const file = path.join(fixturePath('basic'), '.git', 'HEAD');
    const g = git(['-C', file, 'count-objects'], { cwd: '/' });
    const t = tool(['-C', file, 'inspect'], { cwd: '/' });
    expect(g.stderr).toBe(`fatal: cannot change to '${file}': Not a directory\n`);
    expect({ status: t.status, stderr: t.stderr }).toEqual({ status: g.status, stderr: g.stderr });
  });

  it('a full disk reads as strerror, not as Node’s code', () => {
    const repo = useFixtureCopy('basic');
    const r = tool(['--graph-compression=0', '-q'], {
      cwd: repo,
      env: { GIT_REPACK_TS_FAULT: 'write:enospc' },
    });
    expect(r.status).toBe(128);
    expect(r.stderr).toMatch(/^fatal: .*: No space left on device/);
    expect(r.stderr).not.toMatch(/ENOSPC|no space left/);
  });
});

describe('errors that name the object', () => {
  it('a damaged packed commit: its id and pack, as git cat-file names it', () => {
    const repo = useFixtureCopy('basic');
    const packDir = path.join(repo, '.git/objects/pack');
    const idx = path.join(
      packDir,
      fs.readdirSync(packDir).find((n) => n.endsWith('.idx'))!,
    );
    const line = git(['verify-pack', '-v', idx], { cwd: repo })
      .stdout.toString()
      .split('\n')
      .map((l) => l.split(/\s+/))
      .find((f) => f[1] === 'commit' && Number(f[3]) > 100)!;
    const [hex, type, , packedSize, offset] = line;
    const pack = idx.replace(/\.idx$/, '.pack');
    fs.chmodSync(pack, 0o644);
    const bytes = fs.readFileSync(pack);
    bytes[Number(offset) + Math.floor(Number(packedSize) / 2)]! ^= 0xff;
    fs.writeFileSync(pack, bytes);
    const g = git(['cat-file', '-p', hex!], { cwd: repo });
    const t = tool(['--graph-compression=0', '-q', '--no-fsck'], { cwd: repo });
    expect(g.stderr).toMatch(
      new RegExp(`fatal: packed object ${hex} \\(stored in \\S+\\.pack\\) is corrupt\n$`),
    );
    expect(t.status).toBe(g.status);
    expect(t.stderr).toMatch(
      new RegExp(
        `^fatal: packed object ${hex} \\(stored in ${pack.replace(/[.]/g, '\\.')}\\) is corrupt: corrupt object data \\(zlib: [^)]+\\) at offset ${offset} \\(${type} entry\\)\n$`,
      ),
    );
  });

  it('a corrupt loose object: its id and file, never Node’s buffer message', () => {
    const repo = useFixtureCopy('basic');
    const objects = path.join(repo, '.git/objects');
    const dir = fs.readdirSync(objects).find((n) => /^[0-9a-f]{2}$/.test(n))!;
    const name = fs.readdirSync(path.join(objects, dir))[0]!;
    const file = path.join(objects, dir, name);
    fs.chmodSync(file, 0o644);
    fs.writeFileSync(file, zlib.deflateSync(Buffer.from('blob 3\0hello world')));
    const t = tool(['--graph-compression=0', '-q'], { cwd: repo });
    expect(t.status).toBe(128);
    expect(t.stderr).toBe(
      `fatal: loose object ${dir}${name} (stored in ${file}) is corrupt: inflates to more than the 3 bytes its header declares\n`,
    );
  });
});

describe('the first things a user meets', () => {
  it('with no level configured: a hint of what to set, on stderr; entries copied as they are', () => {
    const repo = useFixtureCopy('basic');
    const before = objectSet(repo);
    const r = tool([], { cwd: repo });
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/^levels: commit keep, tree keep, blob keep, tag keep\n/);
    expect(r.stderr).toMatch(
      /^hint: No zlib level is set for any object type.*\nhint: Set one with --graph-compression=<n>/s,
    );
    expect(objectSet(repo)).toEqual(before);
    // Any level, or --json, and the hint is gone.
    expect(
      tool(['--dry-run', '--blob-compression=keep', '--tree-compression=1'], { cwd: repo }).stderr,
    ).toBe('');
    expect(tool(['--json', '--dry-run'], { cwd: repo }).stderr).toBe('');
  });
});

describe('progress like git’s', () => {
  it('each phase ends with one "done." line, as git repack prints it once', () => {
    const repo = useFixtureCopy('basic');
    const g = git(['repack', '-adq', '--progress'], { cwd: useFixtureCopy('basic') });
    const gitDone = g.stderr.split(/[\r\n]/).filter((l) => l.endsWith(', done.'));
    expect(new Set(gitDone).size).toBe(gitDone.length);
    const t = tool(['--graph-compression=0', '--progress'], { cwd: repo });
    expect(t.status).toBe(0);
    const done = t.stderr.split(/[\r\n]/).filter((l) => l.endsWith(', done.'));
    expect(done.map((l) => l.slice(0, l.indexOf(':')))).toEqual([
      'Counting objects',
      'Writing objects',
      'Validating',
      'Checking with git index-pack',
    ]);
  });

  it('a warning never lands inside a progress line', () => {
    let err = '';
    const io: Io = {
      out: () => undefined,
      err: (t) => void (err += t),
      stderrIsTty: true,
      env: {},
      cwd: '/',
    };
    const report = phaseReporter(io, true)!;
    report('writing objects', 5, 10);
    warn(io, 'something odd');
    report('writing objects', 10, 10);
    expect(err).toBe(
      '\rWriting objects:  50% (5/10)\nwarning: something odd\n\rWriting objects: 100% (10/10)\rWriting objects: 100% (10/10), done.\n',
    );
  });
});

describe('small things', () => {
  it('verify -v --json lists every object as git verify-pack -v does; without -v, no list', () => {
    const packDir = path.join(fixturePath('basic'), '.git/objects/pack');
    const pack = path.join(
      packDir,
      fs.readdirSync(packDir).find((n) => n.endsWith('.pack'))!,
    );
    const want = git(['verify-pack', '-v', pack], { cwd: '/' })
      .stdout.toString()
      .split('\n')
      .filter((l) => /^[0-9a-f]{40} /.test(l))
      .map((l) => {
        const [id, type, size, packedSize, offset, depth, base] = l.split(/\s+/);
        return {
          id,
          type,
          size: Number(size),
          packedSize: Number(packedSize),
          offset: Number(offset),
          ...(base ? { depth: Number(depth), base } : {}),
        };
      });
    const v = JSON.parse(tool(['verify', '-v', '--json', pack], { cwd: '/' }).stdout);
    expect(v.packs[0].entries).toEqual(want);
    expect(
      JSON.parse(tool(['verify', '--json', pack], { cwd: '/' }).stdout).packs[0].entries,
    ).toBeUndefined();
  });

  it('inspect’s columns have names that do not read alike', () => {
    const out = tool(['inspect'], { cwd: fixturePath('basic') }).stdout;
    const header = out.split('\n').find((l) => l.startsWith('type '))!;
    expect(header).toContain('stored plain');
    expect(header).toContain('packed if all level 0');
    expect(header).not.toMatch(/ at level 0/);
  });
});
