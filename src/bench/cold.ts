import { spawnSync } from 'node:child_process';
import { statSync } from 'node:fs';

/**
 * Cold cache, as far as this machine allows: each file's pages are dropped from the page cache
 * with `dd iflag=nocache count=0` (coreutils; posix_fadvise(POSIX_FADV_DONTNEED) on the whole
 * file), and `fincore` (util-linux) then has to confirm that no page stayed resident. Without
 * both tools, or when a page stays, cold numbers are unavailable: the bench never prints warm
 * numbers under a cold heading. `echo 3 > /proc/sys/vm/drop_caches` is not used: it would empty
 * the cache of every process on a shared machine.
 *
 * Note that on a virtual machine the host may still cache the disk: an evicted page is then read
 * from the host's memory, not from the device. `probeColdRead` measures the re-read speed so the
 * report can say what "cold" meant.
 */
export interface ColdSupport {
  available: boolean;
  reason: string;
}

function has(cmd: string, args: string[]): boolean {
  const r = spawnSync(cmd, args, { stdio: 'ignore' });
  return r.error === undefined && r.status === 0;
}

export function coldSupport(): ColdSupport {
  if (!has('dd', ['--version'])) return { available: false, reason: 'dd (coreutils) not found' };
  if (!has('fincore', ['--version']))
    return {
      available: false,
      reason: 'fincore (util-linux) not found: eviction cannot be checked',
    };
  return { available: true, reason: 'dd iflag=nocache, checked with fincore' };
}

/** Bytes of `file` resident in the page cache, or undefined when fincore cannot tell. */
export function residentBytes(file: string): number | undefined {
  const r = spawnSync('fincore', ['--bytes', '--noheadings', '--output', 'RES', file], {
    encoding: 'utf8',
  });
  if (r.error || r.status !== 0) return undefined;
  const n = Number(r.stdout.trim());
  return Number.isFinite(n) ? n : undefined;
}

/** Drops the files' pages; returns the files that kept resident pages (empty when it worked). */
export function evict(files: string[]): { failed: string[] } {
  const failed: string[] = [];
  for (const f of files) {
    const r = spawnSync('dd', [`if=${f}`, 'iflag=nocache', 'count=0', 'status=none'], {
      stdio: 'ignore',
    });
    const res = residentBytes(f);
    if (r.status !== 0 || res === undefined || res > 0) failed.push(f);
  }
  return { failed };
}

/** Re-read speed of evicted files in MB/s (host caching shows as speeds no disk gives). */
export function probeColdRead(
  files: string[],
  read: (files: string[]) => void,
): number | undefined {
  const big = files.filter((f) => statSync(f).size > 0);
  const bytes = big.reduce((a, f) => a + statSync(f).size, 0);
  if (bytes === 0) return undefined;
  if (evict(big).failed.length > 0) return undefined;
  const t0 = performance.now();
  read(big);
  const s = (performance.now() - t0) / 1000;
  return s > 0 ? bytes / 1e6 / s : undefined;
}
