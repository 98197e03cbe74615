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
  close(): Promise<void>;
}

export async function startProxy(targetPort: number): Promise<TcpProxy> {
  const port = await freePort();
  let holding = false;
  let refusing = false;
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
    client.on('data', (chunk) => {
      if (!holding) upstream.write(chunk);
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
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
