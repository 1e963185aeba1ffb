// Types of fuzz.mjs for the TypeScript tests that drive it.
export interface FuzzSource {
  name: string;
  hash: 'sha1' | 'sha256';
  pack: string;
  idx: string;
  rev?: string | undefined;
}

export interface FuzzPlan {
  seed: number;
  target?: 'pack' | 'idx' | 'rev';
  fix?: boolean;
  ops?: Record<string, unknown>[];
}

export interface FuzzFinding {
  kind: string;
  message: string;
  source: string;
  plan: FuzzPlan;
}

export function fuzz(o: {
  sources: FuzzSource[];
  cases: number;
  seed?: number;
  timeoutMs?: number;
  dist?: string;
  onFinding?: (f: FuzzFinding) => void;
}): Promise<{ cases: number; findings: FuzzFinding[]; ms: number }>;

export function replay(
  source: FuzzSource,
  seed: number,
  dist?: string,
): Promise<FuzzFinding | undefined>;
