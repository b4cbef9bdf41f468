// The README's first code block runs against a real server, with the package
// installed the way a user installs it (node_modules/ragmem -> this folder).

import { it, after } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, mkdirSync, writeFileSync, symlinkSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";

import { sharedServer, stopShared, firstCodeBlock, TS_DIR } from "./server.js";

const s = await sharedServer();
after(stopShared);

it("the README's first code block runs", { skip: s ? false : "no ragmem server" }, async () => {
  const code = firstCodeBlock(join(TS_DIR, "README.md"), "js");
  const d = mkdtempSync(join(tmpdir(), "ragmem-readme-"));
  try {
    mkdirSync(join(d, "node_modules"));
    symlinkSync(TS_DIR, join(d, "node_modules", "ragmem"), "dir");
    writeFileSync(join(d, "example.mjs"), code);
    const { stdout } = await promisify(execFile)(process.execPath, ["example.mjs"], {
      cwd: d, env: { ...process.env, RAGMEM_URL: s.url, RAGMEM_TOKEN: s.token }, timeout: 120_000,
    });
    assert.match(stdout, /notes:\/\/gateway Gateway/);
    assert.match(stdout, /tokens of context/);
  } finally {
    rmSync(d, { recursive: true, force: true });
  }
});
