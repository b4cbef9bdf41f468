// Copies the built client (dist/index.js) into the reference browser
// extension (examples/extension/ragmem.js), which loads without a build
// step. `npm test` checks that the copy is current.

import { copyFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const here = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const to = join(here, "..", "..", "examples", "extension", "ragmem.js");
copyFileSync(join(here, "dist", "index.js"), to);
console.log("wrote " + to);
