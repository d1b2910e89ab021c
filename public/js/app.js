// Orders: the little behaviour htmx does not give. No inline script
// anywhere (the CSP forbids it); everything here also works without it.
(function () {
  "use strict";

  // Money as text → cents, with integer arithmetic only (never a float).
  function cents(text) {
    var m = /^\s*(\d{1,7})(?:\.(\d{1,2}))?\s*$/.exec(text || "");
    if (!m) return null;
    var frac = m[2] ? (m[2].length === 1 ? m[2] + "0" : m[2]) : "00";
    return parseInt(m[1], 10) * 100 + parseInt(frac, 10);
  }
  function money(c) {
    var s = String(c % 100);
    return Math.floor(c / 100) + "." + (s.length === 1 ? "0" + s : s);
  }

  // Line totals and the order total as one types: a preview; the server
  // computes the truth on save.
  function updateTotals(tbody) {
    if (!tbody) return;
    var total = 0, ok = true;
    tbody.querySelectorAll("tr.item-row").forEach(function (row) {
      var q = row.querySelector("input[name$='[quantity]']");
      var p = row.querySelector("input[name$='[unit_price]']");
      var out = row.querySelector("output.line-total");
      var qv = q && /^\s*\d{1,7}\s*$/.test(q.value) ? parseInt(q.value, 10) : null;
      var pv = p ? cents(p.value) : null;
      if (qv !== null && pv !== null) {
        out.textContent = money(qv * pv);
        total += qv * pv;
      } else {
        out.textContent = "–";
        if ((q && q.value.trim()) || (p && p.value.trim())) ok = false;
      }
    });
    var t = document.getElementById("order-total");
    if (t) t.textContent = ok ? money(total) : "–";
  }

  // Renumber a cloned item row to index n.
  function renumber(row, n) {
    row.querySelectorAll("[name],[id],[for],[aria-describedby],[aria-label]").forEach(function (el) {
      ["name", "id", "for", "aria-describedby", "aria-label"].forEach(function (a) {
        var v = el.getAttribute(a);
        if (v) el.setAttribute(a, v.replace(/items\[\d+\]/g, "items[" + n + "]").replace(/items-\d+-/g, "items-" + n + "-").replace(/(item row |of item )\d+/g, "$1" + (n + 1)));
      });
    });
  }

  function addRow(tbody) {
    var rows = tbody.querySelectorAll("tr.item-row");
    if (!rows.length || rows.length >= 100) return;
    var last = rows[rows.length - 1], next = 0;
    rows.forEach(function (r) {
      var m = /items\[(\d+)\]/.exec(r.querySelector("input").name);
      if (m) next = Math.max(next, parseInt(m[1], 10) + 1);
    });
    var row = last.cloneNode(true);
    renumber(row, next);
    row.querySelectorAll("input").forEach(function (i) { i.value = ""; i.removeAttribute("aria-invalid"); i.removeAttribute("aria-describedby"); });
    row.querySelectorAll(".error-text").forEach(function (e) { e.remove(); });
    tbody.appendChild(row);
    updateTotals(tbody);
    row.querySelector("input").focus();
  }

  document.addEventListener("click", function (e) {
    var add = e.target.closest("[data-add-row]");
    if (add) {
      e.preventDefault();
      addRow(document.getElementById("item-rows"));
      return;
    }
    var rm = e.target.closest("[data-remove-row]");
    if (rm) {
      var tbody = rm.closest("tbody"), row = rm.closest("tr");
      if (tbody.querySelectorAll("tr.item-row").length > 1) {
        var prev = row.previousElementSibling || row.nextElementSibling;
        row.remove();
        var focus = prev && prev.querySelector("[data-remove-row]");
        if (focus) focus.focus();
      } else {
        row.querySelectorAll("input").forEach(function (i) { i.value = ""; });
      }
      updateTotals(tbody);
    }
  });

  document.addEventListener("input", function (e) {
    var tbody = e.target.closest && e.target.closest("#item-rows");
    if (tbody) updateTotals(tbody);
  });

  // Escape leaves an inline row edit without saving.
  document.addEventListener("keydown", function (e) {
    if (e.key !== "Escape") return;
    var form = e.target.closest && e.target.closest("form.row-form");
    if (!form) return;
    var cancel = form.querySelector("a[hx-get]");
    if (cancel) { e.preventDefault(); cancel.click(); }
  });

  function enhance(root) {
    root.querySelectorAll("[data-remove-row][hidden]").forEach(function (b) { b.hidden = false; });
    updateTotals(root.querySelector ? root.querySelector("#item-rows") || document.getElementById("item-rows") : null);
  }

  document.addEventListener("DOMContentLoaded", function () { enhance(document); });
  document.addEventListener("htmx:after:swap", function () {
    enhance(document);
    // A swap that removed the focused element (a Save or Edit button) puts
    // focus on the first field with an error, or on the new inline form.
    var a = document.activeElement;
    if (a && a !== document.body) return;
    var target = document.querySelector("main [aria-invalid='true']") ||
      document.querySelector("tr.editing input:not([type=hidden])");
    if (target) target.focus();
  });
})();
