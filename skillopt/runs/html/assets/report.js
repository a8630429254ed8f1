(function () {
  var tip = document.getElementById("tip");
  var STATES = ["pass", "fail", "unscored", "not-run", "none"];
  function cellTip(el) {
    var state = "";
    for (var i = 0; i < STATES.length; i++) {
      if (el.classList.contains(STATES[i])) state = STATES[i].replace("-", " ");
    }
    if (state === "none") state = "no candidate";
    var text = el.parentNode.getAttribute("data-task") + " · step " +
      el.getAttribute("data-step") + ": " + state;
    if (el.getAttribute("data-score")) text += " (" + el.getAttribute("data-score") + ")";
    if (el.getAttribute("data-flip")) {
      text += " · " + el.getAttribute("data-flip") + " against the incumbent";
    }
    return text;
  }
  function find(el) {
    while (el && el !== document) {
      if (el.getAttribute && el.getAttribute("data-tip")) return el;
      if (el.classList && el.classList.contains("cell")) return el;
      el = el.parentNode;
    }
    return null;
  }
  document.addEventListener("mouseover", function (ev) {
    var el = find(ev.target);
    if (!el) { tip.style.display = "none"; return; }
    tip.textContent = el.getAttribute("data-tip") || cellTip(el);
    tip.style.display = "block";
  });
  document.addEventListener("mousemove", function (ev) {
    tip.style.left = Math.min(ev.clientX + 14, window.innerWidth - 460) + "px";
    tip.style.top = (ev.clientY + 14) + "px";
  });
  document.addEventListener("mouseout", function (ev) {
    if (!find(ev.relatedTarget)) tip.style.display = "none";
  });
})();
// the answers: filter the rows, open a row's prompt, answer, expected value and
// feedback (texts from a model or a suite: put in the page as text, never markup)
(function () {
  var table = document.querySelector("table.answers");
  if (!table) return;
  var data = JSON.parse(document.getElementById("skillopt-data").textContent).answers;
  var T = data.texts;
  var count = document.querySelector(".answer-count");
  var inputs = document.querySelectorAll(".answer-filters [data-filter]");
  function chosen(name) {
    for (var i = 0; i < inputs.length; i++) {
      if (inputs[i].getAttribute("data-filter") === name) return inputs[i].value;
    }
    return "";
  }
  function matches(row) {
    var want = {where: chosen("where"), split: chosen("split"), outcome: chosen("outcome")};
    for (var key in want) {
      if (want[key] && row.getAttribute("data-" + key) !== want[key]) return false;
    }
    var flip = chosen("flip"), has = row.getAttribute("data-flip");
    if (flip === "any" && !has) return false;
    if (flip === "none" && has) return false;
    if (flip && flip !== "any" && flip !== "none" && has !== flip) return false;
    var task = chosen("task").trim().toLowerCase();
    return !task || row.getAttribute("data-task").toLowerCase().indexOf(task) >= 0;
  }
  function apply() {
    var rows = table.querySelectorAll("tr.answer-row"), shown = 0;
    for (var i = 0; i < rows.length; i++) {
      var ok = matches(rows[i]);
      rows[i].hidden = !ok;
      var next = rows[i].nextElementSibling;
      if (next && next.classList.contains("answer-detail")) {
        next.hidden = !ok || !rows[i].classList.contains("open");
      }
      if (ok) shown++;
    }
    count.textContent = shown + " of " + rows.length + " shown";
  }
  function node(tag, cls, text) {
    var el = document.createElement(tag);
    if (cls) el.className = cls;
    if (text !== undefined && text !== null) el.textContent = text;
    return el;
  }
  function block(parent, label, index) {
    if (index === null || index === undefined) return;
    parent.appendChild(node("div", "label", label));
    parent.appendChild(node("pre", "text", T[index]));
  }
  function score(outcome, value) {
    return value === null || outcome === "unscored" || outcome === "not run"
      ? outcome : outcome + " " + value.toFixed(3);
  }
  function detail(r) {
    var box = node("div", "answer-box");
    var expected = node("div", "expected");
    block(expected, "expected", r.expected);
    box.appendChild(expected);
    var sides = node("div", "answer-sides");
    sides.style.gridTemplateColumns = "repeat(" + r.sides.length + ", minmax(0, 1fr))";
    r.sides.forEach(function (s) {
      var col = node("div", "answer-side");
      var head = node("div", "side-head");
      head.appendChild(node("b", null, s.label + " "));
      head.appendChild(node("span", "oc " + s.outcome.replace(" ", "-"), score(s.outcome, s.score)));
      head.appendChild(node("span", "muted", " · skill " + s.hash));
      col.appendChild(head);
      if (!s.answers.length) col.appendChild(node("p", "muted", "not run: no rollout of this skill on this task"));
      s.answers.forEach(function (a) {
        if (s.answers.length > 1) col.appendChild(node("div", "label", "sample " + a.sample + ": " + score(a.outcome, a.score)));
        block(col, "answer", a.answer);
        block(col, "error (unscored)", a.error);
        block(col, "feedback", a.feedback);
        block(col, "prompt as the target saw it", a.prompt);
      });
      sides.appendChild(col);
    });
    box.appendChild(sides);
    return box;
  }
  function toggle(row) {
    var next = row.nextElementSibling;
    if (!next || !next.classList.contains("answer-detail")) {
      next = node("tr", "answer-detail");
      var cell = node("td");
      cell.colSpan = row.children.length;
      cell.appendChild(detail(data.rows[+row.getAttribute("data-i")]));
      next.appendChild(cell);
      row.parentNode.insertBefore(next, row.nextSibling);
      next.hidden = true;
    }
    row.classList.toggle("open");
    next.hidden = !row.classList.contains("open");
  }
  for (var i = 0; i < inputs.length; i++) {
    inputs[i].addEventListener("input", apply);
    inputs[i].addEventListener("change", apply);
  }
  table.addEventListener("click", function (ev) {
    var row = ev.target.closest("tr.answer-row");
    if (row) toggle(row);
  });
  table.addEventListener("keydown", function (ev) {
    var row = ev.target.closest("tr.answer-row");
    if (row && ev.key === "Enter") toggle(row);
  });
  // a cell of the tasks × steps grid opens that task's answers at that step
  document.addEventListener("click", function (ev) {
    var cell = ev.target.closest ? ev.target.closest("table.outcomes td.cell") : null;
    if (!cell) return;
    var where = "step " + cell.getAttribute("data-step"), task = cell.parentNode.getAttribute("data-task");
    var rows = table.querySelectorAll("tr.answer-row");
    for (var i = 0; i < rows.length; i++) {
      var r = rows[i];
      if (r.getAttribute("data-where") === where && r.getAttribute("data-task") === task &&
          r.getAttribute("data-split") === "val") {
        for (var j = 0; j < inputs.length; j++) inputs[j].value = "";
        apply();
        if (!r.classList.contains("open")) toggle(r);
        r.scrollIntoView({block: "center"});
        return;
      }
    }
  });
})();
