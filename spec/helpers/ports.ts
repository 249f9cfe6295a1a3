/** Loopback ports for the servers tests start. */
import net from 'node:net';

/**
 * A TCP port on 127.0.0.1 that was free a moment ago (the OS picked it for a listener that is closed
 * again at once). Another process could take it before the caller does; for tests that is rare enough.
 */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}
