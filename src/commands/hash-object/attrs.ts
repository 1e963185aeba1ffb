import { spawn, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import type { GitConfig } from '../../store/config.js';
import type { Repository } from '../../store/repo.js';
import { autoCrlf, envBool, fileExists, systemFileCandidates, textEolIsCrlf } from './config.js';
import {
  CONVERSION_ATTRS,
  decisionFor,
  parseCheckAttr,
  type Decision,
  type EolConfig,
} from './convert.js';

/**
 * Attributes come from `git check-attr`, one process per batch of paths, so every matching rule
 * is git's; convert.ts re-derives what git then does with them.
 */

/** Is `abs` the directory `root` or below it? */
export function isInside(root: string, abs: string): boolean {
  const rel = relative(root, abs);
  return rel === '' || (rel !== '..' && !rel.startsWith('..' + sep) && !isAbsolute(rel));
}

export function pathString(p: string | Buffer): string {
  return typeof p === 'string' ? p : p.toString('utf8');
}

/** A test of attributes files' text, each file read once, each directory's answer remembered. */
interface FileScan {
  file(path: string): boolean;
  /** For the global, system and info/attributes files together. */
  global: boolean | undefined;
  below: Map<string, boolean>;
}

function fileScan(test: (text: string) => boolean): FileScan {
  const files = new Map<string, boolean>();
  return {
    file(path: string): boolean {
      let v = files.get(path);
      if (v === undefined) {
        let text = '';
        try {
          text = readFileSync(path, 'latin1');
        } catch {
          text = '';
        }
        files.set(path, (v = test(text)));
      }
      return v;
    },
    global: undefined,
    below: new Map(),
  };
}

export interface AttributeSource {
  config: GitConfig;
  repo: Repository | undefined;
  env: NodeJS.ProcessEnv;
  gitDir: string | undefined;
  write: boolean;
}

/**
 * Decides batches of paths: one `git check-attr` per batch for paths inside the repository; for
 * the others, whether any attributes file could apply, each directory looked at once.
 */
export class AttributeOracle {
  private readonly eol: EolConfig;
  private readonly drivers: Set<string>;
  /** Could a global, system or info/attributes file (or core.autocrlf) convert anything? */
  private anyGlobal: boolean | undefined;
  /** Directory → does it hold a `.gitattributes`? */
  private readonly dirs = new Map<string, boolean>();

  constructor(private readonly s: AttributeSource) {
    const auto = autoCrlf(s.config);
    this.eol = { auto, eolIsCrlf: textEolIsCrlf(s.config, auto) };
    this.drivers = new Set();
    for (const k of s.config.keys()) {
      const m = /^filter\.(.*)\.[^.]*$/s.exec(k);
      if (m) this.drivers.add(m[1]!);
    }
  }

  private hasDriver = (name: string): boolean => this.drivers.has(name);

  /** Which of `paths` (attribute paths, as seen from `cwd`) git would convert. */
  decide(paths: (string | Buffer)[], cwd: string): Decision[] {
    const ask = this.askable(paths, cwd);
    const reports =
      ask.length > 0
        ? this.checkAttr(
            ask.map((i) => paths[i]!),
            cwd,
          )
        : undefined;
    return this.combine(paths, cwd, ask, reports);
  }

  /** `decide` with `git check-attr` running while the caller works (it is a process of its own). */
  async decideAsync(paths: (string | Buffer)[], cwd: string): Promise<Decision[]> {
    const ask = this.askable(paths, cwd);
    const reports =
      ask.length > 0
        ? await this.checkAttrAsync(
            ask.map((i) => paths[i]!),
            cwd,
          )
        : undefined;
    return this.combine(paths, cwd, ask, reports);
  }

  /** Paths `git check-attr` must answer for: inside the repository, with some attributes file that may apply. */
  private askable(paths: (string | Buffer)[], cwd: string): number[] {
    const ask: number[] = [];
    for (let i = 0; i < paths.length; i++) {
      const p = paths[i]!;
      if (this.insideRepository(p, cwd) && this.attributesMayApply(p, cwd)) ask.push(i);
    }
    return ask;
  }

  private combine(
    paths: (string | Buffer)[],
    cwd: string,
    ask: number[],
    reports: Map<string, Map<string, string>> | undefined,
  ): Decision[] {
    const asked = new Set(ask);
    return paths.map((p, i) => {
      if (asked.has(i)) {
        if (reports === undefined) return 'delegate'; // git check-attr failed: git decides
        return this.decideReport(reports.get(pathString(p)) ?? new Map<string, string>(), p, cwd);
      }
      if (this.insideRepository(p, cwd)) return 'identity'; // no attributes file applies
      return this.conversionImpossible(p, cwd) ? 'identity' : 'delegate';
    });
  }

  private decideReport(report: Map<string, string>, p: string | Buffer, cwd: string): Decision {
    let key = '';
    for (const n of CONVERSION_ATTRS) key += (report.get(n) ?? '\u0001') + '\0';
    const spelled = key.includes('set\0') && this.spelledStates(p, cwd);
    key += spelled ? '1' : '0';
    let d = this.decided.get(key);
    if (d === undefined)
      this.decided.set(
        key,
        (d = decisionFor(report, this.eol, this.hasDriver, this.s.write, spelled)),
      );
    return d;
  }

  /** Can `git check-attr` answer for this path (it refuses paths outside the repository)? */
  private insideRepository(p: string | Buffer, cwd: string): boolean {
    const repo = this.s.repo;
    if (repo === undefined) return false;
    const b = typeof p === 'string' ? Buffer.from(p) : p;
    if (b.length === 0 || b.includes(0)) return false;
    const root = repo.workTree ?? cwd;
    // A relative path without `..` stays below a cwd that is inside: no path arithmetic per file.
    if (b[0] !== 0x2f && !b.includes('..') && this.cwdInside(root, cwd)) return true;
    return isInside(root, resolve(cwd, pathString(p)));
  }

  private readonly insideCache = new Map<string, boolean>();

  private cwdInside(root: string, cwd: string): boolean {
    const key = root + '\0' + cwd;
    let v = this.insideCache.get(key);
    if (v === undefined) this.insideCache.set(key, (v = isInside(root, cwd)));
    return v;
  }

  private checkAttrRun(
    paths: (string | Buffer)[],
    cwd: string,
  ): { args: string[]; env: NodeJS.ProcessEnv; input: Buffer } {
    const env: NodeJS.ProcessEnv = { ...this.s.env };
    if (this.s.gitDir !== undefined) env.GIT_DIR = this.s.gitDir;
    // hash-object never reads the index, so .gitattributes known only to the index do not apply.
    env.GIT_INDEX_FILE = join(this.s.repo!.gitDir, 'repack-ts-no-index', 'index');
    const bufs = paths.map((p) => (typeof p === 'string' ? Buffer.from(p) : p));
    const input = Buffer.allocUnsafe(bufs.reduce((n, b) => n + b.length + 1, 0));
    let at = 0;
    for (const b of bufs) {
      at += b.copy(input, at);
      input[at++] = 0;
    }
    return { args: ['check-attr', '--all', '-z', '--stdin'], env, input };
  }

  /** `git check-attr --all -z` as hash-object would see attributes: the index is not read. */
  private checkAttr(
    paths: (string | Buffer)[],
    cwd: string,
  ): Map<string, Map<string, string>> | undefined {
    const { args, env, input } = this.checkAttrRun(paths, cwd);
    const r = spawnSync('git', args, { cwd, env, input, maxBuffer: 1 << 28 });
    if (r.error || r.status !== 0) return undefined;
    return parseCheckAttr(r.stdout);
  }

  private checkAttrAsync(
    paths: (string | Buffer)[],
    cwd: string,
  ): Promise<Map<string, Map<string, string>> | undefined> {
    const { args, env, input } = this.checkAttrRun(paths, cwd);
    return new Promise((done) => {
      const child = spawn('git', args, { cwd, env, stdio: ['pipe', 'pipe', 'ignore'] });
      const out: Buffer[] = [];
      child.stdout.on('data', (b: Buffer) => out.push(b));
      child.stdin.on('error', () => {}); // a git that exits early: its status says so
      child.on('error', () => done(undefined));
      child.on('close', (status) =>
        done(status === 0 ? parseCheckAttr(Buffer.concat(out)) : undefined),
      );
      child.stdin.end(input);
    });
  }

  /**
   * Without `git check-attr` (no repository, or a path outside it): git can only convert if
   * `core.autocrlf` is on or some attributes file that applies exists.
   */
  private conversionImpossible(p: string | Buffer, cwd: string): boolean {
    this.anyGlobal ??= this.globalConversionPossible(cwd);
    if (this.anyGlobal) return false;
    const root = this.s.repo?.workTree;
    if (root === undefined) return true;
    // Every directory the path names, resolved from the top of the work tree and from cwd.
    const parts = pathString(p).split('/');
    let acc = '';
    for (let i = 0; i < parts.length - 1; i++) {
      acc = i === 0 ? parts[0]! : acc + '/' + parts[i]!;
      const rel = acc === '' ? '/' : acc;
      if (this.hasAttributesFile(resolve(root, rel)) || this.hasAttributesFile(resolve(cwd, rel)))
        return false;
    }
    return true;
  }

  /**
   * For a path inside the work tree: could any attributes file apply, or core.autocrlf convert?
   * (If not, git converts nothing and `git check-attr` need not run: a small run saves a process.)
   */
  private attributesMayApply(p: string | Buffer, cwd: string): boolean {
    this.anyGlobal ??= this.globalConversionPossible(cwd);
    if (this.anyGlobal) return true;
    return this.someDirectory(p, cwd, (dir) => this.hasAttributesFile(dir), this.mayApplyBelow);
  }

  /**
   * Does `test` hold for a directory from the path's own up to the top of the work tree? Each
   * directory's answer is remembered in `memo` (one walk per directory, not per path).
   */
  private someDirectory(
    p: string | Buffer,
    cwd: string,
    test: (dir: string) => boolean,
    memo: Map<string, boolean>,
  ): boolean {
    if (this.s.repo === undefined) return false;
    const root = this.s.repo.workTree ?? cwd;
    const s = pathString(p);
    const slash = s.lastIndexOf('/');
    // The directory as written, then resolved: paths of one directory cost a lookup each.
    const written = '\0' + cwd + '\0' + (slash < 0 ? '' : s.slice(0, slash));
    const seen = memo.get(written);
    if (seen !== undefined) return seen;
    const start = slash < 0 ? cwd : resolve(cwd, s.slice(0, slash));
    const known = memo.get(start);
    if (known !== undefined) {
      memo.set(written, known);
      return known;
    }
    let found = false;
    for (let dir = start; ; dir = dirname(dir)) {
      const k = memo.get(dir);
      if (k !== undefined) {
        found = k;
        break;
      }
      if (test(dir)) {
        found = true;
        break;
      }
      if (dir === root || !isInside(root, dir)) break;
    }
    memo.set(start, found);
    memo.set(written, found);
    return found;
  }

  /**
   * Could a "set" or "unset" in `git check-attr`'s report be a string value? Only if some
   * attributes file that may apply to `p` spells one (`=set`, `=unset`): each file read once.
   */
  private spelledStates(p: string | Buffer, cwd: string): boolean {
    return this.someFileApplying(this.spelled, p, cwd);
  }

  private readonly spelled = fileScan((text) => /=(un)?set/.test(text));

  /**
   * Could git change this path's content if it holds no CR? Without -w only `ident`, a filter
   * with a configured driver or `working-tree-encoding` can (crlf_to_git: "No CRLF? Nothing to
   * convert"; no safecrlf check without HASH_WRITE_OBJECT), and a macro (`[attr]`) might set
   * them: true when some attributes file that may apply names one of these, or the path is
   * outside the repository.
   */
  mayConvertWithoutCr(p: string | Buffer, cwd: string): boolean {
    if (!this.insideRepository(p, cwd)) return true;
    return this.someFileApplying(this.naming, p, cwd);
  }

  private readonly naming = fileScan((text) => {
    // Any token naming them, negated or valued or in a comment: a false alarm only costs a check-attr run.
    const names =
      this.drivers.size > 0 ? 'ident|working-tree-encoding|filter' : 'ident|working-tree-encoding';
    return new RegExp(`(^|[\\s!-])(${names})([\\s=]|$)|\\[attr\\]`, 'm').test(text);
  });

  /** Does `scan` hold for some attributes file that may apply to `p`: global, system, info/attributes, or a `.gitattributes` above it? */
  private someFileApplying(scan: FileScan, p: string | Buffer, cwd: string): boolean {
    if (scan.global === undefined) {
      const files = [...this.globalAttributeFiles(cwd)];
      const repo = this.s.repo;
      if (repo !== undefined) files.push(join(repo.commonDir, 'info', 'attributes'));
      scan.global = files.some((f) => fileExists(f) && scan.file(f));
    }
    if (scan.global) return true;
    return this.someDirectory(
      p,
      cwd,
      (dir) => this.hasAttributesFile(dir) && scan.file(join(dir, '.gitattributes')),
      scan.below,
    );
  }

  private readonly mayApplyBelow = new Map<string, boolean>();
  /** Decisions by the report's conversion attributes (few combinations in a tree). */
  private readonly decided = new Map<string, Decision>();

  private hasAttributesFile(dir: string): boolean {
    let known = this.dirs.get(dir);
    if (known === undefined) this.dirs.set(dir, (known = fileExists(join(dir, '.gitattributes'))));
    return known;
  }

  /** The global attributes file (`core.attributesFile`, else XDG) and the system candidates. */
  private globalAttributeFiles(cwd: string): string[] {
    const env = this.s.env;
    const home = env.HOME;
    const configured = this.s.config.get('core.attributesfile');
    const files: string[] = [];
    if (configured !== undefined && configured !== '') {
      files.push(
        configured.startsWith('~/') && home
          ? join(home, configured.slice(2))
          : resolve(cwd, configured),
      );
    } else if (env.XDG_CONFIG_HOME) files.push(join(env.XDG_CONFIG_HOME, 'git', 'attributes'));
    else if (home) files.push(join(home, '.config', 'git', 'attributes'));
    if (!envBool(env.GIT_ATTR_NOSYSTEM)) files.push(...systemFileCandidates(env, 'gitattributes'));
    return files;
  }

  /** What applies to every path: core.autocrlf, the global, system and info/attributes files, the top-level `.gitattributes`. */
  private globalConversionPossible(cwd: string): boolean {
    if (this.eol.auto !== false) return true;
    if (this.globalAttributeFiles(cwd).some(fileExists)) return true;
    const repo = this.s.repo;
    if (repo === undefined) return false;
    if (fileExists(join(repo.commonDir, 'info', 'attributes'))) return true;
    return repo.workTree !== undefined && this.hasAttributesFile(repo.workTree);
  }
}
