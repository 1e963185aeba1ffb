// One timed run of a command under GNU time, as every benchmark here measures: wall seconds, peak
// RSS (MiB) and CPU seconds (user + system, the command and the children it waited for: what a
// loaded machine distorts least). A failing command throws with the end of its stderr, unless
// `allowFail`.
import { spawnSync } from 'node:child_process';

export function timed(argv, { cwd, env, allowFail = false }) {
  const r = spawnSync('/usr/bin/time', ['-f', '%e %M %U %S', ...argv], {
    cwd,
    env,
    stdio: ['ignore', 'ignore', 'pipe'],
    encoding: 'utf8',
    maxBuffer: 1 << 30,
  });
  if (r.status !== 0 && !allowFail)
    throw new Error(`${argv.join(' ')} failed (${r.status}):\n${r.stderr.slice(-2000)}`);
  const last = r.stderr.trim().split('\n').pop() ?? '';
  const [secs, kb, user, sys] = last.split(' ').map(Number);
  return { secs, mib: kb / 1024, cpu: user + sys };
}
