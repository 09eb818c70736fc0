// dtdialog chat page: vanilla JS, no build step. Talks to the JSON API of the same origin.
"use strict";

const SESSION_KEY = "dtdialog.session";
// the session's token: the server answers a session's requests only with it (X-Session-Token)
const TOKEN_KEY = "dtdialog.session.token";
const $ = (id) => document.getElementById(id);
// Customers see the conversation and a plain "why" under each answer; support agents open /?view=agent for the
// explain panel (answer ids, scores, trees, ranker features, the raw trace).
const AGENT_VIEW = new URLSearchParams(window.location.search).get("view") === "agent";

let sessionId = sessionStorage.getItem(SESSION_KEY);
let sessionToken = sessionStorage.getItem(TOKEN_KEY);
let busy = false;

async function api(method, path, body) {
  const init = { method, headers: { "Accept": "application/json" } };
  if (sessionToken && path.startsWith("/sessions/")) init.headers["X-Session-Token"] = sessionToken;
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const res = await fetch(path, init);
  let data = null;
  try { data = await res.json(); } catch (e) { data = null; }
  if (!res.ok) {
    const err = new Error((data && data.error && data.error.message) || `request failed (${res.status})`);
    err.status = res.status;
    err.code = data && data.error && data.error.code;
    throw err;
  }
  return data;
}

function showError(message) {
  const box = $("error");
  box.textContent = message || "";
  box.hidden = !message;
}

function setBusy(on, text) {
  busy = on;
  $("send").disabled = on;
  for (const b of $("options").querySelectorAll("button")) b.disabled = on;
  $("status").textContent = text || "";
}

// Calibrated confidence (issue 13): how sure the bot is, in words a customer understands.
function confidenceWords(confidence, kind) {
  if (typeof confidence !== "number") return "";
  const pct = Math.round(confidence * 100);
  if (kind === "abstain") return `I'm not sure enough to answer yet (${pct}%).`;
  if (confidence >= 0.8) return `I'm fairly sure this is right (${pct}%).`;
  if (confidence >= 0.5) return `I think this fits, but I'm not certain (${pct}%).`;
  return `I'm not sure about this one (${pct}%) - tell me if it doesn't fit.`;
}

function addConfidence(li, turn) {
  const words = confidenceWords(turn.confidence, turn.kind);
  if (!li || !words) return;
  const c = document.createElement("span");
  c.className = "confidence";
  c.textContent = words;
  li.appendChild(c);
}

// Why this answer, in the customer's own words (the API's plain `why`: never ids or scores).
function addWhy(li, turn) {
  if (!li || !turn.why) return;
  const w = document.createElement("span");
  w.className = "why";
  const label = document.createElement("span");
  label.className = "why-label";
  label.textContent = "Why this answer: ";
  w.append(label, turn.why);
  li.appendChild(w);
}

function addMessage(role, text, kind) {
  const li = document.createElement("li");
  li.className = "msg " + (role === "user" ? "user" : "bot") + (kind === "handoff" ? " handoff" : "");
  if (kind) li.dataset.kind = kind;
  const who = document.createElement("span");
  who.className = "who";
  who.textContent = role === "user" ? "You" : (kind === "handoff" ? "Support (handing over)" : "Support");
  if (role !== "user" && kind && kind !== "handoff") {
    const k = document.createElement("span");
    k.className = "kind";
    k.textContent = "· " + kind.replace(/_/g, " ");
    who.appendChild(k);
  }
  const body = document.createElement("span");
  body.className = "text";
  body.textContent = text;
  li.append(who, body);
  $("transcript").appendChild(li);
  li.scrollIntoView({ block: "end" });
  return li;
}

function renderOptions(options) {
  const box = $("options");
  box.replaceChildren();
  if (!options || options.length === 0) { box.hidden = true; return; }
  const legend = document.createElement("p");
  legend.className = "muted";
  legend.id = "options-legend";
  legend.textContent = "Choose one (Tab to move, Enter to pick):";
  box.appendChild(legend);
  for (const opt of options) {
    const b = document.createElement("button");
    b.type = "button";
    b.className = "option";
    b.dataset.number = String(opt.number);
    if (opt.answer_id && AGENT_VIEW) b.dataset.answerId = opt.answer_id;
    b.textContent = `${opt.number}. ${opt.label}`;
    b.addEventListener("click", () => send(String(opt.number), `${opt.number}. ${opt.label}`));
    box.appendChild(b);
  }
  box.hidden = false;
}

function setSvg(id, svg, fallback) {
  const el = $(id);
  if (svg) { el.innerHTML = svg; showPicture(el); } else { el.textContent = fallback; }
}

// Tree pictures: shrunk to the panel, a six-EDU tree's text was 7 px. They are drawn so that their smallest text
// is at least MIN_TEXT_PX and scroll when large; the zoom bar, +/- keys and Ctrl+wheel change the size, "Fit"
// shrinks the picture to the panel on request. A zoom the reader chose is kept for the next turn's picture.
const MIN_TEXT_PX = 12;
const ZOOM_STEP = 1.25;
const ZOOM_MIN = 0.2;
const ZOOM_MAX = 4;

function pictureSize(svg) {
  const vb = svg.viewBox && svg.viewBox.baseVal;
  if (vb && vb.width > 0 && vb.height > 0) return { w: vb.width, h: vb.height };
  return { w: parseFloat(svg.getAttribute("width")) || 300, h: parseFloat(svg.getAttribute("height")) || 150 };
}

function readableZoom(svg) {
  let smallest = Infinity;
  for (const t of svg.querySelectorAll("text")) {
    const px = parseFloat(getComputedStyle(t).fontSize);
    if (px > 0) smallest = Math.min(smallest, px);
  }
  return smallest === Infinity ? 1 : Math.max(1, MIN_TEXT_PX / smallest);
}

function setZoom(box, zoom) {
  const svg = box.querySelector("svg");
  if (!svg) return;
  zoom = Math.min(ZOOM_MAX, Math.max(ZOOM_MIN, zoom));
  const { w, h } = pictureSize(svg);
  svg.style.width = `${Math.round(w * zoom)}px`;
  svg.style.height = `${Math.round(h * zoom)}px`;
  box.dataset.zoom = zoom.toFixed(3);
  const level = document.querySelector(`.zoombar[data-controls="${box.id}"] .zoom-level`);
  if (level) level.textContent = `${Math.round(zoom * 100)}%`;
}

function zoomTo(box, zoom) {
  box.dataset.userZoom = String(zoom);
  setZoom(box, zoom);
}

function showPicture(box) {
  const svg = box.querySelector("svg");
  if (!svg) return;
  const { w, h } = pictureSize(svg);
  // without a viewBox a picture keeps its drawing at 1:1 whatever its size: give it one so zoom scales it
  if (!svg.getAttribute("viewBox")) svg.setAttribute("viewBox", `0 0 ${w} ${h}`);
  box.dataset.readable = String(readableZoom(svg));
  setZoom(box, parseFloat(box.dataset.userZoom || box.dataset.readable));
}

function fitZoom(box) {
  const svg = box.querySelector("svg");
  if (!svg) return 1;
  const style = getComputedStyle(box);
  const room = box.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
  return room / pictureSize(svg).w;
}

function setUpZoom(bar) {
  const box = $(bar.dataset.controls);
  const current = () => parseFloat(box.dataset.zoom || "1");
  const button = (text, label, action) => {
    const b = document.createElement("button");
    b.type = "button";
    b.className = "zoom secondary";
    b.textContent = text;
    b.setAttribute("aria-label", label);
    b.setAttribute("aria-controls", box.id);
    b.addEventListener("click", action);
    return b;
  };
  const level = document.createElement("span");
  level.className = "zoom-level";
  level.setAttribute("aria-live", "polite");
  bar.append(
    button("−", "Zoom out", () => zoomTo(box, current() / ZOOM_STEP)),
    level,
    button("+", "Zoom in", () => zoomTo(box, current() * ZOOM_STEP)),
    button("Fit", "Fit to the panel", () => zoomTo(box, fitZoom(box))),
    button("Readable", "Readable size", () => { delete box.dataset.userZoom; setZoom(box, parseFloat(box.dataset.readable || "1")); }),
  );
  box.addEventListener("wheel", (ev) => {
    if (!ev.ctrlKey || !box.querySelector("svg")) return;  // a plain wheel scrolls the picture
    ev.preventDefault();
    zoomTo(box, current() * (ev.deltaY < 0 ? ZOOM_STEP : 1 / ZOOM_STEP));
  }, { passive: false });
  box.addEventListener("keydown", (ev) => {
    if (ev.key === "+" || ev.key === "=") { ev.preventDefault(); zoomTo(box, current() * ZOOM_STEP); }
    if (ev.key === "-") { ev.preventDefault(); zoomTo(box, current() / ZOOM_STEP); }
  });
}

function fillList(id, items) {
  const list = $(id);
  list.replaceChildren();
  for (const text of items || []) {
    const li = document.createElement("li"); li.textContent = text; list.appendChild(li);
  }
}

function renderExplain(ex, turn) {
  if (!ex) return;
  $("explain-empty").hidden = true;
  $("explain-body").hidden = false;
  // The agreement verdict is about the delivered answer: with none delivered, no verdict is claimed.
  let verdict;
  if (!ex.answer_id) verdict = "no answer delivered in this turn, so no agreement verdict";
  else if (ex.verdict === null || ex.verdict === undefined) verdict = "no agreement check for this answer";
  else verdict = ex.verdict ? "the answer's DT agrees with the question's DT" : "no rhetorical agreement";
  const score = ex.answer_id && typeof ex.agreement_score === "number" ? ` (score ${ex.agreement_score.toFixed(2)})` : "";
  $("explain-verdict").textContent = `Reply kind: ${turn.kind.replace(/_/g, " ")} — ${verdict}${score}.`;
  fillList("explain-summary", ex.summary);
  fillList("explain-features", ex.details);
  $("explain-details").hidden = !(ex.details && ex.details.length);
  setSvg("question-tree", ex.question_svg, "No question tree for this turn.");
  setSvg("answer-tree", ex.answer_svg, "No answer delivered in this turn.");
  $("answer-id").textContent = ex.answer_id ? `(${ex.answer_id})` : "";
  setSvg("chains", ex.chains_svg, ex.answer_id ? "No chains." : "No answer delivered in this turn.");
  const list = $("chains-text");
  list.replaceChildren();
  for (const c of ex.chains || []) {
    const li = document.createElement("li"); li.textContent = c; list.appendChild(li);
  }
  for (const m of ex.missing || []) {
    const li = document.createElement("li"); li.textContent = `${m} — not addressed`; list.appendChild(li);
  }
  $("trace").textContent = JSON.stringify(turn.trace, null, 2);
}

// The server loads its engine at start-up (tens of seconds); until /healthz says it is ready the page says so
// instead of leaving the first message hanging.
const READY_POLL_MS = 1000;

async function waitUntilReady() {
  for (;;) {
    let health = null;
    try {
      health = await api("GET", "/healthz");
    } catch (e) {
      // an answer that is an error (a stalled engine's 503) is not loading: sending says what is wrong
      if (e.status) health = { loading: false };
    }
    if (health && !health.loading) {
      if (health.problem) showError(`The support engine could not be loaded: ${health.problem}`);
      if (busy) setBusy(false, "");
      return;
    }
    if (!busy) setBusy(true, "");
    $("status").textContent = health ? "Loading the support engine… you can type, replies start when it is ready."
      : "Waiting for the server…";
    $("status").dataset.loading = "true";
    await new Promise((resolve) => setTimeout(resolve, READY_POLL_MS));
  }
}

async function ensureSession() {
  if (sessionId) return sessionId;
  const data = await api("POST", "/sessions");
  sessionId = data.session_id;
  sessionToken = data.token;
  sessionStorage.setItem(SESSION_KEY, sessionId);
  sessionStorage.setItem(TOKEN_KEY, sessionToken);
  return sessionId;
}

function forgetSession() {
  sessionId = null;
  sessionToken = null;
  sessionStorage.removeItem(SESSION_KEY);
  sessionStorage.removeItem(TOKEN_KEY);
}

async function send(text, shown) {
  text = (text || "").trim();
  if (!text || busy) return;
  showError("");
  setBusy(true, "Thinking…");
  addMessage("user", shown || text);
  try {
    await ensureSession();
    const query = AGENT_VIEW ? "?explain=true" : "";
    let turn;
    try {
      turn = await api("POST", `/sessions/${encodeURIComponent(sessionId)}/messages${query}`, { text });
    } catch (e) {
      if (e.status !== 404) throw e;
      // The server forgot this session (new database): start again transparently.
      forgetSession();
      await ensureSession();
      turn = await api("POST", `/sessions/${encodeURIComponent(sessionId)}/messages${query}`, { text });
    }
    const li = addMessage("bot", turn.reply, turn.kind);
    addWhy(li, turn);
    addConfidence(li, turn);
    renderOptions(turn.options);
    renderExplain(turn.explain, turn);
    setBusy(false, turn.kind === "handoff" ? "You are being handed over to a human agent." : "");
    const first = $("options").querySelector("button");
    (first || $("message")).focus();
  } catch (e) {
    setBusy(false, "");
    showError(e.message);
    $("message").focus();
  }
}

// The bot's wording comes from the index's domain profile (GET /profile), never from this page.
async function applyProfile() {
  try {
    const p = await api("GET", "/profile");
    document.title = p.title;
    $("page-title").textContent = p.title;
    $("message").placeholder = p.placeholder;
    document.documentElement.lang = p.language;
    $("greeting").textContent = p.greeting;
  } catch (e) {
    // the page works without it: the generic title stays and the first reply introduces the bot
  }
}

async function restore() {
  if (!sessionId) return;
  try {
    const rec = await api("GET", `/sessions/${encodeURIComponent(sessionId)}`);
    for (const t of rec.transcript || []) {
      const role = (t.role || t.speaker || "").toString().toLowerCase();
      const user = role === "user" || role === "c" || role === "q" || role === "customer";
      const li = addMessage(user ? "user" : "bot", t.text || "", user ? undefined : t.kind);
      if (!user) addWhy(li, t);
    }
  } catch (e) {
    forgetSession();
  }
}

function newSession() {
  forgetSession();
  $("transcript").replaceChildren();
  renderOptions([]);
  $("explain-empty").hidden = false;
  $("explain-body").hidden = true;
  showError("");
  $("status").textContent = "New conversation started.";
  $("message").focus();
}

document.addEventListener("DOMContentLoaded", () => {
  const box = $("message");
  $("explain").hidden = !AGENT_VIEW;
  document.querySelector("main").classList.toggle("agent", AGENT_VIEW);
  $("composer").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const text = box.value;
    if (!text.trim()) { showError("Please type a message first."); box.focus(); return; }
    if (busy) return;  // kept in the box: sent once the engine is ready or the reply in flight is in
    box.value = "";
    send(text);
  });
  box.addEventListener("keydown", (ev) => {
    if (ev.key === "Enter" && !ev.shiftKey && !ev.isComposing) {
      ev.preventDefault();
      $("composer").requestSubmit();
    }
  });
  $("new-session").addEventListener("click", newSession);
  for (const bar of document.querySelectorAll(".zoombar[data-controls]")) setUpZoom(bar);
  waitUntilReady().finally(() => { delete $("status").dataset.loading; });
  restore().then(applyProfile).finally(() => box.focus());
});
