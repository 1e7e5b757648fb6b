/** One sample of a Prometheus text exposition. */
export interface PrometheusSample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\d+)?$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

const unescape = (value: string) => value.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));

/** Parses a Prometheus text exposition (what a /metrics scrape answers) into its samples (tests). */
export function parsePrometheusText(text: string): PrometheusSample[] {
  const samples: PrometheusSample[] = [];
  for (const line of text.split('\n')) {
    const trimmed = line.trim();
    if (trimmed === '' || trimmed.startsWith('#')) continue;
    const match = SAMPLE.exec(trimmed);
    if (!match) throw new Error(`not a Prometheus sample: ${trimmed}`);
    const [, name = '', labelText = '', value = ''] = match;
    const labels: Record<string, string> = {};
    for (const [, key = '', raw = ''] of labelText.matchAll(LABEL)) labels[key] = unescape(raw);
    samples.push({ name, labels, value: value === '+Inf' ? Infinity : Number(value) });
  }
  return samples;
}

/** The samples of `name` whose labels include all of `labels`. */
export function samplesOf(
  samples: readonly PrometheusSample[],
  name: string,
  labels: Record<string, string> = {},
): PrometheusSample[] {
  return samples.filter(
    (s) => s.name === name && Object.entries(labels).every(([key, value]) => s.labels[key] === value),
  );
}

/** The sum of the samples of `name` whose labels include all of `labels` (0 when there is none). */
export function sampleSum(
  samples: readonly PrometheusSample[],
  name: string,
  labels: Record<string, string> = {},
): number {
  return samplesOf(samples, name, labels).reduce((sum, s) => sum + s.value, 0);
}
