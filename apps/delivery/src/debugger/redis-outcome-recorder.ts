import type { DeliveryOutcomeEntry, OutcomeRecorder } from '@pipeline/destinations';
import { debuggerKeys, type DebugStreamWriter, type DeliveryOutcomeRecord } from '@pipeline/redis';

/**
 * The live debugger's delivery outcomes in Redis: one entry per event and outcome on the write
 * key's capped stream `pipeline:debug:v1:outcomes:<writeKeyId>` (fields `m`: messageId, `d`:
 * the outcome's JSON), sampled per write key and sent off the delivery path (DebugStreamWriter).
 */
export class RedisOutcomeRecorder implements OutcomeRecorder {
  constructor(private readonly writer: DebugStreamWriter) {}

  record(writeKeyId: string, messageIds: readonly string[], entry: DeliveryOutcomeEntry): void {
    if (!this.writer.available) return;
    const key = debuggerKeys.outcomes(writeKeyId);
    const admitted = this.writer.admit(key, messageIds.length);
    if (admitted === 0) return;
    const record: DeliveryOutcomeRecord = { ...entry, at: new Date().toISOString() };
    const json = JSON.stringify(record);
    for (let index = 0; index < admitted; index++) {
      this.writer.add(key, ['m', messageIds[index] as string, 'd', json]);
    }
  }
}
