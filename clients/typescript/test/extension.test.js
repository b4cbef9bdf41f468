// The reference extension (examples/extension) uses this client: its
// ragmem.js is the client's build, byte for byte.

import { it } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";

import { TS_DIR, REPO } from "./server.js";

it("examples/extension/ragmem.js is the client's build (npm run sync-extension)", () => {
  const built = readFileSync(join(TS_DIR, "dist", "index.js"), "utf8");
  const copy = readFileSync(join(REPO, "examples", "extension", "ragmem.js"), "utf8");
  assert.ok(copy === built, "examples/extension/ragmem.js differs from dist/index.js: run `npm run sync-extension` in clients/typescript");
});
