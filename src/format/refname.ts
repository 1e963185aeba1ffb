/**
 * git's `check_refname_format(refname, 0)` (refs.c): what `git check-ref-format <refname>`
 * accepts. Components are separated by `/`; none may be empty, start with `.`, end with `.lock`,
 * or hold `..`, `@{`, a control character, space, `~ ^ : ? * [ \`; the name may not end with
 * `.` nor be `@`, and needs at least two components.
 */
export function isValidRefname(name: string): boolean {
  if (name === '@' || name === '') return false;
  const parts = name.split('/');
  if (parts.length < 2) return false;
  for (const c of parts) if (!validComponent(c)) return false;
  return !name.endsWith('.');
}

/** git's `check_refname_component` with its `refname_disposition` table. */
function validComponent(c: string): boolean {
  if (c === '' || c.startsWith('.') || c.endsWith('.lock')) return false;
  let last = '';
  for (const ch of c) {
    const code = ch.codePointAt(0)!;
    if (code < 0x20 || code === 0x7f || ' ~^:?*[\\'.includes(ch)) return false;
    if ((ch === '.' && last === '.') || (ch === '{' && last === '@')) return false;
    last = ch;
  }
  return true;
}

/** A name a zpack may set: under `refs/` (as `git fetch` requires of a local ref, `get_fetch_map`) and well formed. */
export function isSettableRef(name: string): boolean {
  return name.startsWith('refs/') && !name.includes('\uFFFD') && isValidRefname(name);
}
