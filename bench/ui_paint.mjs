// How long the web UI takes to paint a view (docs/ui.md, issue 36): a fresh page opened at
// BASE_URL/#HASH in Debian's headless chromium, timed until its figures are in
// (body[data-state=ready]), three times. Point it at a `gpuledger server` whose kept snapshot is
// loaded (ask it any report first) to time warm paints.
//
// Usage: node bench/ui_paint.mjs BASE_URL "view=cost&window=30d&aggregate=namespace"
// (playwright-core from tests/ui: scripts/install-deps.sh installs it)
import { chromium } from "../tests/ui/node_modules/playwright-core/index.mjs";

const [base, hash] = process.argv.slice(2);
if (!base || !hash) {
  console.error('usage: node bench/ui_paint.mjs BASE_URL "view=cost&window=30d"');
  process.exit(2);
}
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  args: ["--no-sandbox"],
});
for (let run = 1; run <= 3; run++) {
  const page = await browser.newPage({ viewport: { width: 1280, height: 1000 } });
  const t0 = Date.now();
  await page.goto(`${base}/#${hash}`);
  await page.waitForFunction(() => document.body.dataset.state === "ready", null,
                             { timeout: 300000 });
  console.log(`run ${run}: ${hash}: ${((Date.now() - t0) / 1000).toFixed(2)} s`);
  // What the page reads after its figures (the team choices) finishes before the next run, so
  // no run waits on the one before's requests.
  await page.waitForLoadState("networkidle");
  await page.close();
}
await browser.close();
