// The book in a real browser (Debian's chromium, driven by playwright-core): `make browser-check`.
//
// For every page of the built book, at phone (390 px), desktop (1280 px) and wide (1920 px) width, after
// MathJax has typeset the page, it records
//   - console errors and failed requests (a script included twice, a missing asset);
//   - overflow: the page scrolling sideways, or an element running past the article column outside a
//     box that scrolls;
//   - boxes that scroll sideways: an inline formula with its own scroll bar, a table that scrolls
//     instead of fitting (or reflowing), a display formula that scrolls at desktop width, and any
//     scrolling box without a visible cue at the edge where it scrolls (a shadow);
//   - figures that scroll sideways at desktop widths (1280 px and wider): a figure must fit the column there
//     (on a phone a wide figure may scroll, with its full-size link);
//   - figures: text smaller than 8 px at the rendered size (the height of the smallest text the
//     figure's code sets, at the image's natural size, which book/_ext/figures.py writes into the
//     image's class gpc-text-N, times the image's rendered width over its natural width), an image
//     that does not open full size on click (a link to the image), alt text that is empty or a path;
//   - the contents toggle: at phone width clicking it must show the table of contents, at desktop
//     width it must hide and show the sidebar;
//   - TeX that MathJax could not typeset (an undefined macro, unbalanced braces).
// It writes screenshots of the pages named on the command line (whole page, both widths) to
// _build/browser-check/, prints a table and the figure-font measurements, and exits non-zero if any
// page has a problem.
//
// Usage: node tests/browser_check.mjs <html root> [page ...]

import { createRequire } from "node:module";
import { createServer } from "node:http";
import { readFile, readdir, mkdir, writeFile } from "node:fs/promises";
import { extname, join, resolve } from "node:path";

const require = createRequire(import.meta.url);
const { chromium } = require(process.env.PLAYWRIGHT_CORE || "playwright-core");

const root = resolve(process.argv[2] || "_build/test-build/_build/html");
const shotPages = new Set(process.argv.slice(3));
const outDir = resolve("_build/browser-check");
const widths = [390, 1280, 1920];
const MIN_FONT_PX = 8;
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
const pages = [...(await readdir(join(root, "book"))).filter((f) => f.endsWith(".html"))
  .map((f) => `book/${f.slice(0, -5)}`).sort()];

// Everything measured inside the page: one function, so that it runs in the browser's context.
function measure({ minFontPx, desktop }) {
  const article = document.querySelector("article.bd-article") || document.querySelector("article") || document.body;
  const limit = Math.min(article.getBoundingClientRect().right, document.documentElement.clientWidth) + 1;
  const text = (e) => (e.textContent || e.getAttribute("alt") || e.tagName).replace(/\s+/g, " ").trim().slice(0, 70);
  const scrolls = (node) => {
    const style = getComputedStyle(node);
    return ["auto", "scroll"].includes(style.overflowX) && node.scrollWidth > node.clientWidth + 1;
  };
  const scrollingAncestor = (element) => {
    for (let node = element; node && node !== document.body; node = node.parentElement) {
      if (scrolls(node)) return node;
    }
    return null;
  };
  const hidden = (e) => {
    for (let node = e; node && node !== document.body; node = node.parentElement) {
      const style = getComputedStyle(node);
      if (style.display === "none" || style.visibility === "hidden") return true;
    }
    return false;
  };
  const result = { overflow: [], inlineScroll: [], tableScroll: [], displayScroll: [], noCue: [], tex: [],
    figures: [], smallFigures: [], figureScroll: [], noLink: [], badAlt: [], pageScroll: false };
  result.pageScroll = document.documentElement.scrollWidth > document.documentElement.clientWidth + 1;

  // elements past the column that no scrolling box holds
  for (const element of article.querySelectorAll("h1, h2, h3, h4, p, li, td, th, pre, img, table, mjx-container, code, dl, div.math, figure")) {
    if (hidden(element)) continue;
    const box = element.getBoundingClientRect();
    if (box.width > 0 && box.right > limit && !scrollingAncestor(element)) result.overflow.push(text(element));
  }
  // boxes that scroll sideways: what they hold, and whether an edge cue shows
  for (const element of article.querySelectorAll("*")) {
    if (!scrolls(element) || hidden(element)) continue;
    const isInlineMath = element.matches("mjx-container:not([display='true'])");
    const holdsTable = element.matches("table") || element.querySelector("table");
    const isDisplayMath = element.matches("mjx-container[display='true'], div.math") || element.querySelector("mjx-container[display='true']");
    const holdsFigure = element.matches(".gpc-figure-scroll") || (element.querySelector("img") && !holdsTable);
    if (holdsFigure && desktop) {
      const image = element.querySelector("img");
      const shown = Math.round(100 * element.clientWidth / element.scrollWidth);
      result.figureScroll.push(`${image?.closest("figure")?.querySelector(".caption-number")?.textContent.trim() ||
        decodeURIComponent((image?.src || "").split("/").pop()).slice(0, 16)}: ${shown} % visible`);
    }
    if (isInlineMath) result.inlineScroll.push(text(element));
    else if (holdsTable) result.tableScroll.push(text(element));
    else if (isDisplayMath && desktop) result.displayScroll.push(text(element));
    const style = getComputedStyle(element);
    const cue = style.backgroundImage.includes("gradient") || style.maskImage?.includes("gradient") ||
      style.webkitMaskImage?.includes("gradient");
    if (!cue) result.noCue.push(`${element.tagName.toLowerCase()}.${[...element.classList].join(".")}: ${text(element)}`);
  }
  // figures: rendered font size, full-size link, alt text
  for (const image of article.querySelectorAll("img")) {
    if (hidden(image)) continue;
    const file = decodeURIComponent(new URL(image.src).pathname.split("/").pop());
    const figure = image.closest("figure");
    const label = figure ? (figure.id || figure.querySelector("[id]")?.id || "") : "";
    const number = figure?.querySelector(".caption-number")?.textContent.trim() || "";
    const alt = image.getAttribute("alt") || "";
    if (!alt.trim() || /\.(png|jpe?g|svg|gif)$/i.test(alt) || alt.includes("/") && !alt.includes(" ") || alt.startsWith("<Figure")) {
      result.badAlt.push(`${number || file}: "${alt.slice(0, 60)}"`);
    }
    const link = image.closest("a");
    if (!link || !link.href || !link.href.endsWith(file)) result.noLink.push(number || file);
    const text = image.className.match(/gpc-text-(\d+)/);
    if (text && image.naturalWidth) {
      const natural = Number(text[1]) / 10;
      const scale = image.getBoundingClientRect().width / image.naturalWidth;
      const px = natural * scale;
      result.figures.push({ file, label, number, natural, scale: Math.round(scale * 100) / 100,
        px: Math.round(px * 10) / 10 });
      if (px < minFontPx) result.smallFigures.push(`${number || label || file}: ${px.toFixed(1)} px`);
    }
  }
  result.tex = [...article.querySelectorAll("mjx-merror")].map((e) => e.getAttribute("data-mjx-error") || text(e));
  return result;
}

// The contents toggle: at phone width a click must show the table of contents; at desktop width
// a click hides the sidebar and a second click shows it again.
async function checkToggle(page, width) {
  const toggles = await page.$$(".primary-toggle");
  let toggle = null;
  for (const candidate of toggles) if (await candidate.isVisible()) toggle = candidate;
  if (!toggle) return "no visible contents toggle";
  const tocVisible = () => page.evaluate(() => {
    const links = [...document.querySelectorAll(".bd-sidebar-primary a.reference, #pst-primary-sidebar-modal a.reference, nav.bd-docs-nav a")];
    return links.some((a) => {
      const box = a.getBoundingClientRect();
      const style = getComputedStyle(a);
      return box.width > 0 && box.right > 0 && box.left < window.innerWidth && style.visibility !== "hidden" &&
        document.elementFromPoint(Math.max(0, box.left + 2), box.top + box.height / 2)?.closest("a") === a;
    });
  });
  const before = await tocVisible();
  await toggle.click();
  await page.waitForTimeout(400);
  const after = await tocVisible();
  if (width < 992) {
    await page.keyboard.press("Escape");
    await page.waitForTimeout(200);
    return !before && after ? "" : `contents ${before ? "already visible" : "not shown"} after clicking the toggle`;
  }
  await toggle.click();
  await page.waitForTimeout(400);
  const again = await tocVisible();
  return before && !after && again ? "" : `desktop toggle: visible ${before}, after a click ${after}, after two ${again}`;
}

let failures = 0;
const allFigures = [];
const header = "page                            width  console  overflow  inline-scroll  table-scroll  " +
  "display-scroll  no-cue  figure-scroll  small-figure  no-link  alt  toggle  TeX";
console.log(header);
for (const name of pages) {
  for (const width of widths) {
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
    page.on("response", (response) => {
      if (response.url().startsWith(base) && response.status() >= 400) errors.push(`${response.status()} ${response.url()}`);
    });
    page.setDefaultTimeout(120000);
    await page.goto(`${base}/${name}.html`, { waitUntil: "load" });
    await page.evaluate(async () => {
      if (window.MathJax && window.MathJax.startup) await window.MathJax.startup.promise;
      await Promise.all([...document.images].map((image) => image.complete ? null : image.decode().catch(() => null)));
    });
    await page.waitForTimeout(300);  // the book's own script lays out tables and figures after load
    const result = await page.evaluate(measure, { minFontPx: MIN_FONT_PX, desktop: width >= 1000 });
    if (shotPages.has(name.replace("book/", ""))) {
      const height = await page.evaluate(() => document.documentElement.scrollHeight);
      await page.screenshot({ path: join(outDir, `${name.replace("book/", "")}-${width}.png`), fullPage: true,
        clip: { x: 0, y: 0, width, height: Math.min(height, 12000) }, timeout: 120000 });
    }
    const toggle = await checkToggle(page, width);
    if (result.pageScroll) result.overflow.unshift("the page scrolls sideways");
    const columns = [errors, result.overflow, result.inlineScroll, result.tableScroll, result.displayScroll,
      result.noCue, result.figureScroll, result.smallFigures, result.noLink, result.badAlt, toggle ? [toggle] : [],
      result.tex];
    const problems = columns.reduce((sum, list) => sum + list.length, 0);
    failures += problems ? 1 : 0;
    const widthsOf = [30, 5, 7, 8, 13, 12, 14, 6, 13, 12, 7, 3, 6, 3];
    const cells = [name.replace("book/", ""), width, ...columns.map((list) => list.length)];
    console.log(cells.map((c, i) => (i === 0 ? String(c).padEnd(widthsOf[i]) : String(c).padStart(widthsOf[i]))).join("  "));
    const labels = ["console", "overflow", "inline formula scrolls", "table scrolls", "display formula scrolls",
      "scrolls without a cue", "figure scrolls", "figure text", "no full-size link", "alt text", "toggle", "TeX"];
    columns.forEach((list, i) => list.slice(0, 4).forEach((item) => console.log(`    ${labels[i]}: ${item}`)));
    for (const figure of result.figures) allFigures.push({ page: name, width, ...figure });
    await page.close();
  }
}
await browser.close();
server.close();

// the rendered size of each figure's smallest text, at both widths
console.log("\nfigure text: the smallest text the figure's code sets, px at the image's natural size and as rendered (< 8 fails)");
console.log("chapter                  figure     label                               natural   390 px  1280 px  1920 px");
const byFigure = new Map();
for (const f of allFigures) {
  const key = `${f.page}|${f.file}`;
  if (!byFigure.has(key)) byFigure.set(key, { ...f });
  byFigure.get(key)[`px${f.width}`] = f.px;
}
for (const f of byFigure.values()) {
  console.log(`${f.page.replace("book/", "").padEnd(24)} ${(f.number || "").padEnd(10)} ${(f.label || "").slice(0, 35).padEnd(35)} ` +
    `${String(f.natural).padStart(7)} ${String(f.px390 ?? "").padStart(8)} ${String(f.px1280 ?? "").padStart(8)} ` +
    `${String(f.px1920 ?? "").padStart(8)}`);
}
await writeFile(join(outDir, "figures.json"), JSON.stringify([...byFigure.values()], null, 1));
console.log(`\nscreenshots in ${outDir}; ${failures} page/width pair(s) with problems`);
process.exit(failures ? 1 : 0);
