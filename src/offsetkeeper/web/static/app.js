// offsetkeeper dashboard: small progressive enhancements. Every page works without it.
(function () {
  "use strict";
  document.documentElement.classList.add("js");

  function onReady(fn) {
    if (document.readyState !== "loading") fn(); else document.addEventListener("DOMContentLoaded", fn);
  }

  onReady(function () {
    // Reset wizard: show only the value field of the chosen target kind.
    var form = document.getElementById("reset-form");
    if (form) {
      var sync = function () {
        var chosen = form.querySelector("input[name=kind]:checked");
        var kind = chosen ? chosen.value : "";
        form.querySelectorAll(".values [data-kind]").forEach(function (el) {
          el.classList.toggle("shown", el.getAttribute("data-kind") === kind);
        });
      };
      form.querySelectorAll("input[name=kind]").forEach(function (r) { r.addEventListener("change", sync); });
      sync();
    }

    // Groups page: filter rows as you type (the form still filters on the server).
    var q = document.getElementById("filter-q");
    if (q) {
      var table = document.getElementById(q.getAttribute("data-filter-table"));
      q.addEventListener("input", function () {
        var needle = q.value.toLowerCase();
        table.querySelectorAll("tbody tr[data-name]").forEach(function (tr) {
          tr.hidden = needle !== "" && tr.getAttribute("data-name").indexOf(needle) < 0;
        });
      });
    }

    // Cluster picker: go to the same page of the chosen cluster.
    var pick = document.getElementById("cluster-select");
    if (pick) {
      pick.addEventListener("change", function () {
        window.location.href = "/c/" + encodeURIComponent(pick.value) + "/groups";
      });
    }
  });
})();
