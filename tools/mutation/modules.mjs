// The modules the mutation tooling knows: each folder of libs/ and apps/ with a
// stryker.config.mjs, named by the folder (`events`, `control-plane`). Read from a checkout or
// from a commit's extracted tree (tools/mutation/check-configs.mjs).
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

/**
 * @param {string} root the tree's root
 * @returns {{ name: string, config: string }[]} config relative to root, libs/ first
 */
export function mutationModules(root) {
  return ['libs', 'apps'].flatMap((group) =>
    existsSync(path.join(root, group))
      ? readdirSync(path.join(root, group), { withFileTypes: true })
          .filter((d) => d.isDirectory() && existsSync(path.join(root, group, d.name, 'stryker.config.mjs')))
          .map((d) => ({ name: d.name, config: `${group}/${d.name}/stryker.config.mjs` }))
      : [],
  );
}

/**
 * A module's Stryker options as its config builds them. The tree is part of the URL, so that
 * the same config path of two trees (two commits) is imported twice, not served from the cache.
 */
export async function mutationOptions(root, config) {
  const { default: options } = await import(
    `${pathToFileURL(path.join(root, config)).href}?at=${encodeURIComponent(root)}`
  );
  return options;
}
