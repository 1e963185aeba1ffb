import type { Argv } from 'yargs';
import { UsageError } from './io.js';

/**
 * Parses a subcommand's arguments with yargs under git's conventions: unknown options and bad
 * values are usage errors (exit 129), `--` ends options, `-h` prints the usage (exit 129 too).
 */
export async function parseArgs<T>(args: string[], usage: string, build: (y: Argv) => Argv<T>): Promise<T & { _: (string | number)[]; '--'?: string[] }> {
  if (args.includes('-h') && args.indexOf('-h') < (args.includes('--') ? args.indexOf('--') : Infinity)) {
    throw new UsageError('', usage);
  }
  const { default: yargs } = await import('yargs');
  const y = yargs()
    .parserConfiguration({
      'populate--': true,
      'camel-case-expansion': false,
      'strip-aliased': true,
      'duplicate-arguments-array': true,
      'boolean-negation': true,
      'short-option-groups': true,
    })
    .help(false)
    .version(false)
    .exitProcess(false)
    .strictOptions()
    .fail((msg, err) => {
      throw new UsageError(gitStyle(msg ?? err?.message ?? 'bad arguments'), usage);
    });
  const parsed = (await build(y).parseAsync(args)) as T & { _: (string | number)[]; '--'?: string[] };
  return parsed;
}

/** Positional arguments, including those after `--`, as strings. */
export function positionals(p: { _: (string | number)[]; '--'?: string[] }): string[] {
  return [...p._.map(String), ...(p['--'] ?? []).map(String)];
}

/** yargs' wording to git's: `Unknown argument: x` → `unknown option 'x'`. */
function gitStyle(msg: string): string {
  const m = /^Unknown arguments?: (.*)$/.exec(msg);
  if (m) return m[1]!.split(', ').map((a) => `unknown option '${a}'`).join('\n');
  return msg.charAt(0).toLowerCase() + msg.slice(1);
}
