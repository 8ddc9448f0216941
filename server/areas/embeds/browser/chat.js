/* The embed's chat page script, served as /embed/assets/chat.js (server/areas/embeds/browser/,
 * docs/design/embeds.md). It runs in the chat page the loader's bubble (or a site's own <iframe>)
 * frames, on the service's origin, under a policy that allows no other script and no inline one.
 * Every text of the persona or its replies reaches the page as text nodes: the markdown subset
 * (paragraphs, lists, code, bold, italics, http(s) links) is built with createElement and
 * textContent, never as markup. */
/* global document, window, location, fetch, URL, URLSearchParams, TextDecoder, Audio, requestAnimationFrame, setTimeout, clearTimeout */
(() => {
  "use strict";
  const chat = document.getElementById("chat");
  if (!chat) return;
  const personaId = chat.dataset.persona;
  const api = `/v1/embed/${personaId}`;
  const log = document.getElementById("log");
  const form = document.getElementById("composer");
  const input = document.getElementById("message");
  const send = document.getElementById("send");
  const stop = document.getElementById("stop");
  const status = document.getElementById("status");
  const voice = document.getElementById("voice");
  const closer = document.getElementById("close");
  const params = new URLSearchParams(location.search);

  // ---------------------------------------------------------------- where the chat is embedded

  /** The origin of the page this chat is framed in: what the browser says, else the loader's word. */
  function hostOrigin() {
    const ancestors = location.ancestorOrigins;
    if (ancestors && ancestors.length > 0) return ancestors[0];
    try {
      if (document.referrer) return new URL(document.referrer).origin;
    } catch {
      // an unreadable referrer: fall through
    }
    return params.get("host") || "";
  }
  const host = hostOrigin();
  const framed = window.top !== window;

  // ---------------------------------------------------------------- the visitor's token

  // Kept in this page's own storage (partitioned by the embedding site in today's browsers). Where
  // a browser denies storage to a frame of another site, the loader keeps it in the embedding page's
  // storage instead, handed over by message; without either, it lasts as long as the page.
  const storageKey = `persona-embed:${personaId}`;
  const inBubble = params.get("bubble") === "1" && framed;
  let memoryToken = null;
  function ownStorage() {
    try {
      return window.localStorage;
    } catch {
      return null; // denied to a frame of another site
    }
  }
  const storage = ownStorage();
  function readToken() {
    try {
      return (storage && storage.getItem(storageKey)) || memoryToken;
    } catch {
      return memoryToken;
    }
  }
  function keepToken(token) {
    memoryToken = token;
    try {
      if (storage && token) storage.setItem(storageKey, token);
      else if (storage) storage.removeItem(storageKey);
    } catch {
      // storage full or denied: kept in memory
    }
    if (!storage && inBubble && host) window.parent.postMessage({ type: "persona-embed:keep", token }, host);
  }
  /** The token the loader kept for this chat in the embedding page, when the chat has no storage of its own. */
  function tokenFromLoader() {
    if (storage || !inBubble || !host) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(done, 1000);
      function done() {
        clearTimeout(timer);
        window.removeEventListener("message", receive);
        resolve();
      }
      function receive(event) {
        if (event.origin !== host || event.source !== window.parent || !event.data || event.data.type !== "persona-embed:token") return;
        if (typeof event.data.token === "string" && /^eg_[A-Za-z0-9_-]{43}$/.test(event.data.token)) memoryToken = event.data.token;
        done();
      }
      window.addEventListener("message", receive);
      window.parent.postMessage({ type: "persona-embed:ready" }, host);
    });
  }
  const tokenReady = tokenFromLoader();

  function headers(extra) {
    const all = { "x-embed-origin": host, ...extra };
    const token = readToken();
    if (token) all["x-embed-guest"] = token;
    return all;
  }

  async function newGuest() {
    const answer = await fetch(`${api}/guests`, { method: "POST", headers: { "x-embed-origin": host } });
    if (!answer.ok) throw await failure(answer);
    const guest = await answer.json();
    keepToken(guest.token);
  }

  /** A refusal as the visitor reads it. */
  async function failure(answer) {
    let message = "";
    try {
      message = (await answer.json()).error.message;
    } catch {
      // not the JSON envelope
    }
    const error = new Error(
      answer.status === 429 ? message || "Too many messages; try again in a moment."
      : answer.status === 403 || answer.status === 404 ? "This chat is not available here right now."
      : "Something went wrong. Please try again.",
    );
    error.status = answer.status;
    return error;
  }

  // ---------------------------------------------------------------- markdown, as elements

  // Each marker's text excludes the marker that opens it, so a run of markers costs a step each
  // (a reply of 30,000 "[" renders in linear time).
  const INLINE = /(`[^`\n]+`)|(\*\*[^*\n]+\*\*)|(\*[^*\n]+\*)|(\b_[^_\n]+_\b)|(\[[^[\]\n]+\]\([^()[\]\s]+\))/g;

  function inline(text, parent) {
    let at = 0;
    for (const match of text.matchAll(INLINE)) {
      if (match.index > at) parent.append(lines(text.slice(at, match.index)));
      const token = match[0];
      let node;
      if (match[1]) {
        node = document.createElement("code");
        node.textContent = token.slice(1, -1);
      } else if (match[2]) {
        node = document.createElement("strong");
        node.textContent = token.slice(2, -2);
      } else if (match[3] || match[4]) {
        node = document.createElement("em");
        node.textContent = token.slice(1, -1);
      } else {
        const close = token.indexOf("](");
        node = link(token.slice(1, close), token.slice(close + 2, -1));
      }
      parent.append(node);
      at = match.index + token.length;
    }
    if (at < text.length) parent.append(lines(text.slice(at)));
  }

  /** Text with its line breaks as <br>. */
  function lines(text) {
    const fragment = document.createDocumentFragment();
    text.split("\n").forEach((line, index) => {
      if (index > 0) fragment.append(document.createElement("br"));
      fragment.append(line);
    });
    return fragment;
  }

  /** A link to an http(s) address only, opened apart from the chat; anything else stays text. */
  function link(label, address) {
    let url;
    try {
      url = new URL(address);
    } catch {
      url = undefined;
    }
    if (!url || (url.protocol !== "https:" && url.protocol !== "http:")) return document.createTextNode(`[${label}](${address})`);
    const a = document.createElement("a");
    a.href = url.href;
    a.rel = "noopener noreferrer nofollow";
    a.target = "_blank";
    a.textContent = label;
    return a;
  }

  function markdown(text, into) {
    into.replaceChildren();
    const source = text.split("\n");
    for (let i = 0; i < source.length; ) {
      const line = source[i];
      if (line.startsWith("```")) {
        const code = [];
        for (i++; i < source.length && !source[i].startsWith("```"); i++) code.push(source[i]);
        i++;
        const pre = document.createElement("pre");
        const element = document.createElement("code");
        element.textContent = code.join("\n");
        pre.append(element);
        into.append(pre);
      } else if (!line.trim()) {
        i++;
      } else if (/^\s*([-*]|\d+\.)\s/.test(line)) {
        const ordered = /^\s*\d+\./.test(line);
        const list = document.createElement(ordered ? "ol" : "ul");
        for (; i < source.length && /^\s*([-*]|\d+\.)\s/.test(source[i]); i++) {
          const item = document.createElement("li");
          inline(source[i].replace(/^\s*([-*]|\d+\.)\s+/, ""), item);
          list.append(item);
        }
        into.append(list);
      } else {
        const paragraph = [];
        for (; i < source.length && source[i].trim() && !source[i].startsWith("```") && !/^\s*([-*]|\d+\.)\s/.test(source[i]); i++) paragraph.push(source[i]);
        const p = document.createElement("p");
        inline(paragraph.join("\n"), p);
        into.append(p);
      }
    }
  }

  // ---------------------------------------------------------------- the conversation

  function bubble(role, text) {
    const item = document.createElement("div");
    item.className = `msg ${role}`;
    const label = document.createElement("span");
    label.className = "visually-hidden";
    label.textContent = role === "user" ? "You said:" : `${chat.dataset.name} said:`;
    const body = document.createElement("div");
    body.className = "text";
    item.append(label, body);
    if (text) markdown(text, body);
    log.append(item);
    log.scrollTop = log.scrollHeight;
    return { item, body };
  }

  /** A finished reply's controls: listen to it in the persona's voice. */
  function finish(reply, messageId, stopped) {
    reply.item.removeAttribute("aria-busy");
    if (stopped) {
      const note = document.createElement("p");
      note.className = "note";
      note.textContent = "Stopped.";
      reply.item.append(note);
    }
    if (!messageId) return void (log.scrollTop = log.scrollHeight);
    const listen = document.createElement("button");
    listen.type = "button";
    listen.className = "listen";
    listen.textContent = "Listen";
    listen.setAttribute("aria-label", "Listen to this reply");
    listen.addEventListener("click", () => speak(messageId));
    reply.item.append(listen);
    log.scrollTop = log.scrollHeight;
  }

  function say(text) {
    status.textContent = text;
  }

  // The greeting the page was served with, as markdown too.
  const greeting = log.querySelector(".msg.assistant .text");
  if (greeting) markdown(greeting.textContent, greeting);

  let running = null;

  function busy(on) {
    send.hidden = on;
    stop.hidden = !on;
    stop.disabled = false;
    input.readOnly = on;
    if (!on) input.focus();
  }

  /** Reads a server-sent event stream, calling `on(event, data)` for each event. */
  async function events(answer, on) {
    const reader = answer.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += decoder.decode(value, { stream: true });
      let end;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        let name = "message";
        let data = "";
        for (const line of block.split("\n")) {
          if (line.startsWith("event:")) name = line.slice(6).trim();
          else if (line.startsWith("data:")) data += line.slice(5).trim();
        }
        if (data) on(name, JSON.parse(data));
      }
    }
  }

  async function post(path, body, retried) {
    await tokenReady;
    if (!readToken()) await newGuest();
    const answer = await fetch(`${api}${path}`, {
      method: "POST",
      headers: headers({ "content-type": "application/json", accept: path.endsWith("/stream") ? "text/event-stream" : "application/json" }),
      body: JSON.stringify(body),
    });
    // A token the service no longer knows (expired, or the persona's visitors were reset): start again once.
    if (answer.status === 401 && !retried) {
      keepToken(null);
      return post(path, body, true);
    }
    if (!answer.ok) throw await failure(answer);
    return answer;
  }

  async function sendMessage(content) {
    bubble("user", content);
    const reply = bubble("assistant", "");
    reply.item.setAttribute("aria-busy", "true");
    let text = "";
    let painted = false;
    running = { generation: null };
    busy(true);
    say("");
    try {
      const answer = await post("/messages/stream", { content });
      await events(answer, (name, data) => {
        if (name === "start") running.generation = data.generation_id;
        else if (name === "delta") {
          text += data.content;
          if (!painted) {
            painted = true;
            requestAnimationFrame(() => {
              painted = false;
              markdown(text, reply.body);
              log.scrollTop = log.scrollHeight;
            });
          }
        } else if (name === "done") {
          markdown(text, reply.body);
          finish(reply, data.message_id, data.stopped === true);
          if (voice.getAttribute("aria-pressed") === "true") speak(data.message_id);
        } else if (name === "error") {
          reply.item.remove();
          say("The reply failed. Please try again.");
        }
      });
    } catch (error) {
      reply.item.remove();
      say(error.message || "Something went wrong. Please try again.");
    } finally {
      reply.item.removeAttribute("aria-busy");
      running = null;
      busy(false);
    }
  }

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const content = input.value.trim();
    if (!content || running) return;
    input.value = "";
    void sendMessage(content);
  });
  input.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      form.requestSubmit();
    }
  });

  stop.addEventListener("click", async () => {
    if (!running || !running.generation) return;
    stop.disabled = true;
    try {
      await post(`/generations/${running.generation}/stop`, {});
    } catch (error) {
      say(error.message);
    }
  });

  // ---------------------------------------------------------------- voice

  let playing = null;
  async function speak(messageId) {
    try {
      const answer = await post("/speech", { message_id: messageId });
      const audio = new Audio(URL.createObjectURL(await answer.blob()));
      if (playing) playing.pause();
      playing = audio;
      await audio.play();
    } catch (error) {
      say(error.message || "The voice could not be played.");
    }
  }
  voice.hidden = false;
  voice.addEventListener("click", () => {
    const on = voice.getAttribute("aria-pressed") !== "true";
    voice.setAttribute("aria-pressed", String(on));
    if (!on && playing) playing.pause();
  });

  // ---------------------------------------------------------------- the frame around it

  if (inBubble) {
    closer.hidden = false;
    const close = () => window.parent.postMessage({ type: "persona-embed:close" }, host || "*");
    closer.addEventListener("click", close);
    document.addEventListener("keydown", (event) => {
      if (event.key === "Escape") close();
    });
  }

  if (!framed) {
    form.hidden = true;
    say("This chat opens on the website that embeds it.");
    return;
  }

  // A visitor coming back sees the conversation so far.
  tokenReady.then(() => {
    if (!readToken()) return;
    return fetch(`${api}/conversation`, { headers: headers({}) })
      .then(async (answer) => {
        if (answer.status === 401) return keepToken(null);
        if (!answer.ok) return;
        const { data } = await answer.json();
        for (const message of data) {
          const shown = bubble(message.role, message.content);
          if (message.role === "assistant") finish(shown, message.id, message.stopped);
        }
      })
      .catch(() => undefined);
  });
  if (document.hasFocus()) input.focus();
})();
