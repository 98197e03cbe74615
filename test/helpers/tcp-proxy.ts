// A TCP proxy in front of a test Redis that a test can make misbehave: hold traffic (a black hole),
// cut every connection, or refuse new ones — the failures a network produces, made deterministic.
import { createServer, Socket, type Server } from 'node:net';
import { freePort } from './redis-server.js';

export interface TcpProxy {
  readonly port: number;
  /** Stop forwarding client bytes (they are dropped), as a black-holed network would. */
  hold(): void;
  /** Forward again. */
  resume(): void;
  /** Destroy every open connection. */
  cutAll(): void;
  /** Refuse (immediately close) new connections while true. */
  refuse(on: boolean): void;
  /**
   * While true, answer every command itself with `+OK` (nothing reaches Redis): something in front of
   * Redis that answers with the wrong shape. Returns the commands answered so far.
   */
  answerOk(on: boolean): void;
  readonly okAnswers: number;
  close(): Promise<void>;
}

export async function startProxy(targetPort: number): Promise<TcpProxy> {
  const port = await freePort();
  let holding = false;
  let refusing = false;
  let answeringOk = false;
  let okAnswers = 0;
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    if (refusing) {
      client.destroy();
      return;
    }
    const upstream = new Socket();
    upstream.connect(targetPort, '127.0.0.1');
    sockets.add(client);
    sockets.add(upstream);
    const commands = new RespCounter();
    client.on('data', (chunk: Buffer) => {
      if (answeringOk) {
        const n = commands.feed(chunk);
        okAnswers += n;
        client.write('+OK\r\n'.repeat(n));
      } else if (!holding) upstream.write(chunk);
    });
    upstream.on('data', (chunk) => client.write(chunk));
    const end = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on('close', end).on('error', end);
    upstream.on('close', end).on('error', end);
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return {
    port,
    hold: () => void (holding = true),
    resume: () => void (holding = false),
    cutAll: () => {
      for (const s of sockets) s.destroy();
      sockets.clear();
    },
    refuse: (on) => void (refusing = on),
    answerOk: (on) => void (answeringOk = on),
    get okAnswers() {
      return okAnswers;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

/** Counts whole RESP commands (arrays of bulk strings, as clients send them) across chunk boundaries. */
class RespCounter {
  private buffer = Buffer.alloc(0);

  feed(chunk: Buffer): number {
    this.buffer = Buffer.concat([this.buffer, chunk]);
    let count = 0;
    for (;;) {
      const end = this.commandEnd(this.buffer);
      if (end < 0) return count;
      this.buffer = this.buffer.subarray(end);
      count++;
    }
  }

  /** The offset just past the first whole command in `b`, or -1. */
  private commandEnd(b: Buffer): number {
    const line = (from: number) => {
      const nl = b.indexOf('\r\n', from);
      return nl < 0 ? undefined : { text: b.toString('latin1', from, nl), next: nl + 2 };
    };
    const head = line(0);
    if (!head) return -1;
    if (!head.text.startsWith('*')) return head.next; // an inline command: one line
    let at = head.next;
    for (let i = 0; i < Number(head.text.slice(1)); i++) {
      const size = line(at);
      if (!size) return -1;
      at = size.next + Number(size.text.slice(1)) + 2;
      if (at > b.length) return -1;
    }
    return at;
  }
}
