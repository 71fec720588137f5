import { createServer } from 'node:net';

const HOST = '127.0.0.1';

/** Redis Cluster listens for its node-to-node bus on `port + 10000`. */
export const CLUSTER_BUS_PORT_OFFSET = 10_000;

/** Highest port whose cluster bus port (`port + 10000`) still fits below 65536. */
export const MAX_CLUSTER_PORT = 65_535 - CLUSTER_BUS_PORT_OFFSET - 1;

function listenOnce(port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen({ host: HOST, port, exclusive: true }, () => {
      const address = server.address();
      const bound = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => resolve(bound));
    });
  });
}

/** A TCP port on 127.0.0.1 that nobody was listening on a moment ago. */
export async function freePort(): Promise<number> {
  return listenOnce(0);
}

/** Whether something could listen on `127.0.0.1:port` right now. */
export async function isPortFree(port: number): Promise<boolean> {
  try {
    await listenOnce(port);
    return true;
  } catch {
    return false;
  }
}

/**
 * A port P <= MAX_CLUSTER_PORT such that both P and its cluster bus port P + 10000 are free.
 * Ports in `exclude` are never returned, neither as P nor as a bus port, so that nodes of one
 * cluster picked in parallel do not collide with each other.
 */
export async function freeClusterPort(exclude: ReadonlySet<number> = new Set()): Promise<number> {
  const usable = (port: number): boolean =>
    port > 0 &&
    port <= MAX_CLUSTER_PORT &&
    !exclude.has(port) &&
    !exclude.has(port + CLUSTER_BUS_PORT_OFFSET) &&
    !exclude.has(port - CLUSTER_BUS_PORT_OFFSET);
  for (let attempt = 0; attempt < 200; attempt++) {
    // The kernel's ephemeral range (often 32768-60999) overlaps the top of the allowed range,
    // so fall back to random picks below it when the kernel keeps handing out high ports.
    const candidate =
      attempt < 20
        ? await freePort()
        : 20_000 + Math.floor(Math.random() * (MAX_CLUSTER_PORT - 20_000));
    if (!usable(candidate)) continue;
    if ((await isPortFree(candidate)) && (await isPortFree(candidate + CLUSTER_BUS_PORT_OFFSET))) {
      return candidate;
    }
  }
  throw new Error('Could not find a free port P with P + 10000 also free');
}

/**
 * Keeps `port` taken, so that no other process (other test runs share this machine) starts a
 * server on it that clients would mistake for the one that left; connections are dropped
 * at once. Resolves to the function that frees the port again.
 */
export function holdPort(port: number): Promise<() => Promise<void>> {
  return new Promise((resolve, reject) => {
    const server = createServer((socket) => socket.destroy());
    server.unref();
    server.once('error', reject);
    server.listen({ host: HOST, port, exclusive: true }, () =>
      resolve(() => new Promise((closed) => server.close(() => closed()))),
    );
  });
}
