import { createServer, Socket, type Server } from 'node:net';
import { AnswerTooLarge, ConnectionIdle, defaultMaxAnswerBytes, limitSocket } from './socket-limits';

// Real sockets against a local server that answers what it is told to: each line written to
// it is a command (`send <bytes>`, `drip <ms>`), so a test decides how the "server" behaves.
let server: Server;
let port = 0;

beforeAll(async () => {
  server = createServer((socket) => {
    let drip: NodeJS.Timeout | undefined;
    socket.on('data', (chunk: Buffer) => {
      const [command, value] = chunk.toString().trim().split(' ');
      if (command === 'send') socket.write(Buffer.alloc(Number(value), 'x'));
      if (command === 'drip') drip = setInterval(() => socket.write('.'), Number(value));
    });
    socket.on('close', () => clearInterval(drip));
    socket.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as { port: number }).port;
});
afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
});

/** A limited socket, connected; resolves its closing error (or null) when it closes. */
async function limited(idleMs: number, maxAnswerBytes: number) {
  const socket = new Socket();
  const closed = new Promise<Error | null>((resolve) => {
    let failure: Error | null = null;
    socket.on('error', (error) => (failure = error));
    socket.on('close', () => resolve(failure));
  });
  await new Promise<void>((resolve) => socket.connect(port, '127.0.0.1', resolve));
  const keepAlive = jest.spyOn(socket, 'setKeepAlive');
  limitSocket(socket, { idleMs, maxAnswerBytes });
  // Keepalive probes after 10 s idle: a peer gone without a FIN is noticed.
  expect(keepAlive).toHaveBeenCalledWith(true, 10_000);
  let received = 0;
  socket.on('data', (chunk: Buffer) => (received += chunk.length));
  return { socket, closed, received: () => received };
}

test('an idle socket is destroyed with ConnectionIdle after the deadline, not before', async () => {
  const started = Date.now();
  const { closed } = await limited(300, 1000);
  const error = await closed;
  expect(error).toBeInstanceOf(ConnectionIdle);
  expect(error).toMatchObject({
    code: 'ETIMEDOUT',
    idleMs: 300,
    name: 'ConnectionIdle',
    message: 'the server sent nothing for 300 ms: connection closed by the client',
  });
  expect(Date.now() - started).toBeGreaterThanOrEqual(290);
});

test('bytes arriving keep it open past the deadline', async () => {
  const { socket, closed, received } = await limited(300, 1_000_000);
  socket.write('drip 50\n');
  await new Promise<void>((resolve) => {
    const check = setInterval(() => {
      // 20 drips at 50 ms: a second, three deadlines long.
      if (received() >= 20) {
        clearInterval(check);
        resolve();
      }
    }, 20);
  });
  expect(socket.destroyed).toBe(false);
  socket.destroy();
  expect(await closed).toBeNull();
});

test('an answer over the cap is cut with AnswerTooLarge; the count starts again at each write', async () => {
  const { socket, closed, received } = await limited(0, 1000);
  socket.write('send 800\n');
  await new Promise<void>((resolve) => {
    const check = setInterval(() => {
      if (received() >= 800) {
        clearInterval(check);
        resolve();
      }
    }, 10);
  });
  // 800 + 800 would pass the cap, but a write came in between: a new answer.
  socket.write('send 800\n');
  await new Promise<void>((resolve) => {
    const check = setInterval(() => {
      if (received() >= 1600) {
        clearInterval(check);
        resolve();
      }
    }, 10);
  });
  expect(socket.destroyed).toBe(false);
  socket.write('send 1001\n');
  const error = await closed;
  expect(error).toBeInstanceOf(AnswerTooLarge);
  expect(error).toMatchObject({
    code: 'ANSWER_TOO_LARGE',
    limitBytes: 1000,
    name: 'AnswerTooLarge',
    message: 'the server answered with more than 1000 bytes: connection closed by the client',
  });
});

test('an answer of exactly the cap is taken', async () => {
  const { socket, closed, received } = await limited(0, 1000);
  socket.write('send 1000\n');
  await new Promise<void>((resolve) => {
    const check = setInterval(() => {
      if (received() >= 1000) {
        clearInterval(check);
        resolve();
      }
    }, 10);
  });
  expect(socket.destroyed).toBe(false);
  socket.destroy();
  expect(await closed).toBeNull();
});

test('the default cap is 64 MiB', () => {
  expect(defaultMaxAnswerBytes).toBe(67_108_864);
});
