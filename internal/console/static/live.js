// Tether console: live updates. Every page works without this script; it
// only keeps a page current. The server names the page's event stream in
// <body data-live>. A "progress" event fills the running visits (built
// with textContent: nothing in it is ever parsed as HTML); a "changed"
// event fetches the page again and puts in each part (data-region) that
// changed, unless the person is typing in it.
(function () {
  "use strict";
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
