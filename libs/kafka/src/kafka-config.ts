import { z } from 'zod';
import { envBool, envInt, envList, envString } from '@pipeline/config';

/** Kafka connection settings, shared by every process that talks to the broker. */
export const kafkaConfigSchema = z
  .object({
    KAFKA_BROKERS: envList(['127.0.0.1:9092']).describe('Comma-separated `host:port` list of Kafka brokers.'),
    KAFKA_CLIENT_ID: envString().optional().describe("Kafka client id; unset: the service's name."),
    KAFKA_REPLICATION_FACTOR: envInt({ min: 1, max: 5, default: 1 }).describe(
      'Replication factor of the topics the services create (1 for the local single broker).',
    ),
    KAFKA_SSL: envBool(false).describe('TLS to the brokers.'),
    KAFKA_SASL_MECHANISM: z
      .enum(['plain', 'scram-sha-256', 'scram-sha-512'])
      .optional()
      .describe(
        'SASL authentication; when set, `KAFKA_SASL_USERNAME` and `KAFKA_SASL_PASSWORD` are required.',
      ),
    KAFKA_SASL_USERNAME: envString().optional().describe('SASL user name (with `KAFKA_SASL_MECHANISM`).'),
    KAFKA_SASL_PASSWORD: envString().optional().describe('SASL password (with `KAFKA_SASL_MECHANISM`).'),
    KAFKA_CONNECTION_TIMEOUT_MS: envInt({ min: 100, max: 60000, default: 3000 }).describe(
      'Broker connection timeout.',
    ),
    KAFKA_REQUEST_TIMEOUT_MS: envInt({ min: 1000, max: 300000, default: 30000 }).describe(
      'Broker request timeout.',
    ),
    KAFKA_TOPIC_PREFIX: z
      .string()
      .regex(/^[A-Za-z0-9._-]{0,100}$/, 'letters, digits, ".", "_" and "-" only')
      .default('')
      .describe(
        'Put before every topic and consumer group name of the pipeline, so several pipelines (staging and production, or test runs) can share one cluster.',
      ),
  })
  .superRefine((config, ctx) => {
    if (config.KAFKA_SASL_MECHANISM && (!config.KAFKA_SASL_USERNAME || !config.KAFKA_SASL_PASSWORD)) {
      ctx.addIssue({
        code: 'custom',
        path: [config.KAFKA_SASL_USERNAME ? 'KAFKA_SASL_PASSWORD' : 'KAFKA_SASL_USERNAME'],
        message: 'required when KAFKA_SASL_MECHANISM is set',
      });
    }
  });

export type KafkaConfig = z.infer<typeof kafkaConfigSchema>;
