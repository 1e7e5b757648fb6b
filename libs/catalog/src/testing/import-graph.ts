import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';

// The static read of a project's relative imports that the import tests share (libs' cycle test,
// the control plane's layers test): a regular expression over `import`/`export ... from './x'`,
// type-only imports included, since they tie the files together for a reader all the same.

/** The TypeScript sources under `dir`, tests and declarations left out. */
export function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const full = path.join(dir, name);
    if (statSync(full).isDirectory()) return sourceFiles(full);
    return name.endsWith('.ts') && !name.endsWith('.test.ts') && !name.endsWith('.d.ts') ? [full] : [];
  });
}

/** The files `file` imports by a relative path, resolved to absolute paths. */
export function relativeImports(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const specifiers = [...text.matchAll(/(?:import|export)[^'"]*?from\s+'(\.{1,2}\/[^']+)'/g)].flatMap((m) =>
    m[1] ? [m[1]] : [],
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

/** One cycle through the graph, as its nodes with the first repeated at the end, or undefined. */
export function findCycle(graph: Map<string, string[]>): string[] | undefined {
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
