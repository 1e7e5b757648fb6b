import { readFileSync } from 'node:fs';
import semver from 'semver';

/**
 * Why a Node version cannot run a package whose package.json declares `engines.node`, or
 * undefined when it can. The range comes from the package itself (the images hold only the
 * pruned app, not the repository's .node-version it is derived from).
 */
export function nodeRuntimeProblem(
  name: string,
  range: string | undefined,
  version: string = process.versions.node,
): string | undefined {
  if (!range) return `${name} declares no engines.node in its package.json`;
  if (semver.satisfies(version, range)) return undefined;
  return `${name} needs Node ${range} (engines.node in its package.json) but runs on Node ${version}`;
}

interface PackageManifest {
  name?: string;
  engines?: { node?: string };
}

/**
 * Stops the process at once when this Node does not satisfy the package's engines.node: an
 * older major fails later and obscurely (a missing API deep in a request). Exit code 78 is
 * EX_CONFIG, as for a bad environment.
 */
export function exitUnlessNodeSupported(
  packageJsonPath: string,
  version: string = process.versions.node,
): void {
  const manifest = JSON.parse(readFileSync(packageJsonPath, 'utf8')) as PackageManifest;
  const name = manifest.name ?? packageJsonPath;
  const problem = nodeRuntimeProblem(name, manifest.engines?.node, version);
  if (problem) {
    process.stderr.write(`${problem}\n`);
    process.exit(78);
  }
}
