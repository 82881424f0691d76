// The voices on the status page: the list (/status/voices), a preview played here (/v1/audio/speech),
// make default (/status/default-voice), delete, and the clone form (PUT /status/voices/NAME with the
// recording as the body and the transcript in the query). page.js says when the voice names changed.
"use strict";

const PREVIEW_TEXT = "Hello, this is how I sound.";

function voiceAnswer(message) {
  document.getElementById("voice-answer").textContent = message;
}

async function voiceError(response) {
  try {
    return (await response.json()).error.message;
  } catch (_) {
    return `HTTP ${response.status}`;
  }
}

function voiceButton(label, action, title) {
  const button = document.createElement("button");
  button.type = "button";
  button.textContent = label;
  button.title = title;
  button.addEventListener("click", action);
  return button;
}

function voiceRow(voice, isDefault) {
  const row = document.createElement("tr");
  row.dataset.voice = voice.name;
  const name = document.createElement("td");
  name.textContent = voice.name;
  if (isDefault) {
    const mark = document.createElement("span");
    mark.className = "badge small default";
    mark.textContent = "default";
    name.append(" ", mark);
  }
  const kind = document.createElement("td");
  const kinds = { preset: "preset", clone: voice.icl ? "cloned" : "cloned (timbre only)",
    design: "described" };
  kind.textContent = kinds[voice.kind] || voice.kind;
  kind.title = voice.transcript || voice.instruct || "";
  const actions = document.createElement("td");
  actions.className = "actions";
  actions.append(voiceButton("Preview", () => preview(voice.name), "speak a short sample in this browser"));
  if (!isDefault) {
    actions.append(voiceButton("Make default", () => makeDefault(voice.name),
      "the voice of every request that names none"));
    if (voice.kind !== "preset") {
      actions.append(voiceButton("Delete", () => removeVoice(voice.name), "delete this voice"));
    }
  }
  row.append(name, kind, actions);
  return row;
}

// Several loads may be under way (an action's own, and the state poll's "voices-changed"): only the one
// asked for last may draw, or an older answer arriving late would put back the list it replaced.
let voicesAsked = 0;

async function loadVoices() {
  const asked = ++voicesAsked;
  let response;
  try {
    response = await fetch("/status/voices", { cache: "no-store" });
  } catch (error) {  // the box restarting, a network gone: say so; the next "voices-changed" loads again
    if (asked === voicesAsked) voiceAnswer(String(error));
    return;
  }
  const listing = response.ok ? await response.json() : null;
  if (asked !== voicesAsked) return;
  if (!listing) { voiceAnswer(await voiceError(response)); return; }
  const rows = listing.voices.map((voice) => voiceRow(
    voice, voice.name.toLowerCase() === String(listing.default).toLowerCase()));
  document.getElementById("voice-list").replaceChildren(...rows);
  const off = document.getElementById("clone-off");
  off.hidden = !listing.cloning;
  off.textContent = listing.cloning || "";
  document.getElementById("clone-fields").hidden = Boolean(listing.cloning);
  const limits = listing.limits;
  document.getElementById("clone-limits").textContent = `${limits.min_seconds}–${limits.max_seconds} s of`
    + ` clean speech (WAV, FLAC, Ogg, MP3…), at most ${Math.round(limits.max_bytes / 1048576)} MiB; the`
    + ` transcript word for word, at most ${limits.max_transcript_chars} characters.`;
}

async function preview(name) {
  voiceAnswer(`synthesising a sample of ${name}…`);
  const response = await fetch("/v1/audio/speech", {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ input: PREVIEW_TEXT, voice: name, response_format: "wav" }),
  });
  if (!response.ok) { voiceAnswer(await voiceError(response)); return; }
  const player = document.getElementById("preview");
  player.src = URL.createObjectURL(await response.blob());
  player.hidden = false;
  player.dataset.voice = name;
  voiceAnswer(`playing a sample of ${name}`);
  player.play().catch(() => voiceAnswer(`a sample of ${name}: press play`));
}

async function makeDefault(name) {
  const response = await fetch("/status/default-voice", {
    method: "PUT",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ voice: name }),
  });
  voiceAnswer(response.ok ? `${(await response.json()).default} is the default voice`
    : await voiceError(response));
  loadVoices();
}

async function removeVoice(name) {
  if (!window.confirm(`Delete the voice ${name}?`)) return;
  const response = await fetch(`/status/voices/${encodeURIComponent(name)}`, { method: "DELETE" });
  voiceAnswer(response.ok ? `deleted ${name}` : await voiceError(response));
  loadVoices();
}

async function cloneVoice(event) {
  event.preventDefault();
  const name = document.getElementById("clone-name").value.trim();
  const file = document.getElementById("clone-audio").files[0];
  const transcript = document.getElementById("clone-text").value;
  const xVectorOnly = document.getElementById("clone-xvector").checked;
  if (!file) { voiceAnswer("choose a recording"); return; }
  const query = new URLSearchParams(xVectorOnly ? { x_vector_only: "true" } : { transcript });
  const button = document.getElementById("clone-submit");
  button.disabled = true;
  voiceAnswer(`cloning ${name}…`);
  try {
    const response = await fetch(`/status/voices/${encodeURIComponent(name)}?${query}`, {
      method: "PUT",
      headers: { "Content-Type": file.type.startsWith("audio/") ? file.type : "application/octet-stream" },
      body: file,
    });
    voiceAnswer(response.ok ? `added ${(await response.json()).name}` : await voiceError(response));
    if (response.ok) document.getElementById("clone").reset();
  } catch (error) {
    voiceAnswer(String(error));
  } finally {
    button.disabled = false;
    loadVoices();
  }
}

document.getElementById("clone").addEventListener("submit", cloneVoice);
document.addEventListener("voices-changed", loadVoices);
// The first list, whatever page.js has done: this script may run after page.js's first state has already
// sent its "voices-changed" (deferred scripts run in order, but the page's fetches may answer between them).
loadVoices();
