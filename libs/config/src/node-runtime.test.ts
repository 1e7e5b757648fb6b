import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { exitUnlessNodeSupported, nodeRuntimeProblem } from './node-runtime';

const repo = path.resolve(__dirname, '../../..');
const declared = readFileSync(path.join(repo, '.node-version'), 'utf8').trim();
const major = Number(declared.split('.')[0]);
const range = `>=${declared} <${major + 1}`;

describe('nodeRuntimeProblem', () => {
  it('accepts the declared version and later ones of its major', () => {
    expect(nodeRuntimeProblem('@pipeline/ingestion', range, declared)).toBeUndefined();
    expect(nodeRuntimeProblem('@pipeline/ingestion', range, `${major}.99.0`)).toBeUndefined();
  });

  it('refuses an older major, naming the version it needs', () => {
    expect(nodeRuntimeProblem('@pipeline/ingestion', range, '20.20.2')).toBe(
      `@pipeline/ingestion needs Node ${range} (engines.node in its package.json) but runs on Node 20.20.2`,
    );
  });

  it('refuses the next major until .node-version moves to it', () => {
    expect(nodeRuntimeProblem('@pipeline/delivery', range, `${major + 1}.0.0`)).toBe(
      `@pipeline/delivery needs Node ${range} (engines.node in its package.json) but runs on Node ${major + 1}.0.0`,
    );
  });

  it('refuses a package that declares no range', () => {
    expect(nodeRuntimeProblem('@pipeline/x', undefined, declared)).toBe(
      '@pipeline/x declares no engines.node in its package.json',
    );
  });
});

describe('exitUnlessNodeSupported', () => {
  it('returns when the package accepts the version', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'node-runtime-'));
    const manifest = path.join(dir, 'package.json');
    writeFileSync(manifest, JSON.stringify({ name: '@pipeline/probe', engines: { node: range } }));
    expect(exitUnlessNodeSupported(manifest, declared)).toBeUndefined();
  });
});

describe('the services', () => {
  it.each(['apps/control-plane', 'apps/ingestion', 'apps/delivery'])(
    '%s declares the range derived from .node-version',
    (app) => {
      const manifest = JSON.parse(readFileSync(path.join(repo, app, 'package.json'), 'utf8')) as {
        engines?: { node?: string };
      };
      expect(manifest.engines?.node).toBe(range);
    },
  );
});
