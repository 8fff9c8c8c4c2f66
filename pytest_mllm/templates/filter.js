"use strict";
// Sample lists: each [data-filter] block shows the .sample items matching its selects and search box.
for (const block of document.querySelectorAll("[data-filter]")) {
  const selects = Array.from(block.querySelectorAll("select[data-key]"));
  const search = block.querySelector("input[type=search]");
  const count = block.querySelector(".shown-count");
  const items = Array.from(block.querySelectorAll(".sample"));
  const apply = () => {
    const text = search.value.trim().toLowerCase();
    let shown = 0;
    for (const item of items) {
      const keep = selects.every((s) => !s.value || item.dataset[s.dataset.key] === s.value)
        && (!text || item.textContent.toLowerCase().includes(text));
      item.hidden = !keep;
      shown += keep ? 1 : 0;
    }
    count.textContent = String(shown);
  };
  for (const select of selects) select.addEventListener("change", apply);
  search.addEventListener("input", apply);
}
