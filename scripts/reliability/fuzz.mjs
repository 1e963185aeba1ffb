// The mutation fuzzer's driver: hands seeded cases to a worker thread (fuzz-worker.mjs) and
// watches it; a case that does not finish within `timeoutMs` is a hang: the worker is terminated,
// the case recorded, and a new worker carries on with the next case.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';

const HERE = path.dirname(fileURLToPath(import.meta.url));

/**
 * @param {object} o
 * @param {{name: string, hash: 'sha1'|'sha256', pack: string, idx: string, rev?: string}[]} o.sources
 * @param {number} o.cases how many cases
 * @param {number} [o.seed] first seed (case i uses seed + i)
 * @param {number} [o.timeoutMs] a case slower than this is a hang
 * @param {string} [o.dist] the compiled code to fuzz (default: the project's dist/)
 * @param {(f: object) => void} [o.onFinding]
 * @returns {Promise<{cases: number, findings: object[], ms: number}>}
 */
export async function fuzz(o) {
  const dist = o.dist ?? path.resolve(HERE, '../../dist');
  const tmp = fs.mkdtempSync(
    path.join(fs.existsSync('/dev/shm') ? '/dev/shm' : os.tmpdir(), 'git-repack-ts-fuzz-'),
  );
  const timeoutMs = o.timeoutMs ?? 20_000;
  const seed0 = o.seed ?? 1;
  const findings = [];
  const t0 = Date.now();
  let next = 0;
  let done = 0;
  try {
    while (next < o.cases) {
      await new Promise((resolve, reject) => {
        const w = new Worker(path.join(HERE, 'fuzz-worker.mjs'), {
          workerData: { dist, tmp },
          resourceLimits: { maxOldGenerationSizeMb: 512 },
        });
        let current;
        let timer;
        let ended = false;
        const finish = (v) => {
          if (ended) return;
          ended = true;
          clearTimeout(timer);
          void w.terminate().then(() => resolve(v));
        };
        const send = () => {
          if (next >= o.cases) return finish();
          const id = next++;
          const i = id;
          current = { id, seed: seed0 + i, source: o.sources[i % o.sources.length] };
          w.postMessage({
            type: 'case',
            id,
            seed: current.seed,
            source: current.source,
            worker: 0,
          });
          clearTimeout(timer);
          timer = setTimeout(() => {
            const f = {
              kind: 'hang',
              message: `no answer within ${timeoutMs} ms`,
              source: current.source.name,
              plan: current.plan ?? { seed: current.seed },
            };
            findings.push(f);
            o.onFinding?.(f);
            done++;
            finish();
          }, timeoutMs);
        };
        w.on('message', (m) => {
          if (m.type === 'ready') send();
          else if (m.type === 'start') current.plan = m.plan;
          else if (m.type === 'done') {
            done++;
            if (m.finding) {
              findings.push(m.finding);
              o.onFinding?.(m.finding);
            }
            send();
          }
        });
        w.on('error', (e) => {
          // The worker itself died (out of memory, say): that case is a finding too.
          const f = {
            kind: 'worker died',
            message: String(e?.message ?? e),
            source: current?.source.name,
            plan: current?.plan ?? { seed: current?.seed },
          };
          findings.push(f);
          o.onFinding?.(f);
          done++;
          finish();
        });
        w.on('exit', () => finish());
        void reject;
      });
    }
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
  return { cases: done, findings, ms: Date.now() - t0 };
}

/** Replays one case by seed (for a regression test of a finding); returns its finding or undefined. */
export async function replay(source, seed, dist) {
  const r = await fuzz({ sources: [source], cases: 1, seed, dist });
  return r.findings[0];
}
