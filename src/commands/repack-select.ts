import { join } from 'node:path';
import { targetsCover, targetsKey, DEFAULT_AUTO_RULE, type AutoRule } from '../repack/encoding.js';
import type { Levels } from '../repack/levels.js';
import { packsToRewrite, type PackCandidate } from '../repack/select.js';
import type { PackInfo } from '../store/packdir.js';
import {
  entriesOf,
  identify,
  provenPath,
  readProven,
  writeProven,
  type ProvenEntry,
} from '../store/proven.js';
import type { Repository } from '../store/repo.js';
import { strerror } from './strerror.js';

/**
 * Which packs a run rewrites (issue 32): with `-a` or on a first run, all but kept and cruft ones;
 * else what is new and what the geometric rule merges with it (repack/select.ts), leaving the
 * packs an earlier run proved at these levels (store/proven.ts) as they are. And, once the run is
 * done, the record of what it proved.
 */

type Partition = 'normal' | 'promisor';

/** What a run starts from, before any pack is opened. */
export interface Selection {
  /** Every pack with an `.idx`. */
  infos: PackInfo[];
  /** The packs to rewrite, by partition. */
  parts: Record<Partition, PackInfo[]>;
  /** Packs left as they are: kept, cruft, --keep-pack, and proven ones not merged. */
  retained: PackInfo[];
  looseIds: Buffer[];
  writeRev: boolean;
  /** `targetsKey` of this run's levels. */
  targets: string;
  /** The state's entries for the proven packs left as they are (recorded again). */
  keepProven: ProvenEntry[];
}

/** The result fields the selection fills in. */
interface Noted {
  keptPacks: string[];
  provenPacks: string[];
}

/** This run's targets as store/proven.ts records them. */
export function runTargets(opts: {
  levels: Levels;
  autoRule?: AutoRule | undefined;
  autoFallback?: number | undefined;
}): string {
  return targetsKey({
    levels: opts.levels,
    rule: opts.autoRule ?? DEFAULT_AUTO_RULE,
    fallback: opts.autoFallback ?? -1,
  });
}

/** The packs of `infos` this run rewrites, by partition, and those it leaves; `result` notes which. */
export function selectPacks(
  repo: Repository,
  infos: PackInfo[],
  looseIds: Buffer[],
  o: { keepNames: Set<string>; all: boolean; targets: string },
  result: Noted,
  warn: (m: string) => void,
): Selection {
  const writeRev =
    (repo.config.getBool('pack.writeReverseIndex') ?? false) || infos.some((p) => p.rev);
  const state = o.all ? [] : readProven(repo.objectsDir, repo.algo);
  const sel: Selection = {
    infos,
    parts: { normal: [], promisor: [] },
    retained: [],
    looseIds,
    writeRev,
    targets: o.targets,
    keepProven: [],
  };
  const candidates: Record<
    Partition,
    { info: PackInfo; c: PackCandidate; entries: ProvenEntry[] }[]
  > = { normal: [], promisor: [] };
  const odd: PackInfo[] = [];
  for (const p of infos) {
    if (p.keep || p.cruft || o.keepNames.has(p.name)) {
      sel.retained.push(p);
      continue;
    }
    // Our journal records (and its recovery proves) a pack by its name `pack-<checksum>` (or git's
    // `loose-<checksum>`): any other stays, and is no kept pack either (a killed `git repack`'s
    // `.tmp-*` pack is the user's to delete).
    if (!p.canonical) {
      odd.push(p);
      warn(
        `${p.base}.pack: not named pack-<checksum> or loose-<checksum>; left as it is; nothing the rewrite removes relies on it`,
      );
      continue;
    }
    const id = state.length > 0 ? identify(p.base, repo.algo) : undefined;
    const had = id === undefined ? [] : entriesOf(state, id);
    const proven = (!writeRev || p.rev) && had.some((e) => targetsCover(e.targets, o.targets));
    candidates[p.promisor ? 'promisor' : 'normal'].push({
      info: p,
      c: { name: p.name, objects: id?.objects ?? 0, proven },
      entries: had,
    });
  }
  result.keptPacks = [...sel.retained, ...odd].map((p) => p.name);
  for (const kind of ['normal', 'promisor'] as const) {
    const chosen = packsToRewrite(
      candidates[kind].map((x) => x.c),
      kind === 'normal' ? looseIds.length : 0,
    );
    for (const x of candidates[kind]) {
      if (chosen.has(x.info.name)) sel.parts[kind].push(x.info);
      else {
        sel.retained.push(x.info);
        sel.keepProven.push(...x.entries);
        result.provenPacks.push(x.info.name);
      }
    }
  }
  return sel;
}

/**
 * Records the packs a run leaves proven at its levels: those it wrote or found already at them,
 * and the proven ones it left alone. Best effort: a run that cannot record it succeeded all the
 * same, and the next one reads the packs again.
 */
export function recordProven(
  repo: Repository,
  sel: Selection,
  partitions: { newPack?: string | undefined }[],
  shared: number,
  warn: (m: string) => void,
): void {
  const entries: ProvenEntry[] = [...sel.keepProven];
  for (const pr of partitions) {
    if (pr.newPack === undefined) continue;
    const id = identify(join(repo.objectsDir, 'pack', pr.newPack), repo.algo);
    if (id !== undefined) entries.push({ ...id, targets: sel.targets });
  }
  try {
    writeProven(repo.objectsDir, entries, shared);
  } catch (e) {
    warn(
      `could not record the packs proven at these levels in ${provenPath(repo.objectsDir)}: ${strerror(e)}; the next run reads them again`,
    );
  }
}
