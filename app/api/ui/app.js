// neardup's similarity report page. No framework and no build step: the service
// serves this file as it is. Every text, id and metadata value from the API is
// written with textContent (never as HTML), and every request goes to this origin.
"use strict";

const $ = (id) => document.getElementById(id);
const KEY_STORE = "neardup.key";
// The collection chosen in the chooser (kept for this tab, so links keep it); none: the
// service's own, which the routes without /collections/{name} read.
const CHOSEN_STORE = "neardup.collection";
const COLOURS = 8; // .src-0 .. .src-7 in style.css; the visible number tells sources apart
const state = { report: null, marks: [], current: -1, pending: null, collection: null, thresholdEdited: false };
// Results the page lists: its own choice, within the API's max_limit (GET /collections/{name}).
const SHOWN = 50;

// ---------------------------------------------------------------- API access

class ApiError extends Error {
  constructor(status, detail) {
    super(detail);
    this.status = status;
  }
}

async function api(path, body) {
  const headers = { Accept: "application/json" };
  const key = sessionStorage.getItem(KEY_STORE);
  if (key) headers.Authorization = "Bearer " + key;
  const init = { method: "GET", headers, credentials: "same-origin" };
  if (body !== undefined) {
    init.method = "POST";
    headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(inCollection(path), init);
  } catch (err) {
    throw new ApiError(0, "the service did not answer (" + err.message + ")");
  }
  const type = response.headers.get("Content-Type") || "";
  const data = type.includes("json") ? await response.json().catch(() => null) : null;
  if (!response.ok) {
    const detail = data && typeof data.detail === "string" ? data.detail : response.statusText;
    throw new ApiError(response.status, detail);
  }
  return data;
}

function inCollection(path) {
  // The chosen collection's twin of a data route (same answers, one implementation).
  const chosen = sessionStorage.getItem(CHOSEN_STORE);
  if (!chosen) return path;
  const prefix = "/collections/" + encodeURIComponent(chosen);
  if (path === "/collection") return prefix;
  return /^\/(documents|similar|checks)(\/|\?|$)/.test(path) ? prefix + path : path;
}

function docPath(id) {
  return "/documents/" + encodeURIComponent(id);
}

// Runs an action that reads the API; a refused key asks for another and runs it again.
async function guarded(action) {
  try {
    await action();
  } catch (err) {
    if (err instanceof ApiError && err.status === 401) {
      const had = sessionStorage.getItem(KEY_STORE);
      sessionStorage.removeItem(KEY_STORE);
      state.pending = action;
      askForKey(
        had
          ? "The API key was not accepted (" + err.message + "). Enter another key."
          : "This service needs an API key to show reports. Enter a read key."
      );
    } else if (err instanceof ApiError && err.status === 403) {
      say("This API key may not do that: " + err.message, true);
    } else {
      say("Error: " + (err instanceof Error ? err.message : String(err)), true);
    }
  }
}

function askForKey(message) {
  $("key-message").textContent = message;
  $("key-form").hidden = false;
  $("key").focus();
  say("");
}

function say(message, alarm) {
  const box = $("status");
  box.textContent = message;
  box.className = alarm ? "alarm" : "";
  box.setAttribute("role", alarm ? "alert" : "status");
}

// ------------------------------------------------------------- text marking

// The API's offsets count code points; JavaScript strings count UTF-16 units.
function codePoints(text) {
  return Array.from(text);
}

function fmt(x) {
  return (100 * x).toFixed(1) + "%";
}

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

// Text a client chose (an id, a title, a URL) isolated from the text around it, so a
// right-to-left override in it cannot reorder the page's own words.
function bdi(text) {
  return el("bdi", "", text);
}

// Cuts spans ({start, end, number, ...}, best first) into marks that never overlap:
// each code point inside some span is marked once, for the best span holding it, so a
// lower-ranked span keeps whatever of it no better span holds. Each mark knows its
// span and the numbers of the other sources whose spans also hold some of it.
function layOut(spans, length) {
  const owner = new Int32Array(length).fill(-1);
  spans.forEach((s, k) => {
    for (let i = Math.max(0, s.start); i < Math.min(length, s.end); i++) {
      if (owner[i] < 0) owner[i] = k;
    }
  });
  const pieces = [];
  for (let i = 0; i < length; ) {
    if (owner[i] < 0) {
      i += 1;
      continue;
    }
    let j = i + 1;
    while (j < length && owner[j] === owner[i]) j += 1;
    const span = spans[owner[i]];
    const also = new Set();
    for (const o of spans) {
      if (o.number !== span.number && o.start < j && i < o.end) also.add(o.number);
    }
    pieces.push({ start: i, end: j, span, also: [...also].sort((a, b) => a - b) });
    i = j;
  }
  return pieces;
}

// The flag of a passage whose words held look-alike letters or invisible characters
// (the API's "disguised": how many words), folded away to find it: evidence of intent.
function flagBadge(count) {
  const what = count === 1 ? " word" : " words";
  const badge = el("span", "flag", "⚑ " + count);
  badge.title = count + what + " of this passage held look-alike or invisible characters";
  badge.setAttribute("aria-label", "flag: " + badge.title);
  badge.dataset.disguised = String(count);
  return badge;
}

// Writes text into box with the spans marked (see layOut). A mark's data-start and
// data-end are its own code-point range; attrs are its span's.
function markText(box, text, spans) {
  box.replaceChildren();
  const cps = codePoints(text);
  const marks = [];
  let at = 0;
  for (const piece of layOut(spans, cps.length)) {
    const s = piece.span;
    if (piece.start > at) box.append(cps.slice(at, piece.start).join(""));
    const badge = el("span", "srcno src-" + s.colour, String(s.number));
    box.append(badge);
    if (piece.also.length) box.append(el("sup", "also", "+" + piece.also.join(",")));
    // A flag on a passage's first mark: its words hid look-alike or invisible characters.
    if (s.disguised && piece.start === Math.max(0, s.start)) box.append(flagBadge(s.disguised));
    const mark = el("mark", "src-" + s.colour, cps.slice(piece.start, piece.end).join(""));
    for (const [name, value] of Object.entries(s.attrs)) mark.setAttribute(name, String(value));
    mark.dataset.start = String(piece.start);
    mark.dataset.end = String(piece.end);
    mark.dataset.also = piece.also.join(" ");
    mark.title = s.label + (piece.also.length ? "; also in source " + piece.also.join(", ") : "");
    mark.tabIndex = 0;
    box.append(mark);
    marks.push(mark);
    at = piece.end;
  }
  if (at < cps.length) box.append(cps.slice(at).join(""));
  return { marks };
}

// ---------------------------------------------------------------- the report

// A metadata value as shown in a table cell: at most LABEL_CHARS of it, all of it on hover.
const LABEL_CHARS = 300;

function label(text) {
  const chars = codePoints(text);
  if (chars.length <= LABEL_CHARS) return bdi(text);
  const box = bdi(chars.slice(0, LABEL_CHARS).join("") + "…");
  box.title = text;
  return box;
}

function sourceLabel(meta) {
  // A title or url metadata field, always as text; a link only for http(s) URLs.
  const cell = document.createDocumentFragment();
  if (!meta) return cell;
  if (typeof meta.title === "string") cell.append(label(meta.title));
  if (typeof meta.url === "string") {
    let safe = null;
    try {
      const u = new URL(meta.url);
      if (u.protocol === "http:" || u.protocol === "https:") safe = u.href;
    } catch (_) {
      safe = null;
    }
    if (cell.childNodes.length) cell.append(" ");
    if (safe) {
      const a = el("a");
      a.append(label(meta.url));
      a.href = safe;
      a.rel = "noopener noreferrer nofollow";
      cell.append(a);
    } else {
      cell.append(label(meta.url));
    }
  }
  return cell;
}

async function sourcesInfo(ids) {
  // Metadata (and kept text) of each source, read in parallel; a source deleted
  // meanwhile is shown without them.
  const found = await Promise.all(
    ids.map((id) =>
      api(docPath(id)).catch((err) => {
        if (err instanceof ApiError && err.status === 404) return null;
        throw err;
      })
    )
  );
  const out = new Map();
  ids.forEach((id, i) => out.set(id, found[i]));
  return out;
}

// Shows a containment answer for text: summary, sources, marked text, legend.
function showReport(text, answer, info, self) {
  state.report = { text, answer, info, self };
  $("report").hidden = false;
  const results = answer.results || [];
  const numbers = new Map(results.map((r, i) => [r.id, i + 1]));
  const coverage = answer.coverage;
  $("summary").textContent =
    answer.measure === "containment"
      ? fmt(coverage) + " of the text was found in stored documents, in " +
        results.length + (results.length === 1 ? " source." : " sources.")
      : results.length + (results.length === 1 ? " near-duplicate" : " near-duplicates") +
        " at Jaccard ≥ " + answer.threshold + ". Choose containment to see passages.";
  const flags = results.reduce(
    (n, r) => n + (r.passages || []).filter((p) => p.disguised).length, 0);
  $("flag-note").hidden = !flags;
  $("flag-note").textContent = flags
    ? "⚑ " + flags + " passage(s) flagged: their words held look-alike letters or invisible " +
      "characters, folded away to find them. Hover a flag for its count."
    : "";
  if (answer.capped) {
    $("summary").textContent +=
      " The search was cut short by one of its bounds (capped): a source may be missing.";
  }
  $("summary").dataset.coverage = coverage === undefined ? "" : String(coverage);
  $("summary").dataset.sources = String(results.length);

  const body = $("sources").tBodies[0];
  body.replaceChildren();
  for (const r of results) {
    const n = numbers.get(r.id);
    const row = body.insertRow();
    row.dataset.source = r.id;
    row.insertCell().append(el("span", "srcno src-" + ((n - 1) % COLOURS), String(n)));
    const idCell = row.insertCell();
    const pick = el("button", "link", r.id);
    pick.type = "button";
    pick.addEventListener("click", () => guarded(() => showSource(r.id, null)));
    idCell.append(pick);
    row.insertCell().append(sourceLabel(info.get(r.id) && info.get(r.id).metadata));
    row.insertCell().textContent = r.containment === undefined ? "" : fmt(r.containment);
    row.insertCell().textContent = fmt(r.similarity);
    const cell = row.insertCell();
    cell.textContent = r.passages ? String(r.passages.length) : "";
    const flagged = (r.passages || []).filter((p) => p.disguised);
    if (flagged.length) {
      const words = flagged.reduce((sum, p) => sum + p.disguised, 0);
      const badge = flagBadge(words);
      badge.title = flagged.length + " passage(s) flagged: " + words +
        (words === 1 ? " word" : " words") + " held look-alike or invisible characters";
      badge.setAttribute("aria-label", "flag: " + badge.title);
      cell.append(" ", badge);
    }
  }

  const legend = $("legend");
  legend.replaceChildren();
  const spans = [];
  for (const r of results) {
    const n = numbers.get(r.id);
    const colour = (n - 1) % COLOURS;
    const item = el("li");
    item.append(el("span", "srcno src-" + colour, String(n)), " ", bdi(r.id));
    legend.append(item);
    for (const p of r.passages || []) {
      spans.push({
        start: p.query_start,
        end: p.query_end,
        number: n,
        colour,
        label: "source " + n + ": " + r.id,
        attrs: p.disguised ? { "data-source": r.id, "data-disguised": p.disguised } : { "data-source": r.id },
        disguised: p.disguised || 0,
        passage: p,
      });
    }
  }
  const note = $("checked-note");
  if (text === null) {
    $("checked").replaceChildren();
    note.textContent =
      missingText("document") + " Its passages are at these code-point offsets.";
    state.marks = [];
    offsetsList($("checked"), spans.map((s) => s.label + ": " + s.start + "–" + s.end));
  } else {
    const { marks } = markText($("checked"), text, spans);
    state.marks = marks;
    const shared = marks.filter((m) => m.dataset.also).length;
    note.textContent = shared
      ? shared + " marked passage(s) are also found in other sources (the +numbers); each " +
        "is marked for the best-ranked one."
      : "";
    marks.forEach((m, i) => {
      m.addEventListener("click", () => choose(i));
      m.addEventListener("keydown", (e) => {
        if (e.key === "Enter") {
          e.preventDefault();
          choose(i);
        }
      });
    });
  }
  state.current = -1;
  $("source-text").replaceChildren();
  $("source-title").textContent = "Source";
  $("source-note").textContent = results.length
    ? "Choose a passage or a source to see it here."
    : "No stored document holds a passage of this text.";
}

// Why a document's text is not shown, in one sentence.
function missingText(what) {
  const kept = state.collection && state.collection.parameters.keep_text;
  return kept
    ? "This " + what + "'s text is not available: it came from an export (which carries " +
        "no texts) or a write of it was cut short; sending the document again restores it."
    : "This collection does not keep texts (NEARDUP_KEEP_TEXT=1 on a new collection " +
        "does), so the " + what + "'s text is not shown.";
}

function offsetsList(box, lines) {
  const list = el("ul", "offsets");
  for (const line of lines) list.append(el("li", "", line));
  box.append(list);
}

function choose(i) {
  const mark = state.marks[i];
  if (!mark) return;
  state.current = i;
  mark.focus();
  guarded(() => showSource(mark.dataset.source, [+mark.dataset.start, +mark.dataset.end]));
}

// Shows source id beside the checked text, its spans matching the checked text marked.
async function showSource(id, focusQuery) {
  const rep = state.report;
  if (!rep) return;
  const r = (rep.answer.results || []).find((x) => x.id === id);
  let doc = rep.info.get(id);
  if (doc === undefined) doc = await api(docPath(id));
  const n = (rep.answer.results || []).indexOf(r) + 1;
  const colour = (n - 1) % COLOURS;
  const title = $("source-title");
  title.replaceChildren("Source ", el("span", "srcno src-" + colour, String(n)), " ", bdi(id), " ");
  const open = el("a", "", "open its own view");
  open.href = documentView(id);
  title.append(open);
  const box = $("source-text");
  const passages = (r && r.passages) || [];
  const spans = passages.map((p) => ({
    start: p.source_start,
    end: p.source_end,
    number: n,
    colour,
    label: "checked text " + p.query_start + "–" + p.query_end,
    attrs: { "data-source-start": p.source_start, "data-source-end": p.source_end },
    query: [p.query_start, p.query_end],
  }));
  if (!doc || typeof doc.text !== "string") {
    box.replaceChildren();
    $("source-note").textContent = doc
      ? missingText("source") + " Its passages are at these code-point offsets."
      : "This document is no longer stored.";
    offsetsList(box, spans.map((s) => "source " + s.start + "–" + s.end + " = " + s.label));
    return;
  }
  $("source-note").textContent = passages.length + " passage(s) of the checked text.";
  const { marks } = markText(box, doc.text, spans);
  let target = marks[0];
  if (focusQuery) {
    // The passage of this source that holds the chosen mark (a mark may be part of it).
    const k = spans.findIndex((s) => s.query[0] <= focusQuery[0] && focusQuery[1] <= s.query[1]);
    const want = k >= 0 ? spans[k] : null;
    target = marks.find((m) => want && +m.dataset.sourceStart === want.start) || target;
  }
  for (const m of marks) m.classList.remove("current");
  if (target) {
    target.classList.add("current");
    target.scrollIntoView({ block: "center" });
  }
}

function step(delta) {
  if (!state.marks.length) return;
  const next = (state.current + delta + state.marks.length) % state.marks.length;
  choose(next);
}

document.addEventListener("keydown", (e) => {
  const t = e.target;
  if (t instanceof HTMLElement && t.closest("input, textarea, select")) return;
  if (e.altKey || e.ctrlKey || e.metaKey) return;
  if (e.key === "n") step(1);
  else if (e.key === "p") step(-1);
});

// ------------------------------------------------------------------ the views

async function loadCollection() {
  if (!state.collection) state.collection = await api("/collection");
  return state.collection;
}

async function loadCollections() {
  // The chooser appears only with two or more collections; a service without
  // /collections (404) has its own only. The choice routes the page's requests to
  // /collections/{name}/... (inCollection).
  let list = null;
  try {
    list = await api("/collections");
  } catch (err) {
    // 403: a key limited to collections may not list them; it keeps to the one it is in.
    const alone = err instanceof ApiError && [403, 404, 405].includes(err.status);
    if (!alone) throw err;
  }
  const names = Array.isArray(list) ? list : list && Array.isArray(list.collections) ? list.collections : [];
  const select = $("collection");
  select.replaceChildren();
  const own = list && typeof list.default === "string" ? list.default : null;
  const chosen = sessionStorage.getItem(CHOSEN_STORE) || own;
  for (const c of names) {
    const name = typeof c === "string" ? c : c && c.name;
    if (typeof name === "string") select.append(new Option(name, name, false, name === chosen));
  }
  $("collection-row").hidden = select.options.length < 2;
  select.onchange = () => {
    // a new check (a link naming a collection would choose it again)
    if (STORED_CHECK.test(location.pathname) || NAMED_VIEW.test(location.pathname))
      history.pushState(null, "", "/ui/");
    chooseCollection(select.value === own ? null : select.value);
    state.collection = null; // its parameters (threshold, kept texts) are the chosen one's
    guarded(route());
  };
}

async function checkText() {
  const text = $("text").value;
  const file = state.file; // a chosen PDF, DOCX, ODT or RTF is sent instead of the text (files in)
  if (!file && !text.trim()) {
    say("Paste or type a text to check first.", true);
    $("text").focus();
    return;
  }
  const measure = document.querySelector("input[name=measure]:checked").value;
  // An empty field is the collection's own threshold: the field is filled from
  // GET /collection only once that answers, and a check sent before it (a quick paste on
  // a slow link) must not be refused for a number nobody typed. Text that is no number
  // also reads as "" from a number field; badInput tells it apart.
  const field = $("threshold");
  const threshold = field.value.trim() === "" && !field.validity.badInput ? null : parseFloat(field.value);
  // Containment at 0 (its default) names every source holding a passage, whatever share
  // of the text it is; Jaccard needs a threshold above 0.
  const least = measure === "containment" ? 0 : Number.MIN_VALUE;
  if (threshold !== null && !(threshold >= least && threshold <= 1)) {
    say(measure === "containment"
      ? "The threshold is a number from 0 (every source with a passage) to 1."
      : "The threshold is a number above 0 and at most 1.", true);
    $("threshold").focus();
    return;
  }
  const exclude = measure === "containment" ? chosenExclusions() : null; // exclusions, below
  if (exclude === false) return;
  say(file ? "Checking " + file.name + "…" : "Checking…");
  const query = file ? { ...file.body, limit: shown(), measure } : { text, limit: shown(), measure };
  if (threshold !== null && threshold > 0) query.threshold = threshold;
  if (measure === "containment") query.evidence = true;
  if (exclude) query.exclude = exclude;
  const made = await saveCheck(query); // stored checks, below
  if (file) fileChecked(made.answer);
  await showStored(made);
  say("Checked " + (file ? file.name + ": " : "") +
    codePoints(made.answer.text || text).length + " characters.");
}

async function showDocument(id) {
  $("title").replaceChildren("Document ", bdi(id));
  document.title = "neardup: " + id;
  say("Loading…");
  const doc = await api(docPath(id));
  // A collection without a passage index (a crawler's mirror detection) answers no
  // containment query: its document view is the near-duplicates alone.
  const passages = Boolean(((await loadCollection()).parameters || {}).passage_words);
  const [near, contained] = await Promise.all([
    api("/similar/" + encodeURIComponent(id) + "?limit=" + shown()),
    passages
      ? api("/similar/" + encodeURIComponent(id) + "?measure=containment&evidence=true&limit=" + shown())
      : null,
  ]);
  const shownAnswer = contained || near;
  const info = await sourcesInfo((shownAnswer.results || []).map((r) => r.id));
  showReport(typeof doc.text === "string" ? doc.text : null, shownAnswer, info, id);
  if (contained) {
    $("report-title").replaceChildren("Passages of ", bdi(id), " found in other documents");
  } else {
    $("report-title").replaceChildren("Near-duplicates of ", bdi(id));
    const n = (near.results || []).length;
    $("summary").textContent =
      n + (n === 1 ? " near-duplicate" : " near-duplicates") + " at Jaccard ≥ " + near.threshold +
      ". This collection keeps no passage index, so no passages are marked." +
      (near.capped ? " The search was cut short by one of its bounds (capped): a near-duplicate may be missing." : "");
  }
  $("checked-title").replaceChildren("Text of ", bdi(id));
  const box = $("near-box");
  box.hidden = false;
  const body = $("near").tBodies[0];
  body.replaceChildren();
  for (const m of near.results || []) {
    const row = body.insertRow();
    const a = el("a");
    a.append(bdi(m.id));
    a.href = documentView(m.id);
    row.insertCell().append(a);
    row.insertCell().textContent = m.similarity.toFixed(3);
  }
  if (!(near.results || []).length) body.insertRow().insertCell().textContent = "none";
  const wanted = new URLSearchParams(location.search).get("source");
  if (wanted && info.has(wanted)) await showSource(wanted, null);
  say("");
}

function curvePoint(s, r, b) {
  return 1 - Math.pow(1 - Math.pow(s, r), b);
}

function drawCurve(params) {
  const { bands: b, rows: r, threshold: t } = params;
  const svg = $("curve");
  const ns = "http://www.w3.org/2000/svg";
  const make = (tag, attrs, text) => {
    const node = document.createElementNS(ns, tag);
    for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
    if (text !== undefined) node.textContent = text;
    svg.append(node);
    return node;
  };
  svg.replaceChildren();
  const X0 = 60, Y0 = 270, W = 430, H = 240;
  const x = (s) => X0 + s * W;
  const y = (p) => Y0 - p * H;
  make("rect", { x: X0, y: Y0 - H, width: W, height: H, class: "plot" });
  for (let i = 0; i <= 10; i += 2) {
    const v = i / 10;
    make("line", { x1: x(v), y1: Y0, x2: x(v), y2: Y0 + 5, class: "axis" });
    make("text", { x: x(v), y: Y0 + 20, class: "tick", "text-anchor": "middle" }, v.toFixed(1));
    make("line", { x1: X0 - 5, y1: y(v), x2: X0, y2: y(v), class: "axis" });
    make("text", { x: X0 - 9, y: y(v) + 4, class: "tick", "text-anchor": "end" }, v.toFixed(1));
  }
  make("text", { x: X0 + W / 2, y: Y0 + 42, class: "label", "text-anchor": "middle" }, "Jaccard similarity s of a pair");
  make("text", { x: 16, y: Y0 - H / 2, class: "label", "text-anchor": "middle",
    transform: "rotate(-90 16 " + (Y0 - H / 2) + ")" }, "P(candidate)");
  const pts = [];
  for (let i = 0; i <= 200; i++) {
    const s = i / 200;
    pts.push(x(s).toFixed(1) + "," + y(curvePoint(s, r, b)).toFixed(1));
  }
  make("polyline", { points: pts.join(" "), class: "curve" });
  make("line", { x1: x(t), y1: Y0, x2: x(t), y2: Y0 - H, class: "threshold" });
  const pt = curvePoint(t, r, b);
  make("circle", { cx: x(t), cy: y(pt), r: 4, class: "threshold-dot" });
  make("text", { x: x(t) + 6, y: Y0 - H + 14, class: "label" }, "threshold " + t);
  $("curve-desc").textContent =
    "The probability 1 − (1 − s^" + r + ")^" + b + " that a pair with Jaccard s shares a band " +
    "(b = " + b + " bands of r = " + r + " rows) and so is verified. At the threshold " + t +
    " it is " + fmt(pt) + ": pairs to the left of the line that still become candidates cost " +
    "verification work, pairs to the right that do not are missed.";
  const body = $("curve-table").tBodies[0];
  body.replaceChildren();
  const marks = new Set([0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, t]);
  for (const s of [...marks].sort((p, q) => p - q)) {
    const row = body.insertRow();
    row.insertCell().textContent = String(s);
    row.insertCell().textContent = fmt(curvePoint(s, r, b));
  }
}

async function showCollection() {
  $("title").textContent = "Collection";
  document.title = "neardup: collection";
  const info = await loadCollection();
  const p = info.parameters;
  $("title").textContent = "Collection " + info.name;
  const dl = $("params");
  dl.replaceChildren();
  const rows = [
    ["Documents", info.documents.toLocaleString("en")],
    ["Shingles", p.shingle],
    ["MinHash signature", p.num_perm + " values, " + p.bands + " bands of " + p.rows + " rows"],
    ["Jaccard threshold", p.threshold],
    ["Fingerprint (verification)", "bottom-" + p.fingerprint_size +
      (p.fingerprint_bits < 32 ? " of " + p.fingerprint_bits + "-bit hashes" : "")],
    ["Passage length", p.passage_words ? p.passage_words + " words" : "no passage index"],
    ["Texts kept", p.keep_text ? "yes" : "no (NEARDUP_KEEP_TEXT=1 on a new collection keeps them)"],
    ["Tokenizer", p.tokenizer >= 4
      ? p.tokenizer + ": case, compatibility forms, accents and other marks, invisible " +
        "characters, look-alike letters (towards Latin) and line-end hyphens folded"
      : p.tokenizer === 3
      ? p.tokenizer + ": case, compatibility forms, accents and other marks, invisible " +
        "characters, look-alike letters by their capitals (towards Latin) and line-end " +
        "hyphens folded (made before tokenizer 4)"
      : p.tokenizer === 2
      ? p.tokenizer + ": case, compatibility forms, invisible characters, look-alike letters " +
        "and line-end hyphens folded (made before tokenizer 3)"
      : (p.tokenizer || 1) + ": case folded only (made before tokenizer 2; re-ingest into a " +
        "new collection to fold disguised characters)"],
    ["Site templates", p.template_pages
      ? "learned from a site's first " + p.template_pages + " pages and left out of its pages"
      : "off (made before site templates)"],
    ["Candidate cap", info.candidate_cap + " candidates verified per query at most"],
    ["Hot band", "a band with more than " + info.hot_band_size + " documents; a query reads " +
      "every member of its bands up to " + info.discovery_budget.toLocaleString("en") +
      " together, then an even share of each"],
    ["Band buckets", p.band_buckets.toLocaleString("en")],
    ["Id buckets", p.id_buckets
      ? p.id_buckets.toLocaleString("en")
      : "one HASH of every id (made before id buckets)"],
  ];
  const seen = info.since_start;
  if (seen) {
    rows.push(
      // One worker's counts (the one that answered); /metrics sums the workers.
      ["Jaccard queries since this worker started", seen.queries.toLocaleString("en") + ", " +
        seen.capped.toLocaleString("en") + " of them cut by the candidate cap" +
        (seen.queries ? " (" + fmt(seen.capped / seen.queries) + ")" : "")],
      ["Candidates verified", seen.verified.toLocaleString("en") + ", " +
        seen.kept.toLocaleString("en") + " kept at the threshold" +
        (seen.verified ? " (" + fmt(seen.kept / seen.verified) + ")" : "")]
    );
  }
  for (const [k, v] of rows) dl.append(el("dt", "", k), el("dd", "", String(v)));
  drawCurve(p);
  $("collection-view").hidden = false;
  say("");
}

async function showCheck() {
  $("check-form").hidden = false;
  await loadCollections();
  const info = await loadCollection();
  $("title").textContent = "Check a text against " + info.name;
  if (!info.parameters.passage_words) {
    say("This collection keeps no passage index: only Jaccard checks are possible.");
    $("m-jaccard").checked = true;
  }
  if (!state.thresholdEdited) $("threshold").value = String(defaultThreshold(info));
}

function shown() {
  return state.collection ? Math.min(SHOWN, state.collection.defaults.max_limit) : SHOWN;
}

// The threshold a query of the chosen measure takes when it names none: the
// collection's own (GET /collections/{name} says it), never a copy typed here.
function defaultThreshold(info) {
  const measure = $("m-jaccard").checked ? "jaccard" : "containment";
  return info.defaults.threshold[measure];
}

// ------------------------------------------- stored checks: the check view's link
// A check is made through POST /checks, which keeps it (text and answer) in the collection
// for NEARDUP_CHECK_TTL; the view then moves to the check's report URL, /ui/checks/{id}
// (/ui/collections/{name}/checks/{id} in another collection), which shows it again from
// GET /checks/{id}: reloading the page or sending the link reopens the check as it was.

const STORED_CHECK = /^\/ui\/(?:collections\/([^/]+)\/)?checks\/([A-Za-z0-9_-]+)$/;

function storedCheckRoute(path) {
  const m = STORED_CHECK.exec(path);
  if (!m) return null;
  return () => openStoredCheck(m[1] === undefined ? null : decoded(m[1]), m[2]);
}

async function saveCheck(query) {
  const made = await api("/checks", query);
  if (location.pathname !== made.report) history.pushState(null, "", made.report);
  return made;
}

// The tab's collection: name, or null for the service's own (the unprefixed routes).
function chooseCollection(name) {
  if (name === null) sessionStorage.removeItem(CHOSEN_STORE);
  else sessionStorage.setItem(CHOSEN_STORE, name);
}

// The tab goes to a link's collection and reads there; what cannot be read (no such
// collection, another collection's key) leaves the tab in the collection it was in.
async function readIn(collection, read) {
  const before = sessionStorage.getItem(CHOSEN_STORE);
  chooseCollection(collection);
  state.collection = null;
  try {
    return await read();
  } catch (err) {
    chooseCollection(before);
    state.collection = null;
    throw err;
  }
}

async function openStoredCheck(collection, id) {
  // The tab follows the check's collection, so its sources are read there too; a check
  // that cannot be read (no such collection, another collection's key) leaves the tab
  // in the collection it was in.
  say("Loading…");
  const check = await readIn(collection, () => api("/checks/" + encodeURIComponent(id)));
  // The check view as it was after the check: its form holds the checked text and settings.
  await showCheck();
  const answer = check.answer;
  $("text").value = answer.text;
  $(answer.measure === "containment" ? "m-containment" : "m-jaccard").checked = true;
  $("threshold").value = String(answer.threshold);
  await showStored(check);
  say("");
}

// Shows a stored check (POST /checks' or GET /checks/{id}'s answer) as the check view does.
async function showStored(check) {
  const answer = check.answer;
  if (answer.measure === undefined) answer.measure = "jaccard";
  const info = await sourcesInfo((answer.results || []).map((r) => r.id));
  showReport(answer.text, answer, info, null);
  $("title").textContent = "Check " + check.id;
  document.title = "neardup: check " + check.id;
  const box = $("stored-check");
  box.replaceChildren();
  const link = el("a", "", location.origin + check.report);
  link.href = check.report;
  box.append(
    el("span", "", "Kept until " + check.expires_at.replace("T", " ").slice(0, 16) + " UTC at "),
    link,
    el("span", "", " (made " + check.created_at.replace("T", " ").slice(0, 16) + " UTC).")
  );
  const changed = check.changed_sources || [];
  $("changed-sources").hidden = !changed.length;
  const list = $("changed-list");
  list.replaceChildren();
  for (const c of changed) {
    const item = el("li");
    item.append(bdi(c.id), ": " + (c.change === "deleted" ? "deleted" : "changed"));
    item.dataset.source = c.id;
    item.dataset.change = c.change;
    list.append(item);
  }
  box.hidden = false;
  showExcluded(answer.text, answer.excluded); // exclusions, below
  tickExclusions(answer.exclude);
}

window.addEventListener("popstate", () => location.reload()); // Back leaves a check's URL

// ---------------------------------------------- files in: PDF, DOCX, ODT and RTF
// A PDF, DOCX, ODT or RTF file is not read here: its bytes go to the service (base64 in `data`,
// with its content_type and return_text), which extracts the text; the answer's `text`
// then fills the text box, and every offset of the answer refers to that text.

const FILE_TYPES = {
  pdf: "application/pdf",
  docx: "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
  odt: "application/vnd.oasis.opendocument.text",
  rtf: "application/rtf",
};

// The content_type of a file the service extracts: what its first bytes say it is (a
// PDF's %PDF-, RTF's {\rtf, an ODT's uncompressed mimetype entry, another ZIP taken
// for a DOCX), else by its name (browsers often give no type for DOCX and ODT), or
// null. The bytes first, so a file named .pdf that is a DOCX is checked, not refused
// for its name.
function fileType(file, head) {
  const sniffed = typeByBytes(head);
  if (sniffed) return sniffed;
  const m = /\.([a-z]+)$/i.exec(file.name);
  const byName = m ? FILE_TYPES[m[1].toLowerCase()] : undefined;
  if (byName) return byName;
  return Object.values(FILE_TYPES).includes(file.type) ? file.type : null;
}

// A file's first bytes (enough for typeByBytes), as a binary string.
async function headOf(file) {
  const bytes = new Uint8Array(await file.slice(0, 1024).arrayBuffer());
  return String.fromCharCode(...bytes);
}

// head: a file's first bytes as a binary string (headOf).
function typeByBytes(head) {
  if (head.slice(0, 1024).includes("%PDF-")) return FILE_TYPES.pdf;
  if (head.trimStart().startsWith("{\\rtf")) return FILE_TYPES.rtf;
  if (!head.startsWith("PK\x03\x04")) return null;
  // ODF writes its mimetype entry first, stored: its name at 30, its text after it.
  if (head.slice(30, 38) === "mimetype") {
    return head.includes("opendocument.text") ? FILE_TYPES.odt : null;
  }
  return head.includes("word/") || head.includes("[Content_Types].xml") ? FILE_TYPES.docx : null;
}

function base64Of(file) {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => {
      const url = String(reader.result); // data:TYPE;base64,DATA
      resolve(url.slice(url.indexOf(",") + 1));
    };
    reader.onerror = () => reject(new Error("could not read " + file.name));
    reader.readAsDataURL(file);
  });
}

// Reads a chosen or dropped file and checks it at once (its text is the service's to
// extract); a file the service refuses says the API's 422 detail.
async function checkFile(file, content_type) {
  say("Reading " + file.name + "…");
  const data = await base64Of(file);
  $("text").value = "";
  state.file = { name: file.name, body: { content_type, data, return_text: true } };
  try {
    await checkText();
  } catch (err) {
    state.file = null;
    if (err instanceof ApiError && err.status === 422) {
      say(file.name + " could not be checked: " + err.message, true);
      return;
    }
    throw err;
  }
}

// After a file's check: the extracted text is the checked text, in the box to read or edit.
function fileChecked(answer) {
  state.file = null;
  if (typeof answer.text === "string") $("text").value = answer.text;
}

// ----------------------------------------------- exclusions: quotes, bibliography, short
// The check view's three filters become containment's `exclude`; the spans the answer's
// `excluded` lists are greyed in the checked text with their reason, apart from the marks.

const REASONS = {
  quote: "inside quotation marks (exclude quotes)",
  bibliography: "in the bibliography (exclude bibliography)",
  short: "a match shorter than the least words (exclude matches under N words)",
};

// The filters apply to containment only: off while Jaccard is chosen.
function syncExclusions() {
  const off = $("m-jaccard").checked;
  for (const id of ["ex-quotes", "ex-bibliography", "ex-short", "ex-words"]) $(id).disabled = off;
}

function wireExclusions() {
  for (const radio of document.querySelectorAll("input[name=measure]")) {
    radio.addEventListener("change", syncExclusions);
  }
  $("ex-words").addEventListener("input", () => ($("ex-short").checked = true));
  syncExclusions();
}

// A reopened check's filters, as its answer echoes them (`exclude`), ticked again so a
// second check of the same text asks the same.
function tickExclusions(exclude) {
  if (!exclude) return;
  $("m-containment").checked = true;
  $("ex-quotes").checked = Boolean(exclude.quotes);
  $("ex-bibliography").checked = Boolean(exclude.bibliography);
  $("ex-short").checked = exclude.min_words > 0;
  if (exclude.min_words > 0) $("ex-words").value = String(exclude.min_words);
  syncExclusions();
}

// The `exclude` of the chosen filters: null with none, false (said) when N is not a number.
function chosenExclusions() {
  const exclude = {};
  if ($("ex-quotes").checked) exclude.quotes = true;
  if ($("ex-bibliography").checked) exclude.bibliography = true;
  if ($("ex-short").checked) {
    const n = Number($("ex-words").value);
    if (!(Number.isInteger(n) && n >= 1 && n <= 100000)) {
      say("Exclude matches under N words: N is a whole number from 1 to 100000.", true);
      $("ex-words").focus();
      return false;
    }
    exclude.min_words = n;
  }
  return Object.keys(exclude).length ? exclude : null;
}

function excludedSpan(text, s) {
  const span = el("span", "excluded", text);
  span.dataset.reason = s.reason;
  span.dataset.start = String(s.start);
  span.dataset.end = String(s.end);
  span.title = "Set aside, not counted: " + (REASONS[s.reason] || s.reason);
  return span;
}

// Greys the excluded spans ({query_start, query_end, reason}) in the checked text that
// markText wrote into box: only its plain text is touched (a passage's mark never holds an
// excluded span), each excluded stretch a <span class="excluded">, its reason before it.
function greyExcluded(box, excluded) {
  const spans = excluded
    .map((e) => ({ start: e.query_start, end: e.query_end, reason: e.reason }))
    .sort((a, b) => a.start - b.start);
  let at = 0;
  for (const node of [...box.childNodes]) {
    if (node.nodeType === Node.ELEMENT_NODE && node.tagName === "MARK") {
      at = +node.dataset.end;
      continue;
    }
    if (node.nodeType !== Node.TEXT_NODE) continue; // a badge: not part of the text
    const cps = codePoints(node.data);
    const from = at;
    const to = at + cps.length;
    at = to;
    const inside = spans.filter((s) => s.start < to && from < s.end);
    if (!inside.length) continue;
    const out = document.createDocumentFragment();
    let i = from;
    for (const s of inside) {
      const a = Math.max(s.start, i);
      const b = Math.min(s.end, to);
      if (b <= a) continue;
      if (a > i) out.append(cps.slice(i - from, a - from).join(""));
      if (a === s.start) {
        const why = el("span", "exwhy", s.reason);
        why.setAttribute("aria-hidden", "true");
        out.append(why);
      }
      out.append(excludedSpan(cps.slice(a - from, b - from).join(""), s));
      i = b;
    }
    if (i < to) out.append(cps.slice(i - from).join(""));
    node.replaceWith(out);
  }
}

// The greyed spans and the legend of their reasons, for a check's answer.
function showExcluded(text, excluded) {
  const list = Array.isArray(excluded) ? excluded : [];
  $("excluded-box").hidden = !list.length;
  const legend = $("excluded-legend");
  legend.replaceChildren();
  if (!list.length) return;
  if (typeof text === "string") greyExcluded($("checked"), list);
  $("excluded-note").textContent =
    list.length + " span(s) of the text set aside by the filters, greyed below: they are no " +
    "passage and count neither in a source's containment nor in the coverage.";
  const counts = new Map();
  for (const e of list) counts.set(e.reason, (counts.get(e.reason) || 0) + 1);
  for (const [reason, n] of counts) {
    const item = el("li");
    item.append(el("span", "excluded", reason), " " + (REASONS[reason] || reason) + ": " + n);
    legend.append(item);
  }
}

// ----------------------------------------------------------- wiring, start

function downloadJson() {
  const rep = state.report;
  if (!rep) return;
  const out = {
    checked_text: rep.text,
    document: rep.self,
    answer: rep.answer,
    sources: Object.fromEntries([...rep.info].map(([id, d]) => [id, d ? { metadata: d.metadata } : null])),
  };
  const blob = new Blob([JSON.stringify(out, null, 2)], { type: "application/json" });
  const a = el("a");
  a.href = URL.createObjectURL(blob);
  a.download = "neardup-report.json";
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(a.href), 1000);
}

async function readFile(file) {
  if (!file) return;
  const content_type = fileType(file, await headOf(file));
  if (content_type) return guarded(() => checkFile(file, content_type)); // files in, above
  if (!(file.type === "text/plain" || /\.txt$/i.test(file.name))) {
    say("Only .txt, .pdf, .docx, .odt and .rtf files can be read here: " + file.name + " is none.", true);
    return;
  }
  $("text").value = await file.text();
  say("Read " + file.name + ".");
}

// A path segment's text; a malformed %-escape is said, not thrown past the page.
function decoded(segment) {
  try {
    return decodeURIComponent(segment);
  } catch (_) {
    throw new Error("this address holds a malformed %-escape: " + segment);
  }
}

// ------------------------------------------- the list of stored checks, newest first
// GET /checks a page at a time: each row links to the check's report (its own link).

const CHECKS_PAGE = 50;

function when(rfc3339) {
  return new Date(rfc3339).toLocaleString("en-GB", { dateStyle: "medium", timeStyle: "short" });
}

function listedRow(body, check) {
  const row = body.insertRow();
  const made = row.insertCell();
  const link = el("a", "", when(check.created_at));
  link.href = check.report;
  made.append(link);
  const meta = check.metadata ? JSON.stringify(check.metadata) : "";
  const points = Array.from(meta); // code points: a cut never splits a surrogate pair
  row.insertCell().append(bdi(points.length > 120 ? points.slice(0, 119).join("") + "…" : meta));
  row.insertCell().textContent = check.measure === "containment"
    ? fmt(check.coverage) + " of the text"
    : "Jaccard";
  row.insertCell().textContent = String(check.sources);
  const top = row.insertCell();
  if (check.top) {
    const score = check.top.containment ?? check.top.similarity;
    top.append(bdi(check.top.id), document.createTextNode(" (" + fmt(score) + ")"));
  }
  row.insertCell().textContent = when(check.expires_at);
}

async function showChecks(cursor) {
  if (!state.collection) $("title").textContent = "Checks kept";
  const info = await loadCollection();
  $("title").textContent = "Checks kept in " + info.name;
  document.title = "neardup: checks";
  const query = "/checks?limit=" + CHECKS_PAGE + (cursor ? "&cursor=" + encodeURIComponent(cursor) : "");
  let page;
  try {
    page = await api(query);
  } catch (err) {
    // Only the refusal of a read key asks for a write key; a key kept to other
    // collections is told so as any refusal is.
    if (!(err instanceof ApiError && err.status === 403 && /scope write/.test(err.message))) throw err;
    // A read key reaches the checks whose links it was given; the list of them all is
    // a write key's (it names every reader's checks).
    sessionStorage.removeItem(KEY_STORE);
    state.pending = () => showChecks(cursor);
    askForKey("Listing every stored check needs a key with scope write. Enter a write key.");
    return;
  }
  const body = $("checks").tBodies[0];
  if (!cursor) body.replaceChildren();
  for (const check of page.checks) listedRow(body, check);
  $("checks-none").hidden = body.rows.length > 0;
  const more = $("checks-more");
  more.hidden = page.cursor === null;
  more.onclick = () => guarded(() => showChecks(page.cursor));
  $("checks-view").hidden = false;
  say("");
}

// A document's view, in the tab's collection: the link names it, so it opens the same
// document in another tab or in a mail, whatever collection that tab was in.
const DOCUMENT_VIEW = /^\/ui\/(?:collections\/([^/]+)\/)?documents\/(.+)$/;

function documentView(id) {
  const named = sessionStorage.getItem(CHOSEN_STORE);
  const head = named === null ? "/ui" : "/ui/collections/" + encodeURIComponent(named);
  return head + "/documents/" + encodeURIComponent(id);
}

// The check and collection views in a named collection: the link to give a reviewer whose
// key is limited to that collection (it may not list collections, so has no chooser).
const NAMED_VIEW = /^\/ui\/collections\/([^/]+)(?:\/(collection|checks)?)?$/;
// Their headings, set before the collection is read: a refusal (a key kept to another
// collection) then stands under the view it refused.
const NAMED_HEADINGS = {
  checks: "Checks kept in ",
  collection: "Collection ",
  "": "Check a text against ",
};

function route() {
  const path = location.pathname;
  const named = NAMED_VIEW.exec(path);
  if (named) {
    return async () => {
      $("title").textContent = NAMED_HEADINGS[named[2] || ""] + decoded(named[1]);
      await readIn(decoded(named[1]), loadCollection);
      if (named[2] === "checks") return showChecks();
      return named[2] ? showCollection() : showCheck();
    };
  }
  const doc = DOCUMENT_VIEW.exec(path);
  if (doc) {
    return () => {
      // The link's collection (none: the service's own) becomes the tab's.
      chooseCollection(doc[1] === undefined ? null : decoded(doc[1]));
      state.collection = null;
      return showDocument(decoded(doc[2]));
    };
  }
  if (path === "/ui/collection") return showCollection;
  if (path === "/ui/checks") return () => showChecks();
  const stored = storedCheckRoute(path); // stored checks, below
  if (stored) return stored;
  return showCheck;
}

function start() {
  $("key-form").addEventListener("submit", (e) => {
    e.preventDefault();
    // Pasted keys bring spaces and invisible characters along; a key is the bearer-token
    // alphabet (app/core/keys.py), and another character could not even be sent.
    const key = $("key").value.replace(/[\s\u200b-\u200d\u2060\ufeff]/g, "");
    if (!key) return;
    if (!/^[A-Za-z0-9._~+\/-]+=*$/.test(key)) {
      askForKey("An API key is letters, digits and -._~+/ (then = padding); this one " +
        "holds other characters. Enter the key again.");
      return;
    }
    sessionStorage.setItem(KEY_STORE, key);
    $("key").value = "";
    $("key-form").hidden = true;
    state.collection = null;
    const again = state.pending || route();
    state.pending = null;
    guarded(again);
  });
  $("check-form").addEventListener("submit", (e) => {
    e.preventDefault();
    guarded(checkText);
  });
  $("threshold").addEventListener("input", () => (state.thresholdEdited = true));
  for (const radio of document.querySelectorAll("input[name=measure]")) {
    radio.addEventListener("change", () => {
      if (state.thresholdEdited || !state.collection) return;
      $("threshold").value = String(defaultThreshold(state.collection));
    });
  }
  $("file").addEventListener("change", (e) => {
    readFile(e.target.files[0]);
    e.target.value = ""; // choosing the same file again is a change too
  });
  const area = $("text");
  area.addEventListener("input", () => (state.file = null)); // typed text replaces a file
  wireExclusions(); // exclusions, below
  area.addEventListener("dragover", (e) => {
    e.preventDefault();
    area.classList.add("drop");
  });
  area.addEventListener("dragleave", () => area.classList.remove("drop"));
  area.addEventListener("drop", (e) => {
    e.preventDefault();
    area.classList.remove("drop");
    readFile(e.dataTransfer.files[0]);
  });
  $("download").addEventListener("click", downloadJson);
  $("print").addEventListener("click", () => window.print());
  const views = { "/ui/collection": "nav-collection", "/ui/checks": "nav-checks", "/ui/": "nav-check" };
  const current = views[location.pathname] || null;
  if (current) $(current).setAttribute("aria-current", "page");
  guarded(route());
}

document.addEventListener("DOMContentLoaded", start);
