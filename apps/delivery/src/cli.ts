import { Command, InvalidArgumentError } from 'commander';
import { deliveryKinds, isDeliveryKind } from '@pipeline/catalog';
import type { DestinationKind } from '@pipeline/destinations';

export interface DeliveryOptions {
  destination: DestinationKind;
}

/** Parses `delivery --destination <kind>`; unknown kinds and missing options exit with usage. */
export function parseDeliveryArgs(
  argv: readonly string[],
  io?: { writeErr(text: string): void },
): DeliveryOptions {
  const kinds = deliveryKinds.join(', ');
  const program = new Command('delivery')
    .description('Reads the tracking outbox from Kafka and delivers it to one kind of destination.')
    .requiredOption('-d, --destination <kind>', `destination kind: ${kinds}`, (value: string) => {
      if (!isDeliveryKind(value)) throw new InvalidArgumentError(`expected one of ${kinds}`);
      return value;
    })
    .exitOverride()
    .configureOutput(io ? { writeErr: io.writeErr } : {});
  program.parse([...argv], { from: 'user' });
  return program.opts<DeliveryOptions>();
}
