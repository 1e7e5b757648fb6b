import path from 'node:path';
import { findCycle, relativeImports, sourceFiles } from '@pipeline/catalog/testing';

// The control plane's layers, written once, from the lowest to the highest: a file imports from
// its own folder and from the folders before it, never from one after it. A file directly in
// src/ is a layer of its own. Generic machinery comes first and knows no feature; TypeORM's
// entity list, the one place that must name every feature, is data-model.ts near the top.
const LAYERS = [
  // Generic machinery.
  'http',
  'database',
  'work-queue',
  'warehouse-access',
  // Features, each above the features it uses; the warehouse registry first, since every account is
  // placed on one.
  'warehouse-registry',
  'accounts',
  'auth',
  'write-keys',
  'apps',
  'jobs',
  'sources',
  'integrations',
  'tasks',
  'usage',
  'tenant-warehouse',
  'me',
  'debugger',
  'dead-letters',
  'regulations',
  'tracking-plans',
  'quarantine',
  'plan-alerts',
  'plan-violations',
  'functions',
  'internal',
  'app-types',
  'health',
  'console',
  // What observes, configures or assembles the features.
  'metrics',
  'config',
  'data-model',
  'scratch-data-source',
  'tracing',
  'node-runtime',
  'cli',
  'generated',
  'app',
  'composition',
  'main',
  'testing',
] as const;

type Layer = (typeof LAYERS)[number];

/** Files that belong to a higher layer than their folder's, each with its reason. */
const PLACED_ABOVE_THEIR_FOLDER: Record<string, Layer> = {
  // The migrate Job's entry point: like main.ts it reads config and opens the whole data model,
  // but dist/database/migrate.js is the command the images, tools/dev.sh and operators run.
  'database/migrate.ts': 'main',
  // A move runs as a job: its executor implements the job runner's interface, while the rest of
  // the warehouse registry sits below the jobs (an account is placed before it has any).
  'warehouse-registry/warehouse-move-executor.ts': 'jobs',
};

const src = __dirname;

/** The layer a file (relative to src/, with `/`) belongs to: its placement, folder or own name. */
function layerOf(file: string): string {
  const placed = PLACED_ABOVE_THEIR_FOLDER[file];
  if (placed) return placed;
  const [first, ...rest] = file.split('/');
  return rest.length > 0 ? first! : first!.replace(/\.ts$/, '');
}

/** Imports from a lower layer into a higher one, as `from -> to` lines. */
function upwardImports(imports: [from: string, to: string][], order: readonly string[]): string[] {
  const rank = (file: string) => order.indexOf(layerOf(file));
  return imports.filter(([from, to]) => rank(to) > rank(from)).map(([from, to]) => `${from} -> ${to}`);
}

describe('control plane layers', () => {
  const imports = sourceFiles(src).flatMap((file) =>
    relativeImports(file).map((to): [string, string] => [
      path.relative(src, file).split(path.sep).join('/'),
      path.relative(src, to).split(path.sep).join('/'),
    ]),
  );

  it('places every folder and top-level file in the order', () => {
    const layers = new Set(imports.flat().map(layerOf));
    expect([...layers].filter((layer) => !(LAYERS as readonly string[]).includes(layer))).toEqual([]);
  });

  it('has no import from a lower layer into a higher one', () => {
    expect(upwardImports(imports, LAYERS)).toEqual([]);
  });

  it('has no cycle between layers', () => {
    const graph = new Map<string, string[]>();
    for (const [from, to] of imports) {
      const [a, b] = [layerOf(from), layerOf(to)];
      if (a !== b) graph.set(a, [...(graph.get(a) ?? []), b]);
    }
    expect(findCycle(graph)).toBeUndefined();
  });

  it('finds an upward import when there is one', () => {
    const order = ['http', 'jobs', 'main'];
    expect(
      upwardImports(
        [
          ['jobs/job.service.ts', 'http/api-errors.ts'],
          ['http/metrics.ts', 'jobs/job.entity.ts'],
          ['main.ts', 'jobs/job.service.ts'],
        ],
        order,
      ),
    ).toEqual(['http/metrics.ts -> jobs/job.entity.ts']);
    expect(layerOf('database/migrate.ts')).toBe('main');
    expect(layerOf('config.ts')).toBe('config');
  });
});
