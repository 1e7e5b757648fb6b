// What the review's dead-letter attack costs the control plane (SECURITY.md, the dead-letter
// threat): `letters` dead letters of about 500 KB (1000 by default, 0.5 GB) indexed, every page
// listed and five pages at once, then all replayed in one call, with the heap and the event
// loop's delay measured in the process serving the API, and each letter checked to reach the
// retry topic exactly once. Runs apps/control-plane/src/dead-letters/dead-letters-load.test.ts
// at that scale, where it also asserts the targets (heap under 256 MB, loop delay under 200 ms;
// the replay's 99th percentile), and prints its numbers. Needs PostgreSQL at DATABASE_URL and
// Kafka at KAFKA_BROKERS (`eval "$(bash tools/lib/throwaway-services.sh start)"` and
// `bash tools/kafka/kafka.sh start`), and the control plane built.
//   node tools/bench/dead-letters.js [letters=1000]
const { spawn } = require('node:child_process');
const path = require('node:path');

const root = path.join(__dirname, '../..');
const letters = Number(process.argv[2] ?? 1000);
if (!Number.isInteger(letters) || letters < 10) {
  console.error('letters: a whole number, 10 at least');
  process.exit(2);
}

const jest = spawn(
  'pnpm',
  [
    'exec',
    'jest',
    '-c',
    'apps/control-plane/jest.config.js',
    '--runInBand',
    'apps/control-plane/src/dead-letters/dead-letters-load.test.ts',
  ],
  {
    cwd: root,
    env: { ...process.env, DEAD_LETTERS_LOAD_LETTERS: String(letters) },
    stdio: ['ignore', 'pipe', 'pipe'],
  },
);
let output = '';
for (const stream of [jest.stdout, jest.stderr])
  stream.on('data', (chunk) => {
    output += chunk;
  });
jest.on('close', (code) => {
  const line = output.split('\n').find((l) => l.includes('dead letters at scale: {'));
  if (!line) {
    process.stderr.write(output);
    console.error('dead letters bench: no numbers (see the output above)');
    process.exit(1);
  }
  const numbers = JSON.parse(line.slice(line.indexOf('{')));
  for (const [name, value] of Object.entries(numbers)) console.log(`${name.padEnd(24)} ${value}`);
  if (code !== 0)
    process.stderr.write(
      output
        .split('\n')
        .filter((l) => /●|Expected|Received/.test(l))
        .join('\n') + '\n',
    );
  console.log(code === 0 ? 'targets: met' : 'targets: MISSED');
  process.exit(code ?? 1);
});
