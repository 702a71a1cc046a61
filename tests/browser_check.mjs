// The book in a real browser (Debian's chromium, driven by playwright-core): `make browser-check`.
//
// For every chapter page of the built book, at desktop (1280 px) and phone (390 px) width, after
// MathJax has typeset the page, it records
//   - console errors and failed requests (a script included twice, a missing asset);
//   - display equations wider than the article column that cannot be scrolled (cut off), and, at
//     desktop width, display equations that need a scroll bar (they should be broken into lines);
//   - inline math or code in the text that runs past the column;
//   - TeX that MathJax could not typeset (an undefined macro, unbalanced braces), shown as an error box.
// It writes screenshots of one chapter at both widths to _build/browser-check/ for a person to look
// at, prints a table, and exits non-zero if any page has a problem.
//
// Usage: node tests/browser_check.mjs <html root> <chapter page for screenshots>

import { createRequire } from "node:module";
import { createServer } from "node:http";
import { readFile, readdir, mkdir } from "node:fs/promises";
import { extname, join, resolve } from "node:path";

const require = createRequire(import.meta.url);
const { chromium } = require(process.env.PLAYWRIGHT_CORE || "playwright-core");

const root = resolve(process.argv[2] || "_build/test-build/_build/html");
const shotPage = process.argv[3] || "laplace_binary";
const outDir = resolve("_build/browser-check");
const types = { ".html": "text/html", ".js": "text/javascript", ".css": "text/css", ".png": "image/png",
  ".svg": "image/svg+xml", ".woff": "font/woff", ".woff2": "font/woff2", ".json": "application/json" };

const server = createServer(async (request, response) => {
  if (request.url === "/favicon.ico") {
    response.writeHead(204);
    response.end();
    return;
  }
  const path = join(root, decodeURIComponent(new URL(request.url, "http://x").pathname));
  try {
    const body = await readFile(path.endsWith("/") ? join(path, "index.html") : path);
    response.writeHead(200, { "content-type": types[extname(path)] || "application/octet-stream" });
    response.end(body);
  } catch {
    response.writeHead(404);
    response.end();
  }
});
await new Promise((done) => server.listen(0, "127.0.0.1", done));
const base = `http://127.0.0.1:${server.address().port}`;

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync"],
});
await mkdir(outDir, { recursive: true });
const pages = (await readdir(join(root, "book"))).filter((f) => f.endsWith(".html")).map((f) => f.slice(0, -5));
let failures = 0;
console.log("page                          width  console  cut equations  wide text  scrolling equations  TeX errors");
for (const name of pages.sort()) {
  for (const width of [1280, 390]) {
    const page = await browser.newPage({ viewport: { width, height: 900 } });
    const errors = [];
    page.on("console", (message) => {
      // pydata-sphinx-theme logs this when the browser has no stored light/dark choice yet: not the book's
      if (message.type() === "error" && !message.text().startsWith("Got invalid theme mode")) errors.push(message.text());
    });
    page.on("pageerror", (error) => errors.push(String(error)));
    page.on("requestfailed", (request) => {
      if (request.url().startsWith(base)) errors.push(`failed ${request.url()}`);
    });
    await page.goto(`${base}/book/${name}.html`, { waitUntil: "load" });
    await page.evaluate(async () => {
      if (window.MathJax && window.MathJax.startup) await window.MathJax.startup.promise;
    });
    const result = await page.evaluate(() => {
      const article = document.querySelector("article") || document.body;
      const limit = article.getBoundingClientRect().right + 1;
      const scrollable = (element) => {
        for (let node = element; node && node !== article; node = node.parentElement) {
          const style = getComputedStyle(node);
          if (["auto", "scroll"].includes(style.overflowX) && node.scrollWidth > node.clientWidth) return true;
        }
        return false;
      };
      const displays = [...article.querySelectorAll("mjx-container[display='true']")];
      const cut = displays.filter((e) => e.getBoundingClientRect().right > limit && !scrollable(e))
        .map((e) => e.textContent.slice(0, 60));
      const scrolling = displays.filter((e) => scrollable(e)).map((e) => e.textContent.slice(0, 60));
      const wide = [...article.querySelectorAll("p mjx-container, li mjx-container, p code, li code, td mjx-container")]
        .filter((e) => e.getBoundingClientRect().right > limit && !scrollable(e))
        .map((e) => e.textContent.slice(0, 60));
      const tex = [...article.querySelectorAll("mjx-merror")]
        .map((e) => e.getAttribute("data-mjx-error") || e.textContent.slice(0, 60));
      return { cut, wide, scrolling, tex };
    });
    const scrolling = width >= 1000 ? result.scrolling : [];
    const problems = errors.length + result.cut.length + result.wide.length + scrolling.length + result.tex.length;
    failures += problems ? 1 : 0;
    console.log(`${name.padEnd(30)}${String(width).padStart(5)}  ${String(errors.length).padStart(7)}  ` +
      `${String(result.cut.length).padStart(13)}  ${String(result.wide.length).padStart(9)}  ` +
      `${String(result.scrolling.length).padStart(19)}  ${String(result.tex.length).padStart(10)}`);
    const details = [...errors, ...result.cut.map((t) => `cut: ${t}`), ...result.wide.map((t) => `wide: ${t}`),
      ...scrolling.map((t) => `scrolls: ${t}`), ...result.tex.map((t) => `TeX: ${t}`)];
    for (const item of details.slice(0, 6)) console.log(`    ${item}`);
    if (name === shotPage) {
      await page.screenshot({ path: join(outDir, `${name}-${width}.png`), fullPage: width === 1280 ? false : true });
    }
    await page.close();
  }
}
await browser.close();
server.close();
console.log(`screenshots of ${shotPage} in ${outDir}; ${failures} page/width pair(s) with problems`);
process.exit(failures ? 1 : 0);
