import { readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { findCycle, relativeImports, sourceFiles } from './testing';

// A contract never imports its implementations: no library's modules import each other in a
// circle (type-only imports included: they tie the files together for a reader all the same).

const libs = path.resolve(__dirname, '../..');

describe('module imports', () => {
  const libraries = readdirSync(libs).filter((name) => statSync(path.join(libs, name, 'src')).isDirectory());

  it.each(libraries)('libs/%s has no import cycle', (library) => {
    const files = sourceFiles(path.join(libs, library, 'src'));
    const graph = new Map(files.map((file) => [file, relativeImports(file)]));
    const cycle = findCycle(graph)?.map((file) => path.relative(libs, file));
    expect(cycle).toBeUndefined();
  });

  it('finds a cycle when there is one', () => {
    expect(
      findCycle(
        new Map([
          ['a', ['b']],
          ['b', ['c']],
          ['c', ['a']],
        ]),
      ),
    ).toEqual(['a', 'b', 'c', 'a']);
    expect(
      findCycle(
        new Map([
          ['a', ['b']],
          ['b', []],
        ]),
      ),
    ).toBeUndefined();
  });

  it('the forwarders import their contract, and the contract imports none of them', () => {
    const forwarding = path.join(libs, 'destinations/src/forwarding');
    const contract = relativeImports(path.join(forwarding, 'forwarder.ts')).map((f) => path.basename(f));
    expect(contract.filter((name) => name.endsWith('-forwarder.ts'))).toEqual([]);
    const amplitude = relativeImports(path.join(forwarding, 'vendors/amplitude/amplitude-forwarder.ts')).map(
      (f) => path.basename(f),
    );
    expect(amplitude).toContain('forwarder.ts');
  });
});
