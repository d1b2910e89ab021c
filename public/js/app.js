// Orders: the little behaviour htmx does not give. No inline script
// anywhere (the CSP forbids it); everything here also works without it.
// The server names what this script works on with data- attributes
// (routes/resource.go), never with a resource's ids or a label's words:
// [data-results] holds a list's results, [data-rows] > tr are its table's
// rows (one per member), [data-max-rows] is a form's item rows,
// a[data-shortcut] the target of a keyboard shortcut, and
// [data-product-picker] / [data-product-field] the product picker's fields.
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
    var table = tbody.closest("table");
    var t = table && table.querySelector("tfoot output");
    if (t) t.textContent = ok ? money(total) : "–";
  }

  // Item rows come from the server (the Add and Remove buttons' hx-get):
  // focus goes to the first row added (the answer may add a blank row
  // besides), or to the Remove button of the row before the one removed.
  // (Extension hooks: a removed row's button leaves the page, and its
  // events never reach the document.)
  if (window.htmx) htmx.registerExtension("orders-rows", {
    htmx_config_request: function (elt, d) {
      var b = d.ctx.sourceElement, tbody = b.form && b.form.querySelector("[data-max-rows]");
      if (!tbody || !b.matches("[data-add-row], [data-remove-row]")) return;
      d.ctx.rowAt = b.matches("[data-add-row]") ? tbody.rows.length :
        -1 - Array.prototype.indexOf.call(tbody.rows, b.closest("tr"));
    },
    htmx_after_swap: function (elt, d) {
      var at = d.ctx.rowAt, tbody = at !== undefined && document.getElementById(d.ctx.target.id);
      if (!tbody) return;
      updateTotals(tbody);
      // at >= 0: the number of rows before the Add; else -1 - the index removed.
      var row = tbody.rows[at >= 0 ? Math.min(at, tbody.rows.length - 1) : Math.max(0, -2 - at)];
      var to = row && row.querySelector(at >= 0 ? "input" : "[data-remove-row]");
      if (to) to.focus();
    }
  });

  document.addEventListener("input", function (e) {
    var tbody = e.target.closest && e.target.closest("[data-max-rows]");
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

  function enhance() { updateTotals(document.querySelector("[data-max-rows]")); }
  document.addEventListener("DOMContentLoaded", enhance);
  document.addEventListener("htmx:after:swap", enhance);
})();

// Focus after an action: a swap that took the focused element away (a
// Save, Edit, Delete or status button, the field Escape was pressed in)
// never leaves focus on the page's body. It
// goes to the first field with an error, else the updated row (its Edit
// link; the customer field of an inline form, with the cursor at the end
// of the text), else, after a page-sized swap into #main or the body, the
// page's heading. The List's own results (paging, sorting, a row's delete)
// are handled in the List section below. An htmx extension hook, not a
// document listener: after an outerHTML swap of a row the event is fired
// on the old row, which has left the page, and never reaches the document.
(function focusAfterActions() {
  "use strict";

  function lost() {
    var a = document.activeElement;
    return !a || a === document.body || !a.isConnected;
  }

  function focusField(el) {
    el.focus();
    if (el.setSelectionRange && /^(text|search|email|tel|url)$/.test(el.type)) {
      try { var n = el.value.length; el.setSelectionRange(n, n); } catch (e) { /* email inputs may refuse */ }
    }
  }

  function focusHeading(root) {
    var h = root.querySelector("h1") || document.querySelector("main h1");
    if (!h) return;
    if (!h.hasAttribute("tabindex")) h.setAttribute("tabindex", "-1");
    h.focus();
  }

  function afterSwap(ctx) {
    var t = ctx && ctx.target;
    // A live update (the liveUpdates section below) is nobody's action:
    // focus stays wherever the person has it.
    if (!t || t.nodeType !== 1 || ctx.live) return;
    var root = t.isConnected ? t : (t.id && document.getElementById(t.id));
    if (!root) return; // a removed row: the List section moves focus
    var isRow = root.tagName === "TR" && !!root.parentElement && root.parentElement.hasAttribute("data-rows");
    var isPage = root === document.body || root.tagName === "MAIN";
    if (!isRow && !isPage) return;
    var invalid = root.querySelector("[aria-invalid='true']");
    if (invalid) { focusField(invalid); return; }
    if (!lost()) return;
    if (isRow) {
      var field = root.querySelector("form.row-form input:not([type=hidden])");
      var link = root.querySelector("a[href$='/edit']") || root.querySelector("a[href]");
      if (field) focusField(field);
      else if (link) link.focus();
      return;
    }
    focusHeading(root);
  }

  if (window.htmx && htmx.registerExtension) {
    htmx.registerExtension("orders-focus", {
      htmx_after_swap: function (elt, detail) { afterSwap(detail && detail.ctx); }
    });
  }
})();

// List and Inquiry: a busy state while results load, focus and
// scrolling after paging, sorting and deleting, and the keyboard shortcuts.
// Kept apart from the form and notice behaviour above.
(function listAndShortcuts() {
  "use strict";

  function results() { return document.querySelector("[data-results]"); }
  function isResults(el) { return !!(el && el.nodeType === 1 && el.hasAttribute("data-results")); }

  // Does an htmx request swap the results? (A pager link or a column
  // header names them in hx-target; the results refetching themselves
  // after a delete are their own source.)
  function aimsAtResults(ctx) {
    if (!ctx) return false;
    var t = ctx.target;
    if (t && t.nodeType === 1) return isResults(t);
    if (typeof t === "string") {
      try { return isResults(document.querySelector(t.trim())); } catch (err) { return false; }
    }
    return isResults(ctx.sourceElement);
  }

  // The results say they are loading (aria-busy, which the stylesheet
  // shows as a bar and a dimmed table) while htmx marks them as the
  // indicator of a request (hx-indicator: htmx-request) until the swap.
  function updateBusy() {
    var r = results();
    if (r && r.classList.contains("htmx-request")) r.setAttribute("aria-busy", "true");
    else if (r) r.removeAttribute("aria-busy");
  }

  // What to do once new results arrive: "page" (focus the summary, scroll
  // to the top of the results), "sort" (focus the same column header) or
  // "delete" (focus the row that took the deleted row's place).
  var after = null;

  document.addEventListener("htmx:config:request", function (e) {
    var ctx = e.detail && e.detail.ctx;
    if (!aimsAtResults(ctx) || !ctx.request || !(ctx.request.body instanceof FormData)) return;
    // Shareable URLs: the search form's empty fields stay out of them.
    var empty = [];
    ctx.request.body.forEach(function (v, k) { if (v === "") empty.push(k); });
    empty.forEach(function (k) { if (!ctx.request.body.getAll(k).some(function (v) { return v !== ""; })) ctx.request.body.delete(k); });
  });

  document.addEventListener("htmx:before:request", function (e) {
    var ctx = e.detail && e.detail.ctx;
    if (!ctx) return;
    var src = ctx.sourceElement;
    var row = src && src.closest && src.closest("[data-rows] > tr");
    if (row && /delete/i.test(ctx.request && ctx.request.method || "")) {
      var rows = listRows();
      after = { kind: "delete", index: rows.indexOf(row) };
      return;
    }
    if (!aimsAtResults(ctx)) return;
    if (src && src.closest && src.closest("[data-results] .pager, [data-results] .results-head")) {
      after = { kind: "page" };
    } else if (src && src.matches && src.matches("a.sort")) {
      var ths = Array.prototype.slice.call(document.querySelectorAll("[data-results] thead th"));
      after = { kind: "sort", index: ths.indexOf(src.closest("th")) };
    } else if (src && !isResults(src)) {
      after = null; // the search form: focus stays where one types
    }
    updateBusy();
  });
  // htmx takes its class away after this event.
  document.addEventListener("htmx:finally:request", function () { setTimeout(updateBusy); });

  // New results are processed once swapped in: the event comes from the
  // new results element itself, which is in the page.
  document.addEventListener("htmx:after:process", function (e) {
    var r = e.target;
    if (!isResults(r)) return;
    updateBusy();
    var a = after;
    after = null;
    if (!a) return;
    if (a.kind === "page") {
      if (r.getBoundingClientRect().top < 0 || window.scrollY > r.offsetTop) r.scrollIntoView({ block: "start" });
      var count = document.getElementById("results-count");
      if (count) count.focus({ preventScroll: true });
    } else if (a.kind === "sort") {
      var th = r.querySelectorAll("thead th")[a.index];
      var link = th && th.querySelector("a");
      if (link) link.focus();
    } else if (a.kind === "delete") {
      var rows = listRows();
      var next = rows[Math.min(a.index, rows.length - 1)];
      var to = next ? next.querySelector("a") : document.getElementById("results-count");
      if (to) to.focus();
    }
  });

  // ---- Keyboard shortcuts ----

  // The rows j and k move between: List rows (not one being edited) or
  // Inquiry orders.
  function listRows() {
    return Array.prototype.slice.call(document.querySelectorAll(
      "[data-rows] > tr, [data-results] [data-entry]"));
  }

  function currentRow() {
    var a = document.activeElement;
    var row = a && a.closest && a.closest("[data-rows] > tr, [data-results] [data-entry]");
    return row || document.querySelector("[data-results] .is-current");
  }

  function moveRow(step) {
    var rows = listRows().filter(function (r) { return !r.classList.contains("editing"); });
    if (!rows.length) return;
    var cur = currentRow();
    var i = rows.indexOf(cur);
    i = i < 0 ? (step > 0 ? 0 : rows.length - 1) : Math.max(0, Math.min(rows.length - 1, i + step));
    rows.forEach(function (r) { r.classList.remove("is-current"); });
    rows[i].classList.add("is-current");
    var link = rows[i].querySelector("a");
    if (link) link.focus();
  }

  function editRow() {
    var row = currentRow();
    if (!row || row.classList.contains("editing")) return;
    var edit = row.querySelector("a[href$='/edit']");
    if (edit) { edit.click(); return; }
    // An Inquiry entry has no Edit link: its heading links to the member.
    var show = row.querySelector("a[href]");
    if (show) window.location.assign(show.getAttribute("href") + "/edit");
  }

  // The dialog comes from the layout's template the first time it is
  // asked for.
  var returnFocus = null;
  function shortcutDialog() {
    var d = document.getElementById("shortcuts"), t = document.getElementById("shortcuts-template");
    if (d || !t) return d;
    document.body.appendChild(t.content.cloneNode(true));
    d = document.getElementById("shortcuts");
    d.querySelector("[data-close]").addEventListener("click", function () { d.close(); });
    d.addEventListener("close", function () {
      var to = returnFocus;
      returnFocus = null;
      if (to && to.isConnected && to.focus) to.focus();
    });
    return d;
  }

  function showShortcuts() {
    var d = shortcutDialog();
    if (!d || d.open) return;
    returnFocus = document.activeElement;
    d.showModal();
  }

  function typing(el) {
    if (!el || el === document.body) return false;
    if (el.isContentEditable) return true;
    return /^(INPUT|TEXTAREA|SELECT)$/.test(el.tagName);
  }

  document.addEventListener("keydown", function (e) {
    if (e.defaultPrevented || e.ctrlKey || e.altKey || e.metaKey || e.isComposing) return;
    if (typing(e.target) || typing(document.activeElement)) return;
    if (document.querySelector("dialog[open]")) return; // a dialog has the keyboard
    switch (e.key) {
      case "/": {
        var q = document.getElementById("q");
        if (!q) return;
        e.preventDefault();
        q.focus();
        q.select();
        return;
      }
      case "n": {
        var create = document.querySelector("a[data-shortcut='n']");
        if (!create) return;
        e.preventDefault();
        window.location.assign(create.getAttribute("href"));
        return;
      }
      case "j":
      case "k":
        if (!listRows().length) return;
        e.preventDefault();
        moveRow(e.key === "j" ? 1 : -1);
        return;
      case "e":
        if (!currentRow()) return;
        e.preventDefault();
        editRow();
        return;
      case "?":
        e.preventDefault();
        showShortcuts();
        return;
    }
  });

  // The highlighted row follows focus: clicking or tabbing elsewhere in
  // the list moves it, leaving the list clears it.
  document.addEventListener("focusin", function (e) {
    var row = e.target.closest && e.target.closest("[data-rows] > tr, [data-results] [data-entry]");
    document.querySelectorAll("[data-results] .is-current").forEach(function (r) { if (r !== row) r.classList.remove("is-current"); });
    if (row) row.classList.add("is-current");
  });
})();

// Notices: their dismiss buttons, which need this script
// (CSS shows them under html.js; without JavaScript a notice simply goes
// away on the next page). Kept apart from the form behaviour above.
(function notices() {
  "use strict";
  document.documentElement.classList.add("js");

  function regions() {
    return document.querySelectorAll(".notice-region");
  }

  // Dismissing empties the region (it stays, so the next notice is still
  // announced) and, when focus was in the notice, moves it to the page's
  // heading rather than dropping it on the body.
  function dismiss(notice) {
    var region = notice.closest(".notice-region");
    var hadFocus = notice.contains(document.activeElement);
    (region || notice).replaceChildren();
    if (!hadFocus) return;
    var to = document.querySelector("main h1") || document.querySelector("main");
    if (!to) return;
    if (!to.hasAttribute("tabindex")) to.setAttribute("tabindex", "-1");
    to.focus();
  }

  document.addEventListener("click", function (e) {
    var b = e.target.closest && e.target.closest("[data-dismiss-notice]");
    if (b) dismiss(b.closest(".notice") || b);
  });

  // Escape inside a notice dismisses it too.
  document.addEventListener("keydown", function (e) {
    if (e.key !== "Escape") return;
    var n = e.target.closest && e.target.closest(".notice");
    if (n) { e.preventDefault(); dismiss(n); }
  });

  // A page the back/forward cache restores would show its one-time
  // notice again: a notice shows once.
  window.addEventListener("pageshow", function (e) {
    if (e.persisted) regions().forEach(function (r) { r.replaceChildren(); });
  });
})();

// Product picker: typing in an item row's SKU or name suggests up to 10
// active products, as a WAI-ARIA 1.2 combobox with a listbox popup. htmx
// asks for the options (the input's hx-get: debounced, the latest request
// replacing an older one) and the server renders them, each carrying the
// values it fills in; this adds the listbox (and the roles and states),
// so without JavaScript the fields are the plain text fields they always
// were, and gives the combobox its keys. Choosing copies values into the
// row (nothing links the order to the product); the person may change them.
(function productPicker() {
  "use strict";
  if (!window.htmx) return;
  var pending = null; // {input, step}: an arrow key waiting for the list

  function isPicker(el) { return !!(el && el.matches && el.matches("input[data-product-picker]")); }
  function listOf(input) { return document.getElementById(input.id + "-products"); }
  function isOpen(input) { return input.getAttribute("aria-expanded") === "true"; }
  // noun is what the input picks, as the server names it ("customer"),
  // in the singular or (many) the plural.
  function noun(input, many) { return input.getAttribute(many ? "data-picker-nouns" : "data-picker-noun"); }
  function options(input) {
    var l = listOf(input);
    return l ? Array.prototype.slice.call(l.querySelectorAll("[role=option]")) : [];
  }

  // The polite live region of a form that says how many match.
  function region(form) {
    var root = form || document.body, r = root.querySelector("[data-product-status]");
    if (!r) {
      r = document.createElement("p");
      r.setAttribute("data-product-status", "");
      r.setAttribute("role", "status");
      r.className = "visually-hidden";
      root.appendChild(r);
    }
    return r;
  }
  function announce(input, text) {
    var r = region(input.form);
    // The same words again are still news: make the text differ.
    r.textContent = r.textContent === text ? text + "\u00a0" : text;
  }

  // setup gives an input its listbox (right after it, the hx-target of its
  // requests) and the combobox's role and states.
  function setup(input) {
    if (!listOf(input)) {
      var list = document.createElement("div");
      list.id = input.id + "-products";
      list.setAttribute("data-product-options", "");
      list.setAttribute("role", "listbox");
      var label = noun(input, true);
      list.setAttribute("aria-label", label.charAt(0).toUpperCase() + label.slice(1));
      list.className = "product-options";
      list.hidden = true;
      input.after(list);
    }
    input.setAttribute("role", "combobox");
    input.setAttribute("aria-autocomplete", "list");
    input.setAttribute("aria-controls", input.id + "-products");
    if (!isOpen(input)) input.setAttribute("aria-expanded", "false");
    input.parentElement.classList.add("product-picker");
    region(input.form);
  }
  function setupAll() { document.querySelectorAll("input[data-product-picker]").forEach(setup); }

  // Typing in a picker outside the item rows (the customer) drops the link
  // a chosen option made: the text is then the order's own.
  document.addEventListener("input", function (e) {
    if (!e.isTrusted || !isPicker(e.target) || e.target.closest("tr") || !e.target.form) return;
    e.target.form.querySelectorAll("[data-picker-link]").forEach(function (el) { el.value = ""; });
  });

  function close(input) {
    var l = listOf(input);
    if (l) { l.hidden = true; l.replaceChildren(); }
    input.setAttribute("aria-expanded", "false");
    input.removeAttribute("aria-activedescendant");
  }

  // activate makes option i the active one (-1: none).
  function activate(input, i) {
    var opts = options(input);
    opts.forEach(function (o, k) { o.setAttribute("aria-selected", k === i ? "true" : "false"); });
    if (!opts[i]) { input.removeAttribute("aria-activedescendant"); return; }
    input.setAttribute("aria-activedescendant", opts[i].id);
    opts[i].scrollIntoView({ block: "nearest" });
  }

  // show opens the list the server's options were swapped into.
  function show(input) {
    var opts = options(input), n = opts.length, step = pending && pending.input === input ? pending.step : 0;
    pending = null;
    if (!n || document.activeElement !== input) {
      close(input);
      if (!n) announce(input, "No " + noun(input) + " matches");
      return;
    }
    opts.forEach(function (o, i) { o.id = input.id + "-products-" + i; });
    listOf(input).hidden = false;
    input.setAttribute("aria-expanded", "true");
    input.removeAttribute("aria-activedescendant");
    var total = parseInt(opts[0].getAttribute("data-total"), 10) || n;
    announce(input, total > n ? n + " of " + total + (opts[0].hasAttribute("data-more") ? " or more" : "") + " matching " + noun(input, true) + " shown" :
      n === 1 ? "1 " + noun(input) + " matches" : n + " " + noun(input, true) + " match");
    if (step) activate(input, step > 0 ? 0 : n - 1);
  }

  // choose copies option o into its row's controls, as if typed (input
  // events: the totals follow), and moves on to the row's first control a
  // product does not fill (the quantity).
  function choose(input, o) {
    close(input);
    // An item row's picker fills its row; one outside the rows (the
    // customer) fills the form's fields outside them.
    var inRow = input.closest("tr"), row = inRow || input.form || document;
    row.querySelectorAll("[data-product-field]").forEach(function (el) {
      var v = o.getAttribute("data-" + el.getAttribute("data-product-field"));
      if (v === null || (!inRow && el.closest("tr"))) return;
      el.value = v;
      el.dispatchEvent(new Event("input", { bubbles: true }));
      el.dispatchEvent(new Event("change", { bubbles: true }));
    });
    announce(input, o.getAttribute("data-chosen") || o.getAttribute("data-name") + " chosen: SKU " + o.getAttribute("data-sku") + ", unit price " + o.getAttribute("data-unit_price"));
    var next = row.querySelector("input:not([type=hidden]):not([data-product-field]):not([readonly])");
    (next || input).focus();
    if (next && next.select) next.select();
  }

  htmx.registerExtension("orders-picker", {
    // The request asks for the products matching what the field holds
    // (q), and only while one types in it: not for an empty field, not
    // after the person closed the list for these words. A failed request
    // is silent: no list, and the field stays a plain text field.
    htmx_config_request: function (elt, d) {
      var ctx = d.ctx, input = ctx.sourceElement;
      if (!isPicker(input)) return;
      var term = input.value.trim();
      if (!term || document.activeElement !== input || (input._closedAt === term && ctx.sourceEvent.type !== "picker:open")) {
        if (!term) close(input);
        return false;
      }
      ctx.pickerTerm = term;
      ctx.request.body.delete(input.name);
      ctx.request.body.set("q", term);
      ctx.fetch = function (url, opts) {
        return window.fetch(url, opts).catch(function () {
          if (!opts.signal.aborted) close(input);
          return new Response(null, { status: 204 });
        });
      };
    },
    // Only the answer for what the field holds now counts, and it fills
    // the listbox alone (the notices' regions are the person's).
    htmx_before_swap: function (elt, d) {
      var ctx = d.ctx, input = ctx.sourceElement;
      if (!isPicker(input)) return;
      if (ctx.request.signal.aborted || input.value.trim() !== ctx.pickerTerm) return false;
      if (ctx.response.status !== 200) { close(input); return false; }
      for (var i = d.tasks.length - 1; i >= 0; i--) if (d.tasks[i].type === "partial") d.tasks.splice(i, 1);
      if (!d.tasks.length) listOf(input).replaceChildren(); // nothing matches
    },
    htmx_after_swap: function (elt, d) {
      if (isPicker(d.ctx.sourceElement)) show(d.ctx.sourceElement);
      else setupAll();
    }
  });

  document.addEventListener("input", function (e) {
    if (!isPicker(e.target)) return;
    if (!e.target.value.trim()) close(e.target);
    else activate(e.target, -1); // the list is about to change
  });

  document.addEventListener("focusout", function (e) {
    if (!isPicker(e.target)) return;
    htmx.trigger(e.target, "htmx:abort");
    close(e.target);
  });

  // The keys, before anything else on the page hears them (capture): an
  // Enter that chooses must not also submit the form, an Escape that
  // closes the list must not also leave an inline edit.
  document.addEventListener("keydown", function (e) {
    var input = e.target;
    if (!isPicker(input) || e.isComposing || e.ctrlKey || e.metaKey || e.altKey) return;
    var open = isOpen(input), opts = options(input), n = opts.length;
    var i = opts.findIndex(function (o) { return o.getAttribute("aria-selected") === "true"; });
    switch (e.key) {
      case "ArrowDown":
      case "ArrowUp": {
        var step = e.key === "ArrowDown" ? 1 : -1;
        if (open) {
          activate(input, i < 0 ? (step > 0 ? 0 : n - 1) : (i + step + n) % n);
        } else if (input.value.trim()) {
          pending = { input: input, step: step }; // open it, then move
          input._closedAt = null;
          htmx.trigger(input, "picker:open");
        } else {
          return;
        }
        break;
      }
      case "Enter":
        if (!open) return; // Enter saves, as in any field
        if (i < 0) { close(input); return; }
        choose(input, opts[i]);
        break;
      case "Escape":
        // A second Escape (nothing shown or coming) is the page's.
        if (!open && !listOf(input).classList.contains("htmx-request")) return;
        input._closedAt = input.value.trim();
        htmx.trigger(input, "htmx:abort");
        close(input);
        break;
      default:
        return; // Tab leaves the field as always; focusout closes the list.
    }
    e.preventDefault();
    e.stopPropagation();
  }, true);

  // A click chooses; pressing on the list keeps the focus in the field.
  document.addEventListener("mousedown", function (e) {
    if (e.target.closest && e.target.closest("[data-product-options]")) e.preventDefault();
  });
  document.addEventListener("click", function (e) {
    var o = e.target.closest && e.target.closest("[data-product-options] [role=option]");
    if (o) choose(o.parentElement.previousElementSibling, o);
  });

  document.addEventListener("DOMContentLoaded", setupAll);
})();

// Live updates: a page follows changes made anywhere (another tab,
// another person, another instance) within a second. The layout holds the resource's event stream, [data-live-stream]
// with hx-sse:connect (htmx's SSE extension, public/js/hx-sse.min.js: it
// reconnects by itself, sending Last-Event-ID, and turns each named event
// into a DOM event on that element: created, updated, deleted, reset), and
// the polite region [data-live-news]. Every element that shows a member
// says which, and how it follows it: data-live-id, data-live-version (the
// version it shows), data-live-src (the member's URI), and data-live:
//   row    a List row: morphed in place from its row fragment;
//   entry  an Inquiry entry: morphed from the Inquiry page it is on;
//   page   a record's page: morphed from its fragment, except a form the
//          person has typed in (the note), which is kept and says so;
//   form   an Edit form or an inline row edit: never replaced. It says the
//          record changed, with a Compare button that submits the form as
//          it is: its version is stale, so the server answers its 409
//          comparison of yours and theirs and saves nothing.
// Only a version newer than the one shown is fetched. A deleted member is
// marked (the gone row's look) and its actions disabled. New members are
// counted in the region, with a button that shows them. While the
// person's own request about a member is in flight its events wait for
// the answer, which usually is that very version. A live request is
// marked (ctx.live): its answer's notices are dropped (the regions are the
// person's), an error answer swaps nothing, and focus stays put.
(function liveUpdates() {
  "use strict";
  if (!window.htmx || !htmx.registerExtension) return;

  var known = Object.create(null); // id -> {version, gone}: what the stream said
  var busy = Object.create(null);  // id -> the person's requests in flight
  var fresh = null;                // {results, ids, n}: new members not shown
  var kept = new Set();            // what a live morph leaves alone
  var retryDelay = 0;

  function stream() { return document.querySelector("[data-live-stream]"); }
  function isStream(el) { return !!(el && el.nodeType === 1 && el.hasAttribute("data-live-stream")); }
  // The resource's words, from the server: Title, Name, Plural, its path.
  function word(name) { var s = stream(); return (s && s.getAttribute("data-live-" + name)) || ""; }
  function named(id) { return word("title") + " " + id; }
  function shown(el) { return parseInt(el.getAttribute("data-live-version"), 10) || 0; }
  function members(id) { return document.querySelectorAll("[data-live-id='" + id + "']"); }
  function results() { return document.querySelector("[data-results]"); }

  // ---- The polite region: the count of new members, the last news ----
  function part(name) {
    var r = document.querySelector("[data-live-news]");
    if (!r) return null;
    var p = r.querySelector("[data-live-" + name + "]");
    if (!p) {
      p = document.createElement("p");
      p.setAttribute("data-live-" + name, "");
      if (name === "count") r.prepend(p); else r.append(p);
    }
    return p;
  }
  // A screen reader speaks every change of a polite region, queued: a
  // burst of events (300 creates in a second) would be 300 counts read
  // out, one after another, for minutes. The region changes at most once
  // every newsGap ms, to the latest words (the first at once, so news
  // still comes within the contract's second).
  var newsGap = 800, newsAt = 0, newsTimer = 0, newsPending = Object.create(null);
  function publish(name, write) {
    newsPending[name] = write;
    if (newsTimer) return;
    var wait = newsAt + newsGap - Date.now();
    if (wait <= 0) flushNews(); else newsTimer = setTimeout(flushNews, wait);
  }
  function flushNews() {
    var p = newsPending;
    newsTimer = 0;
    newsPending = Object.create(null);
    newsAt = Date.now();
    for (var name in p) p[name]();
  }
  function say(text) {
    publish("said", function () {
      var p = part("said");
      if (!p) return;
      // The same words again are still news: make the text differ.
      p.textContent = p.textContent === text ? text + "\u00a0" : text;
    });
  }
  function unsay() {
    clearTimeout(newsTimer);
    newsTimer = 0;
    newsPending = Object.create(null);
    var r = document.querySelector("[data-live-news]");
    if (r) r.replaceChildren();
  }
  function showLink(text, label) {
    if (!text) {
      // Gone at once (the person pressed show): nothing is to be read.
      delete newsPending.count;
      var r = document.querySelector("[data-live-news] [data-live-count]");
      if (r) r.remove();
      return;
    }
    publish("count", function () {
      var p = part("count");
      if (!p) return;
      var b = document.createElement("button");
      b.type = "button";
      b.className = "link";
      b.setAttribute("data-live-show", "");
      b.setAttribute("aria-label", label);
      b.textContent = "show";
      p.replaceChildren(text + " \u2014 ", b);
    });
  }
  function showCount() {
    var n = fresh && fresh.results === results() ? fresh.n : 0;
    var text = n ? n + " new " + (n === 1 ? word("one") : word("many")) : "";
    if (n && fresh.unsure === "search") text += n === 1 ? " (this search may not include it)" : " (this search may not include them)";
    else if (n && fresh.unsure === "page") text += n === 1 ? " (it may be on another page)" : " (they may be on other pages)";
    showLink(text, "Show the " + (n === 1 ? "new " + word("one") : n + " new " + word("many")));
  }

  // A member created elsewhere, which this List or Inquiry does not show.
  function countNew(id, d) {
    var r = results();
    // Not one already deleted: on a Cluster a create's event may come
    // after the delete's (the stream's last word is still the delete).
    if (!r || members(id).length || (known[id] && known[id].gone)) return;
    if (!fresh || fresh.results !== r) fresh = { results: r, ids: {}, n: 0 };
    if (fresh.ids[id]) return;
    // A filter of the list (status, active) the new member fails: it
    // would not show here.
    var url = new URL(r.getAttribute("hx-get") || location.href, location.href);
    for (var k in d) {
      var want = k === "id" || k === "version" ? "" : url.searchParams.get(k);
      if (want && want !== String(d[k])) return;
    }
    // Dates of creation (YYYY-MM-DD, UTC): a member created now is not in
    // a range that ends before today or starts after it.
    var today = new Date().toISOString().slice(0, 10);
    var from = url.searchParams.get("from") || "", to = url.searchParams.get("to") || "";
    if ((from && from > today) || (to && to < today)) return;
    fresh.ids[id] = true;
    fresh.n++;
    // Where the new ones are: under a newest-first sort, on the first
    // page, which show then brings (from page 3 too, where they would
    // only push rows along); under another sort, on any page.
    var first = newFirst(r, url);
    fresh.url = null;
    if (first && url.searchParams.has("page")) {
      url.searchParams.delete("page");
      fresh.url = url.pathname + url.search;
    }
    // A search (q) the event cannot judge: the new ones may not match it.
    if ((url.searchParams.get("q") || "").trim()) fresh.unsure = "search";
    else if (!first && r.querySelector(".pager a[rel]")) fresh.unsure = "page";
    else fresh.unsure = "";
    showCount();
  }
  // newFirst says the results are sorted newest first: by creation or
  // last change, descending (the header the rows are sorted by says so;
  // the Inquiry, without headers, by its sort field, whose default is
  // newest first).
  function newFirst(r, url) {
    var a = r.querySelector("th[aria-sort] a.sort[data-sort]");
    if (a) return /^(created|updated)$/.test(a.getAttribute("data-sort")) && a.closest("th").getAttribute("aria-sort") === "descending";
    return /^(|-created|-updated)$/.test(url.searchParams.get("sort") || "");
  }

  // ---- Forms in progress ----
  // A form the person has typed in: a field that differs from the value
  // it came with.
  function edited(form) {
    return Array.prototype.some.call(form.elements, function (f) {
      if (f.type === "hidden" || f.type === "submit" || f.type === "button" || f.disabled) return false;
      if (f.type === "checkbox" || f.type === "radio") return f.checked !== f.defaultChecked;
      if (f.tagName === "SELECT") {
        return Array.prototype.some.call(f.options, function (o) { return o.selected !== o.defaultSelected; });
      }
      return typeof f.defaultValue === "string" && f.value !== f.defaultValue;
    });
  }
  // What a morph of root must leave as it is: the member forms in it and
  // any form typed in.
  function inProgress(root) {
    var out = [];
    if (!root || !root.querySelectorAll) return out;
    if (root.matches("[data-live='form']")) out.push(root);
    root.querySelectorAll("[data-live='form']").forEach(function (el) { out.push(el); });
    root.querySelectorAll("form").forEach(function (f) {
      if (!f.closest("[data-live='form']") && edited(f)) out.push(f);
    });
    return out;
  }

  // notice says, inside a form, what happened to its record; compare adds
  // the button that asks the server for the comparison. A later notice
  // updates the words in place (focus may be on the button).
  function notice(form, text, compare) {
    var n = form.querySelector("[data-live-notice]");
    if (!n) {
      n = document.createElement("div");
      n.className = "live-changed";
      n.setAttribute("data-live-notice", "");
      n.appendChild(document.createElement("p"));
      // After the hidden fields, the default button and a 409's view.
      var at = Array.prototype.find.call(form.children, function (c) {
        return !c.matches("input[type=hidden], .default-submit, .conflict");
      });
      form.insertBefore(n, at || null);
    }
    n.querySelector("p").textContent = text;
    var b = n.querySelector("[data-live-compare]");
    if (compare && !b) {
      b = document.createElement("button");
      b.type = "submit";
      b.formNoValidate = true; // the server compares; nothing is saved
      b.className = "small secondary";
      b.setAttribute("data-live-compare", "");
      b.textContent = "Compare";
      n.appendChild(b);
    } else if (!compare && b) {
      b.remove();
    }
  }
  function changedText(id, version) {
    return named(id) + " was changed elsewhere \u2014 now version " + version + ".";
  }

  // ---- Following a member ----
  var knownCount = 0;
  function note(id, version, gone) {
    var k = known[id];
    if (!k) {
      // A page open for hours hears of many members: it keeps what it
      // shows (and what a request in flight may bring) and forgets the rest.
      if (++knownCount > 2000) forget();
      k = known[id] = { version: 0, gone: false };
    }
    if (version > k.version) k.version = version;
    if (gone) {
      k.gone = true;
      // A new one deleted before it was shown is no longer news.
      if (fresh && fresh.ids[id]) { delete fresh.ids[id]; fresh.n--; showCount(); }
    }
    members(id).forEach(reconcile);
  }
  function forget() {
    var keep = Object.create(null);
    knownCount = 0;
    document.querySelectorAll("[data-live-id]").forEach(function (el) {
      var id = el.getAttribute("data-live-id");
      if (known[id] && !keep[id]) { keep[id] = known[id]; knownCount++; }
    });
    known = keep;
  }

  // reconcile brings el up to what the stream said of its member.
  function reconcile(el) {
    var id = el.getAttribute("data-live-id"), k = known[id];
    if (!k || busy[id]) return;
    if (k.gone) { markGone(el, id); return; }
    if (k.version <= shown(el) || el._liveAsked >= k.version) return;
    el._liveAsked = k.version;
    var kind = el.getAttribute("data-live");
    if (kind === "form") {
      var form = el.querySelector("form");
      if (form) notice(form, changedText(id, k.version) + " Compare shows yours beside theirs; nothing is saved.", true);
      say(changedText(id, k.version));
      return;
    }
    var src = el.getAttribute("data-live-src"), opts = { source: el, target: el, swap: "outerMorph", live: id, liveVersion: k.version };
    if (kind === "entry") {
      // No fragment of its own: the Inquiry for its number, which puts it
      // first whatever it now holds, this entry of it. (Not the page it is
      // on: changed so it no longer matches that search or page, it would
      // be missing from it, and the entry vanish.)
      var r = results(), at = r && r.getAttribute("hx-get");
      src = at && new URL(at, location.href).pathname + "?q=" + id;
      opts.select = "#" + CSS.escape(el.id);
      opts.liveEntry = true;
    }
    if (!src) return;
    if (kind === "page") say(changedText(id, k.version));
    htmx.ajax("GET", src, opts).catch(function () {});
  }
  // relive asks again, later, for what a live request did not bring (a
  // 503 while the server restarts, a dropped connection): the stream will
  // not say that version again, so without this the member would show the
  // old one until its next change.
  function relive(ctx) {
    var el = ctx.sourceElement;
    if (!el || !/^\d+$/.test(ctx.live)) return;
    el._liveAsked = 0;
    el._liveRetry = Math.min((el._liveRetry || 500) * 2, 30000);
    setTimeout(function () { if (el.isConnected) reconcile(el); }, el._liveRetry);
  }
  function reconcileAll() {
    document.querySelectorAll("[data-live-id]").forEach(reconcile);
  }

  // markGone marks a deleted member where it shows, and disables its
  // actions; a form in progress keeps its text (to copy), but cannot save.
  function markGone(el, id) {
    if (el.hasAttribute("data-live-gone")) return;
    el.setAttribute("data-live-gone", "");
    // Focus on a control this disables would fall to the page's body, and
    // the person lose their place: it goes to what says the news instead.
    var focused = el.contains(document.activeElement) ? document.activeElement : null;
    var kind = el.getAttribute("data-live"), text = named(id) + " was deleted elsewhere.";
    var submits = "button[type=submit], button:not([type])";
    if (kind === "form") {
      var form = el.querySelector("form");
      if (form) {
        notice(form, text + " It can no longer be saved.", false);
        // Every way to save it: the form's buttons, and those of a 409's
        // comparison beside it (form=), whose Keep theirs would open it.
        Array.prototype.forEach.call(form.elements, function (b) { if (b.matches(submits)) b.disabled = true; });
      }
      el.querySelectorAll(submits).forEach(function (b) { b.disabled = true; });
      el.querySelectorAll(".conflict-choices a").forEach(function (a) { a.inert = true; });
      // The 409's warning ("compare and choose below") no longer holds:
      // there is nothing left to choose. (A notice is never stale.)
      if (el.querySelector(".conflict")) {
        document.querySelectorAll(".notice-region .notice-warning").forEach(function (n) { n.remove(); });
      }
      refocus(focused, form && form.querySelector("[data-live-notice] p"));
      say(text);
      return;
    }
    el.classList.add("gone");
    var badge = el.querySelector(".badge");
    if (badge) {
      badge.className = "badge badge-gone";
      badge.textContent = "Deleted";
    }
    el.querySelectorAll("button").forEach(function (b) { b.disabled = true; });
    el.querySelectorAll("a.button, a[hx-get]").forEach(function (a) { a.inert = true; });
    // A form typed in keeps its text, to copy, and says it cannot be saved.
    el.querySelectorAll("form").forEach(function (f) {
      if (f.querySelector("[data-live-notice]") || edited(f)) notice(f, text + " Your text is kept, but it can no longer be saved.", false);
    });
    if (kind === "page") {
      var p = document.createElement("p"), back = document.createElement("a");
      p.className = "live-gone-note";
      back.href = word("list");
      back.textContent = "Show the current " + word("many");
      p.append(text + " ", back);
      var head = el.querySelector(".page-head");
      if (head) head.after(p); else el.prepend(p);
      refocus(focused, p);
      say(text);
      addGoneEntry(el);
      return;
    }
    refocus(focused, el); // a row: the row itself, its Deleted badge read
  }
  // refocus moves the focus from was, if markGone took it away (disabled,
  // inert), to to (made focusable by script only).
  function refocus(was, to) {
    if (!was || !to || !(was.disabled || was.closest("[inert]"))) return;
    if (!to.hasAttribute("tabindex")) to.tabIndex = -1;
    to.focus({ preventScroll: true });
  }

  // addGoneEntry puts the delete's history entry at the head of a deleted
  // record's timeline, as the server wrote it (its history is kept 30
  // days): who deleted it, and when. The note form around it stays as it
  // is (its text, its notice).
  function addGoneEntry(el) {
    var list = el.querySelector(".history ol.timeline"), src = el.getAttribute("data-live-src");
    if (!list || !src) return;
    fetch(src + "/history", { headers: { Accept: "text/html" }, credentials: "same-origin" }).then(function (res) {
      return res.ok ? res.text() : "";
    }).then(function (html) {
      if (!html || !list.isConnected || list.querySelector(".entry-deleted")) return;
      var first = new DOMParser().parseFromString(html, "text/html").querySelector("ol.timeline > li:first-child");
      if (!first || !first.classList.contains("entry-deleted")) return;
      var shown = list.querySelectorAll("li.entry:not(.muted)").length;
      list.querySelectorAll("li.muted").forEach(function (li) { li.remove(); });
      list.prepend(document.importNode(first, true));
      // The page shows the latest five (timelineLength, routes/history.go).
      if (shown >= 5) list.lastElementChild.remove();
    }).catch(function () {});
  }

  // ---- A cursor the server no longer has: everything may have changed ----
  // Each record the page shows on its own is asked for its version (a
  // form in progress then says so); a List or Inquiry is fetched again,
  // unless a form is open in it, when the region offers to.
  function check(el) {
    var id = el.getAttribute("data-live-id"), src = el.getAttribute("data-live-src");
    if (!src) return;
    fetch(src, { headers: { Accept: "application/json" }, credentials: "same-origin" }).then(function (res) {
      if (res.status === 404) { note(id, 0, true); return; }
      if (!res.ok) return;
      return res.json().then(function (m) { if (m && typeof m.version === "number") note(id, m.version, false); });
    }).catch(function () {});
  }
  function reset() {
    var r = results();
    document.querySelectorAll("[data-live='page'], [data-live='form']").forEach(check);
    if (!r) return;
    if (inProgress(r).length) {
      fresh = null;
      showLink("This list may be out of date", "Show the current " + word("many"));
    } else {
      refreshResults();
    }
  }

  // refreshResults fetches the List or Inquiry again, as it is asked for
  // now, and morphs it in: rows stay where they are (and focus in them),
  // new ones come, deleted ones go; forms in progress are kept.
  // to is another page of them to go to (the first, where the new ones
  // are), which becomes the page's address.
  function refreshResults(to) {
    var r = results(), url = r && r.getAttribute("hx-get");
    if (!url) return;
    fresh = null;
    showCount();
    var opts = { source: r, target: r, swap: "outerMorph", select: "#" + CSS.escape(r.id), live: "results" };
    if (to && to !== url) { url = to; opts.push = to; }
    htmx.ajax("GET", url, opts).catch(function () {});
  }

  document.addEventListener("click", function (e) {
    var b = e.target.closest && e.target.closest("[data-live-show]");
    if (!b) return;
    // The button goes with its words: focus to the results' summary.
    var count = document.getElementById("results-count");
    if (count) count.focus();
    refreshResults(fresh && fresh.results === results() ? fresh.url : null);
    showLink("");
  });

  // ---- The stream's events ----
  function listen(name, fn) {
    document.addEventListener(name, function (e) {
      if (!isStream(e.target)) return;
      var raw = (e.detail && e.detail.data) || "", d = null;
      try { d = JSON.parse(raw); } catch (err) { d = null; }
      if (name === "reset") { fn(); return; }
      // The id as sent: ids reach 18 digits, past a JavaScript number.
      var m = /"id"\s*:\s*"?([1-9][0-9]{0,17})\b/.exec(raw);
      if (!d || !m) return;
      fn(m[1], typeof d.version === "number" ? d.version : 0, d);
    });
  }
  listen("updated", function (id, v) { note(id, v, false); });
  listen("deleted", function (id, v) { note(id, v, true); });
  listen("created", function (id, v, d) { note(id, v, false); countNew(id, d); });
  listen("reset", reset);

  document.addEventListener("htmx:sse:after:connection", function (e) {
    if (!isStream(e.target)) return;
    retryDelay = 0;
    e.target.setAttribute("data-live-state", "open");
  });
  document.addEventListener("htmx:sse:close", function (e) {
    if (isStream(e.target)) e.target.setAttribute("data-live-state", "closed");
  });
  // The first connection failed (no stream, a 503): the extension only
  // reconnects a stream it had, so this tries again, more slowly each time.
  function retry(el) {
    retryDelay = Math.min(retryDelay ? retryDelay * 2 : 1000, 30000);
    setTimeout(function () {
      if (el.isConnected && el.getAttribute("data-live-state") !== "open") {
        htmx.ajax("GET", el.getAttribute("hx-sse:connect"), { source: el }).catch(function () {});
      }
    }, retryDelay);
  }

  // ---- The person's own requests ----
  document.addEventListener("htmx:before:request", function (e) {
    var ctx = e.detail && e.detail.ctx, src = ctx && ctx.sourceElement;
    if (!ctx || ctx.live || isStream(src)) return;
    var m = src && src.closest && src.closest("[data-live-id]");
    if (!m) return;
    ctx.liveBusy = m.getAttribute("data-live-id");
    busy[ctx.liveBusy] = (busy[ctx.liveBusy] || 0) + 1;
  });
  document.addEventListener("htmx:finally:request", function (e) {
    var ctx = e.detail && e.detail.ctx;
    if (!ctx || !ctx.liveBusy) return;
    var id = ctx.liveBusy;
    ctx.liveBusy = null;
    if (--busy[id] <= 0) delete busy[id];
    reconcileAll();
  });
  document.addEventListener("htmx:after:swap", function (e) {
    var ctx = e.detail && e.detail.ctx;
    if (ctx && !ctx.live && ctx.target && ctx.target.tagName === "MAIN") unsay();
    if (fresh && fresh.results !== results()) { fresh = null; showCount(); }
    // What a swap brought may be older than the stream said.
    reconcileAll();
  });

  htmx.registerExtension("orders-live", {
    htmx_after_request: function (elt, detail) {
      var ctx = detail.ctx;
      if (isStream(ctx.sourceElement)) { retry(ctx.sourceElement); return false; } // not a stream
      if (!ctx.live) return;
      if (ctx.response.status === 404 && /^\d+$/.test(ctx.live)) { note(ctx.live, ctx.liveVersion, true); return false; }
      if (ctx.response.status !== 200) { relive(ctx); return false; } // keep what shows
      if (ctx.sourceElement) ctx.sourceElement._liveRetry = 0;
    },
    htmx_error: function (elt, detail) {
      var ctx = detail && detail.ctx;
      if (ctx && isStream(ctx.sourceElement)) retry(ctx.sourceElement);
      else if (ctx && ctx.live) relive(ctx);
    },
    htmx_before_swap: function (elt, detail) {
      var ctx = detail.ctx;
      if (!ctx.live) return;
      // An Inquiry without the entry (deleted meanwhile: its event marks
      // it) would swap nothing in for it: the entry would vanish.
      var main = detail.tasks.find(function (t) { return t.type === "main"; });
      if (ctx.liveEntry && main && !main.fragment.firstElementChild) return false;
      // The notices' regions are the person's: a live answer leaves them.
      for (var i = detail.tasks.length - 1; i >= 0; i--) {
        if (detail.tasks[i].type === "partial") detail.tasks.splice(i, 1);
      }
      // Forms in progress stay as they are; a typed-in form on a record's
      // page says its record changed.
      inProgress(ctx.target).forEach(function (el) {
        kept.add(el);
        if (el.tagName === "FORM" && /^\d+$/.test(ctx.live)) {
          notice(el, changedText(ctx.live, ctx.liveVersion) + " Your text is kept.", false);
        }
      });
      ctx.liveCurrent = Array.prototype.map.call(ctx.target.querySelectorAll(".is-current"), function (c) { return c.id; });
      if (ctx.target.classList.contains("is-current")) ctx.liveCurrent.push(ctx.target.id);
    },
    htmx_before_morph_node: function (elt, detail) {
      if (kept.has(detail.oldNode)) return false;
    },
    htmx_finally_swap: function (elt, detail) {
      var ctx = detail.ctx;
      if (!ctx.live) return;
      kept.clear();
      // The current row of j and k stays current.
      (ctx.liveCurrent || []).forEach(function (id) {
        var c = id && document.getElementById(id);
        if (c) c.classList.add("is-current");
      });
    }
  });
})();
