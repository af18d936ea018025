// Tether console: zoom and live updates. Every page works without this
// script: a graph is then drawn at its own size, in a box that scrolls,
// and the page is current when it is loaded.
//
// Zoom: each [data-zoom] box gets buttons to make its graph smaller,
// larger, fit the box's width, or its own size; a big graph starts fitted
// to the width, but never below half its size.
//
// Live updates: the server names the page's event stream in <body
// data-live>. A "progress" event fills the running visits (built with
// textContent: nothing in it is ever parsed as HTML); a "changed" event
// fetches the page again and puts in each part (data-region) that
// changed, unless the person is typing in it.
(function () {
  "use strict";
  var scale = null; // the person's zoom, kept across live refreshes

  function zoom(box) {
    var svg = box.querySelector(".zoom svg");
    if (!svg || box.querySelector(".zoombar")) return;
    var w = +svg.getAttribute("width"), h = +svg.getAttribute("height");
    if (!w || !h) return;
    var bar = document.createElement("div");
    bar.className = "zoombar";
    var label = document.createElement("span");
    function set(s) {
      s = Math.max(0.2, Math.min(3, s));
      svg.setAttribute("width", Math.round(w * s));
      svg.setAttribute("height", Math.round(h * s));
      label.textContent = Math.round(s * 100) + "%";
      return s;
    }
    function fit() {
      var room = box.querySelector(".zoom").clientWidth - 4;
      return room > 0 ? Math.max(0.5, Math.min(1, room / w)) : 1;
    }
    [["−", "smaller", function (s) { return s / 1.25; }],
     ["+", "larger", function (s) { return s * 1.25; }],
     ["fit", "fit the width", function () { return fit(); }],
     ["1:1", "its own size", function () { return 1; }]].forEach(function (b) {
      var btn = document.createElement("button");
      btn.type = "button";
      btn.textContent = b[0];
      btn.title = b[1];
      btn.addEventListener("click", function () { scale = set(b[2](scale || fit())); });
      bar.appendChild(btn);
    });
    bar.appendChild(label);
    box.insertBefore(bar, box.firstChild);
    set(scale || fit());
  }
  function zoomAll() { document.querySelectorAll("[data-zoom]").forEach(zoom); }
  zoomAll();

  var src = document.body.getAttribute("data-live");
  if (!src || !window.EventSource) return;
  var es = new EventSource(src);
  var fetching = false, again = false;

  function busy(region) {
    var a = document.activeElement;
    if (a && region.contains(a) && /^(INPUT|TEXTAREA|SELECT)$/.test(a.tagName)) return true;
    var fields = region.querySelectorAll("textarea, input[type=text]");
    for (var i = 0; i < fields.length; i++) if (fields[i].value !== fields[i].defaultValue) return true;
    return false;
  }

  function refresh() {
    if (fetching) { again = true; return; }
    fetching = true;
    fetch(location.href, { credentials: "same-origin", headers: { "X-Tether-Live": "1" } })
      .then(function (r) { return r.ok ? r.text() : null; })
      .then(function (html) {
        if (!html) return;
        var doc = new DOMParser().parseFromString(html, "text/html");
        document.querySelectorAll("[data-region]").forEach(function (el) {
          var fresh = doc.querySelector('[data-region="' + el.getAttribute("data-region") + '"]');
          if (!fresh || busy(el) || fresh.innerHTML === el.innerHTML) return;
          el.replaceWith(document.importNode(fresh, true));
        });
        zoomAll();
        document.title = doc.title;
        if (!doc.body.getAttribute("data-live")) es.close();
      })
      .catch(function () {})
      .then(function () {
        fetching = false;
        if (again) { again = false; refresh(); }
      });
  }

  es.addEventListener("changed", refresh);
  es.addEventListener("progress", function (e) {
    var box = document.querySelector("[data-progress]");
    if (!box) return;
    var list;
    try { list = JSON.parse(e.data); } catch (err) { return; }
    box.textContent = "";
    if (!list.length) {
      var idle = document.createElement("p");
      idle.className = "muted";
      idle.textContent = box.getAttribute("data-idle") || "";
      box.appendChild(idle);
      return;
    }
    list.forEach(function (p) {
      var row = document.createElement("div");
      row.className = "progress";
      var dot = document.createElement("span");
      dot.className = "dot";
      row.appendChild(dot);
      var a = document.createElement("a");
      a.href = p.URL;
      a.textContent = p.Line;
      row.appendChild(a);
      if (p.Text) {
        var tail = document.createElement("span");
        tail.className = "tail";
        tail.textContent = p.Text;
        row.appendChild(tail);
      }
      box.appendChild(row);
    });
  });
})();
