// Builds ui/vendor (committed; the server embeds it beside ui/src): uPlot's built files and
// licence from the npm package the lockfile pins. The page itself (ui/src) needs no build: it is
// one ES module, one style sheet and one HTML file, served as they are.
import { copyFileSync, mkdirSync, readdirSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const vendor = join(here, "vendor");
rmSync(vendor, { recursive: true, force: true });
mkdirSync(vendor);
const uplot = join(here, "node_modules", "uplot");
for (const name of ["uPlot.iife.min.js", "uPlot.min.css"]) {
  copyFileSync(join(uplot, "dist", name), join(vendor, name));
}
copyFileSync(join(uplot, "LICENSE"), join(vendor, "uPlot.LICENSE.txt"));
console.log(`ui/vendor: ${readdirSync(vendor).join(", ")}`);
