// The status page: polls /status/state once a second; the form announces on the appliance
// (/status/announce) or plays the text here (/v1/audio/speech). voices.js manages the voices.
// No framework, nothing external.
"use strict";

const $ = (id) => document.getElementById(id);
let shownVoices = "";
let filled = false;

function text(id, value) {
  $(id).textContent = value === undefined || value === null || value === "" ? "—" : String(value);
}

function showStatus(status) {
  const badge = $("state");
  badge.textContent = status.state;
  badge.dataset.state = status.state;
  const current = status.current;
  text("current", current ? `${current.text} (${current.priority}, ${current.id})` : "");
  text("queue", status.queue.length ? `${status.queue.length}: ${status.queue.join(", ")}` : "empty");
  text("voice", status.voice || "default (the bundle's own)");
  text("volume", `${Math.round(status.volume * 100)} %`);
  const engine = status.engine || {};
  text("batch", `${engine.running ?? 0} running, ${engine.waiting ?? 0} waiting, limit ${status.batch_limit}`
    + `, mean ${engine.mean_batch ?? 0}`);
  text("fps", engine.frames_per_second);
  const temperature = status.temperature_c === null ? "" : `, ${status.temperature_c} °C`;
  text("thermal", `${status.thermal_level}${temperature}`);
  const devices = Object.entries(status.device_plan || {}).filter(([k]) => k !== "audio");  // see Zones
  text("devices", devices.map(([k, v]) => `${k}: ${v}`).join(", "));
  showBundle(status);
  showZones(status.zones || []);
}

function showBundle(status) {
  const name = String(status.bundle || "").split("/").filter(Boolean).pop() || "—";
  $("bundle").textContent = status.model ? `${name} (${status.model})` : name;
  $("bundle").title = status.bundle || "";
  $("version").textContent = status.version ? `v${status.version}` : "";
  const random = String(status.weights || "").startsWith("random");
  $("weights").hidden = !random;
  $("weights").textContent = random ? `${status.weights.replace(/^random/, "random weights")}` : "";
}

function showZones(zones) {
  $("zones").replaceChildren(...zones.map((zone) => {
    const item = document.createElement("li");
    const state = document.createElement("span");
    state.className = "badge small";
    state.dataset.state = zone.state === "ok" ? "idle" : "offline";
    state.textContent = zone.state;
    item.append(`${zone.zone}: ${zone.sink} `, state);
    return item;
  }));
}

function showEvents(events) {
  const rows = events.slice().reverse().map((event) => {
    const row = document.createElement("tr");
    const cells = [new Date(event.time * 1000).toLocaleTimeString(), event.id, event.event, event.reason];
    cells.forEach((value, index) => {
      const cell = document.createElement("td");
      cell.textContent = value;
      if (index === 2) cell.className = `event-${value}`;
      row.appendChild(cell);
    });
    return row;
  });
  $("events").replaceChildren(...rows);
}

function fillChoices(state) {
  const options = (select, values, chosen) => select.replaceChildren(...values.map(
    (value) => new Option(value, value, false, value === chosen)));
  const voices = `${state.voices.join("\n")}|${state.default_voice}`;
  if (voices !== shownVoices) {  // a voice added or removed here, over the command line or on SIGHUP
    const chosen = shownVoices ? $("voices").value : (state.default_voice || "").toLowerCase();
    shownVoices = voices;
    options($("voices"), state.voices, chosen);
    document.dispatchEvent(new CustomEvent("voices-changed"));
  }
  if (!filled) options($("priority"), state.priorities, "normal");
  filled = true;
}

async function refresh() {
  try {
    const response = await fetch("/status/state", { cache: "no-store" });
    if (!response.ok) throw new Error(`HTTP ${response.status}`);
    const state = await response.json();
    showStatus(state.status);
    showEvents(state.events);
    fillChoices(state);
    $("updated").textContent = `updated ${new Date().toLocaleTimeString()}`;
  } catch (error) {
    $("state").textContent = "offline";
    $("state").dataset.state = "offline";
    $("updated").textContent = String(error);
  }
}

async function errorText(response) {
  try {
    return (await response.json()).error.message;
  } catch (_) {
    return `HTTP ${response.status}`;
  }
}

async function speak(event) {
  event.preventDefault();
  const form = new FormData($("speak"));
  const body = { text: form.get("text"), voice: form.get("voice"), priority: form.get("priority") };
  const answer = $("answer");
  answer.textContent = "…";
  if (form.get("where") === "browser") {
    const response = await fetch("/v1/audio/speech", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ input: body.text, voice: body.voice, response_format: "wav" }),
    });
    if (!response.ok) { answer.textContent = await errorText(response); return; }
    const player = $("player");
    player.src = URL.createObjectURL(await response.blob());
    player.hidden = false;
    answer.textContent = "playing here";
    player.play().catch(() => { answer.textContent = "press play"; });
    return;
  }
  const response = await fetch("/status/announce", {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify(body),
  });
  answer.textContent = response.ok ? `queued as ${(await response.json()).id}` : await errorText(response);
  refresh();
}

$("speak").addEventListener("submit", speak);
refresh();
setInterval(refresh, 1000);
