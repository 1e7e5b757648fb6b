// ClickHouse connections for the warehouse engine: structured fields in, a client out.
export {};
