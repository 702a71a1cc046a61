// The book's own script (added to the theme's in _config.yml: html_js_files). Everything here is a
// progressive enhancement: without it the book reads as before, only less well on a phone.
//
// 1. The contents toggle. sphinx-book-theme 1.3 shows its own toggle buttons (".primary-toggle",
//    ".secondary-toggle" in the article header) but pydata-sphinx-theme 0.17 binds its handlers to the
//    first element of each class only, which is the theme's hidden header button: the visible button
//    did nothing (at any width). A click on a visible toggle is passed on to the bound one.
// 2. Figures open full size: each image in the article is wrapped in a link to the image file.
// 3. Figures stay legible: an image is never shown so small that its smallest text falls below
//    MIN_TEXT_PX (the extension book/_ext/figures.py gives each image the class gpc-text-N, N that
//    text's height in tenths of a pixel at the image's natural size); a figure that is then wider
//    than the column scrolls sideways. A figure whose text is under that size even at its natural
//    size is enlarged, by at most MAX_UPSCALE (a raster image enlarged more would blur).
// 4. Tables fit: a table wider than the column is shown with stacked rows (each cell under its
//    column's name), unless it fits once its cells wrap (on a wide screen, or in type set to 90 or
//    80 per cent).
// 5. A formula wider than the column (on a phone) is set a little smaller, down to MIN_MATH_SCALE,
//    instead of being cut (MathJax 3 cannot break lines): an inline one that would need more scrolls
//    inside its box (make browser-check reports it), a display one scrolls as before.
// 6. Anything that scrolls sideways (a long formula, code, a wide figure) shows a fade at each edge
//    where more lies hidden.

(() => {
  const MIN_TEXT_PX = 8.2;  // a little above the 8 px that make browser-check requires
  const DEFAULT_TEXT_PX = 11.1;  // matplotlib's 10 pt at the book's 80 dpi, for an image without data
  const MIN_MATH_SCALE = 0.7;
  const MAX_UPSCALE = 1.25;  // a figure drawn with text under 8 px is enlarged by at most this

  function forwardToggles() {
    for (const kind of ["primary", "secondary"]) {
      const [bound, ...visible] = document.querySelectorAll(`.${kind}-toggle`);
      for (const button of visible) {
        button.addEventListener("click", (event) => {
          event.preventDefault();
          event.stopPropagation();
          bound.click();
        });
      }
    }
  }

  function linkImages(article) {
    for (const image of article.querySelectorAll("img")) {
      if (image.closest("a")) continue;
      const link = document.createElement("a");
      link.href = image.getAttribute("src");
      link.className = "gpc-full-image";
      link.title = "Open the figure at full size";
      image.replaceWith(link);
      link.appendChild(image);
    }
  }

  function sizeFigures(article) {
    for (const image of article.querySelectorAll("img")) {
      if (!image.naturalWidth) {
        image.addEventListener("load", () => sizeFigures(article), { once: true });
        continue;
      }
      const link = image.closest("a") || image;
      let holder = link.parentElement;
      if (!holder.classList.contains("gpc-figure-scroll")) {
        holder = document.createElement("div");
        holder.className = "gpc-figure-scroll";
        link.replaceWith(holder);
        holder.appendChild(link);
      }
      image.style.width = "";
      image.style.maxWidth = "";
      const column = holder.clientWidth;
      const match = image.className.match(/gpc-text-(\d+)/);
      const textPx = match ? Number(match[1]) / 10 : DEFAULT_TEXT_PX;
      // the scale at which the figure's smallest text reaches MIN_TEXT_PX: a figure whose text is
      // that small even at its natural size is enlarged a little (at most MAX_UPSCALE)
      const needed = MIN_TEXT_PX / textPx;
      const scale = needed > 1 ? Math.min(needed, MAX_UPSCALE) : needed;
      const smallest = Math.ceil(scale * image.naturalWidth);
      if (column > 0 && (column < smallest || needed > 1)) {
        image.style.width = `${smallest}px`;
        image.style.maxWidth = "none";
      }
    }
  }

  function labelCells(table) {
    const headers = [...table.querySelectorAll("thead th")];
    if (!headers.length || table.dataset.gpcLabelled) return;
    table.dataset.gpcLabelled = "yes";
    // a header copied before MathJax has typeset it holds TeX: typeset the copies once it has run
    const mathjax = window.MathJax && window.MathJax.startup && window.MathJax.startup.promise;
    if (mathjax) mathjax.then(() => window.MathJax.typesetPromise && window.MathJax.typesetPromise([table]));
    for (const row of table.querySelectorAll("tbody tr")) {
      [...row.children].forEach((cell, i) => {
        if (!headers[i] || !headers[i].textContent.trim() || !cell.textContent.trim()) return;
        const label = document.createElement("span");
        label.className = "gpc-cell-label";
        label.innerHTML = headers[i].innerHTML;
        cell.prepend(label);
      });
    }
  }

  function fitTables(article) {
    for (const table of article.querySelectorAll("table")) {
      if (!table.querySelector("thead th")) continue;
      const holder = table.parentElement;
      const tooWide = () => table.scrollWidth > holder.clientWidth + 1;
      table.classList.remove("gpc-stacked");
      table.style.fontSize = "";
      // on a wide screen a slightly smaller type may be enough; on a phone it would be too small
      for (const size of window.innerWidth >= 768 ? [90, 80] : []) {
        if (!tooWide()) break;
        table.style.fontSize = `${size}%`;
      }
      if (tooWide()) {
        table.style.fontSize = "";
        labelCells(table);
        table.classList.add("gpc-stacked");
      }
    }
  }

  function blockAncestor(element) {
    for (let node = element.parentElement; node; node = node.parentElement) {
      if (!getComputedStyle(node).display.startsWith("inline")) return node;
    }
    return null;
  }

  function fitMath(article) {
    for (const math of article.querySelectorAll("mjx-container[jax='CHTML']")) {
      math.style.fontSize = "";
      math.classList.remove("gpc-inline-scroll");
      const display = math.getAttribute("display") === "true";
      let available;
      let width;
      if (display) {
        const formula = math.querySelector("mjx-math");
        if (!formula) continue;
        available = math.clientWidth;
        width = formula.getBoundingClientRect().width;
      } else {
        const block = blockAncestor(math);
        if (!block) continue;
        const style = getComputedStyle(block);
        available = block.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
        width = math.getBoundingClientRect().width;
      }
      if (available <= 0 || width <= available) continue;
      const ratio = available / width;
      if (ratio >= MIN_MATH_SCALE) math.style.fontSize = `${Math.floor(ratio * 100) - 1}%`;
      else if (!display) math.classList.add("gpc-inline-scroll");
    }
  }

  function markScrollers(article) {
    const candidates = article.querySelectorAll("pre, div.math, mjx-container[display='true'], .gpc-figure-scroll, " +
      ".pst-scrollable-table-container, .cell_output, .output, table.gpc-stacked td, .gpc-inline-scroll");
    for (const element of candidates) {
      const style = getComputedStyle(element);
      const scrolls = ["auto", "scroll"].includes(style.overflowX) && element.scrollWidth > element.clientWidth + 1;
      element.classList.toggle("gpc-scroller", scrolls);
      if (!scrolls) {
        element.classList.remove("gpc-more-left", "gpc-more-right");
        continue;
      }
      const update = () => {
        element.classList.toggle("gpc-more-left", element.scrollLeft > 1);
        element.classList.toggle("gpc-more-right", element.scrollLeft + element.clientWidth < element.scrollWidth - 1);
      };
      update();
      if (!element.dataset.gpcWatched) {
        element.dataset.gpcWatched = "yes";
        element.addEventListener("scroll", update, { passive: true });
      }
    }
  }

  function layout() {
    // tools/print_pdf.mjs lays the page out for paper itself and then freezes it: printing resizes
    // the page, and a new layout between its two printings would move the page numbers
    if (document.documentElement.classList.contains("gpc-frozen")) return;
    const article = document.querySelector("article.bd-article") || document.querySelector("article");
    if (!article) return;
    sizeFigures(article);
    fitTables(article);
    fitMath(article);
    markScrollers(article);
  }

  function start() {
    forwardToggles();
    const article = document.querySelector("article.bd-article") || document.querySelector("article");
    if (article) linkImages(article);
    layout();
    let pending = null;
    window.addEventListener("resize", () => {
      clearTimeout(pending);
      pending = setTimeout(layout, 150);
    });
    // MathJax typesets after the page has loaded: lay out again once it has finished
    const mathjax = window.MathJax && window.MathJax.startup && window.MathJax.startup.promise;
    if (mathjax) mathjax.then(layout);
    window.addEventListener("load", () => {
      const later = window.MathJax && window.MathJax.startup && window.MathJax.startup.promise;
      (later || Promise.resolve()).then(layout);
    });
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
