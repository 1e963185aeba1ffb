/**
 * A small builder over real git for constructing repositories in tests and
 * fixture recipes. Every commit/tag/merge advances a pinned clock, so the
 * object ids only depend on the sequence of operations.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { dateEnv, gitOk, listPacks, type GitOptions } from './git.js';

export type ObjectFormat = 'sha1' | 'sha256';

export interface InitOptions {
  bare?: boolean;
  objectFormat?: ObjectFormat;
  /** Initial value of the pinned clock (distinct repos may use distinct ranges). */
  tick?: number;
}

export class RepoBuilder {
  /** Current tick of the pinned clock. */
  tick: number;

  constructor(
    /** The work tree (or the git dir of a bare repository). */
    readonly dir: string,
    tick = 0,
  ) {
    this.tick = tick;
  }

  /** `git init` (branch main, no templates) and return a builder for it. */
  static init(dir: string, opts: InitOptions = {}): RepoBuilder {
    fs.mkdirSync(dir, { recursive: true });
    const args = ['-c', 'init.defaultBranch=main', 'init', '-q', '--template=', '-b', 'main'];
    if (opts.objectFormat) args.push(`--object-format=${opts.objectFormat}`);
    if (opts.bare) args.push('--bare');
    args.push(dir);
    gitOk(args);
    const r = new RepoBuilder(dir, opts.tick ?? 0);
    r.quietConfig();
    return r;
  }

  /** Settings that keep git from doing anything behind our back. */
  quietConfig(): void {
    this.config('gc.auto', '0');
    this.config('maintenance.auto', 'false');
  }

  /** Run git in this repository at the current tick; returns stdout. */
  git(args: string[], opts: GitOptions = {}): string {
    return gitOk(args, { cwd: this.dir, ...opts, env: { ...dateEnv(this.tick), ...opts.env } });
  }

  /** Advance the clock one tick. */
  advance(): void {
    this.tick += 1;
  }

  config(key: string, value: string): void {
    this.git(['config', key, value]);
  }

  path(rel: string): string {
    return path.join(this.dir, rel);
  }

  write(rel: string, content: string | Buffer, mode?: number): void {
    const p = this.path(rel);
    fs.mkdirSync(path.dirname(p), { recursive: true });
    fs.writeFileSync(p, content);
    if (mode !== undefined) fs.chmodSync(p, mode);
  }

  remove(rel: string): void {
    fs.rmSync(this.path(rel), { force: true, recursive: true });
  }

  symlink(rel: string, target: string): void {
    const p = this.path(rel);
    fs.mkdirSync(path.dirname(p), { recursive: true });
    fs.rmSync(p, { force: true });
    fs.symlinkSync(target, p);
  }

  /** Stage everything and commit at the next tick (use revParse('HEAD') for the id). */
  commit(message: string): void {
    this.advance();
    this.git(['add', '-A']);
    this.git(['commit', '-q', '--allow-empty', '--no-verify', '-m', message]);
  }

  /** Annotated tag at the next tick. */
  tagAnnotated(name: string, target: string, message: string): string {
    this.advance();
    this.git(['tag', '-a', '-m', message, name, target]);
    return this.revParse(`refs/tags/${name}`);
  }

  tagLightweight(name: string, target: string): void {
    this.git(['tag', name, target]);
  }

  branch(name: string, start = 'HEAD'): void {
    this.git(['branch', name, start]);
  }

  checkout(ref: string): void {
    this.git(['checkout', '-q', ref]);
  }

  /** `git merge --no-ff` at the next tick; returns the merge commit id. */
  merge(branch: string, message: string): string {
    this.advance();
    this.git(['merge', '-q', '--no-ff', '--no-edit', '-m', message, branch]);
    return this.revParse('HEAD');
  }

  revParse(rev: string): string {
    return this.git(['rev-parse', '--verify', '--end-of-options', rev]).trim();
  }

  /** `git repack` single-threaded (so delta choices, hence pack bytes, are reproducible). */
  repack(args: string[]): void {
    this.git(['-c', 'pack.threads=1', 'repack', '-q', ...args]);
  }

  /** Run `git repack` and return the packs that appeared. */
  repackNew(args: string[]): string[] {
    const before = new Set(listPacks(this.dir));
    this.repack(args);
    return listPacks(this.dir).filter((p) => !before.has(p));
  }

  /** Write a blob (not referenced by anything) and return its id. */
  hashObject(content: string | Buffer): string {
    return this.git(['hash-object', '-w', '--stdin'], { input: content }).trim();
  }

  /** Absolute git dir. */
  gitDir(): string {
    return path.resolve(this.dir, this.git(['rev-parse', '--git-dir']).trim());
  }

  packDir(): string {
    return path.resolve(this.dir, this.git(['rev-parse', '--git-path', 'objects/pack']).trim());
  }
}
