/**
 * The raw password rate: how many password verifications one core does per second with the
 * server's own code (Argon2id with the current parameters, crypto/password.ts), with no HTTP or
 * database around it, one after another as a sign-in would ask for them. Run pinned to the
 * server's core; prints one JSON line. A right and a wrong password cost the same. Also per second
 * of this process's own CPU time (all its threads): a figure that other work on a shared core
 * leaves standing.
 */
import { hashPassword, passwordHashParameters, verifyPassword } from '../src/crypto/password.js';

const seconds = Number(process.argv[2] ?? 3);
const password = 'correct horse battery staple';
const stored = await hashPassword(password);

async function verifyFor(ms: number): Promise<number> {
  const end = performance.now() + ms;
  let count = 0;
  while (performance.now() < end) {
    if (!(await verifyPassword(password, stored))) throw new Error('the password did not verify');
    count++;
  }
  return count;
}

await verifyFor(300); // warm-up
const started = performance.now();
const cpuBefore = process.cpuUsage();
const count = await verifyFor(seconds * 1000);
const cpu = process.cpuUsage(cpuBefore);
const elapsed = (performance.now() - started) / 1000;
const cpuSeconds = (cpu.user + cpu.system) / 1e6;
process.stdout.write(
  `${JSON.stringify({
    parameters: passwordHashParameters,
    verificationsPerSecond: count / elapsed,
    verificationsPerCpuSecond: count / cpuSeconds,
    millisecondsEach: (elapsed * 1000) / count,
  })}\n`,
);
