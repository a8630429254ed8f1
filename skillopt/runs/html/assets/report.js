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
// the answers: drawn here from the page's JSON (the server writes the filters and an
// empty table), only the rows that match the filters and at most PAGE at a time,
// since a large run has thousands; a row opens its prompt, answer, expected value
// and feedback (texts from a model or a suite: put in the page as text, never markup)
(function () {
  var table = document.querySelector("table.answers");
  if (!table) return;
  var data = JSON.parse(document.getElementById("skillopt-data").textContent).answers;
  var T = data.texts, PAGE = 300, limit = PAGE, open = {};
  var body = table.tBodies[0];
  var count = document.querySelector(".answer-count");
  var more = document.querySelector(".answer-more");
  var inputs = document.querySelectorAll(".answer-filters [data-filter]");
  // each row as the filters read it; its sides stay arrays until it is drawn
  var rows = data.rows.map(function (r, i) {
    return {i: i, where: data.places[r[0]], split: data.splits[r[1]], task: r[2],
      outcome: data.outcomes[r[3]], flip: r[4] === null ? "" : data.flips[r[4]],
      expected: r[5], sides: r[6]};
  });
  function many(n) { return String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ","); }
  function chosen(name) {
    for (var i = 0; i < inputs.length; i++) {
      if (inputs[i].getAttribute("data-filter") === name) return inputs[i];
    }
    return null;
  }
  function value(name) { var el = chosen(name); return el ? el.value : ""; }
  function matcher() {
    var want = {where: value("where"), split: value("split"), outcome: value("outcome")};
    var flip = value("flip"), task = value("task").trim().toLowerCase();
    return function (row) {
      for (var key in want) {
        if (want[key] && row[key] !== want[key]) return false;
      }
      if (flip === "any" && !row.flip) return false;
      if (flip === "none" && row.flip) return false;
      if (flip && flip !== "any" && flip !== "none" && row.flip !== flip) return false;
      return !task || row.task.toLowerCase().indexOf(task) >= 0;
    };
  }
  function node(tag, cls, text) {
    var el = document.createElement(tag);
    if (cls) el.className = cls;
    if (text !== undefined && text !== null) el.textContent = text;
    return el;
  }
  function text(p) {
    if (p === null || p === undefined) return null;
    return Array.isArray(p) ? p.map(function (i) { return T[i]; }).join("") : T[p];
  }
  function block(parent, label, p) {
    var t = text(p);
    if (t === null) return;
    parent.appendChild(node("div", "label", label));
    parent.appendChild(node("pre", "text", t));
  }
  function score(outcome, v) {
    return v === null || v === undefined || outcome === "unscored" || outcome === "not run"
      ? outcome : outcome + " " + v.toFixed(3);
  }
  function side(s) {
    return {label: data.labels[s[0]], hash: data.skills[s[1]], outcome: data.outcomes[s[2]],
      score: s[3], answers: s[4].map(function (a) {
        return {sample: a[0], outcome: data.outcomes[a[1]], score: a[2], prompt: a[3],
          answer: a[4], feedback: a[5], error: a[6]};
      })};
  }
  function oc(outcome, v) { return node("span", "oc " + outcome.replace(" ", "-"), score(outcome, v)); }
  function detail(row) {
    var box = node("div", "answer-box");
    var expected = node("div", "expected");
    block(expected, "expected", row.expected);
    box.appendChild(expected);
    var sides = node("div", "answer-sides");
    sides.style.gridTemplateColumns = "repeat(" + row.sides.length + ", minmax(0, 1fr))";
    row.sides.map(side).forEach(function (s) {
      var col = node("div", "answer-side");
      var head = node("div", "side-head");
      head.appendChild(node("b", null, s.label + " "));
      head.appendChild(oc(s.outcome, s.score));
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
    var tr = node("tr", "answer-detail"), cell = node("td");
    cell.colSpan = 6;
    cell.appendChild(box);
    tr.appendChild(cell);
    return tr;
  }
  function line(row) {
    var tr = node("tr", "answer-row" + (row.flip ? " flipped" : "") + (open[row.i] ? " open" : ""));
    var attrs = {i: row.i, where: row.where, split: row.split, outcome: row.outcome,
      flip: row.flip, task: row.task};
    for (var key in attrs) tr.setAttribute("data-" + key, attrs[key]);
    tr.tabIndex = 0;
    tr.appendChild(node("td", null, row.where));
    tr.appendChild(node("td", null, row.split));
    tr.appendChild(node("td", "task", row.task));
    var outcome = node("td");
    outcome.appendChild(oc(row.outcome, null));
    tr.appendChild(outcome);
    tr.appendChild(node("td", null, row.flip));
    var skills = node("td");
    row.sides.forEach(function (s, k) {
      if (k) skills.appendChild(document.createTextNode(" → "));
      skills.appendChild(document.createTextNode(data.labels[s[0]] + " "));
      skills.appendChild(oc(data.outcomes[s[2]], s[3]));
    });
    tr.appendChild(skills);
    return tr;
  }
  function draw() {
    var ok = matcher(), matched = [];
    for (var i = 0; i < rows.length; i++) if (ok(rows[i])) matched.push(rows[i]);
    var n = Math.min(limit, matched.length), drawn = document.createDocumentFragment();
    for (var k = 0; k < n; k++) {
      drawn.appendChild(line(matched[k]));
      if (open[matched[k].i]) drawn.appendChild(detail(matched[k]));
    }
    body.textContent = "";
    body.appendChild(drawn);
    var text = many(n) + " of " + many(rows.length) + " shown";
    if (matched.length > n) {
      text += " · " + many(matched.length) + " match: narrow the filters, or show more below";
    }
    count.textContent = text;
    more.hidden = matched.length <= n;
    more.textContent = "show " + many(Math.min(PAGE, matched.length - n)) + " more";
  }
  function toggle(tr) {
    var i = +tr.getAttribute("data-i");
    if (open[i]) {
      delete open[i];
      tr.classList.remove("open");
      var next = tr.nextElementSibling;
      if (next && next.classList.contains("answer-detail")) next.parentNode.removeChild(next);
    } else {
      open[i] = true;
      tr.classList.add("open");
      tr.parentNode.insertBefore(detail(rows[i]), tr.nextSibling);
    }
  }
  // a text filter also fires "change" when it loses focus, as when a row is clicked:
  // drawing again then would take the clicked row away under the click
  var drawnFor = null;
  function refilter() {
    var now = [];
    for (var i = 0; i < inputs.length; i++) now.push(inputs[i].value);
    if (now.join("\u0000") === drawnFor) return;
    drawnFor = now.join("\u0000");
    limit = PAGE;
    draw();
  }
  for (var i = 0; i < inputs.length; i++) {
    inputs[i].addEventListener("input", refilter);
    inputs[i].addEventListener("change", refilter);
  }
  more.addEventListener("click", function () { limit += PAGE; draw(); });
  table.addEventListener("click", function (ev) {
    var tr = ev.target.closest("tr.answer-row");
    if (tr) toggle(tr);
  });
  table.addEventListener("keydown", function (ev) {
    var tr = ev.target.closest("tr.answer-row");
    if (tr && ev.key === "Enter") toggle(tr);
  });
  // a cell of the tasks × steps grid opens that task's answers at that step: the
  // filters are set to its step and task, so its row is drawn, and opened
  document.addEventListener("click", function (ev) {
    var cell = ev.target.closest ? ev.target.closest("table.outcomes td.cell") : null;
    if (!cell) return;
    var where = "step " + cell.getAttribute("data-step"), task = cell.parentNode.getAttribute("data-task");
    var row = null;
    for (var i = 0; i < rows.length && !row; i++) {
      var r = rows[i];
      if (r.where === where && r.task === task && r.split === "val") row = r;
    }
    if (!row) return;
    for (var j = 0; j < inputs.length; j++) inputs[j].value = "";
    chosen("where").value = where;
    chosen("task").value = task;
    open[row.i] = true;
    drawnFor = null;  // drawn again even if the filters were these: the row is opened
    refilter();
    var tr = body.querySelector('tr.answer-row[data-i="' + row.i + '"]');
    while (!tr && limit < rows.length) {
      limit += PAGE;
      draw();
      tr = body.querySelector('tr.answer-row[data-i="' + row.i + '"]');
    }
    if (tr) tr.scrollIntoView({block: "center"});
  });
  refilter();
})();
