// The egress-guarded ClickHouse clients live with the engine (main's clickhouse-engine.ts); this
// module only keeps the name its importers use.
export { guardedClickHouseClients } from './clickhouse-engine';
