import { z } from 'zod';
import { envBool, envInt, envList, envString } from '@pipeline/config';

/** Kafka connection settings, shared by every process that talks to the broker. */
export const kafkaConfigSchema = z
  .object({
    /** Comma-separated host:port list. */
    KAFKA_BROKERS: envList(['127.0.0.1:9092']),
    KAFKA_CLIENT_ID: envString().optional(),
    /** Replication factor for the topics the services create (1 for the local single broker). */
    KAFKA_REPLICATION_FACTOR: envInt({ min: 1, max: 5, default: 1 }),
    KAFKA_SSL: envBool(false),
    KAFKA_SASL_MECHANISM: z.enum(['plain', 'scram-sha-256', 'scram-sha-512']).optional(),
    KAFKA_SASL_USERNAME: envString().optional(),
    KAFKA_SASL_PASSWORD: envString().optional(),
    KAFKA_CONNECTION_TIMEOUT_MS: envInt({ min: 100, max: 60000, default: 3000 }),
    KAFKA_REQUEST_TIMEOUT_MS: envInt({ min: 1000, max: 300000, default: 30000 }),
    /**
     * Put before every topic and consumer group name of the pipeline, so that several pipelines
     * (staging and production, or test runs) can share one cluster.
     */
    KAFKA_TOPIC_PREFIX: z
      .string()
      .regex(/^[A-Za-z0-9._-]{0,100}$/, 'letters, digits, ".", "_" and "-" only')
      .default(''),
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
