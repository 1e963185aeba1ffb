/**
 * Which packs a run rewrites (issue 32: later runs cost what is new). A pack already proven at the
 * targets (store/proven.ts) is left as it is, like a kept pack, unless merging it keeps the packs'
 * sizes a geometric progression: without that, a run a day would add a pack a day. What is new
 * (packs not proven, loose objects) is always rewritten.
 */

export interface PackCandidate {
  name: string;
  objects: number;
  /** Proven at the targets this run asks for. */
  proven: boolean;
}

/** git's default `--geometric` factor (repack.c): each pack at least twice all smaller ones. */
export const GEOMETRIC_FACTOR = 2;

/**
 * The names of the packs to rewrite: every pack not proven, then the smallest proven ones while
 * each is under `factor` times everything merged so far (git's `split_pack_geometry`, grown from
 * what must be rewritten anyway). With nothing new (no pack to rewrite, no loose object), none.
 */
export function packsToRewrite(
  packs: readonly PackCandidate[],
  looseObjects: number,
  factor = GEOMETRIC_FACTOR,
): Set<string> {
  const out = new Set<string>();
  let merged = looseObjects;
  for (const p of packs) {
    if (p.proven) continue;
    out.add(p.name);
    merged += p.objects;
  }
  if (out.size === 0 && looseObjects === 0) return out;
  const proven = packs
    .filter((p) => p.proven)
    .sort((a, b) => a.objects - b.objects || a.name.localeCompare(b.name));
  for (const p of proven) {
    if (p.objects >= factor * merged) break;
    out.add(p.name);
    merged += p.objects;
  }
  return out;
}
