// Keyboard navigation for the inspector: "/" focuses the search box (or opens Search),
// j / k move through the page's lines, Enter opens the selected one. No inline script: CSP.
"use strict";
(function () {
  let current = -1;
  function lines() { return Array.from(document.querySelectorAll("[data-line]")); }
  function select(n) {
    const all = lines();
    if (!all.length) { return; }
    current = Math.max(0, Math.min(all.length - 1, n));
    all.forEach(function (el, i) { el.classList.toggle("selected", i === current); });
    const link = all[current].querySelector("a");
    if (link) { link.focus(); }
  }
  document.addEventListener("keydown", function (event) {
    const typing = event.target instanceof HTMLInputElement ||
      event.target instanceof HTMLSelectElement || event.target instanceof HTMLTextAreaElement;
    if (typing && event.key === "Escape") { event.target.blur(); return; }
    if (typing || event.ctrlKey || event.metaKey || event.altKey) { return; }
    if (event.key === "/") {
      event.preventDefault();
      const box = document.getElementById("q");
      if (box) { box.focus(); } else { window.location.href = "/search"; }
    } else if (event.key === "j") {
      select(current + 1);
    } else if (event.key === "k") {
      select(current - 1);
    }
  });
})();
