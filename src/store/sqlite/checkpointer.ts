/**
 * Background WAL checkpoints for the server's connection. With SQLite's automatic checkpoints the
 * commit that crosses 1,000 WAL pages copies them into the database and fsyncs it, on the event
 * loop; at thousands of commits a second that was a third of every device authorization's cost.
 * A worker thread does it on a timer instead, on its own connection: PASSIVE never waits for the
 * writer, and when the server stops a last TRUNCATE leaves an empty WAL behind. If that thread ever
 * dies the connection goes back to automatic checkpoints, so the WAL never grows without bound.
 */
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

export interface Checkpointer {
  stop(): Promise<void>;
}

/**
 * The thread's code, evaluated in place rather than loaded from a file of its own, so it runs the
 * same from the build and from the TypeScript sources under test.
 */
const checkpointThread = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.path);
db.pragma('busy_timeout = 1000');
const checkpoint = (mode) => {
  try { db.pragma('wal_checkpoint(' + mode + ')'); } catch { /* busy: the next round catches up */ }
};
const timer = setInterval(() => checkpoint('PASSIVE'), workerData.everyMs);
parentPort.on('message', (message) => {
  if (message !== 'stop') return;
  clearInterval(timer);
  checkpoint('TRUNCATE');
  db.close();
  parentPort.postMessage('stopped');
});
`;

export function startCheckpointer(path: string, onFailure: (err: Error) => void, everyMs = 250): Checkpointer {
  const driver = createRequire(import.meta.url).resolve('better-sqlite3');
  const worker = new Worker(checkpointThread, { eval: true, workerData: { path, everyMs, driver } });
  worker.unref();
  let stopped = false;
  const fail = (err: Error) => {
    if (stopped) return;
    stopped = true;
    process.emitWarning(`background WAL checkpoints stopped (${err.message}); SQLite checkpoints automatically again`);
    onFailure(err);
  };
  worker.on('error', fail);
  worker.on('exit', (code) => fail(new Error(`the checkpoint thread exited with code ${code}`)));
  return {
    async stop() {
      if (stopped) return;
      stopped = true;
      await new Promise<void>((resolve) => {
        const timeout = setTimeout(() => void worker.terminate().then(() => resolve()), 5000);
        worker.once('message', () => {
          clearTimeout(timeout);
          void worker.terminate().then(() => resolve());
        });
        worker.once('exit', () => {
          clearTimeout(timeout);
          resolve();
        });
        worker.postMessage('stop');
      });
    },
  };
}
