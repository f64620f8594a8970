// A TCP proxy a test owns, in front of a shared server (Redis, PostgreSQL) that is never stopped:
// `freeze()` stops passing bytes both ways without closing anything — a partition, a frozen load
// balancer: no error, no reset — and `thaw()` delivers what was held and passes bytes again.
import net from 'node:net';

/** A proxy on 127.0.0.1 that can be frozen and thawed. */
export interface FreezableProxy {
  /** The port to connect to instead of the server's. */
  readonly port: number;
  /** Connections opened through the proxy so far. */
  readonly connections: number;
  /** Stops passing bytes, both ways, on every connection (new ones too); nothing is closed. */
  freeze(): void;
  /** Delivers the bytes held while frozen, in order, and passes bytes again. */
  thaw(): void;
  /** Destroys every connection and stops listening. */
  close(): Promise<void>;
}

/** One direction of a connection: bytes from `from` to `to`, held while the proxy is frozen. */
class Pipe {
  private readonly held: Buffer[] = [];
  private ended = false;

  constructor(
    private readonly from: net.Socket,
    private readonly to: net.Socket,
    private readonly frozen: () => boolean,
  ) {
    from.on('data', (chunk: Buffer) => {
      if (this.frozen() || this.held.length > 0) {
        this.held.push(chunk);
        from.pause(); // the rest waits in the kernel, as it would behind a silent network
      } else {
        to.write(chunk);
      }
    });
    from.on('end', () => {
      this.ended = true;
      if (!this.frozen() && this.held.length === 0) to.end();
    });
  }

  flush(): void {
    for (const chunk of this.held.splice(0)) this.to.write(chunk);
    if (this.ended) this.to.end();
    else this.from.resume();
  }
}

/**
 * Starts a proxy to `target` on a free port of 127.0.0.1.
 *
 * @example
 * ```ts
 * const proxy = await freezableProxy({ host: '127.0.0.1', port: 5432 });
 * const pool = new pg.Pool({ host: '127.0.0.1', port: proxy.port });
 * proxy.freeze(); // … the database falls silent
 * proxy.thaw();
 * await proxy.close();
 * ```
 */
export async function freezableProxy(target: { host: string; port: number }): Promise<FreezableProxy> {
  let frozen = false;
  let opened = 0;
  const sockets = new Set<net.Socket>();
  const pipes = new Set<Pipe>();
  const track = (socket: net.Socket): void => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => {}); // a peer reset is the peer's business; the other side is closed below
  };
  const server = net.createServer({ allowHalfOpen: true }, (client) => {
    opened++;
    const upstream = net.connect({ host: target.host, port: target.port, allowHalfOpen: true });
    track(client);
    track(upstream);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
    const both = [new Pipe(client, upstream, () => frozen), new Pipe(upstream, client, () => frozen)];
    for (const pipe of both) pipes.add(pipe);
    client.on('close', () => {
      for (const pipe of both) pipes.delete(pipe);
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as net.AddressInfo;
  return {
    port,
    get connections() {
      return opened;
    },
    freeze() {
      frozen = true;
    },
    thaw() {
      frozen = false;
      for (const pipe of pipes) pipe.flush();
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
