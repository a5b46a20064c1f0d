// The Run page's live channel in the browser (kit/live_view.py mounts it; kit/live_routes.py
// serves the stream). It opens one EventSource per job, draws the turn's candidates and bids as
// they come, and asks Python for a rerun only when something settles: a turn ends, the job ends.
//
// Everything a model or a person wrote is set with textContent / appendData, never as HTML.
// The stream resumes where it stopped: the browser's own reconnect sends Last-Event-ID; a
// component drawn again (a rerun) reopens with ?last= the number it saw last. Where the stream
// cannot be had at all, the page asks for a rerun once a second instead (the fallback).

const streams = new Map(); // job id -> what this page has seen of it

function fresh(data) {
  return { job: data.job, token: data.token, last: null, turn: 0, open: false, ended: false,
           cands: new Map(), es: null, nodes: null, connects: 0, failing: 0, fallback: null,
           fallbacks: 0 };
}

function el(tag, cls, text) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (text !== undefined) node.textContent = text;
  return node;
}

function scoreText(score) {
  return score === null || score === undefined ? "score …" : `score ${Number(score).toFixed(2)}`;
}

function statusOf(s, agent) {
  const cand = s.cands.get(agent);
  if (!cand) return s.people.includes(agent) ? s.personWord : "waiting for the first token…";
  return `${scoreText(cand.score)} · ${cand.bid ? "bid in" : "typing…"}`;
}

function bidsIn(s) {
  let n = 0;
  for (const cand of s.cands.values()) if (cand.bid) n += 1;
  return n;
}

// The whole panel from what has been seen (a reset, a new turn, a remount).
function draw(s) {
  const root = s.root;
  if (!root) return;
  root.replaceChildren();
  s.nodes = new Map();
  root.dataset.seq = s.last === null ? "" : String(s.last);
  root.dataset.connects = String(s.connects);
  if (!s.open || s.ended) { root.hidden = true; return; }
  root.hidden = false;
  const head = el("p", "gc-live-head");
  s.headNode = head;
  root.appendChild(head);
  const agents = [...s.agents];
  for (const agent of s.cands.keys()) if (!agents.includes(agent)) agents.push(agent);
  agents.forEach((agent, i) => {
    const row = el("div", "gc-cand");
    row.dataset.i = String(i);
    row.dataset.agent = agent;
    const line = el("p", "gc-cand-line");
    line.appendChild(el("strong", "", agent));
    const status = el("span", "gc-cand-status", ` · ${statusOf(s, agent)}`);
    line.appendChild(status);
    const text = el("p", "gc-cand-text");
    const words = document.createTextNode(s.cands.get(agent)?.text ?? "");
    const caret = el("span", "gc-caret", " ▌");
    text.append(words, caret);
    row.append(line, text);
    root.appendChild(row);
    s.nodes.set(agent, { status, words, caret, row });
    paint(s, agent);
  });
  heading(s);
}

function heading(s) {
  if (!s.headNode) return;
  const body = s.streams
    ? `Turn ${s.turn}: the candidates are writing · ${bidsIn(s)} of ${s.agents.length} bids in`
    : `Turn ${s.turn}: ${bidsIn(s)} of ${s.agents.length} bids in`;
  s.headNode.textContent = body;
}

function paint(s, agent) {
  const node = s.nodes && s.nodes.get(agent);
  if (!node) return false;
  const cand = s.cands.get(agent);
  node.status.textContent = ` · ${statusOf(s, agent)}`;
  node.caret.hidden = !cand || cand.bid;
  node.row.hidden = !s.streams; // a run that does not stream: the head's count only
  return true;
}

function apply(s, seq, entry, trigger) {
  s.last = seq;
  if (s.root) s.root.dataset.seq = String(seq);
  switch (entry.t) {
    case "reset":
      s.turn = entry.turn;
      s.open = entry.turn > 0;
      s.ended = entry.ended;
      s.cands = new Map(Object.entries(entry.cands).map(
        ([agent, [score, text, bid]]) => [agent, { score, text, bid }]));
      draw(s);
      if (s.ended) finish(s, trigger, seq);
      else if (s.open) trigger("turn", seq); // a turn the page was drawn before: its head
      return;
    case "turn":
      s.turn = entry.turn;
      s.open = true;
      s.cands = new Map();
      draw(s);
      trigger("turn", seq); // the head's turn and the floor: one rerun as the turn opens
      return;
    case "tok":
    case "text":
    case "bid": {
      let cand = s.cands.get(entry.agent);
      const known = Boolean(cand);
      if (!cand) { cand = { score: null, text: "", bid: false }; s.cands.set(entry.agent, cand); }
      cand.score = entry.score;
      const node = s.nodes && s.nodes.get(entry.agent);
      if (entry.t === "tok") {
        cand.text += entry.add;
        if (node) node.words.appendData(entry.add);
      } else {
        cand.text = entry.text;
        if (node) node.words.data = entry.text;
      }
      if (entry.t === "bid") cand.bid = true;
      if (!known && !node) { draw(s); return; } // an agent the roster did not name
      paint(s, entry.agent);
      heading(s);
      return;
    }
    case "settled":
      s.open = false;
      draw(s);
      trigger("settled", seq);
      return;
    case "end":
      finish(s, trigger, seq);
      return;
    default:
  }
}

function stopFallback(s) {
  if (s.fallback) { clearTimeout(s.fallback); s.fallback = null; }
}

function finish(s, trigger, seq) {
  s.ended = true;
  stopFallback(s);
  if (s.es) { s.es.close(); s.es = null; }
  draw(s);
  trigger("ended", seq);
}

function connect(s, trigger) {
  if (s.es || s.ended) return;
  const params = new URLSearchParams({ token: s.token });
  if (s.last !== null) params.set("last", String(s.last));
  const es = new EventSource(`${s.url}?${params}`);
  s.es = es;
  es.onopen = () => {
    s.connects += 1;
    s.failing = 0;
    if (s.root) s.root.dataset.connects = String(s.connects);
  };
  // A stream that cannot be had (refused, or blocked on the way: a proxy, a network) must not
  // leave the page showing a run that has moved on: after two failures in a row, the page
  // falls back to asking for a rerun once a second until the stream opens again.
  es.onerror = () => {
    if (s.es !== es || s.ended) return;
    s.failing += 1;
    if (es.readyState === EventSource.CLOSED) s.es = null; // no reconnect of its own
    if (s.failing < 2 && s.es) return; // one drop: the browser reconnects by itself
    if (s.fallback) return;
    s.fallback = setTimeout(() => {
      s.fallback = null;
      s.fallbacks += 1;
      if (s.root) s.root.dataset.fallbacks = String(s.fallbacks);
      trigger("retry", s.fallbacks);
      connect(s, trigger);
    }, 1000);
  };
  es.onmessage = (event) => {
    const seq = Number(event.lastEventId);
    const entry = JSON.parse(event.data);
    // never twice; a reset replaces everything, so it always applies (a restarted server)
    if (entry.t !== "reset" && s.last !== null && seq <= s.last) return;
    apply(s, seq, entry, trigger);
  };
  // A dropped stream reconnects by itself; a refused or finished one (403, 204) closes.
}

export default function (component) {
  const { data, parentElement, setTriggerValue } = component;
  let s = streams.get(data.job);
  if (!s || s.token !== data.token) {
    if (s && s.es) s.es.close();
    s = fresh(data);
    streams.set(data.job, s);
  }
  s.url = data.url;
  s.agents = data.agents;
  s.people = data.people;
  s.streams = data.streams;
  s.personWord = data.person_word;
  const root = el("div", "gc-live");
  root.dataset.testid = "gc-live";
  root.dataset.job = data.job;
  parentElement.appendChild(root);
  s.root = root;
  draw(s);
  const trigger = (name, seq) => setTriggerValue(name, seq);
  connect(s, trigger);
  return () => {
    stopFallback(s);
    if (s.es) { s.es.close(); s.es = null; }
    if (s.root === root) s.root = null;
    root.remove();
  };
}
