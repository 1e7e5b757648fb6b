/**
 * Request bodies that try to make a request cost far more than its size: each is valid JSON
 * under Segment's 500 KB body limit, so it reaches the parser of every route that reads a body.
 * Shared by the ingestion and control-plane tests and tools/bench/hostile-bodies.js.
 */
export interface HostileBody {
  name: string;
  /** What the body tries. */
  attack: string;
  json: string;
}

/** A JSON object text with `count` keys `k0`, `k1`, ... all 0. */
function manyKeys(count: number): string {
  const parts: string[] = [];
  for (let i = 0; i < count; i += 1) parts.push(`"k${i}":0`);
  return `{${parts.join(',')}}`;
}

/** `count` copies of `item`, as a JSON array text. */
const repeated = (item: string, count: number) => `[${new Array<string>(count).fill(item).join(',')}]`;

const track = '{"type":"track","userId":"hostile","event":"Hostile"}';

/** At most `maxBytes` of JSON text. */
export function hostileBodies(maxBytes = 478 * 1024): HostileBody[] {
  const context = manyKeys(20_000);
  const emptyMessages = Math.floor((maxBytes - context.length - 40) / 3);
  const smallContext = manyKeys(15_000);
  const depth = Math.floor((maxBytes - 200) / 6);
  return [
    {
      name: 'context amplification',
      attack: `a 20,000-key batch context copied into each of ${emptyMessages} empty messages`,
      json: `{"context":${context},"batch":${repeated('{}', emptyMessages)}}`,
    },
    {
      name: 'merge amplification under the message cap',
      attack: 'a 15,000-key batch context merged into 2,000 tracks',
      json: `{"context":${smallContext},"integrations":{"All":true},"batch":${repeated(track, 2_000)}}`,
    },
    {
      name: 'deep nesting',
      attack: `properties nested ${depth} levels deep (JSON.stringify and jsonb overflow)`,
      json: `{"batch":[{"type":"track","userId":"hostile","event":"Deep","properties":{"a":${'['.repeat(depth)}${']'.repeat(depth)}}}]}`,
    },
    {
      name: 'deep batch context',
      attack: `a batch context nested ${depth} levels deep, merged into a message`,
      json: `{"context":{"a":${'['.repeat(depth)}${']'.repeat(depth)}},"batch":[${track}]}`,
    },
    {
      name: 'long string',
      attack: 'one 400 KB string property',
      json: `{"batch":[{"type":"track","userId":"hostile","event":"Long","properties":{"s":"${'x'.repeat(400 * 1024)}"}}]}`,
    },
    {
      name: 'many keys',
      attack: "10,000 keys in one message's properties",
      json: `{"batch":[{"type":"track","userId":"hostile","event":"Keys","properties":${manyKeys(10_000)}}]}`,
    },
    // A backslash sends a text off JSON.parse when it is in a key (parseJsonText's scanner, up to
    // 10 times slower), and read before the write key is looked at.
    {
      name: 'escaped keys',
      attack: "10,000 keys with an escape (`\\n`) in one message's properties: the slower scanner",
      json: `{"batch":[{"type":"track","userId":"hostile","event":"Escaped keys","properties":${manyKeys(10_000).replace(/"k/g, '"\\nk')}}]}`,
    },
    {
      name: 'escaped string',
      attack: 'one 400 KB string property of `\\n` escapes',
      json: `{"batch":[{"type":"track","userId":"hostile","event":"Escapes","properties":{"s":"${'\\n'.repeat(200 * 1024)}"}}]}`,
    },
  ];
}
