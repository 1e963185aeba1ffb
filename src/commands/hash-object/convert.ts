import type { AutoCrlf } from './config.js';

/**
 * Would git convert this path's content? (convert.c: `convert_attrs` and what `convert_to_git`
 * does with it.) A pure function of a path's attributes, as `git check-attr` reports them
 * (attrs.ts asks), and the end-of-line configuration: only what git does with them is re-derived.
 */

/**
 * What git does with a path's content:
 * - `identity`: nothing, whatever the content;
 * - `crlf`: at most CRLF → LF (`crlf_to_git`): content without a CR is hashed as it is, other
 *   content is git's to convert (text=auto's binary guess, or readings that disagree);
 * - `crlf-text`: CRLF → LF on text (`crlf_to_git` for text and eol=lf|crlf), done here without -w;
 * - `delegate`: something we do not imitate (filters, ident, encodings, warnings): `git hash-object` runs.
 */
export type Decision = 'identity' | 'crlf' | 'crlf-text' | 'delegate';

type AttrValue = { k: 'true' } | { k: 'false' } | { k: 'unspecified' } | { k: 'string'; v: string };

/**
 * What a `git check-attr --all` report may stand for: `--all` omits unspecified attributes, so an
 * absent one is unspecified; "set" and "unset" may be the states or, when `spelled` (some
 * attributes file that applies says `=set` or `=unset`), strings spelled that way.
 */
function interpretations(reported: string | undefined, spelled: boolean): AttrValue[] {
  if (reported === undefined) return [{ k: 'unspecified' }];
  if (reported === 'set')
    return spelled ? [{ k: 'true' }, { k: 'string', v: 'set' }] : [{ k: 'true' }];
  if (reported === 'unset')
    return spelled ? [{ k: 'false' }, { k: 'string', v: 'unset' }] : [{ k: 'false' }];
  return [{ k: 'string', v: reported }];
}

type CrlfAction =
  | 'undefined'
  | 'binary'
  | 'text'
  | 'text-input'
  | 'text-crlf'
  | 'auto'
  | 'auto-input'
  | 'auto-crlf';

/** git_path_check_crlf */
function checkCrlf(v: AttrValue): CrlfAction {
  if (v.k === 'true') return 'text';
  if (v.k === 'false') return 'binary';
  if (v.k === 'string' && v.v === 'input') return 'text-input';
  if (v.k === 'string' && v.v === 'auto') return 'auto';
  return 'undefined';
}

interface Attrs {
  text: AttrValue;
  crlf: AttrValue;
  eol: AttrValue;
  ident: AttrValue;
  filter: AttrValue;
  encoding: AttrValue;
}

/** The attributes convert_attrs reads (their order is decisionFor's). */
export const CONVERSION_ATTRS = [
  'text',
  'crlf',
  'eol',
  'ident',
  'filter',
  'working-tree-encoding',
] as const;

/** How the end-of-line settings of the configuration enter `convert_attrs`. */
export interface EolConfig {
  auto: AutoCrlf;
  /** text_eol_is_crlf() */
  eolIsCrlf: boolean;
}

/** convert_attrs: the crlf_action git settles on. */
function crlfAction(a: Attrs, eol: EolConfig): CrlfAction {
  let action = checkCrlf(a.text);
  if (action === 'undefined') action = checkCrlf(a.crlf);
  if (action !== 'binary') {
    const e = a.eol.k === 'string' ? a.eol.v : undefined;
    if (action === 'auto' && e === 'lf') action = 'auto-input';
    else if (action === 'auto' && e === 'crlf') action = 'auto-crlf';
    else if (e === 'lf') action = 'text-input';
    else if (e === 'crlf') action = 'text-crlf';
  }
  if (action === 'text') action = eol.eolIsCrlf ? 'text-crlf' : 'text-input';
  if (action === 'undefined')
    action = eol.auto === false ? 'binary' : eol.auto === true ? 'auto-crlf' : 'auto-input';
  return action;
}

/** output_eol: would a checkout write CRLF (which `-w`'s safecrlf check warns about)? */
function outputsCrlf(action: CrlfAction, eol: EolConfig): boolean {
  if (action === 'text-crlf' || action === 'auto-crlf') return true;
  if (action === 'auto') return eol.eolIsCrlf;
  return false;
}

/** What one reading of the attributes makes git do; `crlfOut`: a checkout would write CRLF. */
interface Conversion {
  kind: 'identity' | 'text' | 'auto' | 'delegate';
  crlfOut: boolean;
}

function conversionOf(a: Attrs, eol: EolConfig, hasDriver: (name: string) => boolean): Conversion {
  const delegate: Conversion = { kind: 'delegate', crlfOut: false };
  if (a.ident.k === 'true') return delegate;
  if (a.filter.k === 'string' && hasDriver(a.filter.v)) return delegate;
  if (a.encoding.k === 'true' || a.encoding.k === 'false') return delegate; // git dies: let it
  if (a.encoding.k === 'string' && a.encoding.v !== '') return delegate;
  const action = crlfAction(a, eol);
  if (action === 'binary') return { kind: 'identity', crlfOut: false };
  const auto = action === 'auto' || action === 'auto-input' || action === 'auto-crlf';
  return { kind: auto ? 'auto' : 'text', crlfOut: outputsCrlf(action, eol) };
}

/**
 * The decision for one `git check-attr --all` report, over every reading of it: `crlf-text` when
 * all readings are text (CRLF → LF, which this tool does itself), `crlf` when the readings differ
 * or guess (text=auto: git's binary heuristics decide). With `write`, content whose checkout
 * would add CRLF is delegated: git's safecrlf check may warn.
 */
export function decisionFor(
  report: Map<string, string>,
  eol: EolConfig,
  hasDriver: (name: string) => boolean,
  write: boolean,
  spelled = true,
): Decision {
  const names = CONVERSION_ATTRS;
  const options = names.map((n) => interpretations(report.get(n), spelled));
  const pick = new Array<number>(names.length).fill(0);
  const kinds = new Set<Conversion['kind']>();
  for (;;) {
    const v = (i: number): AttrValue => options[i]![pick[i]!]!;
    const c = conversionOf(
      { text: v(0), crlf: v(1), eol: v(2), ident: v(3), filter: v(4), encoding: v(5) },
      eol,
      hasDriver,
    );
    kinds.add(c.crlfOut && write ? 'delegate' : c.kind);
    let i = 0;
    while (i < names.length && ++pick[i]! >= options[i]!.length) pick[i++] = 0;
    if (i === names.length) break;
  }
  if (kinds.has('delegate')) return 'delegate';
  if (kinds.size === 1 && kinds.has('identity')) return 'identity';
  if (kinds.size === 1 && kinds.has('text')) return 'crlf-text';
  return 'crlf';
}

/** True when no reading of the report can make git change the content. */
export function attrsAreIdentity(
  report: Map<string, string>,
  auto: AutoCrlf,
  hasDriver: (name: string) => boolean,
): boolean {
  return decisionFor(report, { auto, eolIsCrlf: auto === true }, hasDriver, false) === 'identity';
}

/** `git check-attr -z` output: `path\0attr\0value\0` records, grouped by path. */
export function parseCheckAttr(out: Buffer): Map<string, Map<string, string>> {
  const fields = out.toString('utf8').split('\0');
  const byPath = new Map<string, Map<string, string>>();
  for (let i = 0; i + 2 < fields.length; i += 3) {
    const path = fields[i]!;
    let m = byPath.get(path);
    if (!m) byPath.set(path, (m = new Map()));
    m.set(fields[i + 1]!, fields[i + 2]!);
  }
  return byPath;
}
