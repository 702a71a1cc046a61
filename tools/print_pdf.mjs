// The book as one PDF: `make pdf`. The single-page HTML build (jupyter-book --builder singlehtml) is
// opened in Debian's chromium (driven by playwright-core) at the printed column's width, and once
// MathJax has typeset every formula it is prepared for paper and printed:
//   - the solutions move to an appendix at the end ("Solutions to the exercises"), each under its
//     exercise's number and title, unfolded;
//   - a table of contents (parts, chapters and their sections) opens the book; its page numbers are
//     read back from a first printing with pdftotext (poppler-utils), then the book is printed again;
//   - a title page with the authors, the version, the date and commit it was printed from, and the licence;
//     progress is printed while chromium prints (a line every 30 s);
//   - every chapter starts on a new page; code wraps instead of running off the page, formulas and
//     tables too wide for the page are set smaller (book/_static/gpc.css has the print rules).
// Usage: node tools/print_pdf.mjs <singlehtml dir> <output.pdf>

import { createRequire } from "node:module";
import { createServer } from "node:http";
import { execFileSync } from "node:child_process";
import { readFile, writeFile, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { extname, join, resolve } from "node:path";

const require = createRequire(import.meta.url);
const { chromium } = require(process.env.PLAYWRIGHT_CORE || "playwright-core");

const started = Date.now();  // progress lines count seconds from here
const root = resolve(process.argv[2] || "_build/pdf-build/_build/singlehtml");
const output = resolve(process.argv[3] || "_build/pdf/gpc-book.pdf");
// A4 with 18 mm side margins: the printed column is 174 mm, 658 CSS px at 96 px per inch
const PAGE = { format: "A4", margin: { top: "18mm", bottom: "20mm", left: "18mm", right: "18mm" } };
const COLUMN_PX = 658;
const types = { ".html": "text/html", ".js": "text/javascript", ".css": "text/css", ".png": "image/png",
  ".svg": "image/svg+xml", ".woff": "font/woff", ".woff2": "font/woff2", ".json": "application/json" };

// index.html only redirects to the root document (book/intro.html), whose links to _static/ and
// _images/ are written as if it were at the top: it is served as "/".
const index = await readFile(join(root, "index.html"), "utf-8");
const rootDocument = join(root, (index.match(/url=([^"']+)/) || [null, "index.html"])[1]);
const server = createServer(async (request, response) => {
  const pathname = decodeURIComponent(new URL(request.url, "http://x").pathname);
  const path = pathname === "/" ? rootDocument : join(root, pathname);
  try {
    const body = await readFile(path);
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
const page = await browser.newPage({ viewport: { width: COLUMN_PX, height: 1000 } });
page.setDefaultTimeout(600000);
const problems = [];
page.on("pageerror", (error) => problems.push(String(error)));
page.on("response", (response) => {
  // the theme asks for a search index, which the single-page build does not write
  if (response.url().startsWith(base) && response.status() >= 400 && !response.url().endsWith("/searchindex.js")) {
    problems.push(`${response.status()} ${response.url()}`);
  }
});
await page.emulateMedia({ media: "print" });
await page.goto(`${base}/`, { waitUntil: "load" });
await page.evaluate(async () => {
  if (window.MathJax && window.MathJax.startup) await window.MathJax.startup.promise;
  await Promise.all([...document.images].map((image) => (image.complete ? null : image.decode().catch(() => null))));
});
await page.evaluate(() => window.dispatchEvent(new Event("resize")));  // gpc.js lays out at this width
await page.waitForTimeout(1500);

// Prepare the page for paper: everything here runs inside the page.
const END_OF_CONTENTS = "gpc end of contents";
// The title page's facts, from the repository: the authors (_config.yml), the version (pyproject.toml),
// the date and commit it was printed from, and the licence (the first line of LICENSE).
const repository = resolve(new URL("..", import.meta.url).pathname);
const readText = async (name) => (await readFile(join(repository, name), "utf-8").catch(() => ""));
const facts = {
  author: ((await readText("_config.yml")).match(/^author:\s*"?([^"\n]+)"?/m) || [null, ""])[1],
  version: ((await readText("pyproject.toml")).match(/^version = "([^"]+)"/m) || [null, ""])[1],
  licence: (await readText("LICENSE")).split("\n")[0].trim(),
  date: new Date().toISOString().slice(0, 10),
  commit: (() => { try { return execFileSync("git", ["-C", repository, "rev-parse", "--short", "HEAD"]).toString().trim(); }
    catch { return ""; } })(),
};
const say = (message) => console.log(`[${Math.round((Date.now() - started) / 1000)} s] ${message}`);
say("the book is loaded and typeset; preparing it for paper (solutions to an appendix, a contents page)");

const summary = await page.evaluate(([END_OF_CONTENTS, facts]) => {
  const article = document.querySelector("article.bd-article") || document.querySelector("article") || document.body;


  // The single-page build nests every document under the root: a chapter is the section after an
  // anchor "document-book/<name>", headed by an h2; the part captions live only in the navigation.
  const chapters = [...article.querySelectorAll("span[id^='document-'] + section")];
  const chapterOf = (element) => chapters.find((chapter) => chapter.contains(element));
  const title = (heading) => heading.textContent.replace(/#$/, "").replace(/\s+/g, " ").trim();

  // 1. The parts, as headings before their first chapter: the part captions with their chapters are
  // in the theme's print header (the page's title and a list of the book's contents), which the
  // contents below then replace.
  for (const caption of document.querySelectorAll("#jb-print-toc p.caption")) {
    const list = caption.nextElementSibling;
    const first = list && list.querySelector("a[href^='#document-']");
    const anchor = first && document.getElementById(first.getAttribute("href").slice(1));
    if (!anchor) continue;
    const part = document.createElement("h1");
    part.className = "gpc-part";
    part.textContent = caption.textContent.trim();
    anchor.parentElement.insertBefore(part, anchor);
  }
  document.getElementById("jb-print-docs-body")?.remove();

  // 2. The solutions, unfolded, in an appendix at the end, under their chapters' titles.
  const appendix = document.createElement("section");
  appendix.id = "gpc-solutions";
  appendix.className = "gpc-print-appendix";
  appendix.innerHTML = "<h1 class='gpc-part'>Solutions to the exercises</h1>";
  const solutions = [...article.querySelectorAll("div.solution")];
  let current = null;
  for (const solution of solutions) {
    const chapter = chapterOf(solution);
    if (chapter && chapter !== current) {
      current = chapter;
      const heading = document.createElement("h2");
      heading.className = "gpc-solutions-chapter";
      heading.textContent = title(chapter.querySelector("h2"));
      appendix.appendChild(heading);
    }
    solution.querySelectorAll(".toggle-hidden").forEach((e) => e.classList.remove("toggle-hidden"));
    solution.querySelectorAll("button.toggle-button").forEach((e) => e.remove());
    solution.classList.remove("dropdown", "toggle-hidden");
    appendix.appendChild(solution);
  }
  article.appendChild(appendix);

  // 3. Display formulas and tables too wide for the page are set smaller (down to 60 %).
  for (const math of article.querySelectorAll("mjx-container[display='true']")) {
    const width = math.scrollWidth;
    const available = math.parentElement.clientWidth;
    if (width > available + 1) math.style.fontSize = `${Math.max(60, Math.floor((100 * available) / width) - 1)}%`;
  }
  for (const table of article.querySelectorAll("table")) {
    const holder = table.parentElement;
    for (const size of [90, 80, 70]) {
      if (table.scrollWidth <= holder.clientWidth + 1) break;
      table.style.fontSize = `${size}%`;
    }
  }

  // 4. The table of contents, after the book's title: parts, chapters and their sections.
  const entries = [];
  let counter = 0;
  const introduction = article.querySelector("section:has(> h1) > section > h2");
  if (introduction) {
    if (!introduction.id) introduction.id = "gpc-introduction";
    entries.push({ id: introduction.id, level: 1, text: "Introduction", find: title(introduction) });
  }
  const headings = article.querySelectorAll("h1.gpc-part, span[id^='document-'] + section > h2, " +
    "span[id^='document-'] + section > section > h3, h2.gpc-solutions-chapter");
  for (const heading of headings) {
    if (!heading.id) heading.id = `gpc-heading-${counter++}`;
    const level = heading.matches("h1") ? 0 : heading.matches("h2") ? 1 : 2;
    const text = title(heading);
    if (text) entries.push({ id: heading.id, level, text });
  }
  const contents = document.createElement("nav");
  contents.id = "gpc-contents";
  contents.className = "gpc-print-contents";
  contents.innerHTML = "<h2 class='gpc-contents-title'>Contents</h2>" + entries.map((entry, i) =>
    `<div class="gpc-toc-${entry.level}"><a href="#${entry.id}"><span class="gpc-toc-text">${entry.text}</span>` +
    `<span class="gpc-toc-page" data-entry="${i}"></span></a></div>`).join("") +
    // invisible, but pdftotext reads it: the pages after it hold the headings themselves
    `<p style="color:#fff;font-size:2px;margin:0">${END_OF_CONTENTS}</p>`;
  const bookTitle = article.querySelector("section > h1");
  const titlePage = document.createElement("div");
  titlePage.className = "gpc-title-facts";
  titlePage.innerHTML = [facts.author, facts.version && `Version ${facts.version}`,
    `Printed ${facts.date}` + (facts.commit ? ` from commit ${facts.commit}` : ""), facts.licence]
    .filter(Boolean).map((line) => `<p style="margin:0.2em 0">${line}</p>`).join("");
  bookTitle.after(titlePage);
  titlePage.after(contents);
  bookTitle.parentElement.style.breakBefore = "auto";  // the title opens the first page
  // the theme hides the first h1 of every parent in print (its print header showed the title instead)
  for (const heading of article.querySelectorAll("h1")) heading.style.setProperty("display", "block", "important");
  // book/_static/gpc.js must not lay the page out again when printing resizes it
  document.documentElement.classList.add("gpc-frozen");
  return { solutions: solutions.length, entries };
}, [END_OF_CONTENTS, facts]);

async function print(path, what) {
  say(`${what}: printing (the longest step; a line every 30 s)`);
  const beat = setInterval(() => say(`${what}: still printing`), 30000);
  try {
    await printPdf(path);
  } finally {
    clearInterval(beat);
  }
  say(`${what}: done`);
}

async function printPdf(path) {
  await page.pdf({
    path, ...PAGE, printBackground: true, outline: true, tagged: true, displayHeaderFooter: true,
    headerTemplate: "<span></span>",
    footerTemplate: "<div style='font-size:8px;width:100%;text-align:center;color:#555'><span class='pageNumber'></span></div>",
  });
}

// First printing: find the page of every contents entry, in order, after the contents themselves.
const work = await mkdtemp(join(tmpdir(), "gpc-pdf-"));
const first = join(work, "first.pdf");
await print(first, "first printing (to find the contents' page numbers)");
const pages = execFileSync("pdftotext", ["-layout", first, "-"], { maxBuffer: 1 << 30 }).toString().split("\f");
const squash = (text) => text.replace(/[\s\u00ad]+/g, "").toLowerCase();
// a heading sits on lines of its own: a page holds an entry if one of its lines is the entry's text,
// or the first part of it (a long heading wraps)
const pageLines = pages.map((text) => text.split("\n").map(squash).filter((line) => line));
// A heading with maths ("6.4. The step in O(Cn³)") comes out of pdftotext with its maths changed
// (the exponent on a line of its own): a numbered heading is also found by its number alone.
const holds = (lines, needle) => lines.some((line) => line === needle ||
  (needle.startsWith(line) && line.length >= Math.min(needle.length, 16)));
const holdsNumber = (lines, needle) => {
  const number = needle.match(/^\d+(?:\.\d+)+\./);  // a section's number, "6.4."
  return !!number && lines.some((line) => line.startsWith(number[0]) && !/^\d/.test(line.slice(number[0].length)));
};
const needles = summary.entries.map((entry) => squash(entry.find || entry.text));
// Each heading's page is the last page after the contents, and not after the next entry's page, that
// holds it: the appendix repeats the chapters' titles after the chapters, and the scan from the end
// meets those entries first.
const contentsEnd = pageLines.findIndex((lines) => lines.some((line) => line.includes(squash(END_OF_CONTENTS))));
const numbers = new Array(needles.length).fill(null);
let bound = pageLines.length - 1;
for (let k = needles.length - 1; k >= 0; k--) {
  for (const test of [holds, holdsNumber]) {
    for (let i = bound; i > contentsEnd && numbers[k] === null; i--) {
      if (test(pageLines[i], needles[k])) numbers[k] = i + 1;
    }
    if (numbers[k] !== null) break;
  }
  if (numbers[k] !== null) bound = numbers[k] - 1;
}
const missing = summary.entries.filter((_, i) => numbers[i] === null).map((entry) => entry.text);
await page.evaluate((numbers) => {
  document.querySelectorAll(".gpc-toc-page").forEach((span) => {
    const number = numbers[Number(span.dataset.entry)];
    span.textContent = number === null ? "" : String(number);
  });
}, numbers);

// Second printing, with the page numbers.
await print(output, "second printing (with the page numbers)");
const info = execFileSync("pdfinfo", [output]).toString();
await rm(work, { recursive: true, force: true });
await browser.close();
server.close();
console.log(`${output}: ${info.match(/Pages:\s+(\d+)/)[1]} pages, ${summary.entries.length} contents entries, ` +
  `${summary.solutions} solutions in the appendix`);
if (missing.length) console.log(`contents entries whose page was not found: ${missing.slice(0, 10).join("; ")}`);
if (problems.length) {
  console.log(problems.slice(0, 10).join("\n"));
  process.exit(1);
}
