import { HelpRequested, ManPageRequested, UsageError } from './io.js';

/**
 * The subcommands' option parser, with git's conventions (parse-options.c):
 * `--name=value` or `--name value` for an option that takes a value (the next argument whatever
 * it looks like, as in git), `--name[=value]` only stuck for one whose value is optional,
 * `--no-name` for booleans and negatable options, short aliases alone or grouped (`-qn`, `-ofile`,
 * `-o file`), unique prefixes of long options (`--dry`, `--no-fs`; an ambiguous one is an error
 * naming two candidates), `--` ends options, `-h` prints the usage on stdout (exit 129), `--help`
 * the man page, anything unknown is a usage error (exit 129). Small and dependency-free: loading yargs cost ~50 ms of every run.
 */
export interface OptionSpec {
  type: 'string' | 'boolean';
  /** A one-letter short form. */
  alias?: string;
  default?: boolean;
  /** Repeatable: every value, in order (otherwise the last one wins, as in git). */
  array?: boolean;
  /** The value is optional and only taken stuck (`--zstd`, `--zstd=5`); bare gives ''. */
  optionalValue?: boolean;
  /** A string option that `--no-<name>` turns off (its value is then false). */
  negatable?: boolean;
  /** Only the short form exists (git repack's `-a`, `-d`): the name is a key, never `--<name>`. */
  shortOnly?: boolean;
}

type ValueOf<S extends OptionSpec> = S extends { array: true }
  ? string[] | undefined
  : S extends { type: 'boolean'; default: boolean }
    ? boolean
    : S extends { type: 'boolean' }
      ? boolean | undefined
      : S extends { negatable: true }
        ? string | false | undefined
        : string | undefined;

/** Declares the options of one subcommand (chainable). */
export class Options<T = object> {
  readonly specs = new Map<string, OptionSpec>();

  option<K extends string, S extends OptionSpec>(
    name: K,
    spec: S,
  ): Options<T & { [P in K]: ValueOf<S> }> {
    this.specs.set(name, spec);
    return this as unknown as Options<T & { [P in K]: ValueOf<S> }>;
  }
}

export type Parsed<T> = T & { _: string[]; '--': string[] };

export async function parseArgs<T>(
  args: string[],
  usage: string,
  build: (o: Options) => Options<T>,
): Promise<Parsed<T>> {
  return parseOptions(args, usage, build(new Options()).specs) as Parsed<T>;
}

/** Parses `args` against `specs`; throws UsageError (exit 129) for anything git would refuse. */
export function parseOptions(
  args: string[],
  usage: string,
  specs: ReadonlyMap<string, OptionSpec>,
): Record<string, unknown> & { _: string[]; '--': string[] } {
  const end = args.indexOf('--');
  const h = args.indexOf('-h');
  if (h >= 0 && (end < 0 || h < end)) throw new HelpRequested(usage);
  const out: Record<string, unknown> & { _: string[]; '--': string[] } = { _: [], '--': [] };
  for (const [name, spec] of specs) if (spec.default !== undefined) out[name] = spec.default;
  const byShort = new Map<string, string>();
  for (const [name, spec] of specs) if (spec.alias !== undefined) byShort.set(spec.alias, name);
  const fail = (msg: string): never => {
    throw new UsageError(msg, usage);
  };
  // parse-options' get_value: a bad value is an error without the usage.
  const badValue = (msg: string): never => {
    throw new UsageError(msg, usage, 'none');
  };
  const set = (name: string, spec: OptionSpec, v: string | boolean): void => {
    if (spec.array === true && typeof v === 'string')
      out[name] = [...((out[name] as string[] | undefined) ?? []), v];
    else out[name] = v;
  };
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === '--') {
      out['--'] = args.slice(i + 1);
      break;
    }
    if (arg.length < 2 || arg[0] !== '-') {
      out._.push(arg);
      continue;
    }
    if (arg[1] === '-') {
      const eq = arg.indexOf('=');
      const typed = arg.slice(2, eq < 0 ? undefined : eq);
      const stuck = eq < 0 ? undefined : arg.slice(eq + 1);
      if (typed === 'help' && stuck === undefined) throw new ManPageRequested(usage);
      const m = matchLong(specs, typed, usage);
      if (m.negated) {
        if (stuck !== undefined) badValue(`option \`no-${m.name}' takes no value`);
        out[m.name] = false;
        continue;
      }
      const spec = m.spec;
      const key = m.name;
      if (spec.type === 'boolean') {
        if (stuck !== undefined) badValue(`option \`${key}' takes no value`);
        set(key, spec, true);
      } else if (stuck !== undefined) set(key, spec, stuck);
      else if (spec.optionalValue === true) set(key, spec, '');
      else if (i + 1 < args.length) set(key, spec, args[++i]!);
      else badValue(`option \`${key}' requires a value`);
      continue;
    }
    // One or more short options: `-qn`, `-ofile`, `-o file`.
    for (let k = 1; k < arg.length; k++) {
      const letter = arg[k]!;
      const name = byShort.get(letter);
      if (name === undefined) return fail(`unknown switch \`${letter}'`);
      const spec = specs.get(name)!;
      if (spec.type === 'boolean') {
        set(name, spec, true);
        continue;
      }
      if (k + 1 < arg.length) set(name, spec, arg.slice(k + 1));
      else if (i + 1 < args.length) set(name, spec, args[++i]!);
      else badValue(`switch \`${letter}' requires a value`);
      break;
    }
  }
  return out;
}

/** Positional arguments, including those after `--`. */
export function positionals(p: { _: string[]; '--'?: string[] }): string[] {
  return [...p._, ...(p['--'] ?? [])];
}

/**
 * parse-options.c's `parse_long_opt`: an exact name or `no-<name>` first, else a unique prefix of
 * one of them (git names the first two candidates, in declaration order, when there are more).
 */
function matchLong(
  specs: ReadonlyMap<string, OptionSpec>,
  typed: string,
  usage: string,
): { name: string; spec: OptionSpec; negated: boolean } {
  const negatable = (sp: OptionSpec): boolean => sp.type === 'boolean' || sp.negatable === true;
  const exact = specs.get(typed);
  if (exact !== undefined && exact.shortOnly !== true)
    return { name: typed, spec: exact, negated: false };
  if (typed.startsWith('no-')) {
    const sp = specs.get(typed.slice(3));
    if (sp !== undefined && sp.shortOnly !== true && negatable(sp))
      return { name: typed.slice(3), spec: sp, negated: true };
  }
  const found: { name: string; spec: OptionSpec; negated: boolean }[] = [];
  for (const [name, spec] of specs) {
    if (spec.shortOnly === true) continue;
    if (name.startsWith(typed)) found.push({ name, spec, negated: false });
    else if (negatable(spec) && `no-${name}`.startsWith(typed))
      found.push({ name, spec, negated: true });
  }
  const shown = (f: { name: string; negated: boolean }): string =>
    `--${f.negated ? 'no-' : ''}${f.name}`;
  if (found.length > 1)
    throw new UsageError(
      `ambiguous option: ${typed} (could be ${shown(found[0]!)} or ${shown(found[1]!)})`,
      usage,
      'stdout',
    );
  if (found.length === 0) throw new UsageError(`unknown option \`${typed}'`, usage);
  return found[0]!;
}
