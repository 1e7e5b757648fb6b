#!/usr/bin/env node
// The Node and V8 flags a service's image starts it with: the options between `node` and the
// script in the exec-form CMD (or ENTRYPOINT) of docker/<image>.Dockerfile. The Dockerfile is
// their one source; the dev stack (tools/dev.sh) and the benchmarks (tools/bench) start the
// built service with the same flags, so what they measure is what ships.
//   node tools/deploy/node-flags.mjs <image>   prints them, space-separated (nothing if none)
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** `["node", flag..., script, arg...]` of the last stage's ENTRYPOINT and CMD -> the flags. */
export function nodeFlagsOf(dockerfileText) {
  const lines = dockerfileText.replace(/\\\n/g, ' ').split('\n');
  const lastFrom = lines.findLastIndex((line) => /^\s*FROM\s/i.test(line));
  const exec = (op) => {
    const line = lines
      .slice(lastFrom + 1)
      .filter((l) => new RegExp(`^\\s*${op}\\s+\\[`, 'i').test(l))
      .at(-1);
    return line ? JSON.parse(line.trim().slice(op.length)) : [];
  };
  return splitNodeCommand([...exec('ENTRYPOINT'), ...exec('CMD')]).flags;
}

/** `["node", flag..., script, arg...]` -> its flags and script (none unless it starts node). */
export function splitNodeCommand(command) {
  if (command[0] !== 'node') return { flags: [], script: undefined };
  const scriptAt = command.findIndex((word, i) => i > 0 && !word.startsWith('-'));
  return {
    flags: command.slice(1, scriptAt < 0 ? undefined : scriptAt),
    script: scriptAt < 0 ? undefined : command[scriptAt],
  };
}

export function nodeFlags(image) {
  return nodeFlagsOf(readFileSync(path.join(repo, 'docker', `${image}.Dockerfile`), 'utf8'));
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const image = process.argv[2];
  if (!image) {
    console.error('usage: node tools/deploy/node-flags.mjs <image>');
    process.exit(2);
  }
  console.log(nodeFlags(image).join(' '));
}
