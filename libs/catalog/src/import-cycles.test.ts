import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';

// A contract never imports its implementations: no library's modules import each other in a
// circle (type-only imports included: they tie the files together for a reader all the same).

const libs = path.resolve(__dirname, '../..');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const full = path.join(dir, name);
    if (statSync(full).isDirectory()) return sourceFiles(full);
    return name.endsWith('.ts') && !name.endsWith('.test.ts') && !name.endsWith('.d.ts') ? [full] : [];
  });
}

function relativeImports(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const specifiers = [...text.matchAll(/(?:import|export)[^'"]*?from\s+'(\.{1,2}\/[^']+)'/g)].map(
    (m) => m[1]!,
  );
  return specifiers.flatMap((specifier) => {
    const base = path.resolve(path.dirname(file), specifier);
    for (const candidate of [`${base}.ts`, path.join(base, 'index.ts')]) {
      try {
        if (statSync(candidate).isFile()) return [candidate];
      } catch {
        // not this form of the specifier
      }
    }
    return [];
  });
}

/** One cycle through the graph, as file names, or undefined. */
function findCycle(graph: Map<string, string[]>): string[] | undefined {
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const visit = (node: string): string[] | undefined => {
    if (state.get(node) === 'done') return undefined;
    if (state.get(node) === 'open') return [...stack.slice(stack.indexOf(node)), node];
    state.set(node, 'open');
    stack.push(node);
    for (const next of graph.get(node) ?? []) {
      const cycle = visit(next);
      if (cycle) return cycle;
    }
    stack.pop();
    state.set(node, 'done');
    return undefined;
  };
  for (const node of graph.keys()) {
    const cycle = visit(node);
    if (cycle) return cycle;
  }
  return undefined;
}

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
