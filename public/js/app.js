// Orders: what htmx does not give (combobox keys, focus after a swap,
// shortcuts, live updates that spare forms in progress). The CSP forbids
// inline script, and every page works without this file. The server names
// what it works on with data- attributes (routes/resource.go), never by a
// resource's ids or a label's words.
(() => {
  "use strict";
  document.documentElement.classList.add("js");

  // ---- Time zone ----
  // Pages write times in the browser's zone: the tz cookie names it (an
  // IANA name), and the server falls back to UTC, labelled, without one.
  // The page that sets it first was drawn in UTC; the next one is local.
  try {
    const zone = Intl.DateTimeFormat().resolvedOptions().timeZone;
    const has = document.cookie.split("; ").includes("tz=" + zone);
    if (zone && /^[A-Za-z0-9_+\/-]{1,64}$/.test(zone) && !has) {
      document.cookie = "tz=" + zone + "; path=/; max-age=31536000; samesite=lax" +
        (location.protocol === "https:" ? "; secure" : "");
    }
  } catch { /* no Intl: the pages stay in UTC and say so */ }

  if (!window.htmx) return;

  const $ = (sel, root = document) => root.querySelector(sel);
  const $$ = (sel, root = document) => [...root.querySelectorAll(sel)];
  const on = (type, fn, capture) => document.addEventListener(type, fn, capture);
  const closest = (e, sel) => e.target.closest?.(sel);
  const attrs = (el, o) => { for (const k in o) el.setAttribute(k, o[k]); return el; };
  const ext = (name, hooks) => htmx.registerExtension(name, hooks);
  // focusOn focuses el, focusable by script only if it takes no focus.
  function focusOn(el, opts) {
    if (!el) return;
    if (!el.hasAttribute("tabindex")) el.setAttribute("tabindex", "-1");
    el.focus(opts);
  }
  // speak sets a live region's words; the same words again are still news.
  const speak = (el, text) => { el.textContent = el.textContent === text ? text + "\u00a0" : text; };
  const results = () => $("[data-results]");
  const isResults = (el) => el?.nodeType === 1 && el.hasAttribute("data-results");

  // ---- Forms ----
  // Money as text → an amount in units of 10^-scale (scale: the currency's
  // decimals, at least two), as BigInt: integer arithmetic only, never a
  // float. null for text with more decimals than the currency has.
  const digitsOf = (tbody) => parseInt(tbody?.getAttribute("data-money-digits") ?? "2", 10);
  function units(text, d) {
    const m = /^\s*(\d{1,7})(?:\.(\d+))?\s*$/.exec(text || "");
    if (!m || (m[2] || "").length > d) return null;
    const scale = Math.max(d, 2);
    return BigInt(m[1]) * 10n ** BigInt(scale) + BigInt((m[2] || "").padEnd(scale, "0"));
  }
  // money prints an amount as the server does: the currency's decimals,
  // the whole part in groups of three ("12,345.00", "350").
  function money(u, d) {
    const scale = BigInt(Math.max(d, 2)), unit = 10n ** scale;
    const whole = (u / unit).toString().replace(/\B(?=(\d{3})+$)/g, ",");
    const frac = (u % unit).toString().padStart(Number(scale), "0").slice(0, d);
    return frac ? whole + "." + frac : whole;
  }

  // Line and order totals as one types: a preview; the server's are the truth.
  function updateTotals(tbody) {
    if (!tbody) return;
    let total = 0n, ok = true;
    const d = digitsOf(tbody);
    $$("tr.item-row", tbody).forEach((row) => {
      const q = $("input[name$='[quantity]']", row), p = $("input[name$='[unit_price]']", row);
      const qv = q && /^\s*\d{1,7}\s*$/.test(q.value) ? BigInt(q.value.trim()) : null;
      const pv = p ? units(p.value, d) : null;
      const line = qv !== null && pv !== null ? qv * pv : null;
      $("output.line-total", row).textContent = line === null ? "–" : money(line, d);
      if (line !== null) total += line;
      else if (q?.value.trim() || p?.value.trim()) ok = false;
    });
    const t = tbody.closest("table")?.querySelector("tfoot output");
    if (t) t.textContent = ok ? money(total, d) : "–";
  }
  const enhance = () => updateTotals($("[data-max-rows]"));
  on("DOMContentLoaded", enhance);
  on("htmx:after:swap", enhance);
  on("input", (e) => updateTotals(closest(e, "[data-max-rows]")));

  // Item rows come from the server (Add's and Remove's hx-get): focus goes
  // to the first row added, or the Remove of the row before one removed.
  // (Extension hooks: a removed row's events never reach the document.)
  ext("orders-rows", {
    htmx_config_request(elt, d) {
      const b = d.ctx.sourceElement, tbody = b.form?.querySelector("[data-max-rows]");
      if (!tbody || !b.matches("[data-add-row], [data-remove-row]")) return;
      // The number of rows before an Add; -1 - the index of a Remove's row.
      d.ctx.rowAt = b.matches("[data-add-row]") ? tbody.rows.length : -1 - [...tbody.rows].indexOf(b.closest("tr"));
      // A row the picker asks for leaves the focus where the person is.
      d.ctx.keepFocus = b._keepFocus;
      b._keepFocus = false;
    },
    htmx_after_swap(elt, d) {
      const at = d.ctx.rowAt, tbody = at !== undefined && document.getElementById(d.ctx.target.id);
      if (!tbody) return;
      updateTotals(tbody);
      if (d.ctx.keepFocus) return;
      const row = tbody.rows[at >= 0 ? Math.min(at, tbody.rows.length - 1) : Math.max(0, -2 - at)];
      row?.querySelector(at >= 0 ? "input" : "[data-remove-row]")?.focus();
    }
  });

  // Escape leaves an inline row edit without saving.
  on("keydown", (e) => {
    const cancel = e.key === "Escape" && closest(e, "form.row-form")?.querySelector("a[hx-get]");
    if (cancel) { e.preventDefault(); cancel.click(); }
  });

  // ---- Focus after an action ----
  // A swap that took the focused element away never leaves focus on the
  // body: it goes to the first field with an error, else the updated row
  // (its Edit link, or an inline form's first field), else, after a swap
  // of #main or the body, the heading. A live update is nobody's action.
  // (An extension hook: a swapped row's events never reach the document.)
  function focusField(el) {
    el.focus();
    if (el.setSelectionRange && /^(text|search|email|tel|url)$/.test(el.type)) {
      try { el.setSelectionRange(el.value.length, el.value.length); } catch (err) { /* email inputs may refuse */ }
    }
  }
  ext("orders-focus", {
    htmx_after_swap(elt, d) {
      const t = d?.ctx?.target;
      if (t?.nodeType !== 1 || d.ctx.live) return;
      const root = t.isConnected ? t : t.id && document.getElementById(t.id);
      if (!root) return; // a removed row: the List section moves focus
      const isRow = root.tagName === "TR" && !!root.parentElement?.hasAttribute("data-rows");
      if (!isRow && root !== document.body && root.tagName !== "MAIN") return;
      const invalid = $("[aria-invalid='true']", root), a = document.activeElement;
      if (invalid) return focusField(invalid);
      if (a && a !== document.body && a.isConnected) return;
      if (!isRow) return focusOn($("h1", root) || $("main h1"));
      const field = $("form.row-form input:not([type=hidden])", root);
      if (field) focusField(field);
      else ($("a[href$='/edit']", root) || $("a[href]", root))?.focus();
    }
  });

  // ---- List and Inquiry: busy state, focus after paging, sorting and deleting ----
  const rowSel = "[data-rows] > tr, [data-results] [data-entry]";
  const listRows = () => $$(rowSel);
  const currentRow = () => document.activeElement?.closest?.(rowSel) || $("[data-results] .is-current");

  // Does a request swap the results (its target, or its source)?
  function aimsAtResults(ctx) {
    const t = ctx?.target;
    if (t?.nodeType === 1) return isResults(t);
    if (typeof t === "string") { try { return isResults($(t.trim())); } catch (err) { return false; } }
    return isResults(ctx?.sourceElement);
  }
  // aria-busy (a bar, a dimmed table) while htmx marks them as an indicator.
  function updateBusy() {
    const r = results();
    if (r?.classList.contains("htmx-request")) r.setAttribute("aria-busy", "true");
    else r?.removeAttribute("aria-busy");
  }

  // Shareable URLs: the search form's empty fields stay out of them.
  on("htmx:config:request", (e) => {
    const ctx = e.detail?.ctx, body = ctx?.request?.body;
    if (!aimsAtResults(ctx) || !(body instanceof FormData)) return;
    new Set([...body.keys()]).forEach((k) => { if (body.getAll(k).every((v) => v === "")) body.delete(k); });
    // The List shows what its search box says: a query already asked for
    // (Enter and the box's search event after typing) is not asked again,
    // and any other is, the same text typed again after Escape too (htmx's
    // "changed" would remember the text from before the Escape).
    const q = listQuery(ctx.request.action, body);
    if (ctx.sourceElement?.closest?.("form#search") && q === (asked ?? listQuery(results()?.getAttribute("hx-get") || location.href))) {
      e.preventDefault();
      return;
    }
    asked = q;
  });
  // asked is the query of the last request for the results (null: the
  // one the results show); listQuery writes a query one way only.
  let asked = null;
  function listQuery(action, body) {
    const u = new URL(action, location.href), p = [];
    if (body) { for (const k of body.keys()) u.searchParams.delete(k); for (const [k, v] of body) u.searchParams.append(k, v); }
    for (const [k, v] of u.searchParams) if (v !== "" && !(k === "page" && v === "1")) p.push(encodeURIComponent(k) + "=" + encodeURIComponent(v));
    return u.pathname + "?" + p.sort().join("&");
  }
  ["htmx:before:history:restore", "htmx:response:error", "htmx:error"].forEach((t) => on(t, () => { asked = null; }));

  // Once new results arrive: "page" focuses the summary (scrolled to), "sort"
  // the same header, "delete" the row that took the deleted one's place.
  let after = null;
  on("htmx:before:request", (e) => {
    const ctx = e.detail?.ctx, src = ctx?.sourceElement;
    if (!ctx) return;
    const row = src?.closest?.("[data-rows] > tr");
    if (row && /delete/i.test(ctx.request?.method || "")) { after = { kind: "delete", index: listRows().indexOf(row) }; return; }
    if (!aimsAtResults(ctx)) return;
    if (src?.closest?.("[data-results] .pager, [data-results] .results-head")) after = { kind: "page" };
    else if (src?.matches?.("a.sort")) after = { kind: "sort", index: $$("[data-results] thead th").indexOf(src.closest("th")) };
    else if (src && !isResults(src)) after = null; // the search form: focus stays where one types
    updateBusy();
  });
  // htmx takes its class away after this event.
  on("htmx:finally:request", () => setTimeout(updateBusy));
  // The new results, once swapped in, are processed (and in the page).
  on("htmx:after:process", (e) => {
    const r = e.target, a = after;
    if (!isResults(r)) return;
    updateBusy();
    after = null;
    if (a?.kind === "page") {
      if (r.getBoundingClientRect().top < 0 || window.scrollY > r.offsetTop) r.scrollIntoView({ block: "start" });
      document.getElementById("results-count")?.focus({ preventScroll: true });
    } else if (a?.kind === "sort") {
      r.querySelectorAll("thead th")[a.index]?.querySelector("a")?.focus();
    } else if (a?.kind === "delete") {
      const rows = listRows(), next = rows[Math.min(a.index, rows.length - 1)];
      (next ? $("a", next) : document.getElementById("results-count"))?.focus();
    }
  });

  // Shortcuts: / search, n new, j and k next and previous row (not one
  // being edited), e edit it, ? list them; none while typing or in a dialog.
  function moveRow(step) {
    const rows = listRows().filter((r) => !r.classList.contains("editing"));
    let i = rows.indexOf(currentRow());
    i = i < 0 ? (step > 0 ? 0 : rows.length - 1) : Math.max(0, Math.min(rows.length - 1, i + step));
    rows.forEach((r) => r.classList.toggle("is-current", r === rows[i]));
    rows[i]?.querySelector("a")?.focus();
  }
  function editRow() {
    const row = currentRow();
    if (!row || row.classList.contains("editing")) return;
    const edit = $("a[href$='/edit']", row), show = $("a[href]", row);
    // An Inquiry entry has no Edit link: its heading links to the member.
    if (edit) edit.click();
    else if (show) window.location.assign(show.getAttribute("href") + "/edit");
  }
  // The dialog lists "e" only for a person who may edit what the page lists.
  const canEdit = () => !!$("#shortcuts-template")?.content.querySelector("[data-shortcut-edit]");
  // The dialog comes from the layout's template; closed, it gives focus back.
  let returnFocus = null;
  function showShortcuts() {
    let d = $("#shortcuts");
    const t = $("#shortcuts-template");
    if (!d && t) {
      document.body.appendChild(t.content.cloneNode(true));
      d = $("#shortcuts");
      $("[data-close]", d).addEventListener("click", () => d.close());
      d.addEventListener("close", () => { if (returnFocus?.isConnected) returnFocus.focus(); returnFocus = null; });
    }
    if (!d || d.open) return;
    returnFocus = document.activeElement;
    d.showModal();
  }
  // The header's hint opens the same dialog (without JavaScript it unfolds).
  on("click", (e) => { if (closest(e, ".shortcuts-hint > summary")) { e.preventDefault(); showShortcuts(); } });
  const typing = (el) => !!el && el !== document.body && (el.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(el.tagName));
  on("keydown", (e) => {
    if (e.defaultPrevented || e.ctrlKey || e.altKey || e.metaKey || e.isComposing) return;
    // Down from the search box goes to the first row, where j and k go on.
    if (e.key === "ArrowDown" && e.target.id === "q" && listRows().length) {
      $$("[data-results] .is-current").forEach((r) => r.classList.remove("is-current"));
      e.preventDefault();
      return moveRow(1);
    }
    if (typing(e.target) || typing(document.activeElement) || $("dialog[open]")) return;
    const q = $("#q"), create = $("a[data-shortcut='n']"), rows = listRows().length;
    const act = { "/": q && (() => { q.focus(); q.select(); }), n: create && (() => window.location.assign(create.getAttribute("href"))),
      j: rows && (() => moveRow(1)), k: rows && (() => moveRow(-1)), e: currentRow() && canEdit() && editRow, "?": showShortcuts }[e.key];
    if (act) { e.preventDefault(); act(); }
  });
  // The highlighted row follows focus.
  on("focusin", (e) => {
    const row = closest(e, rowSel);
    $$("[data-results] .is-current").forEach((r) => { if (r !== row) r.classList.remove("is-current"); });
    row?.classList.add("is-current");
  });

  // ---- Notices ----
  // Dismissed (its button under html.js, or Escape), a notice's region
  // stays for the next one, and focus in it goes to the heading.
  function dismiss(notice) {
    const hadFocus = notice.contains(document.activeElement);
    (notice.closest(".notice-region") || notice).replaceChildren();
    if (hadFocus) focusOn($("main h1") || $("main"));
  }
  on("click", (e) => { const b = closest(e, "[data-dismiss-notice]"); if (b) dismiss(b.closest(".notice") || b); });
  on("keydown", (e) => { const n = e.key === "Escape" && closest(e, ".notice"); if (n) { e.preventDefault(); dismiss(n); } });
  // A notice shows once, not again from the back/forward cache.
  window.addEventListener("pageshow", (e) => e.persisted && $$(".notice-region").forEach((r) => r.replaceChildren()));

  // ---- Pickers ----
  // A picker field (an item's SKU or name, the customer) is a WAI-ARIA 1.2
  // combobox: htmx asks for the options (hx-get, hx-trigger, hx-sync), the
  // server renders them with the values they fill in; this adds the
  // listbox, roles, states and keys. Without JavaScript: plain text fields.
  let pending = null; // {input, step}: an arrow key waiting for the list
  const isPicker = (el) => !!el?.matches?.("input[data-product-picker]");
  const listOf = (input) => document.getElementById(input.id + "-products");
  const isOpen = (input) => input.getAttribute("aria-expanded") === "true";
  // What the field picks, as the server names it, one or (many) several.
  const noun = (input, many) => input.getAttribute(many ? "data-picker-nouns" : "data-picker-noun");
  const options = (input) => (listOf(input) ? $$("[role=option]", listOf(input)) : []);

  // The layout's polite region says how many match.
  const announce = (input, text) => speak($("[data-product-status]"), text);

  // setup gives a field its listbox (right after it: the hx-target of its
  // requests) and the combobox's role and states.
  function setup(input) {
    const id = input.id + "-products", label = noun(input, true);
    if (!listOf(input)) input.after(attrs(document.createElement("div"), { id, class: "product-options", hidden: "",
      "data-product-options": "", role: "listbox", "aria-label": label.charAt(0).toUpperCase() + label.slice(1) }));
    attrs(input, { role: "combobox", "aria-autocomplete": "list", "aria-controls": id, "aria-expanded": isOpen(input) });
    input.parentElement.classList.add("product-picker");
  }
  const setupAll = () => $$("input[data-product-picker]").forEach(setup);
  on("DOMContentLoaded", setupAll);

  function close(input) {
    const l = listOf(input);
    if (l) { l.hidden = true; l.replaceChildren(); }
    input.setAttribute("aria-expanded", "false");
    input.removeAttribute("aria-activedescendant");
  }
  // activate makes option i the active one (-1: none).
  function activate(input, i) {
    const opts = options(input);
    opts.forEach((o, k) => o.setAttribute("aria-selected", k === i ? "true" : "false"));
    if (!opts[i]) return input.removeAttribute("aria-activedescendant");
    input.setAttribute("aria-activedescendant", opts[i].id);
    opts[i].scrollIntoView({ block: "nearest" });
  }
  // show opens the list the server's options were swapped into.
  // formCurrency is the currency of an item field's order form, or null
  // (not an item field).
  function formCurrency(input) {
    const c = input.closest("tr") && input.form?.querySelector("[name=currency]");
    return c ? c.value.trim().toUpperCase() : null;
  }
  // A product in another currency than the order's says so in its option.
  function markCurrencies(input, opts) {
    const cur = formCurrency(input);
    opts.forEach((o) => {
      const c = o.getAttribute("data-currency");
      if (!cur || !c || c === cur || $(".product-option-warning", o)) return;
      o.append(attrs(document.createElement("span"), { class: "product-option-warning" }));
      o.lastChild.textContent = `Priced in ${c}, not ${cur}: the price is not copied`;
    });
  }
  function show(input) {
    const opts = options(input), n = opts.length, step = pending?.input === input ? pending.step : 0;
    pending = null;
    markCurrencies(input, opts);
    if (!n) announce(input, "No " + noun(input) + " matches");
    if (!n || document.activeElement !== input) return close(input);
    opts.forEach((o, i) => { o.id = input.id + "-products-" + i; });
    listOf(input).hidden = false;
    input.setAttribute("aria-expanded", "true");
    input.removeAttribute("aria-activedescendant");
    const total = parseInt(opts[0].getAttribute("data-total"), 10) || n;
    announce(input, total > n ? `${n} of ${total}${opts[0].hasAttribute("data-more") ? " or more" : ""} matching ${noun(input, true)} shown` :
      n === 1 ? "1 " + noun(input) + " matches" : n + " " + noun(input, true) + " match");
    if (step) activate(input, step > 0 ? 0 : n - 1);
  }
  // choose copies o into its row's fields (outside the rows: the form's),
  // as if typed, and moves on to the first field it does not fill.
  // A product in another currency fills SKU and name but never its price:
  // the price field is left empty, to be typed in the order's currency, and
  // a warning under the items says why. Choosing a product fills quantity 1
  // when the quantity is empty, and choosing one in the last row adds an
  // empty row after it (the Add item row button's request).
  const typed = (el, v) => {
    el.value = v;
    ["input", "change"].forEach((t) => el.dispatchEvent(new Event(t, { bubbles: true })));
  };
  function choose(input, o) {
    close(input);
    const inRow = input.closest("tr"), row = inRow || input.form || document;
    const cur = formCurrency(input), theirs = o.getAttribute("data-currency");
    const foreign = !!(cur && theirs && theirs !== cur);
    $$("[data-product-field]", row).forEach((el) => {
      const field = el.getAttribute("data-product-field");
      const v = o.getAttribute("data-" + field);
      if (v === null || (!inRow && el.closest("tr"))) return;
      typed(el, foreign && field === "unit_price" ? "" : v);
    });
    const warning = inRow && input.form.querySelector("[data-picker-warning]");
    if (warning) {
      warning.hidden = !foreign;
      warning.textContent = foreign ? `${o.getAttribute("data-name")} is priced in ${theirs} (${o.getAttribute("data-unit_price")} ${theirs}), ` +
        `not in this order's ${cur}: its price was not copied. Type the unit price in ${cur}.` : "";
    }
    const qty = inRow && $("input[name$='[quantity]']", inRow);
    if (qty && !qty.value.trim()) typed(qty, "1");
    announce(input, foreign ? warning?.textContent || "" :
      o.getAttribute("data-chosen") || `${o.getAttribute("data-name")} chosen: SKU ${o.getAttribute("data-sku")}, unit price ${o.getAttribute("data-unit_price")}`);
    const price = inRow && $("input[name$='[unit_price]']", inRow);
    const next = foreign && price ? price : $("input:not([type=hidden]):not([data-product-field]):not([readonly])", row);
    (next || input).focus();
    next?.select?.();
    const tbody = inRow?.parentElement, add = tbody && input.form.querySelector("[data-add-row]");
    if (add && inRow === tbody.rows[tbody.rows.length - 1] && tbody.rows.length < parseInt(tbody.getAttribute("data-max-rows"), 10)) {
      add._keepFocus = true;
      add.click();
    }
  }

  ext("orders-picker", {
    // Ask for what the field holds (q), only while one types in it, not
    // after the list was closed for these words; a failure is silent.
    htmx_config_request(elt, d) {
      const ctx = d.ctx, input = ctx.sourceElement;
      if (!isPicker(input)) return;
      const term = input.value.trim();
      if (!term || document.activeElement !== input || (input._closedAt === term && ctx.sourceEvent.type !== "picker:open")) {
        if (!term) close(input);
        return false;
      }
      ctx.pickerTerm = term;
      ctx.request.body.delete(input.name);
      ctx.request.body.set("q", term);
      ctx.fetch = (url, opts) => window.fetch(url, opts).catch(() => {
        if (!opts.signal.aborted) close(input);
        return new Response(null, { status: 204 });
      });
    },
    // Only the answer for what the field holds counts, in the listbox alone.
    htmx_before_swap(elt, d) {
      const ctx = d.ctx, input = ctx.sourceElement;
      if (!isPicker(input)) return;
      if (ctx.request.signal.aborted || input.value.trim() !== ctx.pickerTerm) return false;
      if (ctx.response.status !== 200) { close(input); return false; }
      dropPartials(d.tasks);
      if (!d.tasks.length) listOf(input).replaceChildren(); // nothing matches
    },
    htmx_after_swap(elt, d) {
      if (isPicker(d.ctx.sourceElement)) show(d.ctx.sourceElement);
      else setupAll();
    }
  });
  // dropPartials keeps an answer's notices out of the notices' regions.
  const dropPartials = (tasks) => { for (let i = tasks.length; i--;) if (tasks[i].type === "partial") tasks.splice(i, 1); };

  on("input", (e) => {
    const input = e.target;
    if (!isPicker(input)) return;
    // Typing in the customer drops the link a chosen option made.
    if (e.isTrusted && !input.closest("tr") && input.form) $$("[data-picker-link]", input.form).forEach((el) => { el.value = ""; });
    if (!input.value.trim()) close(input);
    else activate(input, -1); // the list is about to change
  });
  on("focusout", (e) => { if (isPicker(e.target)) { htmx.trigger(e.target, "htmx:abort"); close(e.target); } });
  // The keys, heard first (capture): an Enter that chooses does not submit,
  // an Escape that closes the list does not leave an inline edit.
  on("keydown", (e) => {
    const input = e.target;
    if (!isPicker(input) || e.isComposing || e.ctrlKey || e.metaKey || e.altKey) return;
    const open = isOpen(input), opts = options(input), n = opts.length;
    const i = opts.findIndex((o) => o.getAttribute("aria-selected") === "true");
    if (e.key === "ArrowDown" || e.key === "ArrowUp") {
      const step = e.key === "ArrowDown" ? 1 : -1;
      if (open) activate(input, i < 0 ? (step > 0 ? 0 : n - 1) : (i + step + n) % n);
      else if (!input.value.trim()) return;
      else {
        pending = { input, step }; // open it, then move
        input._closedAt = null;
        htmx.trigger(input, "picker:open");
      }
    } else if (e.key === "Enter") {
      if (!open) return; // Enter saves, as in any field
      if (i < 0) return close(input);
      choose(input, opts[i]);
    } else if (e.key === "Escape") {
      // A second Escape (nothing shown or coming) is the page's.
      if (!open && !listOf(input).classList.contains("htmx-request")) return;
      input._closedAt = input.value.trim();
      htmx.trigger(input, "htmx:abort");
      close(input);
    } else {
      return; // Tab leaves the field as always; focusout closes the list.
    }
    e.preventDefault();
    e.stopPropagation();
  }, true);
  // A click chooses; pressing on the list keeps the focus in the field.
  on("mousedown", (e) => { if (closest(e, "[data-product-options]")) e.preventDefault(); });
  on("click", (e) => { const o = closest(e, "[data-product-options] [role=option]"); if (o) choose(o.parentElement.previousElementSibling, o); });

  // ---- Live updates ----
  // The layout holds the event stream ([data-live-stream], hx-sse:connect:
  // the SSE extension reconnects with Last-Event-ID and fires created,
  // updated, deleted and reset on it), the polite region [data-live-news]
  // and template#live-pieces. What shows a member has data-live-id,
  // -version, -src (a fetch answering with it; hx-select picks it out) and
  // data-live: row, entry and page are morphed from -src (a form typed in
  // is kept and says so); a form is never replaced, but says its record
  // changed, with Compare: a submit at its stale version, answered by the
  // 409 comparison. Only newer versions are fetched, not while the person's
  // own request about the member is in flight. A live request (ctx.live)
  // leaves notices and focus alone, and swaps no error.
  let known = new Map(); // id -> {version, gone}: what the stream said
  const busy = {}; // id -> the person's requests in flight
  const kept = new Set(); // what a live morph leaves alone
  let fresh = null; // {results, ids}: new members not shown
  let retryDelay = 0;
  const isStream = (el) => el?.nodeType === 1 && el.hasAttribute("data-live-stream");
  // The resource's words, from the server.
  const word = (name) => $("[data-live-stream]")?.getAttribute("data-live-" + name) || "";
  const named = (id) => word("title") + " " + id;
  const members = (id) => $$(`[data-live-id="${id}"]`);
  const piece = (sel) => $("#live-pieces")?.content.querySelector(sel).cloneNode(true);
  const isID = (s) => /^\d+$/.test(s);

  // The region changes at most every newsGap ms, to the latest words: a
  // screen reader reads every change, and a burst would take minutes.
  const newsGap = 800;
  let newsAt = 0, newsTimer = 0, news = {};
  function publish(name, write) {
    news[name] = write;
    if (!newsTimer) newsTimer = setTimeout(flushNews, Math.max(0, newsAt + newsGap - Date.now()));
  }
  function flushNews() {
    const writes = Object.values(news), r = $("[data-live-news]");
    news = {};
    newsTimer = 0;
    newsAt = Date.now();
    if (r) writes.forEach((w) => w(r));
  }
  const say = (text) => publish("said", (r) => speak($("[data-live-said]", r) || r.appendChild(piece("[data-live-said]")), text));
  function showLink(text, label) {
    if (!text) { // gone at once (the person pressed show): nothing is to be read
      delete news.count;
      return $("[data-live-news] [data-live-count]")?.remove();
    }
    publish("count", (r) => {
      const p = piece("[data-live-count]"), old = $("[data-live-count]", r);
      $("span", p).textContent = text;
      $("button", p).setAttribute("aria-label", label);
      if (old) old.replaceWith(p); else r.prepend(p);
    });
  }
  function showCount() {
    const n = fresh && fresh.results === results() ? fresh.ids.size : 0, one = n === 1;
    const where = { search: one ? " (this search may not include it)" : " (this search may not include them)",
      page: one ? " (it may be on another page)" : " (they may be on other pages)" }[fresh?.results.dataset.liveNewUnsure] || "";
    showLink(n && `${n} new ${one ? word("one") : word("many")}${where}`, "Show the " + (one ? "new " + word("one") : n + " new " + word("many")));
  }

  // countNew counts a member created elsewhere unless shown, deleted, or
  // left out by the list's filters (status, active, the UTC dates). The
  // server says where new ones show (data-live-new-url, -unsure).
  function countNew(id, d) {
    const r = results();
    if (!r || members(id).length || known.get(id)?.gone) return;
    if (fresh?.results !== r) fresh = { results: r, ids: new Set() };
    if (fresh.ids.has(id)) return;
    const q = new URL(r.getAttribute("hx-get") || location.href, location.href).searchParams;
    const today = new Date().toISOString().slice(0, 10);
    if (Object.keys(d).some((k) => k !== "id" && k !== "version" && q.get(k) && q.get(k) !== String(d[k]))) return;
    if ((q.get("from") || "") > today || (q.get("to") && q.get("to") < today)) return;
    fresh.ids.add(id);
    showCount();
  }

  // A form typed in: a field differs from the value it came with.
  const edited = (form) => [...form.elements].some((f) => {
    if (/^(hidden|submit|button)$/.test(f.type) || f.disabled) return false;
    if (f.type === "checkbox" || f.type === "radio") return f.checked !== f.defaultChecked;
    if (f.tagName === "SELECT") return [...f.options].some((o) => o.selected !== o.defaultSelected);
    return typeof f.defaultValue === "string" && f.value !== f.defaultValue;
  });
  // What a morph of root leaves as it is: its member forms and forms typed in.
  const inProgress = (root) => !root?.querySelectorAll ? [] : [
    ...(root.matches("[data-live='form']") ? [root] : []), ...$$("[data-live='form']", root),
    ...$$("form", root).filter((f) => !f.closest("[data-live='form']") && edited(f))];

  // notice says in a form what became of its record, with Compare or not;
  // a later notice changes the words in place (focus may be on Compare).
  function notice(form, text, compare) {
    let n = $("[data-live-notice]", form);
    if (!n) { // after the hidden fields, the default button and a 409's view
      n = piece("[data-live-notice]");
      form.insertBefore(n, [...form.children].find((c) => !c.matches("input[type=hidden], .default-submit, .conflict")) || null);
    }
    $("p", n).textContent = text;
    if (!compare) $("[data-live-compare]", n)?.remove();
  }
  const changed = (id, v) => `${named(id)} was changed elsewhere \u2014 now version ${v}.`;

  // note keeps what the stream said of member id (past 2000 members, only
  // of those shown) and brings what shows it up to that.
  function note(id, version, gone) {
    let k = known.get(id);
    if (!k) {
      if (known.size >= 2000) known = new Map([...known].filter(([i]) => members(i).length));
      known.set(id, (k = { version: 0, gone: false }));
    }
    k.version = Math.max(k.version, version);
    if (gone && !k.gone) {
      k.gone = true;
      if (fresh?.ids.delete(id)) showCount(); // a new one deleted before it was shown
    }
    members(id).forEach(reconcile);
  }
  const reconcileAll = () => $$("[data-live-id]").forEach(reconcile);
  function reconcile(el) {
    const id = el.dataset.liveId, k = known.get(id);
    if (!k || busy[id]) return;
    if (k.gone) return markGone(el, id);
    if (k.version <= (parseInt(el.dataset.liveVersion, 10) || 0) || el._liveAsked >= k.version) return;
    el._liveAsked = k.version;
    if (el.dataset.live === "form") {
      const form = $("form", el);
      if (form) notice(form, changed(id, k.version) + " Compare shows yours beside theirs; nothing is saved.", true);
      return say(changed(id, k.version));
    }
    if (el.dataset.live === "page") say(changed(id, k.version));
    htmx.ajax("GET", el.dataset.liveSrc, { source: el, target: el, swap: "outerMorph", live: id, liveVersion: k.version }).catch(() => {});
  }
  // relive asks again, later, for what a live request did not bring: the
  // stream will not say that version again.
  function relive(ctx) {
    const el = ctx.sourceElement;
    if (!el || !isID(ctx.live)) return;
    el._liveAsked = 0;
    el._liveRetry = Math.min((el._liveRetry || 500) * 2, 30000);
    setTimeout(() => el.isConnected && reconcile(el), el._liveRetry);
  }

  // markGone marks a deleted member and disables its actions; a form keeps
  // its text but cannot save; focus on what it disables goes to the news.
  function markGone(el, id) {
    if (el.hasAttribute("data-live-gone")) return;
    el.setAttribute("data-live-gone", "");
    const focused = el.contains(document.activeElement) ? document.activeElement : null;
    const kind = el.dataset.live, text = named(id) + " was deleted elsewhere.", form = $("form", el);
    let to = el;
    if (kind === "form") {
      if (form) notice(form, text + " It can no longer be saved.", false);
      // Its buttons and a 409 comparison's (form=, Keep theirs); the 409's
      // warning no longer holds.
      [...(form?.elements || []), ...$$("button", el)].forEach((b) => { if (b.matches("button[type=submit], button:not([type])")) b.disabled = true; });
      $$(".conflict-choices a", el).forEach((a) => { a.inert = true; });
      if ($(".conflict", el)) $$(".notice-region .notice-warning").forEach((n) => n.remove());
      to = form && $("[data-live-notice] p", form);
    } else {
      el.classList.add("gone");
      const badge = $(".badge", el);
      if (badge) Object.assign(badge, { className: "badge badge-gone", textContent: "Deleted" });
      $$("button", el).forEach((b) => { b.disabled = true; });
      $$("a.button, a[hx-get]", el).forEach((a) => { a.inert = true; });
      $$("form", el).forEach((f) => {
        if ($("[data-live-notice]", f) || edited(f)) notice(f, text + " Your text is kept, but it can no longer be saved.", false);
      });
      if (kind !== "page") return refocus(focused, el); // a row: its Deleted badge is read
      to = piece(".live-gone-note");
      $("span", to).textContent = text;
      if ($(".page-head", el)) $(".page-head", el).after(to); else el.prepend(to);
      addGoneEntry(el);
    }
    refocus(focused, to);
    say(text);
  }
  // refocus moves focus from was, if markGone took it away, to to.
  function refocus(was, to) {
    if (was && to && (was.disabled || was.closest("[inert]"))) focusOn(to, { preventScroll: true });
  }
  // addGoneEntry heads a deleted record's timeline (the latest five) with
  // the delete's entry, as the server wrote it.
  function addGoneEntry(el) {
    const list = $(".history ol.timeline", el);
    if (!list) return;
    fetch(el.dataset.liveSrc + "/history", { headers: { Accept: "text/html" } }).then((res) => (res.ok ? res.text() : "")).then((html) => {
      const li = new DOMParser().parseFromString(html, "text/html").querySelector("ol.timeline > li:first-child.entry-deleted");
      if (!li || !list.isConnected || $(".entry-deleted", list)) return;
      const shown = $$("li.entry:not(.muted)", list).length;
      $$("li.muted", list).forEach((m) => m.remove());
      list.prepend(document.importNode(li, true));
      if (shown >= 5) list.lastElementChild.remove();
    }).catch(() => {});
  }

  // reset (a cursor the server no longer has): each record shown on its own
  // is asked its version; the results are fetched again, or, with a form
  // open in them, the region offers to.
  function reset() {
    $$("[data-live='page'], [data-live='form']").forEach((el) => {
      const id = el.dataset.liveId;
      fetch(el.dataset.liveSrc, { headers: { Accept: "application/json" } }).then((res) => {
        if (res.status === 404) return note(id, 0, true);
        if (res.ok) return res.json().then((m) => typeof m?.version === "number" && note(id, m.version, false));
      }).catch(() => {});
    });
    if (!inProgress(results()).length) return refreshResults();
    fresh = null;
    showLink("This list may be out of date", "Show the current " + word("many"));
  }
  // refreshResults morphs in the results fetched again (or those at to,
  // which becomes the address): rows and focus stay, forms in progress too.
  function refreshResults(to) {
    const r = results(), url = r?.getAttribute("hx-get");
    if (!url) return;
    fresh = null;
    showCount();
    htmx.ajax("GET", to || url, { source: r, target: r, swap: "outerMorph", select: "#" + CSS.escape(r.id), live: "results", push: to && to !== url ? to : undefined }).catch(() => {});
  }
  // show: the button goes with its words; focus goes to the results' summary.
  on("click", (e) => {
    if (!closest(e, "[data-live-show]")) return;
    document.getElementById("results-count")?.focus();
    refreshResults(fresh?.results === results() ? results().dataset.liveNewUrl : null);
    showLink("");
  });

  // The stream's events. The id is read as sent: ids reach 18 digits,
  // past a JavaScript number.
  ["created", "updated", "deleted", "restored", "reset"].forEach((name) => on(name, (e) => {
    if (!isStream(e.target)) return;
    if (name === "reset") return reset();
    const raw = e.detail?.data || "", m = /"id"\s*:\s*"?([1-9][0-9]{0,17})\b/.exec(raw);
    let d = null;
    try { d = JSON.parse(raw); } catch (err) { return; }
    if (!d || !m) return;
    if (name === "restored") revive(m[1]);
    note(m[1], typeof d.version === "number" ? d.version : 0, name === "deleted");
    if (name === "created" || name === "restored") countNew(m[1], d);
  }));
  // revive: a deleted member was restored (Undo, here or elsewhere), at a
  // version newer than any shown: a row or page marked deleted is fetched
  // again and morphs back; a form can be sent again, and note's reconcile
  // says its record changed, with Compare.
  function revive(id) {
    const k = known.get(id);
    if (k) k.gone = false;
    members(id).forEach((el) => {
      if (!el.hasAttribute("data-live-gone")) return;
      el.removeAttribute("data-live-gone");
      el._liveAsked = 0;
      if (el.dataset.live !== "form") return;
      $$("button[disabled]", el).forEach((b) => { b.disabled = false; });
      $$(".conflict-choices a", el).forEach((a) => { a.inert = false; });
    });
  }
  on("htmx:sse:after:connection", (e) => { if (isStream(e.target)) { retryDelay = 0; e.target.setAttribute("data-live-state", "open"); } });
  on("htmx:sse:close", (e) => { if (isStream(e.target)) e.target.setAttribute("data-live-state", "closed"); });
  // A first connection that failed is tried again, more slowly each time.
  function retry(el) {
    retryDelay = Math.min(retryDelay ? retryDelay * 2 : 1000, 30000);
    setTimeout(() => {
      if (el.isConnected && el.getAttribute("data-live-state") !== "open") htmx.ajax("GET", el.getAttribute("hx-sse:connect"), { source: el }).catch(() => {});
    }, retryDelay);
  }

  // The person's own requests about a member hold its events back.
  on("htmx:before:request", (e) => {
    const ctx = e.detail?.ctx, id = !ctx?.live && !isStream(ctx?.sourceElement) && ctx?.sourceElement?.closest?.("[data-live-id]")?.dataset.liveId;
    if (id) busy[(ctx.liveBusy = id)] = (busy[id] || 0) + 1;
  });
  on("htmx:finally:request", (e) => {
    const id = e.detail?.ctx?.liveBusy;
    if (!id) return;
    e.detail.ctx.liveBusy = null;
    if (--busy[id] <= 0) delete busy[id];
    reconcileAll();
  });
  on("htmx:after:swap", (e) => {
    const ctx = e.detail?.ctx;
    if (ctx && !ctx.live && ctx.target?.tagName === "MAIN") { // a new page: the old news goes
      clearTimeout(newsTimer);
      newsTimer = 0;
      news = {};
      $("[data-live-news]")?.replaceChildren();
    }
    if (fresh && fresh.results !== results()) { fresh = null; showCount(); }
    reconcileAll(); // what a swap brought may be older than the stream said
  });

  ext("orders-live", {
    htmx_after_request(elt, d) {
      const ctx = d.ctx;
      if (isStream(ctx.sourceElement)) { retry(ctx.sourceElement); return false; } // not a stream
      if (!ctx.live) return;
      if (ctx.response.status === 401) return; // signed out: htmx follows HX-Redirect to the sign-in form
      if (ctx.response.status === 404 && isID(ctx.live)) { note(ctx.live, ctx.liveVersion, true); return false; }
      if (ctx.response.status !== 200) { relive(ctx); return false; } // keep what shows
      if (ctx.sourceElement) ctx.sourceElement._liveRetry = 0;
    },
    htmx_error(elt, d) {
      if (isStream(d?.ctx?.sourceElement)) retry(d.ctx.sourceElement);
      else if (d?.ctx?.live) relive(d.ctx);
    },
    htmx_before_swap(elt, d) {
      const ctx = d.ctx;
      if (!ctx.live) return;
      // Without the member (deleted meanwhile) it would swap nothing in.
      if (d.tasks.find((t) => t.type === "main")?.fragment?.firstElementChild === null) return false;
      dropPartials(d.tasks);
      // Forms in progress stay; one typed in says its record changed.
      inProgress(ctx.target).forEach((el) => {
        kept.add(el);
        if (el.tagName === "FORM" && isID(ctx.live)) notice(el, changed(ctx.live, ctx.liveVersion) + " Your text is kept.", false);
      });
      // The current row of j and k stays current.
      ctx.liveCurrent = [ctx.target, ...$$(".is-current", ctx.target)].filter((c) => c.classList.contains("is-current")).map((c) => c.id);
    },
    htmx_before_morph_node(elt, d) {
      if (kept.has(d.oldNode)) return false;
    },
    htmx_finally_swap(elt, d) {
      if (!d.ctx.live) return;
      kept.clear();
      (d.ctx.liveCurrent || []).forEach((id) => id && document.getElementById(id)?.classList.add("is-current"));
    }
  });
})();
