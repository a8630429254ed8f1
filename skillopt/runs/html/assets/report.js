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
