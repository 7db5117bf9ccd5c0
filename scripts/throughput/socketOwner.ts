import { readdir, readFile, readlink } from "node:fs/promises";

/**
 * Tells whether a TCP connection to the proxy was opened by one given process (the benchmark itself, which also runs
 * the local runner's status polls and job submission), on Linux: the client end's inode from /proc/net/tcp{,6}, then
 * whether that process holds a file descriptor `socket:[inode]`. Lookups are batched: a burst of new connections (the
 * runner uploads input blobs many at a time) costs one pass over /proc, not one per connection. Elsewhere, or when
 * /proc cannot be read, the answer is "unknown".
 */
export class SocketOwnerResolver {
  private pending: { clientPort: number; serverPort: number; resolve: (owned: boolean | undefined) => void }[] = [];
  private scheduled = false;

  constructor(private readonly ownerPid: number) {}

  /** True when `ownerPid` opened the connection from `clientPort` to `serverPort`; undefined when it cannot tell. */
  isOwnedBy(clientPort: number, serverPort: number): Promise<boolean | undefined> {
    if (process.platform !== "linux") return Promise.resolve(undefined);
    return new Promise((resolve) => {
      this.pending.push({ clientPort, serverPort, resolve });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => void this.resolveBatch());
      }
    });
  }

  private async resolveBatch(): Promise<void> {
    const batch = this.pending;
    this.pending = [];
    this.scheduled = false;
    try {
      const inodes = await clientSocketInodes(new Set(batch.map((entry) => entry.serverPort)));
      const owned = await socketInodesOf(this.ownerPid);
      for (const entry of batch) {
        const inode = inodes.get(`${entry.clientPort}>${entry.serverPort}`);
        entry.resolve(inode === undefined ? undefined : owned.has(inode));
      }
    } catch {
      for (const entry of batch) entry.resolve(undefined);
    }
  }
}

/** Inodes of loopback client sockets connected to one of `serverPorts`, keyed `clientPort>serverPort`. */
async function clientSocketInodes(serverPorts: ReadonlySet<number>): Promise<Map<string, string>> {
  const inodes = new Map<string, string>();
  for (const file of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    const text = await readFile(file, "utf8").catch(() => "");
    for (const line of text.split("\n").slice(1)) {
      const fields = line.trim().split(/\s+/);
      const local = fields[1];
      const remote = fields[2];
      const inode = fields[9];
      if (local === undefined || remote === undefined || inode === undefined) continue;
      const remotePort = parseInt(remote.slice(remote.lastIndexOf(":") + 1), 16);
      if (!serverPorts.has(remotePort)) continue;
      const localPort = parseInt(local.slice(local.lastIndexOf(":") + 1), 16);
      inodes.set(`${localPort}>${remotePort}`, inode);
    }
  }
  return inodes;
}

/** Inodes of the sockets a process holds open. */
async function socketInodesOf(pid: number): Promise<Set<string>> {
  const dir = `/proc/${pid}/fd`;
  const inodes = new Set<string>();
  const entries = await readdir(dir);
  await Promise.all(
    entries.map(async (entry) => {
      const target = await readlink(`${dir}/${entry}`).catch(() => "");
      const match = /^socket:\[(\d+)\]$/.exec(target);
      if (match?.[1] !== undefined) inodes.add(match[1]);
    }),
  );
  return inodes;
}
