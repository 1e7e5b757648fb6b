import LZ4Codec from '@2l/kafkajs-lz4';
import {
  CompressionCodecs,
  CompressionTypes,
  Kafka,
  logLevel,
  Partitioners,
  type KafkaConfig as KafkaJsConfig,
  type LogEntry,
  type Producer,
  type SASLOptions,
} from 'kafkajs';
import type { Logger } from '@pipeline/logger';
import type { KafkaConfig } from './kafka-config';

// kafkajs ships only GZIP; LZ4 is registered for every client of this library, so each consumer
// reads what a producer compressed with it.
CompressionCodecs[CompressionTypes.LZ4] = new LZ4Codec().codec;

const levels: Record<number, 'error' | 'warn' | 'info' | 'debug'> = {
  [logLevel.ERROR]: 'error',
  [logLevel.WARN]: 'warn',
  [logLevel.INFO]: 'info',
  [logLevel.DEBUG]: 'debug',
};

/** kafkajs logs through the service's logger, so broker trouble shows up in the same JSON stream. */
function logCreator(logger: Logger) {
  return () =>
    ({ level, log }: LogEntry) => {
      const { message, timestamp: _timestamp, logger: _logger, ...rest } = log;
      // kafkajs logs every error response of a request ("Response Fetch(...)") at ERROR and
      // then retries it; a request that finally fails reaches its caller, which logs it.
      const effective = level === logLevel.ERROR && message.startsWith('Response ') ? logLevel.WARN : level;
      logger.log(levels[effective] ?? 'info', `kafka: ${message}`, rest);
    };
}

function sasl(config: KafkaConfig): SASLOptions | undefined {
  const {
    KAFKA_SASL_MECHANISM: mechanism,
    KAFKA_SASL_USERNAME: username,
    KAFKA_SASL_PASSWORD: password,
  } = config;
  if (!mechanism || !username || !password) return undefined;
  return { mechanism, username, password } as SASLOptions;
}

export function createKafka(config: KafkaConfig, options: { clientId: string; logger: Logger }): Kafka {
  const settings: KafkaJsConfig = {
    clientId: config.KAFKA_CLIENT_ID ?? options.clientId,
    brokers: config.KAFKA_BROKERS,
    ssl: config.KAFKA_SSL,
    connectionTimeout: config.KAFKA_CONNECTION_TIMEOUT_MS,
    requestTimeout: config.KAFKA_REQUEST_TIMEOUT_MS,
    logLevel: logLevel.WARN,
    logCreator: logCreator(options.logger),
  };
  const auth = sasl(config);
  if (auth) settings.sasl = auth;
  return new Kafka(settings);
}

/**
 * The producer every outbox writer uses: idempotent (so a retried send is not written twice)
 * with the Java-compatible murmur2 partitioner, so keys land where other Kafka clients expect.
 * Callers must send with `acks: -1`; `idempotent` requires it.
 */
export function createProducer(kafka: Kafka): Producer {
  return kafka.producer({
    idempotent: true,
    maxInFlightRequests: 5,
    createPartitioner: Partitioners.DefaultPartitioner,
  });
}

/** True when the cluster answers a metadata request within `timeoutMs`. */
export async function kafkaReachable(kafka: Kafka, timeoutMs = 2000): Promise<boolean> {
  const admin = kafka.admin();
  let timer: NodeJS.Timeout | undefined;
  try {
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error('timeout')), timeoutMs);
    });
    await Promise.race([
      (async () => {
        await admin.connect();
        await admin.describeCluster();
      })(),
      timeout,
    ]);
    return true;
  } catch {
    return false;
  } finally {
    clearTimeout(timer);
    await admin.disconnect().catch(() => undefined);
  }
}
