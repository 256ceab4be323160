// The sample browser: filters by run, benchmark, test, category and outcome. Everything that
// comes from data is inserted with textContent, never as HTML. Initial filters can be given in
// the address: report.html#outcome=tie&test=order
(function () {
  const items = JSON.parse(document.getElementById("data-items").textContent);
  const choices = JSON.parse(document.getElementById("data-filters").textContent);
  const state = { run: "", benchmark: "", test: "", category: "", outcome: "" };
  new URLSearchParams(location.hash.slice(1)).forEach((value, key) => { if (key in state) state[key] = value; });
  const filters = document.getElementById("filters");

  function el(tag, cls, text) {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  Object.keys(state).forEach((key) => {
    const label = el("label", null, key);
    const select = el("select");
    select.id = "filter-" + key;
    select.appendChild(new Option("all", ""));
    (choices[key] || []).forEach((c) => {
      const value = Array.isArray(c) ? String(c[0]) : String(c);
      select.appendChild(new Option(Array.isArray(c) ? c[1] : c, value));
    });
    select.value = state[key];
    select.addEventListener("change", () => { state[key] = select.value; render(); });
    label.appendChild(select);
    filters.appendChild(label);
  });

  function matches(item) {
    return (!state.run || String(item.run) === state.run) && (!state.benchmark || item.benchmark === state.benchmark)
      && (!state.test || item.test === state.test) && (!state.category || item.categories.includes(state.category))
      && (!state.outcome || item.outcome === state.outcome);
  }

  function card(item) {
    const box = el("div", "item");
    box.dataset.outcome = item.outcome;
    box.dataset.test = item.test;
    box.dataset.id = item.id;
    const head = el("div");
    head.appendChild(el("strong", null, item.id));
    head.appendChild(el("span", "badge " + item.outcome.replace(" ", "-"), item.outcome));
    box.appendChild(head);
    box.appendChild(el("div", "meta", [item.runLabel, item.benchmark, item.test, item.subtest, item.role,
      item.categories.join(", ")].filter(Boolean).join(" · ")));
    const frames = el("div", "frames");
    item.frames.forEach((src) => { const img = el("img"); img.src = src; img.alt = "frame"; frames.appendChild(img); });
    frames.appendChild(el("span", "meta", " " + item.framesNote));
    box.appendChild(frames);
    item.texts.forEach((text) => {
      const line = el("div", "text " + (text.target ? "target" : (item.optionsAre === "texts" ? "foil" : "")));
      text.words.forEach(([word, differs], i) => {
        if (i) line.appendChild(document.createTextNode(" "));
        line.appendChild(differs ? el("mark", null, word) : document.createTextNode(word));
      });
      box.appendChild(line);
    });
    item.answers.forEach((a) => {
      const parts = [a.request + ":"];
      if (a.error) parts.push("error: " + a.error);
      if (a.raw !== null && a.raw !== undefined) parts.push("raw " + JSON.stringify(a.raw));
      if (a.parsed !== null && a.parsed !== undefined) parts.push("parsed " + a.parsed);
      if (a.status && a.status !== "ok") parts.push("(" + a.status + ")");
      if (a.score !== null && a.score !== undefined) parts.push("score " + Number(a.score).toFixed(4));
      if (a.probs) parts.push(Object.entries(a.probs).map(([k, v]) => k + "=" + Number(v).toFixed(3)).join(" "));
      box.appendChild(el("div", "answers", parts.join(" ")));
    });
    return box;
  }

  function render() {
    const list = document.getElementById("items");
    list.replaceChildren();
    const shown = items.filter(matches);
    shown.forEach((item) => list.appendChild(card(item)));
    document.getElementById("shown").textContent = shown.length + " of " + items.length + " sampled items";
  }
  render();
})();
