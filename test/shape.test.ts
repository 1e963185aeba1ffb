import { readFileSync, readdirSync } from 'node:fs';
import { join, relative, resolve, dirname } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

/**
 * The shape the codebase promises (docs/decisions.md, "Layers"): dependencies point down, process
 * state stays in the shell, and no function or file grows past what one reader can hold. These
 * read the sources with TypeScript's own parser, so a new violation fails here with its place.
 */

const SRC = resolve(__dirname, '..', 'src');

function sources(dir = SRC): string[] {
  const out: string[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...sources(p));
    else if (e.name.endsWith('.ts')) out.push(p);
  }
  return out.sort();
}

const files = sources().map((path) => ({
  path,
  rel: relative(SRC, path),
  text: readFileSync(path, 'utf8'),
}));

/** Higher may import lower, never the reverse. Top-level shared modules sit at the bottom. */
const RANK: Record<string, number> = {
  cli: 9,
  'index.ts': 8,
  api: 7,
  commands: 6,
  bench: 5,
  repack: 4,
  store: 3,
  codec: 2,
  format: 1,
  delta: 0,
  hash: 0,
  'errors.ts': -1,
  'release.ts': -1,
  'cleanup.ts': -1,
};

function layerOf(rel: string): string {
  return rel.includes('/') ? rel.split('/')[0]! : rel;
}

describe('the codebase keeps its shape', () => {
  it('every source file belongs to a known layer', () => {
    expect(files.map((f) => layerOf(f.rel)).filter((l) => RANK[l] === undefined)).toEqual([]);
  });

  it('no import climbs a layer (nothing imports cli/; commands/ never reads bench output code…)', () => {
    const bad: string[] = [];
    for (const f of files) {
      const from = layerOf(f.rel);
      for (const m of f.text.matchAll(/^(?:import|export)[^'"]*from '(\.[^']+)'/gm)) {
        const target = relative(SRC, resolve(dirname(f.path), m[1]!.replace(/\.js$/, '.ts')));
        const to = layerOf(target);
        if (to === from) continue;
        if (RANK[to]! > RANK[from]! || (RANK[to] === RANK[from] && to !== from))
          bad.push(`${f.rel} imports ${target}`);
      }
    }
    expect(bad).toEqual([]);
  });

  it('process state (env, argv, exit, stdio, cwd, signal handlers, umask) is touched only in cli/ and api/', () => {
    // pid, kill, getuid, cpuUsage are facts about this OS process (a lock's owner, a fault hook's
    // signal, a benchmark's clock), like git's getpid(): not state the shell passes down.
    const banned =
      /\bprocess\.(env|argv|exit|exitCode|stdin|stdout|stderr|cwd|chdir|on|once|off|umask)\b|from 'node:process'[^;]*\b(env|argv|exit|stdin|stdout|stderr|cwd|chdir|umask)\b/;
    const bad = files
      .filter((f) => !['cli', 'api', 'index.ts'].includes(layerOf(f.rel)))
      .flatMap((f) =>
        f.text
          .split('\n')
          .map((line, i) => ({ f, line, i }))
          .filter((x) => banned.test(x.line) && !/^\s*(\*|\/\/)/.test(x.line))
          .map((x) => `${x.f.rel}:${x.i + 1}: ${x.line.trim()}`),
      );
    expect(bad).toEqual([]);
  });

  it('no function is over 120 lines and no file over 500', () => {
    const bad: string[] = [];
    for (const f of files) {
      const lines = f.text.split('\n').length - (f.text.endsWith('\n') ? 1 : 0);
      if (lines > 500) bad.push(`${f.rel}: ${lines} lines`);
      const sf = ts.createSourceFile(f.path, f.text, ts.ScriptTarget.Latest, true);
      const visit = (n: ts.Node): void => {
        if (ts.isFunctionLike(n) && 'body' in n && n.body !== undefined) {
          const a = sf.getLineAndCharacterOfPosition(n.getStart()).line;
          const b = sf.getLineAndCharacterOfPosition(n.getEnd()).line;
          const name = (n as { name?: ts.Node }).name?.getText(sf) ?? '(anonymous)';
          if (b - a + 1 > 120) bad.push(`${f.rel}:${a + 1} ${name}: ${b - a + 1} lines`);
        }
        ts.forEachChild(n, visit);
      };
      visit(sf);
    }
    expect(bad).toEqual([]);
  });
});

describe('docs agree with the tree', () => {
  it('every source, bench, test or doc file the docs name exists', () => {
    // No line is exempt: a file that is gone is named by the commit that removed it, not by its path.
    const root = resolve(__dirname, '..');
    const docs = [
      'README.md',
      'CHANGELOG.md',
      'docs/git-repack-ts.1',
      ...readdirSync(join(root, 'docs'))
        .filter((n) => n.endsWith('.md'))
        .map((n) => `docs/${n}`),
    ];
    const bad: string[] = [];
    for (const d of docs) {
      readFileSync(join(root, d), 'utf8')
        .split('\n')
        .forEach((line, i) => {
          for (const m of line.matchAll(
            /\b(?:src|bench|test|scripts|docs)\/[A-Za-z0-9_./-]+\.(?:ts|mjs|md|js|1|sh)\b/g,
          )) {
            try {
              readFileSync(join(root, m[0]));
            } catch {
              bad.push(`${d}:${i + 1}: ${m[0]}`);
            }
          }
        });
    }
    expect(bad).toEqual([]);
  });
});
