# ruff: noqa: E501
"""The one script the agent puts in a page (as `window.__holm`) to find elements by meaning,
describe them, list the controls and read the page as text. docs/pages.md says the rule
`find` follows; `holm/agent/browser/elements.py` drives it through DevTools."""

from __future__ import annotations

import json

INSTALL = r"""
(() => {
  if (window.__holm && window.__holm.version === 1) return window.__holm.id;
  const ROLES = new Set(["alert", "article", "banner", "button", "cell", "checkbox", "columnheader",
    "combobox", "dialog", "form", "grid", "heading", "img", "link", "list", "listbox", "listitem",
    "main", "menu", "menubar", "menuitem", "menuitemcheckbox", "menuitemradio", "navigation",
    "option", "paragraph", "progressbar", "radio", "region", "row", "rowheader", "searchbox",
    "slider", "spinbutton", "switch", "tab", "table", "tablist", "tabpanel", "textbox",
    "toolbar", "tree", "treeitem"]);
  const CONTROL = "a[href],button,input,select,textarea,summary,[role=button],[role=link]," +
    "[role=checkbox],[role=radio],[role=switch],[role=tab],[role=menuitem],[role=option]," +
    "[role=combobox],[role=textbox],[role=searchbox],[role=slider],[contenteditable=true]," +
    "[contenteditable=''],[tabindex]:not([tabindex='-1'])";
  const ACTIVE = "a[href],button,summary,label,option,[role=button],[role=link],[role=tab]," +
    "[role=menuitem],[role=option],[role=checkbox],[role=radio],[role=switch]";
  const SKIP = new Set(["SCRIPT", "STYLE", "NOSCRIPT", "TEMPLATE", "HEAD", "TITLE", "META",
    "LINK", "HTML"]);
  const norm = s => (s || "").replace(/\s+/g, " ").trim();
  const visible = el => {
    const r = el.getBoundingClientRect();
    if (r.width <= 0 || r.height <= 0) return false;
    const s = getComputedStyle(el);
    return s.visibility !== "hidden" && s.display !== "none" && Number(s.opacity) !== 0;
  };
  const inputRole = el => {
    const t = (el.getAttribute("type") || "text").toLowerCase();
    if (["button", "submit", "reset", "image"].includes(t)) return "button";
    if (t === "checkbox") return "checkbox";
    if (t === "radio") return "radio";
    if (t === "range") return "slider";
    if (t === "number") return "spinbutton";
    if (t === "search") return "searchbox";
    if (t === "hidden") return "";
    if (t === "file") return "button";
    return "textbox";
  };
  const role = el => {
    const explicit = (el.getAttribute("role") || "").trim().split(/\s+/)[0];
    if (explicit) return explicit;
    const tag = el.tagName;
    switch (tag) {
      case "A": return el.hasAttribute("href") ? "link" : "";
      case "BUTTON": case "SUMMARY": return "button";
      case "INPUT": return inputRole(el);
      case "TEXTAREA": return "textbox";
      case "SELECT": return el.multiple || el.size > 1 ? "listbox" : "combobox";
      case "OPTION": return "option";
      case "IMG": return "img";
      case "H1": case "H2": case "H3": case "H4": case "H5": case "H6": return "heading";
      case "UL": case "OL": return "list";
      case "LI": return "listitem";
      case "NAV": return "navigation";
      case "MAIN": return "main";
      case "FORM": return "form";
      case "TABLE": return "table";
      case "TR": return "row";
      case "TD": return "cell";
      case "TH": return "columnheader";
      case "DIALOG": return "dialog";
      case "P": return "paragraph";
      case "ARTICLE": return "article";
    }
    if (el.isContentEditable) return "textbox";
    return "";
  };
  const byIds = ids => norm((ids || "").split(/\s+/).map(id => {
    const e = document.getElementById(id);
    return e ? e.innerText || e.textContent : "";
  }).join(" "));
  const labelsOf = el => el.labels ? norm(Array.from(el.labels).map(l => l.innerText).join(" ")) : "";
  const name = el => {
    const ids = el.getAttribute("aria-labelledby");
    if (ids) { const n = byIds(ids); if (n) return n; }
    const aria = norm(el.getAttribute("aria-label"));
    if (aria) return aria;
    const tag = el.tagName;
    if (tag === "INPUT" || tag === "TEXTAREA" || tag === "SELECT") {
      const t = (el.getAttribute("type") || "").toLowerCase();
      if (["button", "submit", "reset"].includes(t))
        return norm(el.value) || (t === "submit" ? "Submit" : t === "reset" ? "Reset" : "");
      if (t === "image") return norm(el.getAttribute("alt")) || norm(el.title);
      return labelsOf(el) || norm(el.getAttribute("placeholder")) || norm(el.title);
    }
    if (tag === "IMG") return norm(el.getAttribute("alt")) || norm(el.title);
    const text = norm(el.innerText || el.textContent);
    return (text.length > 200 ? text.slice(0, 200) : text) || norm(el.title);
  };
  const valueOf = el => {
    if (el.tagName === "SELECT")
      return Array.from(el.selectedOptions).map(o => norm(o.label || o.text)).join(", ");
    if (el.tagName === "INPUT" || el.tagName === "TEXTAREA") {
      const t = (el.getAttribute("type") || "").toLowerCase();
      if (["checkbox", "radio", "button", "submit", "reset", "image"].includes(t)) return null;
      return t === "password" ? (el.value ? "••••" : "") : el.value;
    }
    if (el.isContentEditable) return norm(el.innerText);
    return null;
  };
  // What a person reading the page sees of a control, its box aside.
  const facts = el => {
    const d = { role: role(el), name: name(el), tag: el.tagName.toLowerCase() };
    const v = valueOf(el);
    if (v !== null) d.value = v;
    const aria = el.getAttribute("aria-checked");
    if ("checked" in el && (el.type === "checkbox" || el.type === "radio")) d.checked = el.checked;
    else if (aria === "true" || aria === "false") d.checked = aria === "true";
    if (el.disabled || el.getAttribute("aria-disabled") === "true") d.disabled = true;
    return d;
  };
  const describe = el => {
    const r = el.getBoundingClientRect();
    return { ...facts(el),
      box: { x: Math.round(r.x * 10) / 10, y: Math.round(r.y * 10) / 10,
        width: Math.round(r.width * 10) / 10, height: Math.round(r.height * 10) / 10 },
      visible: visible(el) };
  };
  const looksLikeSelector = q =>
    /^(css=|xpath=)/.test(q) || /^\(?\.?\/\//.test(q) || /^[#.\[]/.test(q) ||
    /^[a-z][a-z0-9-]*([#.\[:][^\s]*|\s*>\s*.+)$/i.test(q) || /^[a-z][a-z0-9-]*$/.test(q) &&
      ["input", "button", "select", "textarea", "form", "body", "img", "table", "a", "h1",
       "h2", "h3", "iframe", "video", "canvas"].includes(q);
  const bySelector = q => {
    if (q.startsWith("xpath=") || /^\(?\.?\/\//.test(q)) {
      const x = q.startsWith("xpath=") ? q.slice(6) : q;
      const out = [];
      const it = document.evaluate(x, document, null, XPathResult.ORDERED_NODE_SNAPSHOT_TYPE, null);
      for (let i = 0; i < it.snapshotLength; i++) {
        const n = it.snapshotItem(i);
        if (n instanceof Element) out.push(n);
      }
      return out;
    }
    return Array.from(document.querySelectorAll(q.startsWith("css=") ? q.slice(4) : q));
  };
  // How well `text` matches the query: 0 the whole of it, 1 a part, -1 not at all.
  const quality = (text, q, exact) => {
    text = norm(text);
    if (!text) return -1;
    if (exact) return text === q ? 0 : -1;
    const t = text.toLowerCase(), l = q.toLowerCase();
    if (t === l) return 0;
    return t.includes(l) ? 1 : -1;
  };
  // The element a person means when they name this one: the control a label is for, the
  // link or button the text is in.
  const lift = el => {
    const up = el.closest(ACTIVE);
    const chosen = up || el;
    if (chosen.tagName === "LABEL" && chosen.control) return chosen.control;
    return chosen;
  };
  const all = () => Array.from(document.querySelectorAll("body *")).filter(e => !SKIP.has(e.tagName));
  const candidates = (q, exact, wantRole) => {
    const found = new Map();
    const add = (el, qual) => {
      if (wantRole && role(el) !== wantRole) return;
      const had = found.get(el);
      if (had === undefined || qual < had) found.set(el, qual);
    };
    const els = all();
    for (const el of els) {
      let best = -1;
      const attrs = [el.getAttribute("aria-label"), el.getAttribute("placeholder"),
        el.getAttribute("title"), el.getAttribute("alt"), labelsOf(el)];
      const ids = el.getAttribute("aria-labelledby");
      if (ids) attrs.push(byIds(ids));
      if (el.tagName === "INPUT" && ["button", "submit", "reset"].includes(el.type)) attrs.push(el.value);
      for (const a of attrs) {
        const m = quality(a, q, exact);
        if (m >= 0 && (best < 0 || m < best)) best = m;
      }
      if (best >= 0) add(el, best);
    }
    // Visible text: the innermost elements whose text matches, lifted to what they name.
    const texts = new Map();
    for (const el of els) {
      const m = quality(el.innerText, q, exact);
      if (m >= 0) texts.set(el, m);
    }
    for (const [el, m] of texts) {
      let inner = false;
      for (const child of el.children) if (texts.has(child)) { inner = true; break; }
      if (!inner) add(lift(el), m);
    }
    return found;
  };
  const rank = found => Array.from(found.entries()).map(([el, qual]) => {
    const r = el.getBoundingClientRect();
    return { el, qual, vis: visible(el) ? 0 : 1, top: r.top + scrollY, left: r.left + scrollX };
  }).sort((a, b) => a.qual - b.qual || a.vis - b.vis || a.top - b.top || a.left - b.left)
    .map(c => c.el);
  const FITS = {
    editable: el => el.tagName === "TEXTAREA" || el.isContentEditable ||
      el.tagName === "INPUT" && (["textbox", "searchbox", "spinbutton"].includes(inputRole(el)) ||
        ["date", "time", "datetime-local", "month", "week", "color", "range"].includes(el.type)),
    checkable: el => el.tagName === "INPUT" && ["checkbox", "radio"].includes(el.type) ||
      ["checkbox", "radio", "switch"].includes(role(el)),
    select: el => el.tagName === "SELECT",
    file: el => el.tagName === "INPUT" && el.type === "file",
  };
  const find = (query, exact, wantRole, kind) => {
    const els = findAll(query, exact, wantRole);
    const fits = FITS[kind];
    return fits ? [...els.filter(fits), ...els.filter(e => !fits(e))] : els;
  };
  const findAll = (query, exact, wantRole) => {
    const q = norm(query);
    if (looksLikeSelector(q)) {
      try {
        return rank(new Map(bySelector(q).filter(e => !wantRole || role(e) === wantRole).map(e => [e, 0])));
      } catch (e) { /* not a selector after all: a query by meaning */ }
    }
    const words = q.split(" ");
    if (!wantRole && words.length > 1 && ROLES.has(words[0].toLowerCase())) {
      const r = words[0].toLowerCase(), rest = words.slice(1).join(" ");
      const hits = new Map();
      for (const el of all()) {
        if (role(el) !== r) continue;
        const m = quality(name(el), rest, exact);
        if (m >= 0) hits.set(el, m);
      }
      if (hits.size) return rank(hits);
    }
    return rank(candidates(q, exact, wantRole));
  };
  // The controls and headings a snapshot lists, at most `limit`.
  const shown = (scope, limit) => {
    const root = scope || document.body || document.documentElement;
    const els = Array.from(root.querySelectorAll(CONTROL + ",h1,h2,h3,h4,h5,h6"));
    if (root.matches && root.matches(CONTROL)) els.unshift(root);
    const out = [];
    for (const el of els) {
      if (!visible(el) && !(el.tagName === "INPUT" && ["checkbox", "radio", "file"].includes(el.type))) continue;
      if (el.tagName === "INPUT" && el.type === "hidden") continue;
      out.push(el);
      if (out.length >= limit) break;
    }
    return { els: out, cut: out.length >= limit && els.length > limit };
  };
  const controls = (scope, limit) => {
    const got = shown(scope, limit);
    return { controls: got.els.map(describe), cut: got.cut };
  };
  // A link's address as read out: a `data:` URL is its type only (a page made from one
  // links to itself by its whole text, which would repeat the page in every link).
  const address = href => href.startsWith("data:")
    ? href.slice(0, href.indexOf(",") + 1) + "…" + new URL(href).hash
    : href.length > 2048 ? href.slice(0, 2048) + "…" : href;
  const read = (format, maxLinks) => {
    const links = [];
    const seen = new Set();
    for (const a of document.querySelectorAll("a[href]")) {
      if (links.length >= maxLinks) break;
      if (!visible(a) || seen.has(a.href)) continue;
      seen.add(a.href);
      links.push({ text: norm(a.innerText) || norm(a.getAttribute("aria-label")), url: address(a.href) });
    }
    if (format === "raw") return { text: document.documentElement.outerHTML, links };
    if (format === "text") return { text: (document.body ? document.body.innerText : ""), links };
    const md = [];
    const walk = (node, out) => {
      if (node.nodeType === 3) { out.push(node.textContent.replace(/\s+/g, " ")); return; }
      if (node.nodeType !== 1) return;
      const el = node;
      if (SKIP.has(el.tagName) || !(el.offsetParent !== null || el.tagName === "BODY" ||
          getComputedStyle(el).position === "fixed")) return;
      const inner = () => { const o = []; for (const c of el.childNodes) walk(c, o); return norm(o.join("")); };
      const t = el.tagName;
      if (/^H[1-6]$/.test(t)) { out.push("\n\n" + "#".repeat(Number(t[1])) + " " + inner() + "\n\n"); return; }
      if (t === "A" && el.hasAttribute("href")) { out.push("[" + inner() + "](" + address(el.href) + ")"); return; }
      if (t === "LI") { out.push("\n- " + inner()); return; }
      if (t === "BR") { out.push("\n"); return; }
      if (t === "IMG") { const alt = norm(el.alt); if (alt) out.push("![" + alt + "]"); return; }
      if (t === "INPUT" || t === "TEXTAREA" || t === "SELECT") {
        const d = describe(el);
        out.push(" [" + d.role + (d.name ? " \"" + d.name + "\"" : "") +
          (d.value ? ": " + d.value : "") + (d.checked ? " (checked)" : "") + "] ");
        return;
      }
      const block = ["P", "DIV", "SECTION", "ARTICLE", "UL", "OL", "TABLE", "TR", "FORM",
        "HEADER", "FOOTER", "MAIN", "NAV", "PRE", "BLOCKQUOTE"].includes(t);
      if (block) out.push("\n\n");
      for (const c of el.childNodes) walk(c, out);
      if (t === "TD" || t === "TH") out.push(" | ");
      if (block) out.push("\n\n");
    };
    if (document.body) walk(document.body, md);
    const text = md.join("").replace(/[ \t]+\n/g, "\n").replace(/\n{3,}/g, "\n\n").trim();
    return { text, links };
  };
  // Counts what can change the controls: the DOM, and what a person or a script types or
  // picks (a value is no attribute, and moves no mutation observer).
  let changes = 0;
  const bump = () => { changes++; };
  try {
    new MutationObserver(bump).observe(document, { subtree: true,
      childList: true, attributes: true, characterData: true });
    document.addEventListener("input", bump, true);
    document.addEventListener("change", bump, true);
  } catch (e) { /* no document yet */ }
  const id = Math.random().toString(36).slice(2);
  const mark = () => id + ":" + changes;
  // What an element operation reports changed: the controls whose facts differ from those
  // the last operation left (`seen`, read again only when the mark moved since), kept in the
  // page so that only the changed ones cross DevTools. A new document has none seen: all its
  // controls are new.
  let seen = null;
  const keyed = () => shown(null, 300).els.map(el => {
    const f = facts(el);
    return [JSON.stringify([f.role, f.name, f.value, f.checked, f.disabled]), el];
  });
  const before = () => {
    if (!seen || seen.mark !== mark()) seen = { mark: mark(), keys: keyed() };
    return { id, url: location.href };
  };
  const after = limit => {
    const url = location.href;
    if (seen && seen.mark === mark()) return { id, url, changed: [] };
    const now = keyed();
    const had = new Map();
    for (const [k] of seen ? seen.keys : []) had.set(k, (had.get(k) || 0) + 1);
    const changed = [];
    for (const [k, el] of now) {
      const n = had.get(k) || 0;
      if (n > 0) had.set(k, n - 1);
      else if (changed.length < limit) changed.push(describe(el));
    }
    seen = { mark: mark(), keys: now };
    return { id, url, changed };
  };
  window.__holm = { version: 1, id, last: null, find, fits: FITS, describe, controls, read,
    role, name, visible, before, after, mark };
  return window.__holm.id;
})()
"""


# What `call` answers in a document that lacks the script: `Cdp.run` then installs it and
# calls again, so the 16 KB script is sent once per document, not with every call.
MISSING = "__holm_missing__"


def call(body: str, **args: object) -> str:
    """An expression that runs `body` (JavaScript using `H`, the installed `window.__holm`,
    and `A`, the arguments), or answers `MISSING` when the page lacks the script."""
    return (
        "(async () => { const H = window.__holm; "
        f'if (!H || H.version !== 1) return "{MISSING}"; '
        f"const A = {json.dumps(args)}; {body} }})()"
    )
