/**
 * A server on loopback: listening on a free port, closed with its connections. The embedded simulated
 * upstream runs this way, and so do the tests' fake upstreams.
 */
import type http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface LoopbackServer {
  /** `http://127.0.0.1:<port>` */
  url: string;
  /** Close the server, cutting the connections still open (kept-alive ones included). */
  close(): Promise<void>;
}

/** Listen with `server` on 127.0.0.1 at `port` (default 0: a port the system picks). */
export async function listenOnLoopback(server: http.Server, port = 0): Promise<LoopbackServer> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', resolve);
  });
  const { port: bound } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${bound}`,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
