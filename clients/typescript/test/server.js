// A ragmem server for the tests: the one $RAGMEM_URL and $RAGMEM_TOKEN name,
// or one started here from $RAGMEM_BIN or a binary built from this checkout.

import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, existsSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { createInterface } from "node:readline";

export const TS_DIR = resolve(dirname(fileURLToPath(import.meta.url)), "..");
export const REPO = resolve(TS_DIR, "..", "..");

export const inCI = () => !["", "0", "false"].includes(process.env.CI ?? "");

let binaryPath;

/** The ragmem binary: $RAGMEM_BIN, else built with `go build` once. Returns undefined (or throws in CI) when neither is possible. */
export function binary() {
  if (binaryPath) return binaryPath;
  if (process.env.RAGMEM_BIN) return (binaryPath = process.env.RAGMEM_BIN);
  let go;
  try {
    go = execFileSync("sh", ["-c", "command -v go"], { encoding: "utf8" }).trim();
  } catch {
    go = "";
  }
  if (!go || !existsSync(join(REPO, "go.mod"))) {
    if (inCI()) throw new Error("no ragmem binary: set RAGMEM_BIN, or install Go to build one");
    return undefined;
  }
  const dir = mkdtempSync(join(tmpdir(), "ragmem-nodetest-bin-"));
  process.on("exit", () => rmSync(dir, { recursive: true, force: true }));
  const path = join(dir, "ragmem");
  execFileSync(go, ["build", "-o", path, "./cmd/ragmem"], { cwd: REPO, stdio: "inherit" });
  return (binaryPath = path);
}

/** A `ragmem serve` process on a temporary data directory. */
export class Served {
  static async start(...args) {
    const bin = binary();
    if (!bin) return undefined;
    const s = new Served();
    s.bin = bin;
    s.dir = mkdtempSync(join(tmpdir(), "ragmem-nodetest-"));
    s.env = { ...process.env, RAGMEM_EMBEDDER: "lexical", XDG_CONFIG_HOME: join(s.dir, "config"), RAGMEM_CONFIG: "", RAGMEM_DIR: "" };
    s.data = join(s.dir, "data");
    s.proc = spawn(bin, ["--dir", s.data, "serve", "--addr", "127.0.0.1:0", ...args], { env: s.env, stdio: ["ignore", "pipe", "pipe"] });
    s.stderr = "";
    s.proc.stderr.on("data", (d) => { s.stderr += d; });
    const lines = [];
    await new Promise((resolveReady, reject) => {
      const timer = setTimeout(() => reject(new Error("ragmem serve did not start:\n" + lines.join("\n") + "\n" + s.stderr)), 60_000);
      const rl = createInterface({ input: s.proc.stdout });
      rl.on("line", (line) => {
        lines.push(line);
        const m = /ragmem: serving .* on (https?:\/\/\S+)/.exec(line);
        if (m && !s.url) {
          s.url = m[1];
          clearTimeout(timer);
          resolveReady();
        }
      });
      s.proc.on("exit", (code) => {
        clearTimeout(timer);
        reject(new Error(`ragmem serve exited (${code}):\n` + lines.join("\n") + "\n" + s.stderr));
      });
    });
    s.token = s.ragmem("token", "show").trim();
    for (let i = 0; ; i++) {
      try {
        const r = await fetch(s.url + "/readyz");
        if (r.ok) break;
      } catch (err) {
        if (i > 300) throw err;
      }
      await new Promise((r) => setTimeout(r, 50));
    }
    return s;
  }

  /** Runs another ragmem command on the server's data directory. */
  ragmem(...args) {
    return execFileSync(this.bin, ["--dir", this.data, ...args], { env: this.env, encoding: "utf8" });
  }

  async stop() {
    if (this.proc.exitCode === null && this.proc.signalCode === null) {
      const exited = new Promise((r) => this.proc.once("exit", r));
      this.proc.kill("SIGTERM");
      const t = setTimeout(() => this.proc.kill("SIGKILL"), 30_000);
      await exited;
      clearTimeout(t);
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}

let shared;

/**
 * {url, token} of the server the tests share: $RAGMEM_URL and $RAGMEM_TOKEN
 * when set, else one started for this test file (stop it with stopShared).
 * Undefined when there is neither (the tests then skip, or fail in CI).
 */
export async function sharedServer() {
  if (process.env.RAGMEM_URL && process.env.RAGMEM_TOKEN) return { url: process.env.RAGMEM_URL, token: process.env.RAGMEM_TOKEN };
  shared ??= await Served.start();
  return shared && { url: shared.url, token: shared.token };
}

export async function stopShared() {
  await shared?.stop();
  shared = undefined;
}

/** The first fenced code block of a Markdown file, which must be in lang. */
export function firstCodeBlock(path, lang) {
  const m = /^```(\w*)\n([\s\S]*?)^```/m.exec(readFileSync(path, "utf8"));
  if (!m) throw new Error(`${path}: no code block`);
  if (m[1] !== lang) throw new Error(`${path}: the first code block is ${JSON.stringify(m[1])}, not ${lang}`);
  return m[2];
}
