#!/usr/bin/env node
import { Command, InvalidArgumentError } from 'commander';
import { loadConfigOrExit } from '@pipeline/config';
import { deliveryKinds, isDeliveryKind } from '@pipeline/catalog';
import type { DestinationKind } from '@pipeline/destinations';
import { createKafka, createProducer, type OffsetRange } from '@pipeline/kafka';
import { createLogger } from '@pipeline/logger';
import { deadLetterConfigSchema } from '../config';
import { readDeadLetters, replayDeadLetters, type DeadLetter } from './dead-letter-store';

const kinds = deliveryKinds.join(', ');
const kindOption = (value: string): DestinationKind => {
  if (!isDeliveryKind(value)) throw new InvalidArgumentError(`expected one of ${kinds}`);
  return value;
};
const offsetOption = (value: string): bigint => {
  if (!/^\d+$/.test(value)) throw new InvalidArgumentError('expected an offset (a whole number)');
  return BigInt(value);
};

interface RangeOptions {
  destination: DestinationKind;
  from?: bigint;
  to?: bigint;
}

const rangeOf = (options: RangeOptions): OffsetRange => ({
  ...(options.from !== undefined ? { from: options.from } : {}),
  ...(options.to !== undefined ? { to: options.to } : {}),
});

function kafkaClient() {
  const config = loadConfigOrExit('dead-letters', deadLetterConfigSchema);
  // Warnings only: the command's output is its answer.
  const logger = createLogger({ service: 'dead-letters', level: 'warn', format: config.LOG_FORMAT });
  return {
    kafka: createKafka(config, { clientId: 'dead-letters-cli', logger }),
    prefix: config.KAFKA_TOPIC_PREFIX,
  };
}

const summary = (letter: DeadLetter) => ({
  offset: `${letter.partition}/${letter.offset}`,
  deadLetteredAt: letter.deadLetteredAt,
  target: letter.target,
  attempts: letter.attempts,
  permanent: letter.permanent,
  reason: letter.reason,
  events: letter.messageIds.length,
  messageIds: letter.messageIds,
  origin: letter.origin,
});

const program = new Command('dead-letters')
  .description('Lists and replays the records a delivery consumer could not deliver.')
  .showHelpAfterError();

program
  .command('list')
  .description('prints the dead letters of a destination kind, one JSON object per line')
  .requiredOption('-d, --destination <kind>', `destination kind: ${kinds}`, kindOption)
  .option('--from <offset>', 'first offset (inclusive)', offsetOption)
  .option('--to <offset>', 'last offset (inclusive)', offsetOption)
  .action(async (options: RangeOptions) => {
    const { kafka, prefix } = kafkaClient();
    const letters = await readDeadLetters(kafka, options.destination, rangeOf(options), prefix);
    for (const letter of letters) process.stdout.write(`${JSON.stringify(summary(letter))}\n`);
    process.stderr.write(`${letters.length} dead letter(s)\n`);
  });

program
  .command('replay')
  .description(
    'puts dead letters back in the retry topic, due now, for the running consumer to deliver again',
  )
  .requiredOption('-d, --destination <kind>', `destination kind: ${kinds}`, kindOption)
  .option('--from <offset>', 'first offset (inclusive)', offsetOption)
  .option('--to <offset>', 'last offset (inclusive)', offsetOption)
  .action(async (options: RangeOptions) => {
    const { kafka, prefix } = kafkaClient();
    const letters = await readDeadLetters(kafka, options.destination, rangeOf(options), prefix);
    const producer = createProducer(kafka);
    await producer.connect();
    try {
      const replayed = await replayDeadLetters(producer, options.destination, letters, prefix);
      process.stdout.write(
        `${JSON.stringify({ replayed, offsets: letters.map((l) => `${l.partition}/${l.offset}`) })}\n`,
      );
    } finally {
      await producer.disconnect();
    }
  });

program.parseAsync(process.argv).catch((error: unknown) => {
  process.stderr.write(`dead-letters: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
