import { LRUCache } from 'lru-cache';
import {
  envelopeWith,
  normalizeEvent,
  parseOutboxEnvelope,
  receiptContextOf,
  type OutboxEnvelope,
  type ReceiptContext,
  type TrackingEvent,
  type WarehouseRow,
} from '@pipeline/events';
import type { Logger } from '@pipeline/logger';
import type { ReportedWarehouseStatus, ResolvedWarehouse, WarehouseConnection } from '@pipeline/tenancy';
import {
  notAnEnvelope,
  type DeliveryMessage,
  type DeliveryReport,
  type Destination,
  type FailedDelivery,
  type WarehouseHealth,
} from '../destination';
import { omitPaths, WAREHOUSE_DESTINATION, type EventDecision } from '@pipeline/tracking-plans';
import { recordOutcome, recordSentOutcomes, type OutcomeRecorder } from '../outcome-recorder';
import { applyBound, functionLabel, type FunctionStep } from '../functions/function-step';
import { planDecision, planViolationsColumn, quarantineReason } from '../plan-decisions';
import {
  defaultBreakerTimings,
  WarehouseBreaker,
  type BreakerCause,
  type BreakerTimings,
} from './warehouse-breaker';
import { WarehouseConnectionBudgetExhausted } from './warehouse-connection-budget';
import type { WarehouseDirectory } from './warehouse-directory';
import type { AccountLocation, WarehouseEngine, WriteOrigin } from './warehouse-engine';
import { describeWarehouseError, redactSecrets, type WarehouseErrorKind } from './warehouse-errors';

/** What the warehouse consumer asks of a warehouse's engine. */
export type WarehouseLoader = Pick<
  WarehouseEngine,
  'ensureAccount' | 'writeRows' | 'probe' | 'classifyError'
>;

/** Where the consumer gets a warehouse's engine, one per warehouse: WarehouseEngines. */
export interface WarehouseEngineSource {
  for(connection: WarehouseConnection): WarehouseLoader;
  close?(): Promise<void>;
}

/** Tells the control plane a warehouse's status; `detail` says why, never a secret. */
export type ReportWarehouseStatus = (
  warehouseId: string,
  status: ReportedWarehouseStatus,
  detail: string | null,
) => Promise<void>;

export interface WarehouseDestinationOptions {
  /** Which warehouse each account's rows go to. */
  directory: WarehouseDirectory;
  /** The engine of a warehouse, by its connection. */
  engines: WarehouseEngineSource;
  logger: Logger;
  outcomes?: OutcomeRecorder;
  /** Runs the functions bound to accounts' warehouses; without it their records are held. */
  functions?: FunctionStep;
  reportStatus?: ReportWarehouseStatus;
  breaker?: Partial<BreakerTimings>;
  /**
   * A customer-owned warehouse's time in one batch (WAREHOUSE_CUSTOMER_BATCH_BUDGET_MS): past
   * it, what it has not taken is held as from a warehouse that is down, and the batch goes on.
   */
  customerBudgetMs?: number;
  now?: () => number;
}

/** 5 s: the other accounts of a batch wait at most this for a customer's server. */
export const defaultCustomerBudgetMs = 5_000;

/**
 * Failed writes of one account's rows in one batch, past which a customer's server counts as
 * misconfigured: splitting around k refused events of n costs about 2k·log2(n) writes, so this
 * isolates a few bad events, while a server that refuses everything as data (2n−1 writes) is
 * stopped early and its rows held.
 */
export const maxCustomerRefusedWrites = 64;

/** A customer's server refused more writes of one batch as data than a few bad events explain. */
export class RefusedTooOften extends Error {
  readonly code = 'WAREHOUSE_REFUSED_TOO_OFTEN';

  constructor(
    readonly refusals: number,
    readonly last: string,
  ) {
    super(`the server refused ${refusals} writes of one batch as data (last: ${last})`);
    this.name = 'RefusedTooOften';
  }
}

/** A customer's server took longer than its budget: its unfinished work is held. */
export class BudgetSpent extends Error {
  readonly code = 'WAREHOUSE_BUDGET_SPENT';

  constructor(readonly budgetMs: number) {
    super(`no answer within the batch's ${budgetMs} ms budget for a customer warehouse`);
    this.name = 'BudgetSpent';
  }
}

/** One event of a record, normalized, with its account. */
interface Item {
  message: DeliveryMessage;
  envelope: OutboxEnvelope;
  event: TrackingEvent;
  /** The event's place in its record. */
  index: number;
  row: WarehouseRow;
  /** What its plan's policy stripped from the row (the debugger's outcome shows it). */
  omitted: string[];
}

/** One event of a record on its way to the warehouse, before it is normalized. */
interface Entry {
  message: DeliveryMessage;
  envelope: OutboxEnvelope;
  /** The event's place in its record (an event a function made has its input's). */
  index: number;
  event: TrackingEvent;
  decision: EventDecision | undefined;
  /** The record's receipt, made once per record. */
  receipt: ReceiptContext;
}

/** Events of one record that cannot be stored, for the same reason. */
interface Unstorable {
  message: DeliveryMessage;
  envelope: OutboxEnvelope;
  /** The events' places in the record. */
  indexes: number[];
  reason: string;
}

/** Why an item waits: its warehouse's breaker is open. */
interface Hold {
  warehouseId: string;
  reason: string;
  retryAfterMs: number;
}

/** One account's items bound for one warehouse. */
interface AccountWrite {
  accountId: string;
  location: AccountLocation;
  /** The epoch of the account's placement this write was routed by. */
  epoch: number;
  items: Item[];
}

interface WarehouseWork {
  connection: WarehouseConnection;
  accounts: AccountWrite[];
}

/** What became of the items of one round of writes. */
interface RoundOutcome {
  dataErrors: Map<Item, string>;
  holds: Map<Item, Hold>;
  /** Accounts cut over to another placement since they were routed: resolved again. */
  moved: Set<string>;
}

// A cut-over while a batch is written sends its accounts round again; past this many they wait.
const maxRounds = 3;

/**
 * `delivery --destination warehouse`: normalizes each outbox record's events and loads them
 * into the account's warehouse (WarehouseDirectory), each warehouse through its own engine.
 * Loading is idempotent, so a batch read again after a crash, or written twice during a move
 * (`alsoWriteTo`), adds nothing.
 *
 * Data never stalls the batch: an event that cannot be normalized, or whose rows the warehouse
 * refuses as data, is isolated by splitting the write in halves and dead-lettered on its own.
 *
 * A warehouse never stalls the others: each has a breaker (WarehouseBreaker). An unavailable or
 * misconfigured warehouse opens it, and its records come back as failures to hold
 * (`holdUntilAvailable`, target `warehouse:<id>`): parked in the retry topic, never
 * dead-lettered, tried again once the breaker lets a probe through, while every other account
 * of the batch loads. A misconfigured one is reported to the control plane and logged (never
 * its credentials); the process never exits for it. On a customer-owned warehouse every
 * unexpected error counts as a misconfiguration: the customer can do anything to their server.
 * Only an unexpected error on a platform warehouse (a bug) is thrown.
 */
export class WarehouseDestination implements Destination {
  readonly kind = 'warehouse';
  private readonly breakers = new LRUCache<string, WarehouseBreaker>({ max: 10_000 });
  /** The status last reported per warehouse: a report is sent on a change only. */
  private readonly reported = new Map<string, ReportedWarehouseStatus>();
  private readonly timings: BreakerTimings;
  private readonly logger: Logger;

  constructor(private readonly options: WarehouseDestinationOptions) {
    this.logger = options.logger;
    this.timings = { ...defaultBreakerTimings, ...options.breaker };
  }

  /** Warehouses whose breaker is open now (pipeline_delivery_circuits_open). */
  openCircuits(): number {
    let open = 0;
    for (const breaker of this.breakers.values()) if (breaker.state !== 'closed') open += 1;
    return open;
  }

  /** Every warehouse written to or tried, with its breaker and status. */
  warehouseHealth(): WarehouseHealth[] {
    return [...this.breakers.entries()].map(([warehouseId, breaker]) => ({
      warehouseId,
      breaker: breaker.state,
      status: breaker.cause?.kind ?? 'active',
    }));
  }

  async deliver(messages: readonly DeliveryMessage[]): Promise<DeliveryReport> {
    const failed: FailedDelivery[] = [];
    const unstorable: Unstorable[] = [];
    const entries = new Map<string, Entry[]>();
    for (const message of messages) {
      const envelope = parseOutboxEnvelope(message.value);
      if (!envelope) {
        failed.push(notAnEnvelope(message, this.kind));
        continue;
      }
      const list = entries.get(envelope.accountId) ?? [];
      const receipt = receiptContextOf(envelope);
      for (const [index, event] of envelope.events.entries()) {
        const decision = planDecision(envelope, index, WAREHOUSE_DESTINATION);
        if (decision?.action === 'quarantine') {
          unstorable.push({ message, envelope, indexes: [index], reason: quarantineReason(envelope) });
          continue;
        }
        const stored = decision?.action === 'omit' ? omitPaths(event, decision.omitted) : event;
        list.push({ message, envelope, index, event: stored, decision, receipt });
      }
      if (list.length > 0) entries.set(envelope.accountId, list);
    }
    // A function bound to an account's warehouse runs before anything is stored: it may scrub
    // what must never land there.
    // Each account's warehouse, asked once here: the first round of writes routes by it too.
    const accounts = [...entries.keys()];
    const resolved = await Promise.all(
      accounts.map((accountId) => this.options.directory.resolve(accountId)),
    );
    let answered: Map<string, ResolvedWarehouse | null> | undefined = new Map(
      accounts.map((accountId, position) => [accountId, resolved[position] ?? null]),
    );
    await this.applyFunctions(entries, answered, failed, unstorable);

    let pending = new Map<string, Item[]>();
    for (const [accountId, list] of entries) {
      const items: Item[] = [];
      for (const { message, envelope, index, event, decision, receipt } of list) {
        try {
          const normalized = normalizeEvent(event, receipt);
          const column = planViolationsColumn(envelope, index, decision);
          const row = column
            ? ({ ...normalized, row: { ...normalized.row, plan_violations: { ...column } } } as WarehouseRow)
            : normalized;
          items.push({ message, envelope, event, index, row, omitted: decision?.omitted ?? [] });
        } catch (error) {
          unstorable.push({
            message,
            envelope,
            indexes: [index],
            reason: `unstorable_event: ${(error as Error).message}`,
          });
        }
      }
      if (items.length > 0) pending.set(accountId, items);
    }

    const stored: Item[] = [];
    const holds = new Map<Item, Hold>();
    /** Each account's warehouse as last resolved. */
    const placedOn = new Map<string, string>();
    for (let round = 1; pending.size > 0; round += 1) {
      if (round > maxRounds) {
        for (const [accountId, items] of pending)
          for (const item of items)
            holds.set(item, {
              warehouseId: placedOn.get(accountId) ?? 'unknown',
              reason: 'warehouse_moving: the placement changed while the batch was written',
              retryAfterMs: this.timings.probeWaitMs,
            });
        break;
      }
      const { work, homeless } = await this.route(pending, placedOn, answered);
      answered = undefined;
      for (const item of homeless)
        unstorable.push({
          message: item.message,
          envelope: item.envelope,
          indexes: [item.index],
          reason: 'no_warehouse: the account has no warehouse placement',
        });
      const outcome: RoundOutcome = { dataErrors: new Map(), holds: new Map(), moved: new Set() };
      await Promise.all([...work.values()].map((warehouse) => this.writeWithinBudget(warehouse, outcome)));
      const next = new Map<string, Item[]>();
      for (const [accountId, items] of pending) {
        if (outcome.moved.has(accountId)) {
          next.set(accountId, items);
          continue;
        }
        for (const item of items) {
          const reason = outcome.dataErrors.get(item);
          const hold = outcome.holds.get(item);
          if (reason !== undefined)
            unstorable.push({
              message: item.message,
              envelope: item.envelope,
              indexes: [item.index],
              reason,
            });
          else if (hold) holds.set(item, hold);
          else if (!homeless.has(item)) stored.push(item);
        }
      }
      pending = next;
    }

    if (this.options.outcomes) this.recordStored(stored);
    failed.push(...groupByRecord(unstorable, this.kind), ...this.heldDeliveries(holds));
    return { delivered: stored.length, consentSkipped: 0, failed };
  }

  async close(): Promise<void> {
    await this.options.engines.close?.();
  }

  /**
   * Replaces each account's entries by what the function bound to its warehouse made of them,
   * one run per write key. An event the function threw on or answered badly is dead-lettered
   * with the version in its reason; a batch it could not finish is retried (held while the
   * function is disabled), never stored untransformed. Outputs keep their input's place.
   */
  private async applyFunctions(
    entries: Map<string, Entry[]>,
    answered: ReadonlyMap<string, ResolvedWarehouse | null>,
    failed: FailedDelivery[],
    unstorable: Unstorable[],
  ): Promise<void> {
    for (const accountId of [...entries.keys()]) {
      const bound = answered.get(accountId)?.function;
      if (!bound) continue;
      const byWriteKey = new Map<string, Entry[]>();
      for (const entry of entries.get(accountId) ?? []) {
        const group = byWriteKey.get(entry.envelope.writeKeyId) ?? [];
        group.push(entry);
        byWriteKey.set(entry.envelope.writeKeyId, group);
      }
      const kept: Entry[] = [];
      for (const [writeKeyId, group] of byWriteKey) {
        const step = await applyBound(
          this.options.functions,
          bound,
          group.map((entry) => entry.event),
          { kind: 'destination', destination: this.kind, writeKeyId },
        );
        if (step.kind === 'failed') {
          const byRecord = new Map<DeliveryMessage, { envelope: OutboxEnvelope; indexes: number[] }>();
          for (const { message, envelope, index } of group) {
            const record = byRecord.get(message) ?? { envelope, indexes: [] };
            record.indexes.push(index);
            byRecord.set(message, record);
          }
          for (const [message, { envelope, indexes }] of byRecord)
            failed.push({
              message,
              value: partValue(message, envelopeWith(envelope, ascending(indexes))),
              target: this.kind,
              reason: step.reason,
              retryable: true,
              ...(step.retryAfterMs > 0 ? { retryAfterMs: step.retryAfterMs } : {}),
              ...(step.hold ? { holdUntilAvailable: true } : {}),
            });
          continue;
        }
        const dropped: string[] = [];
        step.results.forEach((result, i) => {
          const entry = group[i] as Entry;
          if (result.result === 'dropped') dropped.push(entry.event.messageId);
          else if (result.result === 'error')
            unstorable.push({
              message: entry.message,
              envelope: entry.envelope,
              indexes: [entry.index],
              reason: result.message,
            });
          else for (const event of result.events) kept.push({ ...entry, event });
        });
        if (dropped.length > 0)
          recordOutcome(this.options.outcomes, writeKeyId, dropped, {
            destination: this.kind,
            integrationId: null,
            outcome: 'skipped',
            reason: `function_dropped: ${functionLabel(bound)} returned null`,
          });
      }
      if (kept.length > 0) entries.set(accountId, kept);
      else entries.delete(accountId);
    }
  }

  /**
   * Each account's warehouses (its placement, and a move's target), as work per warehouse;
   * `known`: answers the batch already has, not asked again.
   */
  private async route(
    pending: Map<string, Item[]>,
    placedOn: Map<string, string>,
    known?: ReadonlyMap<string, ResolvedWarehouse | null>,
  ): Promise<{ work: Map<string, WarehouseWork>; homeless: Set<Item> }> {
    const work = new Map<string, WarehouseWork>();
    const homeless = new Set<Item>();
    // Asked side by side: a batch of many accounts new to the cache waits for one answer, not
    // for each in turn. DestinationUnavailable (the control plane cannot be asked) holds the
    // whole batch.
    const answers = await Promise.all(
      [...pending.keys()].map((accountId) =>
        known?.has(accountId) ? known.get(accountId) : this.options.directory.resolve(accountId),
      ),
    );
    let index = 0;
    for (const [accountId, items] of pending) {
      const resolved: ResolvedWarehouse | null | undefined = answers[index++];
      if (!resolved) {
        for (const item of items) homeless.add(item);
        continue;
      }
      placedOn.set(accountId, resolved.placement.warehouseId);
      const targets = [resolved, ...(resolved.alsoWriteTo ? [resolved.alsoWriteTo] : [])];
      for (const { placement, connection } of targets) {
        const warehouse = work.get(placement.warehouseId) ?? { connection, accounts: [] };
        warehouse.accounts.push({
          accountId,
          location: { accountId, schema: placement.schema },
          epoch: resolved.placement.epoch,
          items,
        });
        work.set(placement.warehouseId, warehouse);
      }
    }
    return { work, homeless };
  }

  private breakerFor(warehouseId: string): WarehouseBreaker {
    let breaker = this.breakers.get(warehouseId);
    if (!breaker) {
      breaker = new WarehouseBreaker(this.timings, this.options.now);
      this.breakers.set(warehouseId, breaker);
    }
    return breaker;
  }

  /**
   * A customer's warehouse gets `customerBudgetMs`: every time limit on its connection but
   * ours is the customer's to disarm, and its slowness must not hold the batch's other
   * accounts. When the budget is spent its work goes on in the background (bounded by the
   * connection's read deadline, writes are idempotent) and is discarded: every item of it not
   * already refused as data is held, and its breaker opens as for an outage, so the next
   * batches hold its rows at once until a probe finds it answering.
   */
  private async writeWithinBudget(warehouse: WarehouseWork, outcome: RoundOutcome): Promise<void> {
    const { connection } = warehouse;
    if (connection.owner !== 'customer') return this.writeWarehouse(warehouse, outcome);
    const budgetMs = this.options.customerBudgetMs ?? defaultCustomerBudgetMs;
    const own: RoundOutcome = { dataErrors: new Map(), holds: new Map(), moved: new Set() };
    let timer: NodeJS.Timeout | undefined;
    const finished = await Promise.race([
      this.writeWarehouse(warehouse, own).then(() => true),
      new Promise<false>((resolve) => {
        timer = setTimeout(() => resolve(false), budgetMs);
      }),
    ]).finally(() => clearTimeout(timer));
    if (!finished) {
      const breaker = this.breakerFor(connection.warehouseId);
      const cause: BreakerCause = { kind: 'unavailable', detail: new BudgetSpent(budgetMs).message };
      this.broken(connection, cause, breaker.failed(cause), false);
      const hold: Hold = {
        warehouseId: connection.warehouseId,
        reason: `warehouse_${cause.kind}: ${cause.detail}`,
        retryAfterMs: breaker.retryAfterMs(),
      };
      for (const account of warehouse.accounts)
        for (const item of account.items) if (!own.dataErrors.has(item)) own.holds.set(item, hold);
    }
    for (const [item, reason] of own.dataErrors)
      if (!outcome.dataErrors.has(item)) outcome.dataErrors.set(item, reason);
    for (const [item, hold] of own.holds) outcome.holds.set(item, hold);
    for (const accountId of own.moved) outcome.moved.add(accountId);
  }

  /** Writes one warehouse's accounts in turn; what it cannot write now is held. */
  private async writeWarehouse(warehouse: WarehouseWork, outcome: RoundOutcome): Promise<void> {
    const { connection } = warehouse;
    const breaker = this.breakerFor(connection.warehouseId);
    const hold = (items: readonly Item[], reason: string, retryAfterMs: number) => {
      for (const item of items)
        if (!outcome.dataErrors.has(item))
          outcome.holds.set(item, { warehouseId: connection.warehouseId, reason, retryAfterMs });
    };
    const reasonOf = (cause: BreakerCause) => `warehouse_${cause.kind}: ${cause.detail}`;
    for (const account of warehouse.accounts) {
      if (account.epoch < this.options.directory.currentEpoch(account.accountId)) {
        outcome.moved.add(account.accountId);
        continue;
      }
      const admission = breaker.admit();
      if (!admission.go) {
        const cause = breaker.cause ?? { kind: 'unavailable', detail: 'probe under way' };
        hold(account.items, reasonOf(cause), admission.retryAfterMs);
        continue;
      }
      const engine = this.options.engines.for(connection);
      try {
        await engine.ensureAccount(account.location);
        // Kept apart until the whole write ends: a server that refuses too often, or runs out
        // of its budget, has all of the account's rows held, none dead-lettered.
        const refused = new Map<Item, string>();
        await this.store(engine, connection, account, account.items, refused, { refusals: 0 });
        // A move writes the event twice; one dead letter says it, whichever refused it first.
        for (const [item, reason] of refused)
          if (!outcome.dataErrors.has(item)) outcome.dataErrors.set(item, reason);
        if (breaker.succeeded()) this.recovered(connection);
      } catch (error) {
        if (error instanceof WarehouseConnectionBudgetExhausted) {
          // This process is out of connections, not the warehouse out of service: held
          // briefly, without a verdict on the warehouse.
          if (admission.probe) breaker.abandonProbe();
          hold(account.items, `warehouse_busy: ${error.message}`, this.timings.probeWaitMs);
          continue;
        }
        let verdict = this.verdictOf(engine, connection, error);
        // Data errors of the rows were split off by store(): this one is ensureAccount's.
        if (verdict === 'data') verdict = connection.owner === 'customer' ? 'misconfigured' : 'unexpected';
        if (verdict === 'unexpected') throw error;
        const cause: BreakerCause = { kind: verdict, detail: this.describe(connection, error) };
        const opened = breaker.failed(cause);
        this.broken(connection, cause, opened, admission.probe);
        hold(account.items, reasonOf(cause), breaker.retryAfterMs());
      }
    }
  }

  /**
   * Writes the items, splitting around the ones the warehouse refuses as data (recorded in
   * `dataErrors`); throws anything else.
   */
  private async store(
    engine: WarehouseLoader,
    connection: WarehouseConnection,
    account: AccountWrite,
    items: Item[],
    dataErrors: Map<Item, string>,
    tally: { refusals: number },
  ): Promise<void> {
    try {
      const result = await engine.writeRows(
        account.location,
        items.map((item) => item.row),
        writeOrigin(items),
      );
      this.logger.debug('warehouse batch loaded', {
        warehouseId: connection.warehouseId,
        schema: account.location.schema,
        ...result,
      });
    } catch (error) {
      if (this.verdictOf(engine, connection, error) !== 'data') throw error;
      tally.refusals += 1;
      if (connection.owner === 'customer' && tally.refusals > maxCustomerRefusedWrites)
        throw new RefusedTooOften(tally.refusals, this.describe(connection, error));
      const [only] = items;
      if (items.length === 1 && only) {
        const detail = this.describe(connection, error);
        this.logger.warn('warehouse refused an event', {
          warehouseId: connection.warehouseId,
          schema: account.location.schema,
          messageId: String(only.event.messageId),
          error: detail,
        });
        dataErrors.set(only, `data_error: ${detail}`);
        return;
      }
      // Halves are written in order, so for users and groups the latest values still win.
      const half = Math.ceil(items.length / 2);
      await this.store(engine, connection, account, items.slice(0, half), dataErrors, tally);
      await this.store(engine, connection, account, items.slice(half), dataErrors, tally);
    }
  }

  private verdictOf(
    engine: WarehouseLoader,
    connection: WarehouseConnection,
    error: unknown,
  ): WarehouseErrorKind {
    const kind = engine.classifyError(error);
    return kind === 'unexpected' && connection.owner === 'customer' ? 'misconfigured' : kind;
  }

  private describe(connection: WarehouseConnection, error: unknown): string {
    return redactSecrets(describeWarehouseError(error), [connection.password]);
  }

  /** Logs and reports a failure: once when the breaker opens or the cause changes class. */
  private broken(
    connection: WarehouseConnection,
    cause: BreakerCause,
    opened: boolean,
    probe: boolean,
  ): void {
    const { warehouseId } = connection;
    const fields = {
      warehouseId,
      owner: connection.owner,
      host: connection.host,
      kind: cause.kind,
      error: cause.detail,
    };
    const changed = this.reported.get(warehouseId) !== cause.kind;
    if (opened) this.logger.warn('warehouse breaker opened: its records are held in the retry topic', fields);
    else if (changed && cause.kind === 'misconfigured')
      this.logger.warn('warehouse misconfigured: it refuses the consumer', fields);
    else if (probe) this.logger.info('warehouse probe failed: its records stay held', fields);
    if (changed) this.report(warehouseId, cause.kind, cause.detail);
  }

  private recovered(connection: WarehouseConnection): void {
    const { warehouseId } = connection;
    this.logger.info('warehouse breaker closed: its held records load again', { warehouseId });
    this.report(warehouseId, 'active', null);
  }

  /** Never awaited: the control plane being away must not hold the warehouse's records. */
  private report(warehouseId: string, status: ReportedWarehouseStatus, detail: string | null): void {
    this.reported.set(warehouseId, status);
    const reportStatus = this.options.reportStatus;
    if (!reportStatus) return;
    reportStatus(warehouseId, status, detail).catch((error: unknown) => {
      // Told again at the next change; until then the status the control plane shows is late.
      if (this.reported.get(warehouseId) === status) this.reported.delete(warehouseId);
      this.logger.warn('warehouse status not reported', {
        warehouseId,
        status,
        error: error instanceof Error ? error.message : String(error),
      });
    });
  }

  /** One failure to hold per record and warehouse, holding only that record's held events. */
  private heldDeliveries(holds: Map<Item, Hold>): FailedDelivery[] {
    const groups = new Map<string, { first: Item; hold: Hold; indexes: number[] }>();
    for (const [item, hold] of holds) {
      const key = `${item.message.partition}/${item.message.offset}/${hold.warehouseId}`;
      const group = groups.get(key) ?? { first: item, hold, indexes: [] };
      group.indexes.push(item.index);
      groups.set(key, group);
    }
    return [...groups.values()].map(({ first, hold, indexes }) => ({
      message: first.message,
      value: partValue(first.message, envelopeWith(first.envelope, ascending(indexes))),
      target: `warehouse:${hold.warehouseId}`,
      reason: hold.reason,
      retryable: true,
      holdUntilAvailable: true,
      retryAfterMs: hold.retryAfterMs,
    }));
  }

  private recordStored(items: readonly Item[]): void {
    recordSentOutcomes(
      this.options.outcomes,
      items.map(({ envelope, event, omitted }) => ({
        writeKeyId: envelope.writeKeyId,
        messageId: event.messageId,
        omitted,
      })),
      { destination: this.kind, integrationId: null, outcome: 'stored', reason: null },
    );
  }
}

/** One dead letter per record and reason, holding only that record's unstorable events. */
/**
 * Where the items were read from, when they all come from one topic partition (a consumer's
 * batch does): an engine names its inserts by it, so a redelivered batch adds nothing.
 */
function writeOrigin(items: readonly Item[]): WriteOrigin | undefined {
  const [first] = items;
  if (!first) return undefined;
  const { topic, partition } = first.message;
  if (items.some((item) => item.message.topic !== topic || item.message.partition !== partition))
    return undefined;
  return { topic, partition, positions: items.map((item) => `${item.message.offset}.${item.index}`) };
}

function groupByRecord(unstorable: readonly Unstorable[], target: string): FailedDelivery[] {
  const groups = new Map<string, Unstorable>();
  for (const entry of unstorable) {
    const key = `${entry.message.partition}/${entry.message.offset}/${entry.reason}`;
    const group = groups.get(key);
    if (group) group.indexes.push(...entry.indexes);
    else groups.set(key, { ...entry, indexes: [...entry.indexes] });
  }
  return [...groups.values()].map(({ message, envelope, indexes, reason }) => ({
    message,
    value: partValue(message, envelopeWith(envelope, ascending(indexes))),
    target,
    reason,
    retryable: false,
  }));
}

/** Indexes in record order, as envelopeWith takes them (a record's events keep their order). */
const ascending = (indexes: readonly number[]): number[] => [...new Set(indexes)].sort((a, b) => a - b);

/** An envelope of some of a record's events, or the whole record when they cannot even be serialized again. */
function partValue(message: DeliveryMessage, envelope: OutboxEnvelope): Buffer {
  try {
    return Buffer.from(JSON.stringify(envelope));
  } catch {
    return message.value ?? Buffer.alloc(0);
  }
}
