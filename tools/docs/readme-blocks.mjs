#!/usr/bin/env node
// Prints the shell code blocks of one section of a markdown file, as the reader sees them.
//
//   node tools/docs/readme-blocks.mjs <file.md> "<section title>" <out dir>
//
// Writes <out dir>/1.sh, 2.sh, ... (one file per ```sh block, in order) and prints their
// paths. A section runs from its heading to the next heading of the same or a higher level.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const [file, title, outDir] = process.argv.slice(2);
if (!file || !title || !outDir) {
  console.error('usage: node tools/docs/readme-blocks.mjs <file.md> "<section title>" <out dir>');
  process.exit(2);
}

export function sectionBlocks(markdown, sectionTitle) {
  const lines = markdown.split('\n');
  const start = lines.findIndex((line) => /^#{1,6} /.test(line) && line.replace(/^#+ /, '') === sectionTitle);
  if (start < 0) throw new Error(`no section "${sectionTitle}"`);
  const level = lines[start].match(/^#+/)[0].length;
  const blocks = [];
  let current = null;
  for (const line of lines.slice(start + 1)) {
    if (current) {
      if (/^```\s*$/.test(line)) {
        blocks.push(current.join('\n') + '\n');
        current = null;
      } else current.push(line);
      continue;
    }
    const heading = line.match(/^(#{1,6}) /);
    if (heading && heading[1].length <= level) break;
    if (/^```(sh|bash|shell)\s*$/.test(line)) current = [];
  }
  return blocks;
}

const blocks = sectionBlocks(readFileSync(file, 'utf8'), title);
if (blocks.length === 0) {
  console.error(`${file}: section "${title}" has no sh blocks`);
  process.exit(1);
}
mkdirSync(outDir, { recursive: true });
blocks.forEach((block, index) => {
  const path = join(outDir, `${index + 1}.sh`);
  writeFileSync(path, block);
  console.log(path);
});
