// A worker thread of the mutation fuzzer (see fuzz.mjs): for each case it mutates a copy of a
// fixture's .pack, .idx or .rev (seeded: a case is a pure function of its seed), then runs the
// readers in-process (`verify`, `inspect`) on the result. A reader may report the damage or throw
// a GitError naming the file and offset; anything else (another exception, an undetected change,
// a report without a file or offset) is a finding. The main thread watches for hangs.
import fs from 'node:fs';
import path from 'node:path';
import { parentPort, workerData } from 'node:worker_threads';
import { pathToFileURL } from 'node:url';
import { loadSource, materialise, planCase } from './mutate.mjs';

const { dist, tmp } = workerData;
const load = (rel) => import(pathToFileURL(path.join(dist, rel)).href);
const { verifyPack } = await load('commands/verify.js');
const { inspectRepository } = await load('commands/inspect.js');
const { SHA1, SHA256 } = await load('hash/algo.js');
const { GitError } = await load('errors.js');

/** Runs the readers on one case; returns a finding or undefined. */
export async function runCase(s, plan, dir) {
  const { base, changed } = materialise(s, plan, dir);
  const algo = s.hash === 'sha256' ? SHA256 : SHA1;
  const files = [base + '.pack', base + '.idx', base + '.rev'];
  const t0 = Date.now();
  let r;
  try {
    r = await verifyPack(base + '.pack', base + '.idx', algo);
  } catch (e) {
    return { kind: 'verify threw', message: describe(e) };
  }
  if (changed && r.ok && !plan.fix)
    return { kind: 'verify missed a change behind a checksum', message: '' };
  for (const p of r.problems) {
    if (!files.includes(p.file) || !Number.isSafeInteger(p.offset) || p.offset < 0)
      return { kind: 'verify report without file and offset', message: JSON.stringify(p) };
  }
  try {
    inspectRepository([base + '.pack'], dir, algo);
  } catch (e) {
    if (!(e instanceof GitError)) return { kind: 'inspect threw', message: describe(e) };
    if (!files.some((f) => e.message.includes(f)) || !/at offset \d+/.test(e.message))
      return { kind: 'inspect error without file and offset', message: e.message };
  }
  const ms = Date.now() - t0;
  if (ms > 5000) return { kind: 'slow', message: `${ms} ms` };
  return undefined;
}

function describe(e) {
  return `${e?.name ?? 'Error'}: ${e?.message ?? String(e)}\n${(e?.stack ?? '').split('\n').slice(1, 6).join('\n')}`;
}

/** Drops ops one at a time while the same kind of finding remains. */
async function minimise(s, plan, dir, finding) {
  let ops = plan.ops;
  for (let i = 0; i < ops.length && ops.length > 1;) {
    const fewer = ops.filter((_, k) => k !== i);
    const f = await runCase(s, { ...plan, ops: fewer }, dir);
    if (f && f.kind === finding.kind) ops = fewer;
    else i++;
  }
  return { ...plan, ops };
}

parentPort.on('message', async (m) => {
  if (m.type !== 'case') return;
  const s = loadSource(m.source);
  const dir = path.join(tmp, `w${m.worker}`);
  fs.mkdirSync(dir, { recursive: true });
  const plan = planCase(m.seed, s);
  parentPort.postMessage({ type: 'start', id: m.id, plan });
  const f = await runCase(s, plan, dir);
  const min = f && f.kind !== 'slow' ? await minimise(s, plan, dir, f) : plan;
  parentPort.postMessage({
    type: 'done',
    id: m.id,
    finding: f && { ...f, plan: min, source: s.name },
  });
});
parentPort.postMessage({ type: 'ready' });
