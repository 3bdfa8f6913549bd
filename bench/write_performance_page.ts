/**
 * `npm run docs:performance`: rewrites the generated figures of docs/performance.md from the bench
 * runs kept in docs/bench-runs/ (each file the JSON line `npm run bench` prints last), in name order.
 * Keep a run with: npm run bench -- … | tail -1 > docs/bench-runs/<date>-<n>.json
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { benchRunsDirectory, performanceFigures, performancePagePath, readReport, withFigures } from './performance_page.js';

const files = readdirSync(benchRunsDirectory)
  .filter((name) => name.endsWith('.json'))
  .sort();
const reports = files.map((name) => readReport(readFileSync(join(benchRunsDirectory, name), 'utf8')));
writeFileSync(performancePagePath, withFigures(readFileSync(performancePagePath, 'utf8'), performanceFigures(reports)));
process.stdout.write(`wrote ${performancePagePath} from ${files.join(', ')}\n`);
