import type { lookup as dnsLookup, LookupAddress } from 'node:dns';
import { createServer, type Server } from 'node:net';
import { isEgressRefusal } from '@pipeline/egress';
import type { WarehouseConnection } from '@pipeline/tenancy';
import fc from 'fast-check';
import { clickhouseClient, InvalidClickHouseConnection } from './clickhouse-client';
import { useClickHouseTestServer } from './testing';

const server = useClickHouseTestServer();

const options = { requestTimeoutMs: 5000, maxOpenConnections: 2 };

function connection(fields: Partial<WarehouseConnection>): WarehouseConnection {
  return {
    warehouseId: 'wh-1',
    engine: 'clickhouse' as WarehouseConnection['engine'],
    host: '127.0.0.1',
    port: server.current.port,
    database: 'default',
    user: 'default',
    password: '',
    tlsMode: 'disable',
    owner: 'customer',
    maxConnections: 2,
    ...fields,
  };
}

/** A TCP listener on 127.0.0.1 that counts the connections it is offered. */
async function countingListener(): Promise<{
  port: number;
  connections: () => number;
  close: () => Promise<void>;
}> {
  let count = 0;
  const listener: Server = createServer((socket) => {
    count += 1;
    socket.destroy();
  });
  await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
  const address = listener.address();
  if (typeof address !== 'object' || !address) throw new Error('no port');
  return {
    port: address.port,
    connections: () => count,
    close: () => new Promise((resolve) => listener.close(() => resolve())),
  };
}

/** A resolver that answers every name with the given addresses. */
function answering(addresses: string[]) {
  return ((_host: string, _options: unknown, callback: (e: Error | null, a: LookupAddress[]) => void) =>
    callback(
      null,
      addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 })),
    )) as unknown as typeof dnsLookup;
}

describe('clickhouseClient', () => {
  test("a platform connection reaches the server and reads with the pipeline's settings", async () => {
    const client = clickhouseClient(connection({ owner: 'platform' }), options);
    try {
      const result = await client.query({
        query: 'SELECT toUInt64(18446744073709551615) AS big',
        format: 'JSONEachRow',
      });
      expect(await result.json()).toEqual([{ big: '18446744073709551615' }]);
    } finally {
      await client.close();
    }
  });

  test('a customer connection to an allowed range goes through the guard', async () => {
    const client = clickhouseClient(connection({}), {
      ...options,
      guard: { allowPrivateRanges: ['127.0.0.0/8'] },
    });
    try {
      expect(await client.ping()).toEqual({ success: true });
    } finally {
      await client.close();
    }
  });

  test.each(['127.0.0.1', 'localhost', '::1'])(
    'a customer connection to %s is refused before any connection',
    async (host) => {
      const listener = await countingListener();
      const client = clickhouseClient(connection({ host, port: listener.port }), options);
      try {
        const result = await client.ping();
        expect(result.success).toBe(false);
        expect(isEgressRefusal((result as { error: unknown }).error)).toBe(true);
        expect(listener.connections()).toBe(0);
      } finally {
        await client.close();
        await listener.close();
      }
    },
  );

  test('hostile hosts never reach a connection (property)', async () => {
    const listener = await countingListener();
    const hostileAddress = fc.oneof(
      fc.ipV4().filter((a) => a.startsWith('127.')),
      fc.constantFrom(
        '127.0.0.1',
        '::1',
        '::ffff:127.0.0.1',
        '10.0.0.1',
        '10.255.1.2',
        '169.254.169.254',
        '100.64.0.1',
        '172.16.5.4',
        '192.168.1.1',
        'fd00::1',
        'fe80::1',
        '0.0.0.0',
      ),
    );
    try {
      await fc.assert(
        fc.asyncProperty(hostileAddress, fc.boolean(), async (address, asName) => {
          // As a literal host, or as what a customer's DNS name resolves to.
          const host = asName ? 'warehouse.customer.example' : address;
          const client = clickhouseClient(connection({ host, port: listener.port }), {
            ...options,
            guard: { lookup: answering([address]) },
          });
          try {
            const result = await client.ping();
            expect(result.success).toBe(false);
            expect(isEgressRefusal((result as { error: unknown }).error)).toBe(true);
          } finally {
            await client.close();
          }
        }),
        { numRuns: 60 },
      );
      expect(listener.connections()).toBe(0);
    } finally {
      await listener.close();
    }
  });

  test('a customer host that is not a DNS name or an IP address is refused by field', () => {
    for (const host of ['a/b', 'user@host', 'host:1', '', 'a..b', 'ho st']) {
      expect(() => clickhouseClient(connection({ host }), options)).toThrow(InvalidClickHouseConnection);
    }
  });
});
