import type { EntityManager } from 'typeorm';
import { PLAN_QUARANTINED } from '@pipeline/destinations';
import type { OutboxEnvelope } from '@pipeline/events';

/**
 * PostgreSQL's text refuses NUL, and a lone surrogate is no UTF-8: a name or id holding either
 * is kept with U+FFFD in its place (the record itself keeps every character).
 */
export const storableText = (text: string): string =>
  // eslint-disable-next-line no-control-regex -- U+0000 is exactly what must be replaced.
  text.replace(/\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g, '\uFFFD');

const nameOf = (event: Readonly<Record<string, unknown>>): string | null => {
  const name = event.type === 'track' ? event.event : event.name;
  return typeof name === 'string' ? storableText(name) : null;
};

/**
 * Keeps a dead letter's quarantined events in step with it (docs/tracking-plans.md,
 * "Quarantine"): called in the transaction that stored the dead letter's row, so a row never
 * exists without its events or the other way round. A dead letter stored again (replayed and
 * dead-lettered once more, for this or another reason) replaces them.
 */
export async function indexQuarantined(
  manager: EntityManager,
  deadLetter: { id: string; reasonCode: string; destination: string; target: string; inserted: boolean },
  envelope: OutboxEnvelope,
): Promise<void> {
  if (!deadLetter.inserted)
    await manager.query('DELETE FROM quarantined_events WHERE dead_letter_id = $1', [deadLetter.id]);
  if (deadLetter.reasonCode !== PLAN_QUARANTINED || !envelope.plan || !envelope.verdicts) return;
  const rows = envelope.events.map((event, position) => {
    const verdict = envelope.verdicts?.[position];
    const violations = verdict?.violations ?? [];
    return {
      position,
      messageId: storableText(String(event.messageId)),
      type: storableText(String(event.type)),
      name: nameOf(event as unknown as Record<string, unknown>),
      codes: [...new Set(violations.map((v) => v.code))],
      violations: JSON.stringify(violations),
      version: verdict?.version ?? null,
    };
  });
  // One statement for the record's events (a record holds at most a few hundred), as arrays:
  // node-postgres writes each string as UTF-8, where jsonb text would refuse a lone surrogate.
  await manager.query(
    `INSERT INTO quarantined_events (account_id, dead_letter_id, position, message_id, write_key_id,
       destination, target, plan_id, plan_version, event_type, event_name, codes, violations, received_at)
     SELECT $1, $2, r.position, r.message_id, $3, $4, $5, $6, r.plan_version, r.event_type, r.event_name,
       string_to_array(r.codes, ','), r.violations, $7
     FROM unnest($8::integer[], $9::text[], $10::integer[], $11::text[], $12::text[], $13::text[], $14::text[])
       AS r(position, message_id, plan_version, event_type, event_name, codes, violations)`,
    [
      envelope.accountId,
      deadLetter.id,
      storableText(envelope.writeKeyId),
      deadLetter.destination,
      deadLetter.target,
      storableText(envelope.plan.planId),
      envelope.receivedAt,
      rows.map((r) => r.position),
      rows.map((r) => r.messageId),
      rows.map((r) => r.version),
      rows.map((r) => r.type),
      rows.map((r) => r.name),
      // Codes are violationCodes: no comma in any.
      rows.map((r) => r.codes.join(',')),
      rows.map((r) => r.violations),
    ],
  );
}
