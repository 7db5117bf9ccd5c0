import { describe, expect, it } from "vitest";
import { instanceIdFrom } from "../../src/app/context";

// With FUNCTIONS_WORKER_PROCESS_COUNT > 1 the platform runs several Node worker processes on one instance, and every
// one of them sees the same WEBSITE_INSTANCE_ID.
const SHARED_ENV = {
  WEBSITE_INSTANCE_ID: "6c1b0b7f3e2a4d5f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a0b9c8d7e6f",
  FUNCTIONS_WORKER_PROCESS_COUNT: "2",
};

describe("instanceIdFrom", () => {
  it("gives two worker processes with the same WEBSITE_INSTANCE_ID different ids", () => {
    const first = instanceIdFrom(SHARED_ENV, { pid: 4101 });
    const second = instanceIdFrom(SHARED_ENV, { pid: 4102 });
    expect(first).not.toBe(second);
  });

  it("keeps the id readable: the platform id (shortened) and the process id", () => {
    expect(instanceIdFrom(SHARED_ENV, { pid: 4101 })).toBe("6c1b0b7f3e2a4d5f9a8b7c6d-4101");
    expect(instanceIdFrom({ WEBSITE_INSTANCE_ID: "instance-1" }, { pid: 77 })).toBe("instance-1-77");
  });

  it("prefixes the region and drops characters an id may not hold", () => {
    expect(instanceIdFrom({ WEBSITE_INSTANCE_ID: "in st/ance", REGION_NAME: "west europe" }, { pid: 9 })).toBe(
      "westeurope:instance-9",
    );
  });

  it("falls back to host name and process id without a platform id", () => {
    expect(instanceIdFrom({}, { pid: 12, hostname: "my.host" })).toBe("my.host-12");
    expect(instanceIdFrom({ WEBSITE_INSTANCE_ID: "" }, { pid: 12, hostname: "my.host" })).toBe("my.host-12");
  });

  it("uses this process's id by default", () => {
    expect(instanceIdFrom({ WEBSITE_INSTANCE_ID: "abc" })).toBe(`abc-${process.pid}`);
  });
});
